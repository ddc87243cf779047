"""What `tiller serve` tells about its work: one log record per LLM call and per tool call
(`--log-format json --log-file`), every request and raw response on disk
(`--dump-payloads`, or the editor's `dumpPayloads` option), keys never written, and the
warnings that matter sent to the editor as `window/logMessage`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.sse_server import Reply, SSEServer

from .harness import SECRET, editor_capabilities, openai_chunk, openai_env, openai_tool_call

APPROVALS = editor_capabilities(approvals=True)
MODEL = "openai/test-model"
# The pause the scripted reply makes before its first token, so the log's time to first
# token has something to measure.
FIRST_TOKEN_PAUSE = 0.2


def answer_stream() -> list[bytes | float]:
    usage = {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34, "prompt_tokens_details": {"cached_tokens": 12}}
    return [openai_chunk({"role": "assistant", "content": ""}), FIRST_TOKEN_PAUSE, openai_chunk({"content": "Written."}),
            openai_chunk({}, "stop"), openai_chunk({}, usage=usage), b"data: [DONE]\n\n"]


def rate_limited() -> Reply:
    return Reply.json(429, {"error": {"message": "Slow down"}}, headers={"retry-after-ms": "10"})


def records(path: Path, event: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [line for line in lines if line.get("event") == event]


def joined(chunks: list[bytes | float]) -> str:
    return b"".join(chunk for chunk in chunks if isinstance(chunk, bytes)).decode()


async def test_every_llm_and_tool_call_is_logged_as_json_without_the_key(start_tiller, workspace, tmp_path):
    log_file = tmp_path / "tiller.jsonl"
    write_call = openai_tool_call("call_w1", "write", {"path": "notes.txt", "content": "hello\n"})
    with SSEServer() as server:
        server.reply(rate_limited(), Reply(chunks=write_call), Reply(chunks=answer_stream()))
        client = await start_tiller(env=openai_env(server), capabilities=APPROVALS,
                                    args=["--log-format", "json", "--log-file", str(log_file)])
        session = await client.new_session(model=MODEL)
        prompt = client.prompt(session, "write notes")
        approval = await client.wait_approval(session)
        await client.respond(session, approval["approvalId"], "allow_once")
        assert (await prompt.result())["stopReason"] == "stop"
        # The retry reached the editor's output panel, as a warning.
        logged = await client.wait_message(lambda m: m.get("method") == "window/logMessage")
    assert logged["params"]["type"] == 2 and "429 Too Many Requests: Slow down" in logged["params"]["message"]

    first, second = records(log_file, "llm_call")
    for record in (first, second):
        assert (record["session_id"], record["run"], record["provider"], record["model"], record["api"]) == (
            session, 1, "openai", "test-model", "openai-completions")
        assert record["server"] == server.url.removeprefix("http://") and record["status"] == 200
        assert 0 < record["time_to_headers_ms"] <= record["time_to_first_token_ms"] <= record["duration_ms"]
        assert record["error"] is None and record["level"] == "INFO" and record["logger"] == "tiller.llm"
    assert (first["turn"], first["call"], first["stop_reason"]) == (1, 1, "toolUse")
    assert (first["retries"], first["retry_reasons"]) == (1, ["429 Too Many Requests: Slow down"])
    assert (second["turn"], second["call"], second["stop_reason"], second["retries"]) == (2, 2, "stop", 0)
    assert (second["input_tokens"], second["output_tokens"], second["cache_read_tokens"]) == (18, 4, 12)
    # The reply paused before its first token; headers came before that pause.
    assert second["time_to_first_token_ms"] - second["time_to_headers_ms"] >= FIRST_TOKEN_PAUSE * 1000 * 0.9

    (tool,) = records(log_file, "tool_call")
    assert (tool["session_id"], tool["run"], tool["turn"], tool["tool"], tool["tool_call_id"]) == (
        session, 1, 1, "write", "call_w1")
    assert (tool["outcome"], tool["approval"], tool["error"]) == ("ok", "allow_once", None)
    assert 0 < tool["approval_wait_ms"] <= tool["duration_ms"]
    assert SECRET not in log_file.read_text()


async def test_payload_dumps_hold_each_request_and_raw_stream_with_the_key_redacted(start_tiller, tmp_path):
    dumps = tmp_path / "dumps"
    # A server that echoes the key in an SSE comment (which no parser shows anyone), split
    # across two reads: the dump must still not hold it.
    echo = [f": echo {SECRET[:6]}".encode(), 0.05, f"{SECRET[6:]}\n\n".encode()]
    stream = [*echo, *answer_stream()]
    with SSEServer() as server:
        server.reply(rate_limited(), Reply(chunks=stream))
        # The editor's option, as an LSP client sets it.
        client = await start_tiller(env=openai_env(server), initialization_options={"dumpPayloads": str(dumps)})
        session = await client.new_session(model=MODEL, tools=[])
        assert (await client.prompt(session, "hello there").result())["stopReason"] == "stop"
        sent = server.requests[-1]

    assert sorted(path.name for path in dumps.iterdir()) == [f"{session}-001.request.json",
                                                               f"{session}-001.response.sse"]
    request = json.loads((dumps / f"{session}-001.request.json").read_text())
    assert request["url"] == server.url + "/v1/chat/completions"
    assert request["headers"]["authorization"] == "[redacted]"
    assert request["body"] == sent.json
    assert request["body"]["messages"][-1]["content"] == [{"type": "text", "text": "hello there"}]
    # Exactly what the server streamed, byte for byte, but for the key.
    assert (dumps / f"{session}-001.response.sse").read_text() == joined(stream).replace(SECRET, "[redacted]")
    for path in dumps.iterdir():
        assert SECRET not in path.read_text()
        assert path.stat().st_mode & 0o077 == 0  # the conversation is private to the user
    assert dumps.stat().st_mode & 0o077 == 0


async def test_a_failed_call_reaches_the_editor_and_the_log_says_why(start_tiller, tmp_path):
    log_file = tmp_path / "tiller.log"
    with SSEServer() as server:
        server.reply(Reply.json(401, {"error": {"message": f"Incorrect API key provided: {SECRET}"}}))
        client = await start_tiller(env=openai_env(server), args=["--log-file", str(log_file)])
        session = await client.new_session(model=MODEL, tools=[])
        answer = await client.prompt(session, "hi").result()
        logged = await client.wait_message(lambda m: m.get("method") == "window/logMessage")
    assert answer["stopReason"] == "error"
    message = logged["params"]["message"]
    assert logged["params"]["type"] == 2 and message.startswith("tiller.llm: LLM call openai/test-model")
    assert "error: 401 Unauthorized: Incorrect API key provided: ***" in message
    text = log_file.read_text()  # the human-readable format, by default
    assert f"WARNING tiller.llm: LLM call openai/test-model [session {session} run 1 turn 1 call 1]: error in" in text
    assert SECRET not in text
