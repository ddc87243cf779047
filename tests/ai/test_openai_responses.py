"""The openai-responses provider against a real loopback server speaking OpenAI's
Responses API SSE (see tests/support/responses_wire.py for the byte format)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.provider_streams import ProviderCalls, final, hello_context, types
from tests.support.responses_wire import ResponseStream, text_reply
from tests.support.sse_server import Reply, SSEServer
from tiller.ai.options import StreamOptions
from tiller.ai.providers import openai_responses
from tiller.ai.providers.openai_responses import build_request, stream
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

KEY = "sk-proj-test-secret-0123456789"
ENCRYPTED = "gAAAAABoxQ2v-encrypted-reasoning-state=="
READ_TOOL = Tool(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def gpt5(server: SSEServer, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "gpt-5", "name": "GPT-5", "api": "openai-responses", "provider": "openai",
        "base_url": server.url + "/v1", "reasoning": True, "input": ["text", "image"], "max_tokens": 128_000,
        "cost": {"input": 1.25, "output": 10.0, "cacheRead": 0.125},
    }
    return Model(**{**fields, **overrides})


CALLS = ProviderCalls(stream, KEY)
options, run = CALLS.options, CALLS.run


def thinking_then_call() -> bytes:
    """Reasoning (two summary paragraphs), then a function call: a turn that uses a tool."""
    s = ResponseStream()
    return b"".join([
        *s.created(),
        *s.reasoning(0, "rs_68c1a2", ["**Looking** at the file", "Reading it first"], ENCRYPTED),
        *s.function_call(1, "fc_68c1b3", "call_Ab12Cd34", "read", '{"path": "README.md"}'),
        s.completed(input_tokens=120, cached=100, output_tokens=48, reasoning_tokens=30),
    ])


# --- streams --------------------------------------------------------------------------


async def test_text_with_cached_usage(server: SSEServer) -> None:
    s = ResponseStream()
    server.reply(Reply(chunks=[b"".join([*s.created(), *s.message(0, "msg_01", ["Hel", "lo"]),
                                         s.completed(input_tokens=40, cached=32, output_tokens=5)])]))
    events = await run(gpt5(server))

    assert types(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    message = final(events)
    assert events[-1].reason == "stop" and message.text() == "Hello"
    assert message.content == [TextContent(text="Hello", text_signature="msg_01")]
    assert message.usage.model_dump(exclude={"cost"}) == Usage(
        input=8, output=5, cache_read=32, cache_write=0, total_tokens=45).model_dump(exclude={"cost"})
    assert message.usage.cost.total == pytest.approx((8 * 1.25 + 5 * 10.0 + 32 * 0.125) / 1_000_000)

    request = server.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/responses")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.json
    assert body["stream"] is True and body["store"] is False
    assert body["instructions"] == "Be brief."
    assert body["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}]
    assert body["max_output_tokens"] == 32_000  # min(model, 32k), as pi does
    assert body["include"] == ["reasoning.encrypted_content"]
    assert "reasoning" not in body  # no level asked: the model's default effort


async def test_reasoning_summaries_and_a_function_call(server: SSEServer) -> None:
    server.reply(Reply(chunks=[thinking_then_call()]))
    events = await run(gpt5(server), Context(messages=[UserMessage(content="Read the readme")], tools=[READ_TOOL]),
                       options(reasoning="medium", session_id="session-7"))

    assert types(events) == [
        "start", "thinking_start", "thinking_delta", "thinking_delta", "thinking_delta", "thinking_delta",
        "thinking_delta", "thinking_end", "toolcall_start", "toolcall_delta", "toolcall_delta", "toolcall_end", "done",
    ]
    message = final(events)
    assert events[-1].reason == "toolUse" and message.stop_reason == "toolUse"
    thinking, call = message.content
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking == "**Looking** at the file\n\nReading it first"
    item = json.loads(thinking.thinking_signature or "")
    assert (item["type"], item["id"], item["encrypted_content"]) == ("reasoning", "rs_68c1a2", ENCRYPTED)
    assert call == ToolCall(id="call_Ab12Cd34", name="read", arguments={"path": "README.md"},
                            thought_signature="fc_68c1b3")
    assert (message.usage.input, message.usage.cache_read, message.usage.output) == (20, 100, 48)

    body = server.requests[0].json
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["prompt_cache_key"] == "session-7"
    assert body["tools"] == [{"type": "function", "name": "read", "description": "Read a file",
                              "parameters": READ_TOOL.parameters, "strict": False}]


async def test_encrypted_reasoning_goes_back_before_the_call_it_led_to(server: SSEServer) -> None:
    server.reply(Reply(chunks=[thinking_then_call()]), Reply(chunks=[text_reply("It says hi.")]))
    model = gpt5(server)
    first = final(await run(model, Context(messages=[UserMessage(content="Read it")], tools=[READ_TOOL])))
    result = ToolResultMessage(tool_call_id="call_Ab12Cd34", tool_name="read",
                               content=[TextContent(text="hi")])
    history = [UserMessage(content="Read it"), first, result]
    events = await run(model, Context(messages=history, tools=[READ_TOOL]))
    assert final(events).text() == "It says hi."

    sent = server.requests[1].json["input"]
    assert sent[0] == {"role": "user", "content": [{"type": "input_text", "text": "Read it"}]}
    assert sent[1] == json.loads(first.content[0].thinking_signature)  # type: ignore[union-attr]
    assert sent[1]["encrypted_content"] == ENCRYPTED
    assert sent[2] == {"type": "function_call", "id": "fc_68c1b3", "call_id": "call_Ab12Cd34", "name": "read",
                       "arguments": '{"path": "README.md"}'}
    assert sent[3] == {"type": "function_call_output", "call_id": "call_Ab12Cd34", "output": "hi"}


def test_history_from_another_model_carries_no_openai_ids() -> None:
    other = AssistantMessage(
        api="anthropic-messages", provider="anthropic", model="claude-sonnet-4-5",
        content=[ThinkingContent(thinking="plan", thinking_signature="sig-anthropic"),
                 TextContent(text="Let me look."),
                 ToolCall(id="toolu_01|odd.id", name="read", arguments={"path": "a"})],
        stop_reason="toolUse",
    )
    result = ToolResultMessage(tool_call_id="toolu_01|odd.id", tool_name="read", content=[TextContent(text="x")])
    model = Model(id="gpt-5", name="g", api="openai-responses", provider="openai", reasoning=True)
    items = build_request(model, Context(messages=[UserMessage(content="go"), other, result]),
                          StreamOptions(api_key=KEY)).body["input"]
    assert items[1:] == [
        {"role": "assistant", "content": "plan"},
        {"role": "assistant", "content": "Let me look."},
        {"type": "function_call", "call_id": "toolu_01_odd_id", "name": "read", "arguments": '{"path": "a"}'},
        {"type": "function_call_output", "call_id": "toolu_01_odd_id", "output": "x"},
    ]


async def test_split_into_small_tcp_chunks(server: SSEServer) -> None:
    data = thinking_then_call()
    server.reply(Reply(chunks=[piece for i in range(0, len(data), 7) for piece in (data[i:i + 7], 0.0)]))
    message = final(await run(gpt5(server)))
    assert message.stop_reason == "toolUse"
    assert message.tool_calls()[0].arguments == {"path": "README.md"}


async def test_images_in_user_turns_and_tool_results(server: SSEServer) -> None:
    server.reply(Reply(chunks=[text_reply("A cat.")]))
    image = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
    call = AssistantMessage(api="openai-responses", provider="openai", model="gpt-5", stop_reason="toolUse",
                            content=[ToolCall(id="call_1", name="shot", arguments={})])
    history = [UserMessage(content=[TextContent(text="Look"), image]), call,
               ToolResultMessage(tool_call_id="call_1", tool_name="shot", content=[image])]
    await run(gpt5(server), Context(messages=history))
    sent = server.requests[0].json["input"]
    picture = {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    assert sent[0]["content"][1] == picture
    assert sent[2] == {"type": "function_call_output", "call_id": "call_1", "output": "(see attached image)"}
    assert sent[3] == {"role": "user", "content": [
        {"type": "input_text", "text": "Attached image(s) from tool result:"}, picture]}


# --- endings and errors -----------------------------------------------------------------


async def test_max_output_tokens_is_length(server: SSEServer) -> None:
    s = ResponseStream()
    server.reply(Reply(chunks=[*s.created(), *s.message(0, "msg_1", ["Trunc"]),
                               s.completed(status="incomplete", incomplete_details={"reason": "max_output_tokens"})]))
    events = await run(gpt5(server))
    assert events[-1].type == "done" and events[-1].reason == "length"


async def test_content_filter_is_an_error_that_keeps_the_text(server: SSEServer) -> None:
    s = ResponseStream()
    server.reply(Reply(chunks=[*s.created(), *s.message(0, "msg_1", ["Some"]),
                               s.completed(status="incomplete", incomplete_details={"reason": "content_filter"})]))
    message = final(await run(gpt5(server)))
    assert (message.stop_reason, message.error_message) == ("error", "The response is incomplete: content_filter")
    assert message.text() == "Some"


async def test_failed_response_and_error_event(server: SSEServer) -> None:
    s = ResponseStream()
    failed = s.completed(status="failed", error={"code": "server_error",
                                                 "message": "The model failed to generate a response."})
    server.reply(
        Reply(chunks=[*s.created(), failed]),
        Reply(chunks=[s.event("error", code="rate_limit_exceeded", message="Slow down", param=None)]),
    )
    assert final(await run(gpt5(server))).error_message == "The model failed to generate a response."
    assert final(await run(gpt5(server))).error_message == "rate_limit_exceeded: Slow down"


async def test_429_with_retry_after_then_success(server: SSEServer) -> None:
    server.reply(
        Reply.json(429, {"error": {"message": "Rate limit reached for gpt-5", "type": "requests",
                                   "code": "rate_limit_exceeded"}}, headers={"retry-after": "0"}),
        Reply(chunks=[text_reply("ok")]),
    )
    events = await run(gpt5(server))
    assert final(events).text() == "ok" and types(events)[0] == "start"
    assert len(server.requests) == 2


async def test_cut_streams_are_errors(server: SSEServer) -> None:
    s = ResponseStream()
    partial = [*s.created(), *s.message(0, "msg_1", ["Partial"])[:3]]
    server.reply(Reply(chunks=[*partial, 0.05], reset=True), Reply(chunks=partial))

    reset = final(await run(gpt5(server)))
    assert reset.stop_reason == "error" and reset.text() == "Partial"
    assert reset.error_message.startswith("Connection lost while streaming the response")
    # A body that simply ends before response.completed is no answer either.
    ended = final(await run(gpt5(server)))
    assert (ended.stop_reason, ended.error_message) == ("error", "The stream ended before the response was complete")
    assert ended.text() == "Partial"


async def test_401_without_the_key(server: SSEServer) -> None:
    server.reply(Reply.json(401, {"error": {"message": f"Incorrect API key provided: {KEY}.",
                                            "type": "invalid_request_error", "code": "invalid_api_key"}}))
    message = final(await run(gpt5(server))).error_message
    assert message == "401 Unauthorized: Incorrect API key provided: ***." and KEY not in message


async def test_no_key_for_openai_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # never read: keys come from the catalogue
    model = Model(id="gpt-5", name="g", api="openai-responses", provider="openai",
                  base_url="https://api.openai.com/v1")
    events = [e async for e in stream(model, hello_context(), StreamOptions())]
    assert types(events) == ["error"] and final(events).error_message == "No API key for provider: openai"


@pytest.mark.parametrize(("model_id", "level", "effort"), [
    ("gpt-5", "xhigh", "high"), ("gpt-5.1-codex-max", "xhigh", "xhigh"), ("gpt-5.2", "xhigh", "xhigh"),
    ("gpt-5.1-codex", "minimal", "low"), ("gpt-5", "minimal", "minimal"),
])
def test_reasoning_effort_per_model(model_id: str, level: str, effort: str) -> None:
    model = Model(id=model_id, name=model_id, api="openai-responses", provider="openai", reasoning=True)
    body = build_request(model, hello_context(), StreamOptions(api_key=KEY, reasoning=level)).body
    assert body["reasoning"]["effort"] == effort


def test_the_module_is_registered_for_its_api() -> None:
    from tiller.ai.registry import get_stream_fn

    assert get_stream_fn("openai-responses") is openai_responses.stream
