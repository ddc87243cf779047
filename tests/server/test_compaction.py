"""Compaction through the real server against loopback OpenAI-compatible and Anthropic
servers: automatic at the threshold, after a context-overflow refusal, on request (with the
user's instructions), undone, aborted; oversize tool output cut before the model sees it."""

from __future__ import annotations

import json

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.sse_server import Reply, SSEServer
from tiller.host.compaction import SUMMARY_PREFIX

from .harness import (
    HOLD,
    SECRET,
    GatedSSEServer,
    openai_chunk,
    openai_env,
    openai_text,
    openai_tool_call,
)
from .windowed_model import WindowedModel, windowed_config

COMPACTION_FAILED = -32008


def texts(messages: list[dict]) -> list[str]:
    """The text of each message of an OpenAI request body."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        out.append(content or "")
    return out


def session_file(tmp_path, session: str) -> list[dict]:
    path = tmp_path / "tiller-data" / "sessions" / f"{session}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


async def two_turns(client) -> str:
    """A session without tools that compacts down to its last reply (keepRecentTokens 1),
    after the prompts "First" and "Second" (the server's first two replies)."""
    session = await client.new_session(tools=[])
    await client.request("agent/setCompaction", {"sessionId": session, "keepRecentTokens": 1})
    await client.prompt(session, "First").result()
    await client.prompt(session, "Second").result()
    return session


def summary_reply(text: str) -> Reply:
    return Reply(chunks=openai_text(text))


# --- automatic, at the threshold ------------------------------------------------------------


async def test_compacts_at_the_threshold_and_keeps_the_recent_turns_verbatim(start_tiller, tmp_path):
    model = WindowedModel(window=8192)
    with SSEServer(responder=model) as server:
        ref = windowed_config(tmp_path / "xdg-config", server.url, extra='compactAt = "30%"\n')
        client = await start_tiller(env={"TILLER_MODEL": ref})
        session = await client.new_session(tools=[])
        settings = await client.request("agent/setCompaction", {"sessionId": session, "keepRecentTokens": 600})
        assert settings == {"auto": True, "compactAt": 2457, "compactAtSource": "model", "keepRecentTokens": 600,
                            "toolResultMaxTokens": 614}
        turn = 0
        while not client.events_of(session, "compaction_end"):
            turn += 1
            assert turn < 20, "never compacted"
            assert (await client.prompt(session, f"Turn {turn}: go on").result())["stopReason"] == "stop"

    [start] = client.events_of(session, "compaction_start")
    [end] = client.events_of(session, "compaction_end")
    assert start == {"type": "compaction_start", "reason": "threshold", "tokensBefore": end["tokensBefore"]}
    assert end["tokensBefore"] > 2457 > end["tokensAfter"]
    first_kept = end["compaction"]["firstKeptIndex"]
    assert end["compaction"]["summary"] == end["summary"] == (
        f"## Goal\nWork through the plan.\n## Facts to keep\nSummarised turns 1-{(first_kept + 1) // 2}.")

    before, summary_call, after = model.calls[-3:]
    assert summary_call.summary and not before.summary and not after.summary
    assert after.tokens < before.tokens
    sent_before, sent_after = before.body["messages"], after.body["messages"]
    # system, the summary in place of the older turns, then the recent turns as they were.
    assert sent_after[0] == sent_before[0]
    assert texts(sent_after)[1] == f"{SUMMARY_PREFIX}\n\n<summary>\n{end['summary']}\n</summary>"
    kept = sent_after[2:-2]  # before the previous reply and the new prompt
    assert len(kept) >= 2 and kept == sent_before[len(sent_before) - len(kept):]
    assert texts(sent_after)[-1] == f"Turn {turn}: go on"
    # The meter moved down with it, and the session file kept every message.
    usage = client.events_of(session, "context_usage")
    assert usage[-1]["tokens"] < end["tokensBefore"]
    saved = session_file(tmp_path, session)
    assert sum(1 for line in saved if line["type"] == "message") == 2 * turn
    [record] = [line for line in saved if line["type"] == "compaction"]
    assert record["id"] == end["compaction"]["id"] and record["firstKeptIndex"] == end["compaction"]["firstKeptIndex"]


# --- after a context-overflow refusal (Anthropic) ------------------------------------------


def anthropic_event(name: str, data: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()


def anthropic_text(text: str, input_tokens: int = 50) -> Reply:
    return Reply(chunks=[
        anthropic_event("message_start", {"message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5", "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
        anthropic_event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        anthropic_event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}),
        anthropic_event("content_block_stop", {"index": 0}),
        anthropic_event("message_delta", {"delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                          "usage": {"output_tokens": 5}}),
        anthropic_event("message_stop", {}),
    ])


async def test_a_prompt_too_long_refusal_is_compacted_and_retried_once(start_tiller):
    too_long = Reply.json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                           "message": "prompt is too long: 210843 tokens > 200000 maximum"}})
    with SSEServer() as server:
        server.reply(anthropic_text("First answer."), anthropic_text("Second answer."), anthropic_text("Third answer."),
                     too_long, anthropic_text("## Goal\nAnswer questions."), anthropic_text("Fourth answer."))
        client = await start_tiller(env={"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": SECRET,
                                         "TILLER_MODEL": "anthropic/claude-haiku-4-5"})
        session = await client.new_session(tools=[])
        for n in ("one", "two", "three"):
            await client.prompt(session, f"Question {n}").result()
        answer = await client.prompt(session, "Question four").result()

    assert answer["stopReason"] == "stop"
    assert [m["role"] for m in answer["newMessages"]] == ["user", "assistant"]  # no error in the transcript
    assert answer["newMessages"][1]["content"][0]["text"] == "Fourth answer."
    [end] = client.events_of(session, "compaction_end")
    assert end["reason"] == "overflow" and end["willRetry"] is True and end["summary"] == "## Goal\nAnswer questions."
    refused, summary, retried = (request.json for request in server.requests[3:])
    assert "Question one" in json.dumps(summary["messages"]) and "prompt is too long" not in json.dumps(summary)
    assert len(retried["messages"]) < len(refused["messages"])
    assert retried["messages"][0]["content"][0]["text"].startswith(SUMMARY_PREFIX)
    assert retried["messages"][-1] == refused["messages"][-1]  # the same prompt, sent again
    assert len(server.requests) == 6


async def test_a_second_refusal_is_not_retried_again(start_tiller):
    too_long = Reply.json(400, {"error": {"message": "This model's maximum context length is 8192 tokens. However, "
                                                     "your messages resulted in 9000 tokens.",
                                          "code": "context_length_exceeded"}})
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("Hi.")), Reply(chunks=openai_text("Again.")), too_long,
                     summary_reply("## Goal\nGreet."), too_long)
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/test-model"})
        session = await client.new_session(tools=[])
        await client.prompt(session, "Hello").result()
        await client.prompt(session, "Hello again").result()
        answer = await client.prompt(session, "And again").result()
    assert answer["stopReason"] == "error" and "maximum context length" in answer["errorMessage"]
    assert len(server.requests) == 5
    assert [e["reason"] for e in client.events_of(session, "compaction_end")] == ["overflow"]


