"""The issue's done criterion, end to end: with only a key in the environment, each
provider's current model is picked by name from the catalogue and an `Agent` streams a
reply that uses a tool, against a loopback server speaking that vendor's wire format.
The base URLs point at the loopback server; everything else is what a user would get."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.agent.helpers import echo_tool
from tests.support import anthropic_wire, gemini_wire
from tests.support.responses_wire import ResponseStream
from tests.support.responses_wire import text_reply as responses_text
from tests.support.sse_server import Reply, SSEServer
from tiller.agent import Agent
from tiller.ai.models import ModelCatalog
from tiller.ai.types import AssistantMessage, ToolResultMessage

KEY = "test-key-0123456789-never-shown"


def responses_turns() -> list[Reply]:
    s = ResponseStream()
    call = b"".join([*s.created(), *s.reasoning(0, "rs_1", ["Use the tool"], "gAAAA-enc"),
                     *s.function_call(1, "fc_1", "call_1", "echo", '{"value": "hi"}'),
                     s.completed(input_tokens=50, output_tokens=20)])
    return [Reply(chunks=[call]), Reply(chunks=[responses_text("Done.")])]


def anthropic_turns() -> list[Reply]:
    w = anthropic_wire
    call = b"".join([w.message_start(30), w.block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "echo",
                                                            "input": {}}),
                     w.delta(0, {"type": "input_json_delta", "partial_json": '{"value": "hi"}'}), w.block_stop(0),
                     w.message_end("tool_use")])
    done = b"".join([w.message_start(40), *w.text_block(0, "Done."), w.message_end("end_turn")])
    return [Reply(chunks=[call]), Reply(chunks=[done])]


def gemini_turns() -> list[Reply]:
    call = gemini_wire.chunk([gemini_wire.function_call("echo", {"value": "hi"}, "sig-1")], finish="STOP",
                             prompt=30, output=5)
    return [Reply(chunks=[call]), Reply(chunks=[gemini_wire.text_reply("Done.")])]


CASES = {
    # ref: (key variable, how the base URL is moved, the path called, the vendor's turns)
    "openai/gpt-5": ("OPENAI_API_KEY", "responses", "/v1/responses", responses_turns),
    "openai/gpt-5.1-codex": ("OPENAI_API_KEY", "responses", "/v1/responses", responses_turns),
    "anthropic/claude-opus-4-5": ("ANTHROPIC_API_KEY", "env", "/v1/messages", anthropic_turns),
    "google/gemini-2.5-pro": ("GEMINI_API_KEY", "toml", "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
                              gemini_turns),
}


def catalog_for(tmp_path: Path, ref: str, server: SSEServer, settings: str = "") -> ModelCatalog:
    """Only the key in the environment; the provider moved to `server`, plus `settings`
    (models.toml lines) for it."""
    variable, move, _, _ = CASES[ref]
    provider = ref.partition("/")[0]
    env = {"HOME": str(tmp_path), variable: KEY}
    toml = f"[providers.{provider}]\n{settings}"
    if move == "env":
        env["ANTHROPIC_BASE_URL"] = server.url
    elif move == "responses":  # moved OpenAI would speak chat completions unless told otherwise
        toml += f'baseUrl = "{server.url}/v1"\napi = "openai-responses"\n'
    else:
        toml += f'baseUrl = "{server.url}/v1beta"\n'
    path = tmp_path / "models.toml"
    path.write_text(toml)
    return ModelCatalog.load(env=env, config_path=path)


async def run_agent(catalog: ModelCatalog, ref: str) -> Agent:
    agent = Agent(get_api_key=catalog.api_key, get_stream_options=catalog.stream_options)
    agent.set_model(catalog.resolve(ref))
    agent.set_tools([echo_tool()])
    with anyio.fail_after(10):
        await agent.prompt("Echo hi, then say done.")
    return agent


@pytest.mark.parametrize("ref", list(CASES))
async def test_a_key_is_enough_to_run_a_tool_turn(tmp_path: Path, server: SSEServer, ref: str) -> None:
    _, _, path, turns = CASES[ref]
    server.reply(*turns())
    catalog = catalog_for(tmp_path, ref, server)
    agent = await run_agent(catalog, ref)

    messages = agent.state.messages
    calls, result, final = messages[1], messages[2], messages[3]
    assert isinstance(calls, AssistantMessage) and calls.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in calls.tool_calls()] == [("echo", {"value": "hi"})]
    assert isinstance(result, ToolResultMessage) and result.content[0].text == "echoed: hi"  # type: ignore[union-attr]
    assert isinstance(final, AssistantMessage) and (final.stop_reason, final.text()) == ("stop", "Done.")
    assert (final.provider, final.model) == tuple(ref.split("/", 1))
    # Prices from the dataset turn usage into cost.
    assert calls.usage.cost.total > 0

    assert [r.path for r in server.requests] == [path, path]
    first, second = server.requests
    assert KEY in (first.headers.get("authorization", "") + first.headers.get("x-api-key", "")
                   + first.headers.get("x-goog-api-key", ""))
    assert "echoed: hi" in second.body.decode()  # the tool result went back
    assert KEY not in json.dumps([m.dump() for m in messages])


SETTINGS = "maxRetries = 0\nidleTimeoutMs = 300\n"


async def test_max_retries_from_models_toml_reaches_the_call(tmp_path: Path, server: SSEServer) -> None:
    # Without the setting the 503 would be retried and the next reply would answer.
    server.reply(Reply.json(503, {"error": {"message": "overloaded"}}), Reply(chunks=[gemini_wire.text_reply("ok")]))
    catalog = catalog_for(tmp_path, "google/gemini-2.5-pro", server, SETTINGS)
    agent = await run_agent(catalog, "google/gemini-2.5-pro")
    assert len(server.requests) == 1
    assert agent.state.messages[-1].error_message == "503 Service Unavailable: overloaded"


async def test_idle_timeout_from_models_toml_reaches_the_call(tmp_path: Path, server: SSEServer) -> None:
    server.reply(Reply(chunks=[gemini_wire.chunk([{"text": "Thinking about"}])], stall=True))
    catalog = catalog_for(tmp_path, "google/gemini-2.5-pro", server, SETTINGS)
    agent = await run_agent(catalog, "google/gemini-2.5-pro")
    failed = agent.state.messages[-1]
    assert failed.error_message == "The server sent nothing for 0.3 s while streaming the response"
    assert failed.text() == "Thinking about"
