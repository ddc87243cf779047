"""The openai-completions provider against a real loopback server speaking OpenAI's SSE.

The wire bytes below are what OpenAI (and llama.cpp, ollama, DeepSeek) actually send:
`data: <chunk JSON>\\n\\n` lines and a final `data: [DONE]`. The shared HTTP plumbing
(retries, Retry-After, abort, error bodies) is exercised here too, through this provider.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import anyio
import httpx
import pytest

from tests.support.provider_streams import ProviderCalls, final, hello_context, types
from tests.support.sse_server import Reply, SSEServer
from tiller.ai.abort import AbortSignal
from tiller.ai.http import retry_after_seconds
from tiller.ai.options import StreamOptions
from tiller.ai.providers import openai_completions
from tiller.ai.providers.openai_completions import build_request, stream
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

KEY = "sk-test-secret-0123456789"
READ_TOOL = Tool(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)

# A complete answer, byte for byte as OpenAI streams it (role chunk, two content deltas,
# the finish chunk, then the usage-only chunk with empty `choices` that
# stream_options.include_usage adds, then [DONE]).
HELLO_STREAM = (
    b'data: {"id":"chatcmpl-A1","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o-mini",'
    b'"system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"role":"assistant","content":"",'
    b'"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}\n\n'
    b'data: {"id":"chatcmpl-A1","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o-mini",'
    b'"system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,'
    b'"finish_reason":null}],"usage":null}\n\n'
    b'data: {"id":"chatcmpl-A1","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o-mini",'
    b'"system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,'
    b'"finish_reason":null}],"usage":null}\n\n'
    b'data: {"id":"chatcmpl-A1","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o-mini",'
    b'"system_fingerprint":"fp_0ba0d124f1","choices":[{"index":0,"delta":{},"logprobs":null,'
    b'"finish_reason":"stop"}],"usage":null}\n\n'
    b'data: {"id":"chatcmpl-A1","object":"chat.completion.chunk","created":1730000000,"model":"gpt-4o-mini",'
    b'"system_fingerprint":"fp_0ba0d124f1","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":5,'
    b'"total_tokens":25,"prompt_tokens_details":{"cached_tokens":8,"audio_tokens":0},'
    b'"completion_tokens_details":{"reasoning_tokens":2,"audio_tokens":0}}}\n\n'
    b"data: [DONE]\n\n"
)
DONE = b"data: [DONE]\n\n"


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    """One `chat.completion.chunk` line in OpenAI's envelope."""
    body = {
        "id": "chatcmpl-B2",
        "object": "chat.completion.chunk",
        "created": 1730000000,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


def local_model(server: SSEServer, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "test-model",
        "name": "Test",
        "api": "openai-completions",
        "provider": "llamacpp",
        "base_url": server.url + "/v1",
        "max_tokens": 4096,
    }
    return Model(**{**fields, **overrides})


CALLS = ProviderCalls(stream, KEY)
options, run = CALLS.options, CALLS.run


# --- streams --------------------------------------------------------------------------


async def test_plain_text_with_usage_only_final_chunk(server: SSEServer) -> None:
    server.reply(Reply(chunks=[HELLO_STREAM]))
    events = await run(local_model(server))

    assert types(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hello", " world"]
    assert events[4].content == "Hello world"
    message = final(events)
    assert events[-1].reason == "stop" and message.stop_reason == "stop"
    assert message.content == [TextContent(text="Hello world")]
    # input excludes cached tokens; output adds reasoning tokens (pi's mapping).
    assert message.usage.model_dump(exclude={"cost"}) == Usage(
        input=12, output=7, cache_read=8, cache_write=0, total_tokens=27
    ).model_dump(exclude={"cost"})
    # Every event carries the same partial object.
    assert all(e.partial is message for e in events[:-1])

    request = server.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"


async def test_usage_prices_become_cost(server: SSEServer) -> None:
    server.reply(Reply(chunks=[HELLO_STREAM]))
    model = local_model(server, cost={"input": 1.0, "output": 2.0, "cacheRead": 0.5})
    usage = final(await run(model)).usage
    assert usage.cost.total == pytest.approx((12 * 1.0 + 7 * 2.0 + 8 * 0.5) / 1_000_000)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning", "reasoning_text"])
async def test_reasoning_fields_become_a_thinking_block(server: SSEServer, field: str) -> None:
    server.reply(
        Reply(
            chunks=[
                chunk({"role": "assistant", "content": None, field: "Let me"}),
                chunk({field: " think."}),
                chunk({"content": "Answer."}),
                chunk({}, "stop"),
                DONE,
            ]
        )
    )
    events = await run(local_model(server))

    assert types(events) == [
        "start", "thinking_start", "thinking_delta", "thinking_delta", "thinking_end",
        "text_start", "text_delta", "text_end", "done",
    ]
    assert final(events).content == [
        ThinkingContent(thinking="Let me think.", thinking_signature=field),
        TextContent(text="Answer."),
    ]


async def test_tool_call_arguments_stream_and_parse(server: SSEServer) -> None:
    server.reply(
        Reply(
            chunks=[
                chunk({"role": "assistant", "content": None, "tool_calls": [
                    {"index": 0, "id": "call_abc", "type": "function", "function": {"name": "read", "arguments": ""}}
                ]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"pa'}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'th": "a.txt"}'}}]}),
                chunk({}, "tool_calls"),
                DONE,
            ]
        )
    )
    events = await run(local_model(server), Context(messages=[UserMessage(content="read")], tools=[READ_TOOL]))

    assert types(events) == [
        "start", "toolcall_start", "toolcall_delta", "toolcall_delta", "toolcall_delta", "toolcall_end", "done",
    ]
    assert [e.delta for e in events if e.type == "toolcall_delta"] == ["", '{"pa', 'th": "a.txt"}']
    assert events[-2].tool_call == ToolCall(id="call_abc", name="read", arguments={"path": "a.txt"})
    assert events[-1].reason == "toolUse"
    assert server.requests[0].json["tools"] == [
        {"type": "function",
         "function": {"name": "read", "description": "Read a file", "parameters": READ_TOOL.parameters}}
    ]


async def test_interleaved_parallel_tool_calls_stay_separate(server: SSEServer) -> None:
    server.reply(
        Reply(
            chunks=[
                chunk({"content": "Reading both."}),
                chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                       "function": {"name": "read", "arguments": ""}}]}),
                chunk({"tool_calls": [{"index": 1, "id": "call_2", "type": "function",
                                       "function": {"name": "read", "arguments": ""}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path": '}}]}),
                chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"path": "b'}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"a"}'}}]}),
                chunk({"tool_calls": [{"index": 1, "function": {"arguments": '"}'}}]}),
                chunk({}, "tool_calls"),
                DONE,
            ]
        )
    )
    events = await run(local_model(server))

    message = final(events)
    assert message.content == [
        TextContent(text="Reading both."),
        ToolCall(id="call_1", name="read", arguments={"path": "a"}),
        ToolCall(id="call_2", name="read", arguments={"path": "b"}),
    ]
    # The text ends before the first call starts; both calls end, in content order.
    assert types(events)[:5] == ["start", "text_start", "text_delta", "text_end", "toolcall_start"]
    assert [(e.content_index, e.tool_call.id) for e in events if e.type == "toolcall_end"] == [
        (1, "call_1"), (2, "call_2"),
    ]
    deltas = [(e.content_index, e.delta) for e in events if e.type == "toolcall_delta" and e.delta]
    assert deltas == [(1, '{"path": '), (2, '{"path": "b'), (1, '"a"}'), (2, '"}')]


async def test_llama_cpp_legacy_function_call_delta(server: SSEServer) -> None:
    server.reply(
        Reply(
            chunks=[
                chunk({"role": "assistant", "content": None, "function_call": {"name": "read", "arguments": ""}}),
                chunk({"function_call": {"arguments": '{"path":'}}),
                chunk({"function_call": {"arguments": ' "x.py"}'}}),
                chunk({}, "function_call"),
                DONE,
            ]
        )
    )
    events = await run(local_model(server))

    message = final(events)
    assert events[-1].reason == "toolUse"
    [call] = message.tool_calls()
    assert (call.name, call.arguments) == ("read", {"path": "x.py"})
    assert call.id  # llama.cpp sends none; one is made up so a result can refer to it


async def test_multibyte_character_and_data_line_split_across_tcp_chunks(server: SSEServer) -> None:
    line = chunk({"content": "Grüße, 日本"})
    cut_char = line.index("ü".encode()) + 1  # between the two bytes of "ü"
    cut_json = line.index("日".encode()) + 2  # inside the three bytes of "日"
    server.reply(
        Reply(chunks=[line[:cut_char], 0.02, line[cut_char:cut_json], 0.02, line[cut_json:], chunk({}, "stop"), DONE])
    )
    message = final(await run(local_model(server)))
    assert message.stop_reason == "stop"
    assert message.text() == "Grüße, 日本"


async def test_crlf_line_endings_and_keepalive_comments(server: SSEServer) -> None:
    body = b": keep-alive\r\n\r\n" + chunk({"content": "ok"}).replace(b"\n", b"\r\n") + DONE
    server.reply(Reply(chunks=[body]))
    assert final(await run(local_model(server))).text() == "ok"


async def test_content_filter_ends_in_an_error_and_keeps_the_text(server: SSEServer) -> None:
    server.reply(Reply(chunks=[chunk({"content": "Part"}), chunk({}, "content_filter"), DONE]))
    events = await run(local_model(server))

    assert types(events) == ["start", "text_start", "text_delta", "text_end", "error"]
    assert events[-1].reason == "error"
    message = final(events)
    assert message.error_message == "Provider finish_reason: content_filter"
    assert message.text() == "Part"


async def test_unknown_finish_reason_is_an_error_not_a_crash(server: SSEServer) -> None:
    server.reply(Reply(chunks=[chunk({"content": "x"}, "eaten_by_a_grue"), DONE]))
    message = final(await run(local_model(server)))
    assert message.stop_reason == "error"
    assert message.error_message == "Provider finish_reason: eaten_by_a_grue"


async def test_length_finish_reason(server: SSEServer) -> None:
    server.reply(Reply(chunks=[chunk({"content": "trunc"}), chunk({}, "length"), DONE]))
    events = await run(local_model(server))
    assert events[-1].type == "done" and events[-1].reason == "length"


async def test_a_stream_that_ends_with_neither_finish_reason_nor_done_is_cut(server: SSEServer) -> None:
    server.reply(Reply(chunks=[chunk({"content": "Half an ans"})]),
                 Reply(chunks=[chunk({"content": "ok"}), chunk({}, "stop")]),  # no [DONE]: complete
                 Reply(chunks=[chunk({"content": "ok"}), DONE]))  # no finish_reason: complete
    cut = final(await run(local_model(server)))
    assert (cut.stop_reason, cut.error_message) == ("error", "The stream ended before the response was complete")
    assert cut.text() == "Half an ans"  # the partial text is kept
    for _ in range(2):
        whole = final(await run(local_model(server)))
        assert (whole.stop_reason, whole.text()) == ("stop", "ok")


async def test_malformed_json_in_a_data_line_is_an_error_event(server: SSEServer) -> None:
    server.reply(Reply(chunks=[chunk({"content": "Hi"}), b'data: {"choices": [{"delta": {"content": "x"\n\n', DONE]))
    events = await run(local_model(server))

    assert events[-1].type == "error" and events[-1].reason == "error"
    message = final(events)
    assert message.error_message.startswith("Malformed JSON in stream event: ")
    assert message.text() == "Hi"


async def test_error_object_inside_the_stream(server: SSEServer) -> None:
    server.reply(Reply(chunks=[
        b'data: {"error":{"code":500,"message":"Context size exceeded","type":"server_error"}}\n\n',
    ]))
    message = final(await run(local_model(server)))
    assert message.stop_reason == "error"
    assert message.error_message == "Context size exceeded"


async def test_a_200_that_is_not_an_event_stream(server: SSEServer) -> None:
    server.reply(Reply(status=200, chunks=[b'{"error": {"message": "streaming disabled"}}'],
                       headers={"content-type": "application/json"}))
    events = await run(local_model(server))
    assert types(events) == ["error"]
    assert final(events).error_message == "Expected an event stream but got application/json: streaming disabled"


# --- HTTP failures and retries ----------------------------------------------------------


def rate_limited(retry_after: str) -> Reply:
    return Reply.json(
        429,
        {"error": {"message": "Rate limit reached", "type": "requests", "param": None, "code": "rate_limit_exceeded"}},
        headers={"retry-after": retry_after},
    )


async def test_429_with_retry_after_then_success(server: SSEServer) -> None:
    server.reply(rate_limited("0"), Reply(chunks=[HELLO_STREAM]))
    events = await run(local_model(server))

    assert events[-1].type == "done" and final(events).text() == "Hello world"
    assert types(events)[0] == "start"  # no event came from the failed attempt
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body


async def test_500_then_success(server: SSEServer) -> None:
    server.reply(Reply.json(500, {"error": {"message": "boom"}}), Reply(chunks=[HELLO_STREAM]))
    events = await run(local_model(server))
    assert events[-1].type == "done"
    assert len(server.requests) == 2


async def test_retries_give_up_after_max_retries(server: SSEServer) -> None:
    server.reply(*[Reply.json(503, {"error": {"message": "Service is overloaded"}}) for _ in range(3)])
    events = await run(local_model(server), opts=options(max_retries=2))
    assert types(events) == ["error"]
    assert final(events).error_message == "503 Service Unavailable: Service is overloaded"
    assert len(server.requests) == 3


async def test_a_server_that_never_sends_headers_costs_the_timeout_once(server: SSEServer) -> None:
    # Retrying a silent server would multiply the wait by the number of attempts.
    server.reply(*[Reply(delay=5, chunks=[HELLO_STREAM]) for _ in range(4)])
    events = await run(local_model(server), opts=options(timeout_ms=300, max_retries=3))
    assert types(events) == ["error"]
    assert final(events).error_message == f"No response from {server.url}/v1/chat/completions within 0.3 s"
    assert len(server.requests) == 1


async def test_the_whole_retry_sequence_is_bounded_by_the_timeout(server: SSEServer) -> None:
    server.reply(*[Reply.json(503, {"error": {"message": "Service is overloaded"}}) for _ in range(4)])
    events = await run(local_model(server), opts=options(timeout_ms=1500, retry_base_delay_ms=1000, max_retries=3))
    assert types(events) == ["error"]
    assert final(events).error_message == (
        "503 Service Unavailable: Service is overloaded (no answer within 1.5 s, retries included)")
    assert len(server.requests) == 2  # after 1 s, a second try; waiting 2 s more would pass the deadline


async def test_retry_after_beyond_the_limit_fails_at_once(server: SSEServer) -> None:
    server.reply(rate_limited("120"), Reply(chunks=[HELLO_STREAM]))
    events = await run(local_model(server), opts=options(max_retry_delay_ms=5_000))

    assert types(events) == ["error"]
    assert final(events).error_message == (
        "429 Too Many Requests: Rate limit reached "
        "(the server asked to wait 120 s before retrying, which exceeds the limit of 5 s)"
    )
    assert len(server.requests) == 1


async def test_401_shows_the_vendor_message_without_the_key(server: SSEServer) -> None:
    # OpenAI echoes (part of) the key it rejected; the full key must never reach the user.
    server.reply(Reply.json(401, {"error": {
        "message": f"Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com.",
        "type": "invalid_request_error", "param": None, "code": "invalid_api_key",
    }}))
    events = await run(local_model(server))

    assert types(events) == ["error"]
    assert events[-1].reason == "error"
    message = final(events).error_message
    assert message.startswith("401 Unauthorized: Incorrect API key provided: ***.")
    assert KEY not in message
    assert len(server.requests) == 1  # a 401 is not retried


async def test_non_json_error_body_is_quoted(server: SSEServer) -> None:
    server.reply(Reply(status=404, chunks=[b"no such route"], headers={"content-type": "text/plain"}))
    assert final(await run(local_model(server))).error_message == "404 Not Found: no such route"


async def test_connection_reset_mid_stream_keeps_partial_text_and_does_not_retry(server: SSEServer) -> None:
    server.reply(Reply(chunks=[chunk({"role": "assistant", "content": "Partial"}), 0.1], reset=True),
                 Reply(chunks=[HELLO_STREAM]))
    events = await run(local_model(server))

    assert events[-1].type == "error" and events[-1].reason == "error"
    message = final(events)
    assert message.text() == "Partial"
    assert message.error_message.startswith("Connection lost while streaming the response")
    assert len(server.requests) == 1


async def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = Model(id="m", name="m", api="openai-completions", provider="llamacpp",
                  base_url=f"http://127.0.0.1:{port}/v1")
    events = await run(model, opts=options(max_retries=1))
    assert types(events) == ["error"]
    assert final(events).error_message.startswith("Connection error: ")


# --- abort ------------------------------------------------------------------------------


async def consume_and_abort_when(model: Model, signal: AbortSignal, ready: Any) -> list[Any]:
    """Consume the stream in one task; abort from another once `ready()` returns."""
    events: list[Any] = []

    async def consume() -> None:
        async for event in stream(model, hello_context(), options(signal=signal, retry_base_delay_ms=60_000)):
            events.append(event)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(consume)
            await ready(events)
            signal.abort()
    return events


async def test_abort_mid_stream_cancels_the_body(server: SSEServer) -> None:
    server.reply(Reply(chunks=[chunk({"role": "assistant", "content": "Hel"})], stall=True))

    async def first_delta(events: list[Any]) -> None:
        while not any(e.type == "text_delta" for e in events):
            await anyio.sleep(0.01)

    signal = AbortSignal()
    events = await consume_and_abort_when(local_model(server), signal, first_delta)

    assert types(events) == ["start", "text_start", "text_delta", "error"]
    assert events[-1].reason == "aborted"
    message = final(events)
    assert (message.stop_reason, message.error_message, message.text()) == ("aborted", "Request was aborted", "Hel")
    # The HTTP connection really went away.
    assert await anyio.to_thread.run_sync(server.requests[0].disconnected.wait, 5)


async def test_abort_while_waiting_for_headers(server: SSEServer) -> None:
    server.reply(Reply(delay=30, chunks=[HELLO_STREAM]))

    async def request_arrived(events: list[Any]) -> None:
        await server.wait_for_requests(1)

    events = await consume_and_abort_when(local_model(server), AbortSignal(), request_arrived)
    assert types(events) == ["error"]
    assert events[-1].reason == "aborted"
    assert await anyio.to_thread.run_sync(server.requests[0].disconnected.wait, 5)


async def test_abort_during_backoff_sleep(server: SSEServer) -> None:
    server.reply(Reply.json(500, {"error": {"message": "boom"}}), Reply(chunks=[HELLO_STREAM]))

    async def request_arrived(events: list[Any]) -> None:
        await server.wait_for_requests(1)
        await anyio.sleep(0.05)  # let the 500 arrive; the provider now sleeps 60 s

    events = await consume_and_abort_when(local_model(server), AbortSignal(), request_arrived)
    assert types(events) == ["error"] and events[-1].reason == "aborted"
    assert len(server.requests) == 1


async def test_already_aborted_signal_sends_nothing(server: SSEServer) -> None:
    signal = AbortSignal()
    signal.abort()
    events = await run(local_model(server), opts=options(signal=signal))
    assert types(events) == ["error"] and events[-1].reason == "aborted"
    assert server.requests == []


# --- the request ------------------------------------------------------------------------


def history() -> list[Any]:
    def assistant(content: list[Any], stop_reason: str = "toolUse", **kw: Any) -> AssistantMessage:
        return AssistantMessage(api="openai-completions", provider="llamacpp", model="test-model",
                                content=content, stop_reason=stop_reason, **kw)

    return [
        UserMessage(content=[TextContent(text="Look"), ImageContent(data="AAAA", mime_type="image/png")]),
        assistant([
            ThinkingContent(thinking="Need the file.", thinking_signature="reasoning_content"),
            TextContent(text="Reading"),
            TextContent(text=" it."),
            ToolCall(id="call_1", name="read", arguments={"path": "a.png"}),
            ToolCall(id="call_2", name="read", arguments={"path": "b.txt"}),
        ]),
        ToolResultMessage(tool_call_id="call_1", tool_name="read",
                          content=[ImageContent(data="BBBB", mime_type="image/png")]),
        ToolResultMessage(tool_call_id="call_2", tool_name="read", content=[TextContent(text="line1"),
                          TextContent(text="line2")], is_error=True),
        assistant([TextContent(text="half an answer")], stop_reason="error", error_message="boom"),
        assistant([TextContent(text="aborted")], stop_reason="aborted"),
        assistant([ThinkingContent(thinking="only thoughts", thinking_signature="reasoning")], stop_reason="stop"),
        UserMessage(content="And then?"),
        assistant([ToolCall(id="call_3", name="read", arguments={})]),
        UserMessage(content="Never mind."),
    ]


async def test_request_body_shape(server: SSEServer) -> None:
    server.reply(Reply(chunks=[HELLO_STREAM]))
    model = local_model(server, input=["text", "image"], reasoning=True, max_tokens=50_000)
    seen: list[dict[str, Any]] = []
    context = Context(system_prompt="Be brief.", messages=history(), tools=[READ_TOOL])
    await run(model, context, options(temperature=0.2, reasoning="xhigh", on_payload=seen.append))

    body = server.requests[0].json
    assert seen == [body]
    image = lambda data: {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}  # noqa: E731
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Look"}, image("AAAA")]},
        {
            "role": "assistant",
            "content": "Reading it.",
            "reasoning_content": "Need the file.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.png"}'}},
                {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": '{"path": "b.txt"}'}},
            ],
        },
        {"role": "tool", "content": "(see attached image)", "tool_call_id": "call_1"},
        {"role": "tool", "content": "line1\nline2", "tool_call_id": "call_2"},
        {"role": "user", "content": [{"type": "text", "text": "Attached image(s) from tool result:"}, image("BBBB")]},
        # The errored and aborted turns are gone; the thinking-only turn is skipped.
        {"role": "user", "content": "And then?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_3", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "content": "No result provided", "tool_call_id": "call_3"},
        {"role": "user", "content": "Never mind."},
    ]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 32_000  # a local server: max_tokens, capped at 32000
    assert "max_completion_tokens" not in body and "store" not in body
    assert body["temperature"] == 0.2
    assert body["reasoning_effort"] == "high"
    assert body["model"] == "test-model"


async def test_text_only_model_drops_images(server: SSEServer) -> None:
    server.reply(Reply(chunks=[HELLO_STREAM]))
    await run(local_model(server), Context(messages=history()[:4]))
    messages = server.requests[0].json["messages"]
    assert messages[0] == {"role": "user", "content": [{"type": "text", "text": "Look"}]}
    assert all(m["role"] != "user" or "Attached" not in json.dumps(m) for m in messages)


def test_openai_itself_gets_its_own_parameters() -> None:
    model = Model(id="o4-mini", name="o4", api="openai-completions", provider="openai",
                  base_url="https://api.openai.com/v1", reasoning=True, max_tokens=100_000)
    request = build_request(model, Context(system_prompt="sys", messages=[UserMessage(content="hi")]),
                            StreamOptions(max_tokens=1234, reasoning="low", api_key=KEY))
    assert request.url == "https://api.openai.com/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["messages"][0] == {"role": "developer", "content": "sys"}
    assert request.body["max_completion_tokens"] == 1234 and "max_tokens" not in request.body
    assert request.body["store"] is False
    assert request.body["reasoning_effort"] == "low"


def test_the_environment_is_never_read_for_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    model = Model(id="m", name="m", api="openai-completions", provider="ollama", base_url="http://127.0.0.1:11434/v1")
    request = build_request(model, Context(messages=[]), StreamOptions(headers={"x-extra": "1"}))
    assert "authorization" not in request.headers
    assert request.headers["x-extra"] == "1"


async def test_missing_key_for_openai_is_an_error_event(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # ignored: keys come in StreamOptions
    model = Model(id="gpt-4o-mini", name="g", api="openai-completions", provider="openai",
                  base_url="https://api.openai.com/v1")
    events = [e async for e in stream(model, hello_context(), StreamOptions())]
    assert types(events) == ["error"]
    assert final(events).error_message == "No API key for provider: openai"


async def test_lone_surrogates_are_dropped_from_the_body(server: SSEServer) -> None:
    server.reply(Reply(chunks=[HELLO_STREAM]))
    await run(local_model(server), Context(messages=[UserMessage(content="bad \ud83d char")]))
    assert server.requests[0].json["messages"] == [{"role": "user", "content": "bad  char"}]


# --- Retry-After parsing (shared HTTP plumbing) -----------------------------------------


def test_retry_after_forms() -> None:
    assert retry_after_seconds(httpx.Headers({"retry-after": "7"})) == 7
    assert retry_after_seconds(httpx.Headers({"retry-after": "1.5"})) == 1.5
    assert retry_after_seconds(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry_after_seconds(httpx.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0
    future = retry_after_seconds(httpx.Headers({"retry-after": "Fri, 01 Jan 2100 00:00:00 GMT"}))
    assert future is not None and future > 365 * 24 * 3600
    assert retry_after_seconds(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after_seconds(httpx.Headers({})) is None


async def test_retry_after_http_date_beyond_the_limit(server: SSEServer) -> None:
    server.reply(rate_limited("Fri, 01 Jan 2100 00:00:00 GMT"))
    message = final(await run(local_model(server))).error_message
    assert "the server asked to wait" in message and "exceeds the limit of 60 s" in message


def test_the_module_is_registered_for_its_api() -> None:
    from tiller.ai.registry import get_stream_fn

    assert get_stream_fn("openai-completions") is openai_completions.stream
