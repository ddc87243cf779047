"""The google-generative-ai provider against a real loopback server speaking Gemini's
`streamGenerateContent?alt=sse` (see tests/support/gemini_wire.py for the byte format)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.gemini_wire import chunk, function_call, text_reply
from tests.support.provider_streams import ProviderCalls, final, hello_context, types
from tests.support.sse_server import Reply, SSEServer
from tiller.ai.options import StreamOptions
from tiller.ai.providers import google
from tiller.ai.providers.google import build_request, stream
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

KEY = "AIzaSy-test-secret-0123456789"
SIGNATURE = "CiQB0e2Kb7xPmN3signed-reasoning=="
READ_TOOL = Tool(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"],
                "additionalProperties": False},
)


def gemini(server: SSEServer, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "gemini-2.5-pro", "name": "Gemini 2.5 Pro", "api": "google-generative-ai", "provider": "google",
        "base_url": server.url + "/v1beta", "reasoning": True, "input": ["text", "image"], "max_tokens": 65_536,
        "cost": {"input": 1.25, "output": 10.0, "cacheRead": 0.125},
    }
    return Model(**{**fields, **overrides})


CALLS = ProviderCalls(stream, KEY)
options, run = CALLS.options, CALLS.run


def thoughts_then_call() -> bytes:
    return b"".join([
        chunk([{"text": "**Planning** the read", "thought": True}], thoughts=20),
        chunk([{"text": ". Then answer.", "thought": True}], thoughts=31),
        chunk([function_call("read", {"path": "README.md"}, SIGNATURE)], finish="STOP", output=7, thoughts=31,
              prompt=120, cached=100),
    ])


# --- streams --------------------------------------------------------------------------


async def test_text_with_usage(server: SSEServer) -> None:
    server.reply(Reply(chunks=[text_reply("Hello", " world")]))
    events = await run(gemini(server))

    assert types(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    message = final(events)
    assert events[-1].reason == "stop" and message.text() == "Hello world"
    assert message.usage.model_dump(exclude={"cost"}) == Usage(
        input=9, output=2, cache_read=0, cache_write=0, total_tokens=11).model_dump(exclude={"cost"})

    request = server.requests[0]
    assert (request.path, request.query) == ("/v1beta/models/gemini-2.5-pro:streamGenerateContent", "alt=sse")
    assert request.headers["x-goog-api-key"] == KEY and "authorization" not in request.headers
    body = request.json
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]
    assert body["generationConfig"] == {"maxOutputTokens": 32_000, "thinkingConfig": {"includeThoughts": True}}


async def test_thoughts_and_a_function_call(server: SSEServer) -> None:
    server.reply(Reply(chunks=[thoughts_then_call()]))
    events = await run(gemini(server), Context(messages=[UserMessage(content="Read")], tools=[READ_TOOL]),
                       options(reasoning="medium"))

    assert types(events) == ["start", "thinking_start", "thinking_delta", "thinking_delta", "thinking_end",
                             "toolcall_start", "toolcall_delta", "toolcall_end", "done"]
    message = final(events)
    assert events[-1].reason == "toolUse"
    thinking, call = message.content
    assert thinking == ThinkingContent(thinking="**Planning** the read. Then answer.")
    assert isinstance(call, ToolCall) and (call.name, call.arguments) == ("read", {"path": "README.md"})
    assert call.thought_signature == SIGNATURE and call.id.startswith("call_")
    assert (message.usage.input, message.usage.cache_read, message.usage.output) == (20, 100, 38)

    body = server.requests[0].json
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 8192}
    assert body["tools"] == [{"functionDeclarations": [
        {"name": "read", "description": "Read a file", "parametersJsonSchema": READ_TOOL.parameters}]}]


async def test_signed_calls_and_results_go_back(server: SSEServer) -> None:
    server.reply(Reply(chunks=[thoughts_then_call()]), Reply(chunks=[text_reply("It says hi.")]))
    model = gemini(server)
    first = final(await run(model, Context(messages=[UserMessage(content="Read")], tools=[READ_TOOL])))
    call = first.tool_calls()[0]
    results = [ToolResultMessage(tool_call_id=call.id, tool_name="read", content=[TextContent(text="hi")]),
               ToolResultMessage(tool_call_id="other", tool_name="read", content=[TextContent(text="no such file")],
                                 is_error=True)]
    await run(model, Context(messages=[UserMessage(content="Read"), first, *results], tools=[READ_TOOL]))

    contents = server.requests[1].json["contents"]
    # Unsigned thoughts are not sent back; the signed call is, with its signature.
    assert contents[1] == {"role": "model", "parts": [
        {"functionCall": {"name": "read", "args": {"path": "README.md"}}, "thoughtSignature": SIGNATURE}]}
    assert contents[2] == {"role": "user", "parts": [
        {"functionResponse": {"name": "read", "response": {"output": "hi"}}},
        {"functionResponse": {"name": "read", "response": {"error": "no such file"}}},
    ]}


def test_gemini_3_levels_and_calls_from_other_models() -> None:
    model = Model(id="gemini-3-pro-preview", name="g3", api="google-generative-ai", provider="google", reasoning=True)
    other = AssistantMessage(api="openai-responses", provider="openai", model="gpt-5", stop_reason="toolUse",
                             content=[ToolCall(id="call_1", name="read", arguments={}, thought_signature="fc_1")])
    result = ToolResultMessage(tool_call_id="call_1", tool_name="read", content=[TextContent(text="x")])
    body = build_request(model, Context(messages=[UserMessage(content="go"), other, result]),
                         StreamOptions(api_key=KEY, reasoning="minimal")).body
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingLevel": "low"}
    # Another model's call has no Gemini signature; Gemini 3 is told to skip the check.
    assert body["contents"][1]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"


async def test_split_into_small_tcp_chunks(server: SSEServer) -> None:
    data = thoughts_then_call()
    server.reply(Reply(chunks=[piece for i in range(0, len(data), 5) for piece in (data[i:i + 5], 0.0)]))
    message = final(await run(gemini(server)))
    assert message.stop_reason == "toolUse" and message.tool_calls()[0].arguments == {"path": "README.md"}


async def test_images_inline(server: SSEServer) -> None:
    server.reply(Reply(chunks=[text_reply("A cat.")]))
    image = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
    await run(gemini(server), Context(messages=[UserMessage(content=[TextContent(text="Look"), image])]))
    assert server.requests[0].json["contents"][0]["parts"] == [
        {"text": "Look"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]


# --- endings and errors -----------------------------------------------------------------


async def test_max_tokens_is_length(server: SSEServer) -> None:
    server.reply(Reply(chunks=[chunk([{"text": "Trunc"}], finish="MAX_TOKENS", output=1)]))
    events = await run(gemini(server))
    assert events[-1].type == "done" and events[-1].reason == "length"


async def test_safety_stop_is_a_clear_error(server: SSEServer) -> None:
    server.reply(Reply(chunks=[chunk([{"text": "Some"}]), chunk([], finish="SAFETY")]))
    message = final(await run(gemini(server)))
    assert message.stop_reason == "error" and message.text() == "Some"
    assert message.error_message == "Gemini stopped (SAFETY): the answer was blocked by Gemini's safety filters"


async def test_blocked_prompt_is_a_clear_error(server: SSEServer) -> None:
    blocked = (b'data: {"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":'
               b'8,"totalTokenCount":8},"modelVersion":"gemini-2.5-pro","responseId":"x"}\r\n\r\n')
    server.reply(Reply(chunks=[blocked]))
    events = await run(gemini(server))
    assert types(events) == ["start", "error"]
    assert final(events).error_message == "Gemini blocked the prompt: PROHIBITED_CONTENT"


async def test_429_with_retry_after_then_success(server: SSEServer) -> None:
    exhausted = {"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                           "status": "RESOURCE_EXHAUSTED"}}
    server.reply(Reply.json(429, exhausted, headers={"retry-after": "0"}), Reply(chunks=[text_reply("ok")]))
    events = await run(gemini(server))
    assert final(events).text() == "ok" and len(server.requests) == 2


async def test_retry_info_in_the_body_is_honoured(server: SSEServer) -> None:
    # Gemini says how long to wait in the error body (RetryInfo), not in a header.
    exhausted = {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED", "details": [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "42s"}]}}
    server.reply(Reply.json(429, exhausted))
    message = final(await run(gemini(server), opts=options(max_retry_delay_ms=5_000))).error_message
    assert message == ("429 Too Many Requests: Quota exceeded (the server asked to wait 42 s before retrying, "
                       "which exceeds the limit of 5 s)")
    assert len(server.requests) == 1


async def test_error_body_and_in_stream_error(server: SSEServer) -> None:
    server.reply(
        Reply.json(400, {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                   "status": "INVALID_ARGUMENT"}}),
        Reply(chunks=[chunk([{"text": "Hi"}]),
                      b'data: {"error":{"code":500,"message":"Internal error","status":"INTERNAL"}}\r\n\r\n']),
    )
    assert final(await run(gemini(server))).error_message == (
        "400 Bad Request: API key not valid. Please pass a valid API key.")
    message = final(await run(gemini(server)))
    assert (message.error_message, message.text()) == ("Internal error", "Hi")


async def test_cut_streams_are_errors(server: SSEServer) -> None:
    partial = [chunk([{"text": "Partial"}], output=1)]
    server.reply(Reply(chunks=[*partial, 0.05], reset=True), Reply(chunks=partial))
    reset = final(await run(gemini(server)))
    assert reset.error_message.startswith("Connection lost while streaming the response") and reset.text() == "Partial"
    ended = final(await run(gemini(server)))
    assert (ended.stop_reason, ended.error_message) == ("error", "The stream ended before the response was complete")


async def test_no_key_for_google_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)  # never read: keys come from the catalogue
    model = Model(id="gemini-2.5-pro", name="g", api="google-generative-ai", provider="google",
                  base_url="https://generativelanguage.googleapis.com/v1beta")
    events = [e async for e in stream(model, hello_context(), StreamOptions())]
    assert types(events) == ["error"] and final(events).error_message == "No API key for provider: google"


def test_the_module_is_registered_for_its_api() -> None:
    from tiller.ai.registry import get_stream_fn

    assert get_stream_fn("google-generative-ai") is google.stream
