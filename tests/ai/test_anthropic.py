"""The anthropic-messages provider against a real loopback server speaking Anthropic's SSE.

Anthropic names every event twice (`event:` line and the `type` in the data) and numbers
content blocks with its own `index`; the fixtures below are written as its API sends them.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.support.anthropic_wire import block_start, block_stop, delta, message_end, message_start, text_block
from tests.support.provider_streams import ProviderCalls, final, types
from tests.support.sse_server import Reply, SSEServer
from tiller.ai.abort import AbortSignal
from tiller.ai.options import StreamOptions
from tiller.ai.providers import anthropic
from tiller.ai.providers.anthropic import stream
from tiller.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

KEY = "sk-ant-test-secret-0123456789"

HELLO_STREAM = (
    b"event: message_start\n"
    b'data: {"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message",'
    b'"role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,'
    b'"usage":{"input_tokens":25,"cache_creation_input_tokens":10,"cache_read_input_tokens":100,'
    b'"output_tokens":1}}}\n\n'
    b"event: content_block_start\n"
    b'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    b"event: ping\n"
    b'data: {"type": "ping"}\n\n'
    b"event: content_block_delta\n"
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}\n\n'
    b"event: content_block_delta\n"
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there"}}\n\n'
    b"event: content_block_stop\n"
    b'data: {"type":"content_block_stop","index":0}\n\n'
    b"event: message_delta\n"
    b'data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},'
    b'"usage":{"output_tokens":15}}\n\n'
    b"event: message_stop\n"
    b'data: {"type":"message_stop"}\n\n'
)


def claude(server: SSEServer, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "claude-test",
        "name": "Claude Test",
        "api": "anthropic-messages",
        "provider": "anthropic",
        "base_url": server.url,
        "max_tokens": 30_000,
    }
    return Model(**{**fields, **overrides})


CALLS = ProviderCalls(stream, KEY)
options, run = CALLS.options, CALLS.run


# --- streams --------------------------------------------------------------------------


async def test_text_with_usage_and_ping(server: SSEServer) -> None:
    server.reply(Reply(chunks=[HELLO_STREAM]))
    events = await run(claude(server))

    assert types(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert events[-2].content == "Hello there"
    message = final(events)
    assert events[-1].reason == "stop"
    assert message.content == [TextContent(text="Hello there")]
    # message_start's input/cache figures survive; message_delta updates the output.
    assert message.usage.model_dump(exclude={"cost"}) == Usage(
        input=25, output=15, cache_read=100, cache_write=10, total_tokens=150
    ).model_dump(exclude={"cost"})

    request = server.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers


async def test_thinking_with_signature_and_redacted_thinking(server: SSEServer) -> None:
    server.reply(Reply(chunks=[
        message_start(),
        block_start(0, {"type": "thinking", "thinking": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "Let me "}),
        delta(0, {"type": "thinking_delta", "thinking": "see."}),
        delta(0, {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}),
        delta(0, {"type": "signature_delta", "signature": "1gbcDa9GJwZA"}),
        block_stop(0),
        block_start(1, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}),
        block_stop(1),
        *text_block(2, "Done."),
        message_end("end_turn"),
    ]))
    events = await run(claude(server, reasoning=True), opts=options(reasoning="medium"))

    assert types(events) == [
        "start", "thinking_start", "thinking_delta", "thinking_delta", "thinking_end",
        "thinking_start", "thinking_end", "text_start", "text_delta", "text_end", "done",
    ]
    assert final(events).content == [
        ThinkingContent(thinking="Let me see.", thinking_signature="EqQBCgIYAhIM1gbcDa9GJwZA"),
        ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="EmwKAhgBEgy3va3pzix/LafPsn4a",
                        redacted=True),
        TextContent(text="Done."),
    ]
    body = server.requests[0].json
    # medium = 8192 tokens of thinking on top of the default max_tokens (30000 // 3).
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert body["max_tokens"] == 10_000 + 8192


async def test_tool_use_blocks_by_anthropic_index(server: SSEServer) -> None:
    server.reply(Reply(chunks=[
        message_start(),
        *text_block(0, "Checking."),
        block_start(1, {"type": "tool_use", "id": "toolu_01A", "name": "read", "input": {}}),
        delta(1, {"type": "input_json_delta", "partial_json": ""}),
        delta(1, {"type": "input_json_delta", "partial_json": '{"path": "a'}),
        delta(1, {"type": "input_json_delta", "partial_json": '.txt"}'}),
        block_stop(1),
        block_start(2, {"type": "tool_use", "id": "toolu_01B", "name": "ls", "input": {}}),
        block_stop(2),
        message_end("tool_use"),
    ]))
    events: list[Any] = []
    partial_args: list[dict[str, Any]] = []  # the partial is mutated: snapshot it as it streams
    async for e in stream(claude(server), Context(messages=[UserMessage(content="Hi")]), options()):
        events.append(e)
        if e.type == "toolcall_delta":
            partial_args.append(dict(e.partial.content[e.content_index].arguments))

    assert events[-1].type == "done" and events[-1].reason == "toolUse"
    assert final(events).content == [
        TextContent(text="Checking."),
        ToolCall(id="toolu_01A", name="read", arguments={"path": "a.txt"}),
        ToolCall(id="toolu_01B", name="ls", arguments={}),
    ]
    assert partial_args == [{}, {"path": "a"}, {"path": "a.txt"}]  # best-effort parse while streaming
    assert [(e.content_index, e.tool_call.id) for e in events if e.type == "toolcall_end"] == [
        (1, "toolu_01A"), (2, "toolu_01B"),
    ]


async def test_split_utf8_and_split_event_across_tcp_chunks(server: SSEServer) -> None:
    line = delta(0, {"type": "text_delta", "text": "naïve 🙂"})
    cut_char = line.index("ï".encode()) + 1
    cut_emoji = line.index("🙂".encode()) + 2
    server.reply(Reply(chunks=[
        message_start(), block_start(0, {"type": "text", "text": ""}),
        line[:cut_char], 0.02, line[cut_char:cut_emoji], 0.02, line[cut_emoji:],
        block_stop(0), message_end("end_turn"),
    ]))
    assert final(await run(claude(server))).text() == "naïve 🙂"


@pytest.mark.parametrize(
    ("stop_reason", "outcome"),
    [("max_tokens", ("done", "length")), ("stop_sequence", ("done", "stop")), ("pause_turn", ("done", "stop")),
     ("refusal", ("error", "error"))],
)
async def test_stop_reasons(server: SSEServer, stop_reason: str, outcome: tuple[str, str]) -> None:
    server.reply(Reply(chunks=[message_start(), *text_block(0, "x"), message_end(stop_reason)]))
    events = await run(claude(server))
    assert (events[-1].type, events[-1].reason) == outcome
    if outcome[0] == "error":
        assert final(events).error_message == f"Provider stop_reason: {stop_reason}"
        assert final(events).text() == "x"


async def test_mid_stream_error_event(server: SSEServer) -> None:
    server.reply(Reply(chunks=[
        message_start(),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "Part"}),
        b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n',
    ]))
    events = await run(claude(server))

    assert events[-1].type == "error" and events[-1].reason == "error"
    message = final(events)
    assert message.error_message == "overloaded_error: Overloaded"
    assert message.text() == "Part"
    assert message.usage.input == 10
    assert len(server.requests) == 1  # the body had started: no retry


async def test_a_stream_without_message_stop_or_stop_reason_is_cut(server: SSEServer) -> None:
    server.reply(Reply(chunks=[message_start(), block_start(0, {"type": "text", "text": ""}),
                               delta(0, {"type": "text_delta", "text": "Half"})]),
                 # A compatible server that omits message_stop but sent the stop_reason: complete.
                 Reply(chunks=[message_start(), *text_block(0, "ok"), message_end("end_turn").split(b"event: message_stop")[0]]))
    cut = final(await run(claude(server)))
    assert (cut.stop_reason, cut.error_message) == ("error", "The stream ended before the response was complete")
    assert cut.text() == "Half"
    whole = final(await run(claude(server)))
    assert (whole.stop_reason, whole.text()) == ("stop", "ok")


async def test_malformed_json_is_an_error_event(server: SSEServer) -> None:
    server.reply(Reply(chunks=[message_start(), b"event: content_block_start\ndata: {\"type\": \"content_bl\n\n"]))
    events = await run(claude(server))
    assert events[-1].type == "error"
    assert final(events).error_message.startswith("Malformed JSON in stream event: ")


# --- HTTP failures ----------------------------------------------------------------------


def anthropic_error(status: int, kind: str, message: str, **headers: str) -> Reply:
    return Reply.json(status, {"type": "error", "error": {"type": kind, "message": message}}, headers=headers)


async def test_401_shows_the_vendor_message_without_the_key(server: SSEServer) -> None:
    server.reply(anthropic_error(401, "authentication_error", f"invalid x-api-key {KEY}"))
    events = await run(claude(server))
    assert types(events) == ["error"]
    message = final(events).error_message
    assert message == "401 Unauthorized: invalid x-api-key ***"
    assert KEY not in message


async def test_overloaded_529_is_retried(server: SSEServer) -> None:
    server.reply(anthropic_error(529, "overloaded_error", "Overloaded", **{"retry-after": "0"}),
                 Reply(chunks=[HELLO_STREAM]))
    events = await run(claude(server))
    assert events[-1].type == "done"
    assert len(server.requests) == 2


async def test_x_should_retry_false_is_respected(server: SSEServer) -> None:
    server.reply(anthropic_error(500, "api_error", "Internal error", **{"x-should-retry": "false"}),
                 Reply(chunks=[HELLO_STREAM]))
    events = await run(claude(server))
    assert final(events).error_message == "500 Internal Server Error: Internal error"
    assert len(server.requests) == 1


async def test_missing_key_is_an_error_event(server: SSEServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    events = await run(claude(server), opts=StreamOptions())
    assert types(events) == ["error"]
    assert final(events).error_message == "No API key for provider: anthropic"
    assert server.requests == []


async def test_the_provider_never_reads_a_key_from_the_environment(
    server: SSEServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Keys come from the model catalogue in StreamOptions.api_key, nowhere else.
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    events = await run(claude(server), opts=StreamOptions())
    assert final(events).error_message == "No API key for provider: anthropic"
    assert server.requests == []


async def test_abort_mid_stream(server: SSEServer) -> None:
    server.reply(Reply(chunks=[message_start(), block_start(0, {"type": "text", "text": ""}),
                               delta(0, {"type": "text_delta", "text": "Hel"})], stall=True))
    signal = AbortSignal()
    events: list[Any] = []

    async def consume() -> None:
        async for e in stream(claude(server), Context(messages=[UserMessage(content="Hi")]), options(signal=signal)):
            events.append(e)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(consume)
            while not any(e.type == "text_delta" for e in events):
                await anyio.sleep(0.01)
            signal.abort()

    assert types(events) == ["start", "text_start", "text_delta", "error"]
    assert events[-1].reason == "aborted"
    assert final(events).text() == "Hel"
    assert await anyio.to_thread.run_sync(server.requests[0].disconnected.wait, 5)


# --- the request ------------------------------------------------------------------------


def assistant(content: list[Any], stop_reason: str = "toolUse", model: str = "claude-test") -> AssistantMessage:
    return AssistantMessage(api="anthropic-messages", provider="anthropic", model=model,
                            content=content, stop_reason=stop_reason)


async def test_request_body_shape(server: SSEServer) -> None:
    server.reply(Reply(chunks=[HELLO_STREAM]))
    tool = Tool(name="read", description="Read a file", parameters={"type": "object", "properties": {}})
    history = [
        UserMessage(content=[TextContent(text="Look"), TextContent(text="  "),
                             ImageContent(data="AAAA", mime_type="image/jpeg")]),
        assistant([
            ThinkingContent(thinking="Plan.", thinking_signature="sig-1"),
            ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="opaque", redacted=True),
            ThinkingContent(thinking="Cut short, unsigned."),
            TextContent(text=" "),
            ToolCall(id="toolu_1", name="read", arguments={"path": "a"}),
            ToolCall(id="toolu_2", name="read", arguments={"path": "b"}),
        ]),
        ToolResultMessage(tool_call_id="toolu_1", tool_name="read", content=[TextContent(text="A")]),
        ToolResultMessage(tool_call_id="toolu_2", tool_name="read", content=[TextContent(text="no such file")],
                          is_error=True),
        assistant([TextContent(text="broken")], stop_reason="error"),
        UserMessage(content="   "),
        assistant([ToolCall(id="toolu_3", name="read", arguments={})]),
        UserMessage(content="Go on."),
    ]
    context = Context(system_prompt="Be brief.", messages=history, tools=[tool])
    await run(claude(server, input=["text", "image"]), context, options(temperature=0.5, max_tokens=999))

    body = server.requests[0].json
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [
        {"role": "user", "content": [
            {"type": "text", "text": "Look"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "AAAA"}},
        ]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Plan.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Cut short, unsigned."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
            {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "b"}},
        ]},
        # Consecutive tool results: one user message.
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "A", "is_error": False},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file", "is_error": True},
        ]},
        # The errored turn and the blank user message are gone.
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_3", "name": "read", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_3", "content": "No result provided", "is_error": True},
        ]},
        {"role": "user", "content": [{"type": "text", "text": "Go on.", "cache_control": {"type": "ephemeral"}}]},
    ]
    assert body["tools"] == [{"name": "read", "description": "Read a file", "input_schema": tool.parameters}]
    assert body["max_tokens"] == 999
    assert body["temperature"] == 0.5
    assert body["stream"] is True and body["model"] == "claude-test"
    assert "thinking" not in body  # not a reasoning model


async def test_thinking_budget_is_capped_by_the_model(server: SSEServer) -> None:
    server.reply(Reply(chunks=[HELLO_STREAM]))
    model = claude(server, reasoning=True, max_tokens=12_000)
    await run(model, opts=options(reasoning="high", temperature=0.3))
    body = server.requests[0].json
    # 4000 + 16384 is capped at 12000; the budget must stay below it.
    assert body["max_tokens"] == 12_000
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 12_000 - 1024}
    assert "temperature" not in body  # Anthropic accepts none with thinking on


async def test_tool_result_images_become_blocks(server: SSEServer) -> None:
    server.reply(Reply(chunks=[HELLO_STREAM]))
    history = [
        UserMessage(content="shot"),
        assistant([ToolCall(id="toolu_1", name="screenshot", arguments={})]),
        ToolResultMessage(tool_call_id="toolu_1", tool_name="screenshot",
                          content=[TextContent(text="here"), ImageContent(data="PNG", mime_type="image/png")]),
    ]
    await run(claude(server, input=["text", "image"]), Context(messages=history))
    [result] = server.requests[0].json["messages"][-1]["content"]
    assert result["content"] == [
        {"type": "text", "text": "here"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "PNG"}},
    ]
    assert result["cache_control"] == {"type": "ephemeral"}


def test_the_module_is_registered_for_its_api() -> None:
    from tiller.ai.registry import get_stream_fn

    assert get_stream_fn("anthropic-messages") is anthropic.stream