# --- on request, with instructions; undo ------------------------------------------------------


async def test_manual_compaction_with_instructions_then_undo(start_tiller, tmp_path):
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("Parser started.")), Reply(chunks=openai_text("Parser done.")),
                     summary_reply("## Goal\nThe parser, in detail."), Reply(chunks=openai_text("Compacted view.")),
                     Reply(chunks=openai_text("Full view.")))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/test-model"})
        session = await client.new_session(tools=[])
        await client.request("agent/setCompaction", {"sessionId": session, "keepRecentTokens": 1})
        await client.prompt(session, "Write the parser").result()
        await client.prompt(session, "Finish the parser").result()

        compaction = await client.request("agent/compact", {"sessionId": session,
                                                            "instructions": "keep the details of the parser work"})
        assert compaction["reason"] == "manual" and compaction["summary"] == "## Goal\nThe parser, in detail."
        assert compaction["instructions"] == "keep the details of the parser work"
        assert compaction["firstKeptIndex"] == 3  # the last reply stays; the rest is summarised
        summary_request = json.dumps(server.requests[2].json)
        assert "keep the details of the parser work" in summary_request and "Write the parser" in summary_request
        state = await client.request("agent/getState", {"sessionId": session})
        assert state["compactions"] == [compaction] and len(state["messages"]) == 4
        assert state["contextUsage"]["source"] == "estimate"

        await client.prompt(session, "Next?").result()
        assert texts(server.requests[3].json["messages"])[1:] == [
            f"{SUMMARY_PREFIX}\n\n<summary>\n## Goal\nThe parser, in detail.\n</summary>", "Parser done.", "Next?"]

        undone = await client.request("agent/undoCompaction", {"sessionId": session})
        assert undone["undone"] == compaction and undone["contextUsage"]["source"] == "estimate"
        assert client.events_of(session, "compaction_undone") == [{"type": "compaction_undone",
                                                                   "compactionId": compaction["id"]}]
        await client.prompt(session, "And now?").result()
        assert texts(server.requests[4].json["messages"])[1:] == [
            "Write the parser", "Parser started.", "Finish the parser", "Parser done.", "Next?", "Compacted view.",
            "And now?"]
        with pytest.raises(JsonRpcException) as nothing:
            await client.request("agent/undoCompaction", {"sessionId": session})
        assert nothing.value.code == COMPACTION_FAILED and "No compaction to undo" in str(nothing.value)

    kinds = [line["type"] for line in session_file(tmp_path, session)]
    assert kinds.count("message") == 8 and kinds.count("compaction") == kinds.count("compactionUndone") == 1


async def test_undo_refused_when_the_uncompacted_context_no_longer_fits(start_tiller):
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("A long answer " * 50)), Reply(chunks=openai_text("Another " * 50)),
                     summary_reply("## Goal\nShort."))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/test-model"})
        session = await client.new_session(tools=[])
        await client.request("agent/setCompaction", {"sessionId": session, "keepRecentTokens": 1})
        await client.prompt(session, "One").result()
        await client.prompt(session, "Two").result()
        compaction = await client.request("agent/compact", {"sessionId": session})
        await client.request("agent/setCompaction", {"sessionId": session, "compactAt": 100})
        with pytest.raises(JsonRpcException) as refused:
            await client.request("agent/undoCompaction", {"sessionId": session})
        assert refused.value.code == COMPACTION_FAILED and "no longer fits" in str(refused.value)
        assert (await client.request("agent/getState", {"sessionId": session}))["compactions"] == [compaction]


async def test_nothing_to_compact_is_a_clear_error(start_tiller):
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("Hi.")), Reply(chunks=openai_text("Hello.")),
                     summary_reply("## Goal\nGreet."))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/test-model"})
        session = await client.new_session(tools=[])
        with pytest.raises(JsonRpcException) as empty:
            await client.request("agent/compact", {"sessionId": session})
        await client.prompt(session, "Hi").result()
        await client.prompt(session, "Hello").result()
        await client.request("agent/setCompaction", {"sessionId": session, "keepRecentTokens": 1})
        await client.request("agent/compact", {"sessionId": session})
        with pytest.raises(JsonRpcException) as again:  # only the last reply is left after it
            await client.request("agent/compact", {"sessionId": session})
    for error in (empty, again):
        assert error.value.code == COMPACTION_FAILED and "Nothing to compact" in str(error.value)
    assert len(client.events_of(session, "compaction_start")) == 1
    assert len(server.requests) == 3


async def test_a_failed_summary_is_still_billed(start_tiller):
    cost = {"prompt_tokens": 900, "completion_tokens": 0, "total_tokens": 900}
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("One.")), Reply(chunks=openai_text("Two.")), Reply(chunks=[
            openai_chunk({"role": "assistant", "content": ""}), openai_chunk({}, "stop"),
            openai_chunk({}, usage=cost), b"data: [DONE]\n\n"]))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/gpt-4o-mini"})
        session = await two_turns(client)
        before = (await client.request("agent/getState", {"sessionId": session}))["usage"]
        with pytest.raises(JsonRpcException) as failed:
            await client.request("agent/compact", {"sessionId": session})
        assert failed.value.code == COMPACTION_FAILED and "empty summary" in str(failed.value)
        state = await client.request("agent/getState", {"sessionId": session})
    assert state["compactions"] == [] and len(state["messages"]) == 4
    assert state["usage"]["input"] == before["input"] + 900 and state["usage"]["cost"]["total"] > before["cost"]["total"]


# --- aborted ------------------------------------------------------------------------------


async def test_an_aborted_compaction_changes_nothing(start_tiller, tmp_path):
    with GatedSSEServer() as server:
        server.reply(Reply(chunks=openai_text("One.")), Reply(chunks=openai_text("Two.")),
                     Reply(chunks=[HOLD, *openai_text("## Goal\nNever arrives.")]),
                     Reply(chunks=openai_text("Three.")),
                     Reply(chunks=[HOLD, *openai_text("## Goal\nNever arrives either.")]))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/test-model"})
        session = await two_turns(client)

        # A manual compaction, aborted while the model writes the summary.
        pending = client.send("agent/compact", {"sessionId": session})
        await server.wait_for_requests(3)
        assert (await client.request("agent/getState", {"sessionId": session}))["isCompacting"] is True
        await client.request("agent/abort", {"sessionId": session})
        with pytest.raises(JsonRpcException) as aborted:
            await pending.result()
        assert aborted.value.code == COMPACTION_FAILED and "aborted" in str(aborted.value)
        end = client.events_of(session, "compaction_end")[-1]
        assert end == {"type": "compaction_end", "reason": "manual", "tokensBefore": end["tokensBefore"],
                       "aborted": True, "willRetry": False}

        # The next prompt sends the whole conversation, as if nothing had happened.
        await client.prompt(session, "Third").result()
        assert texts(server.requests[3].json["messages"])[1:] == ["First", "One.", "Second", "Two.", "Third"]

        # An automatic one, aborted with its run.
        await client.request("agent/setCompaction", {"sessionId": session, "compactAt": 5})
        run = client.prompt(session, "Fourth")
        await server.wait_for_requests(5)
        await client.request("agent/abort", {"sessionId": session})
        answer = await run.result()
        assert answer["stopReason"] == "aborted"
        assert [e["reason"] for e in client.events_of(session, "compaction_end") if e["aborted"]] == ["manual", "threshold"]
        state = await client.request("agent/getState", {"sessionId": session})
        assert state["compactions"] == [] and state["isCompacting"] is False
    assert [line["type"] for line in session_file(tmp_path, session) if line["type"].startswith("compaction")] == [
        "compactionSettings", "compactionSettings"]


async def test_a_cancelled_compaction_request_ends_its_compaction_and_changes_nothing(start_tiller):
    with GatedSSEServer() as server:
        server.reply(Reply(chunks=openai_text("One.")), Reply(chunks=openai_text("Two.")),
                     Reply(chunks=[HOLD, *openai_text("## Goal\nNever arrives.")]), Reply(chunks=openai_text("Three.")))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/test-model"})
        session = await two_turns(client)
        pending = client.send("agent/compact", {"sessionId": session})
        await server.wait_for_requests(3)
        client.cancel(pending)
        with pytest.raises(JsonRpcException):
            await pending.result()
        state = await client.request("agent/getState", {"sessionId": session})
        assert state["compactions"] == [] and state["isCompacting"] is False
        [end] = client.events_of(session, "compaction_end")
        assert end["aborted"] is True and len(client.events_of(session, "compaction_start")) == 1
        await client.prompt(session, "Third").result()
        assert texts(server.requests[3].json["messages"])[1:] == ["First", "One.", "Second", "Two.", "Third"]


# --- oversize tool output ------------------------------------------------------------------


async def test_oversize_tool_output_is_cut_with_a_notice_and_kept_whole_on_disk(start_tiller, tmp_path, workspace):
    (workspace / "big.log").write_text("".join(f"line {n:04d} of the log\n" for n in range(1, 1001)))
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_tool_call("call_1", "read", {"path": "big.log"})),
                     Reply(chunks=openai_text("Read it.")))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/test-model"})
        session = await client.new_session(tools=["read"])
        await client.request("agent/setCompaction", {"sessionId": session, "toolResultMaxTokens": 500})
        await client.prompt(session, "Read big.log").result()

    sent = server.requests[1].json["messages"][-1]
    assert sent["role"] == "tool"
    assert len(sent["content"]) < 500 * 4 + 600
    assert sent["content"].startswith("line 0001 of the log\n")
    shown = sent["content"].split("\n\n[")[0].count("\n") + 1
    assert f"read the file again with offset={shown + 1}" in sent["content"]
    assert "The full output is kept in the session file" in sent["content"]
    # The client saw the whole output; the session file has it too.
    [end] = client.events_of(session, "tool_execution_end")
    assert end["result"]["content"][0]["text"].count("\n") == 1000
    [saved] = [line["message"] for line in session_file(tmp_path, session)
               if line["type"] == "message" and line["message"]["role"] == "toolResult"]
    assert saved["content"] == end["result"]["content"]


# --- the meter -----------------------------------------------------------------------------


async def test_the_context_meter_after_each_turn_and_in_get_state(start_tiller):
    usage = {"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230}
    with SSEServer() as server:
        server.reply(Reply(chunks=[
            openai_chunk({"role": "assistant", "content": "Sure."}), openai_chunk({}, "stop"),
            openai_chunk({}, usage=usage), b"data: [DONE]\n\n"]))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/gpt-4o-mini"})
        session = await client.new_session(tools=[])
        before = await client.request("agent/getState", {"sessionId": session})
        assert before["contextUsage"]["source"] == "estimate" and before["contextUsage"]["tokens"] > 0
        await client.prompt(session, "Hello").result()
        state = await client.request("agent/getState", {"sessionId": session})

    [event] = client.events_of(session, "context_usage")
    assert event["tokens"] == 1230 and event["source"] == "provider" and event["contextWindow"] == 128_000
    assert event["percent"] == round(100 * 1230 / 128_000, 1)
    # gpt-4o-mini: 128,000 - 16,384 max output - 5% margin.
    assert event["compactAt"] == 128_000 - 16_384 - 6_400
    assert event["usage"]["input"] == 1200 and event["usage"]["cost"]["total"] > 0
    assert {k: state["contextUsage"][k] for k in ("tokens", "source")} == {"tokens": 1230, "source": "provider"}
    assert state["usage"] == event["usage"]
    assert state["compaction"]["compactAtSource"] == "default" and state["instructions"] == []
    # A changed system prompt (plan mode adds to it) is not in the provider's count: estimated again.
    await client.request("agent/setApprovalMode", {"sessionId": session, "mode": "plan"})
    planned = (await client.request("agent/getState", {"sessionId": session}))["contextUsage"]
    assert planned["source"] == "estimate" and planned["tokens"] != 1230


# --- reloaded ------------------------------------------------------------------------------


async def test_compactions_and_settings_come_back_with_a_reloaded_session(start_tiller, tmp_path):
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("One.")), Reply(chunks=openai_text("Two.")),
                     summary_reply("## Goal\nCount."), Reply(chunks=openai_text("Three.")))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/test-model"})
        session = await client.new_session(tools=[])
        settings = await client.request("agent/setCompaction", {"sessionId": session, "keepRecentTokens": 1,
                                                                "compactAt": "60%", "auto": False})
        await client.prompt(session, "First").result()
        await client.prompt(session, "Second").result()
        compaction = await client.request("agent/compact", {"sessionId": session})
        await client.request("agent/closeSession", {"sessionId": session})

        await client.request("agent/loadSession", {"sessionId": session})
        state = await client.request("agent/getState", {"sessionId": session})
        assert state["compactions"] == [compaction] and state["compaction"] == settings
        assert settings["compactAt"] == int(32_768 * 0.6) and settings["compactAtSource"] == "session"
        await client.prompt(session, "Third").result()
    assert texts(server.requests[3].json["messages"])[1:] == [
        f"{SUMMARY_PREFIX}\n\n<summary>\n## Goal\nCount.\n</summary>", "Two.", "Third"]


# --- with rewinds, prompts and reloads -----------------------------------------------------


async def test_a_rewind_behind_a_compaction_undoes_it_also_after_a_reload(start_tiller, tmp_path):
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("One.")), Reply(chunks=openai_text("Two.")),
                     Reply(chunks=openai_text("Three.")), summary_reply("## Goal\nCount to three."),
                     Reply(chunks=openai_text("Again.")), Reply(chunks=openai_text("Reloaded.")))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/test-model"})
        session = await client.new_session(tools=["read", "bash"], approvalMode="yolo")  # checkpoints recorded
        await client.request("agent/setCompaction", {"sessionId": session, "keepRecentTokens": 1})
        for text in ("First", "Second", "Third"):
            await client.prompt(session, text).result()
        compaction = await client.request("agent/compact", {"sessionId": session})
        assert compaction["firstKeptIndex"] == 5
        checkpoints = (await client.request("agent/listCheckpoints", {"sessionId": session}))["checkpoints"]
        second = next(c for c in checkpoints if c["title"] == "Second")

        done = await client.request("agent/rewind", {"sessionId": session, "checkpointId": second["checkpointId"],
                                                     "restore": "conversation"})
        assert done["messageCount"] == 2
        # The summary stood for messages the rewind dropped: it is undone, and said so.
        assert client.events_of(session, "compaction_undone") == [{"type": "compaction_undone",
                                                                   "compactionId": compaction["id"]}]
        assert (await client.request("agent/getState", {"sessionId": session}))["compactions"] == []
        await client.prompt(session, "Again").result()
        assert texts(server.requests[4].json["messages"])[1:] == ["First", "One.", "Again"]

        await client.request("agent/closeSession", {"sessionId": session})
        await client.request("agent/loadSession", {"sessionId": session})
        state = await client.request("agent/getState", {"sessionId": session})
        assert state["compactions"] == [] and len(state["messages"]) == 4
        await client.prompt(session, "Reloaded?").result()
        assert texts(server.requests[5].json["messages"])[1:] == ["First", "One.", "Again", "Again.", "Reloaded?"]


async def test_a_prompt_sent_while_compacting_runs_after_the_compaction(start_tiller, tmp_path):
    with GatedSSEServer() as server:
        server.reply(Reply(chunks=openai_text("One.")), Reply(chunks=openai_text("Two.")),
                     Reply(chunks=[HOLD, *openai_text("## Goal\nCount.")]), Reply(chunks=openai_text("Three.")),
                     Reply(chunks=openai_text("Four.")))
        client = await start_tiller(env=openai_env(server) | {"TILLER_MODEL": "openai/test-model"})
        session = await two_turns(client)

        compacting = client.send("agent/compact", {"sessionId": session})
        await server.wait_for_requests(3)
        prompt = client.prompt(session, "Third")
        state = await client.request("agent/getState", {"sessionId": session})
        assert state["isCompacting"] is True and state["isStreaming"] is False and len(state["messages"]) == 4
        server.release()
        compaction = await compacting.result()
        assert (await prompt.result())["stopReason"] == "stop"
        assert compaction["firstKeptIndex"] == 3
        # The run started from the compacted context, and its events follow the compaction's.
        assert texts(server.requests[3].json["messages"])[1:] == [
            f"{SUMMARY_PREFIX}\n\n<summary>\n## Goal\nCount.\n</summary>", "Two.", "Third"]
        kinds = [n["event"]["type"] for n in client.session_events(session)]
        assert kinds.index("compaction_end") < kinds.index("agent_start", kinds.index("compaction_start"))

        await client.request("agent/closeSession", {"sessionId": session})
        await client.request("agent/loadSession", {"sessionId": session})
        state = await client.request("agent/getState", {"sessionId": session})
        assert [c["firstKeptIndex"] for c in state["compactions"]] == [3]  # not moved by the prompt
        await client.prompt(session, "Fourth").result()
        assert texts(server.requests[4].json["messages"])[1:] == [
            f"{SUMMARY_PREFIX}\n\n<summary>\n## Goal\nCount.\n</summary>", "Two.", "Third", "Three.", "Fourth"]
