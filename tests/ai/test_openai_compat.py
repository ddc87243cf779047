"""Per-server switches of the openai-completions provider: detected from the provider and
base URL, overridable per model (models.toml `compat`), and what each does to the request
that reaches a loopback server."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.provider_streams import collect, hello_context
from tests.support.sse_server import Reply, SSEServer
from tiller.ai.options import StreamOptions
from tiller.ai.providers.openai_compat import GENERIC, OPENAI, compat_for
from tiller.ai.providers.openai_completions import build_request, stream
from tiller.ai.types import (
    AssistantMessage,
    Context,
    Model,
    OpenAICompat,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

KEY = "sk-test-secret-0123456789"
DONE_STREAM = (
    b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    b'"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


def model(provider: str, base_url: str, **fields: Any) -> Model:
    return Model(id=fields.pop("id", "m"), name="m", api="openai-completions", provider=provider,
                 base_url=base_url, **fields)


@pytest.mark.parametrize(("provider", "base_url", "expected"), [
    ("openai", "https://api.openai.com/v1", OPENAI),
    ("lab", "https://api.openai.com/v1", OPENAI),  # OpenAI's host, whatever the provider is called
    ("llamacpp", "http://127.0.0.1:8080/v1", GENERIC),
    ("together", "https://api.together.xyz/v1", GENERIC),
])
def test_openai_and_unknown_servers(provider: str, base_url: str, expected: Any) -> None:
    assert compat_for(model(provider, base_url)) == expected


@pytest.mark.parametrize(("provider", "base_url", "switch", "value"), [
    ("mistral", "https://api.mistral.ai/v1", "requires_mistral_tool_ids", True),
    ("lab", "https://api.mistral.ai/v1", "requires_tool_result_name", True),  # by host alone
    ("openrouter", "https://openrouter.ai/api/v1", "thinking_format", "openrouter"),
    ("deepseek", "https://api.deepseek.com", "supports_reasoning_effort", False),
    ("lab", "https://api.deepseek.com", "supports_reasoning_effort", False),
    ("xai", "https://api.x.ai/v1", "supports_reasoning_effort", False),
    ("zai", "https://api.z.ai/api/paas/v4", "thinking_format", "zai"),
    ("alibaba", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "thinking_format", "qwen"),
    ("cerebras", "https://api.cerebras.ai/v1", "max_tokens_field", "max_completion_tokens"),
])
def test_known_servers_are_detected(provider: str, base_url: str, switch: str, value: Any) -> None:
    assert getattr(compat_for(model(provider, base_url)), switch) == value


def test_a_lookalike_host_is_not_matched() -> None:
    # "box.airport" contains "x.ai" as text but is not x.ai.
    assert compat_for(model("lab", "https://box.airport.example/v1")) == GENERIC


def test_model_compat_overrides_detection() -> None:
    chosen = model("openai", "https://api.openai.com/v1", compat=OpenAICompat(max_tokens_field="max_tokens",
                                                                              supports_store=False))
    compat = compat_for(chosen)
    assert (compat.max_tokens_field, compat.supports_store, compat.supports_developer_role) == (
        "max_tokens", False, True)


def tool_turn(call_id: str) -> list[Any]:
    call = AssistantMessage(
        api="openai-completions", provider="other", model="x", stop_reason="toolUse",
        content=[ThinkingContent(thinking="Check it.", thinking_signature="reasoning_content"),
                 TextContent(text="Looking."), ToolCall(id=call_id, name="read", arguments={"path": "a"})],
    )
    result = ToolResultMessage(tool_call_id=call_id, tool_name="read", content=[TextContent(text="body")])
    return [UserMessage(content="Read a"), call, result, UserMessage(content="Thanks")]


async def test_mistral_gets_its_dialect(server: SSEServer) -> None:
    server.reply(Reply(chunks=[DONE_STREAM]))
    mistral = model("mistral", server.url + "/v1", reasoning=True)
    opts = StreamOptions(api_key=KEY, reasoning="high")
    await collect(stream, mistral, Context(messages=tool_turn("toolu_01A09q90qw90lq917835lq9")), opts)
    body = server.requests[0].json
    short_id = body["messages"][1]["tool_calls"][0]["id"]
    assert len(short_id) == 9 and short_id.isalnum()
    assert body["messages"][1:] == [
        # Foreign thinking is text already; Mistral gets no reasoning field back.
        {"role": "assistant", "content": "Check it.Looking.", "tool_calls": [
            {"id": short_id, "type": "function", "function": {"name": "read", "arguments": '{"path": "a"}'}}]},
        {"role": "tool", "content": "body", "tool_call_id": short_id, "name": "read"},
        {"role": "assistant", "content": "I have processed the tool results."},
        {"role": "user", "content": "Thanks"},
    ]
    assert "reasoning_effort" not in body and body["max_tokens"]


def test_mistral_thinking_from_itself_goes_back_as_text() -> None:
    mistral = model("mistral", "https://api.mistral.ai/v1", id="magistral-medium-latest")
    own = AssistantMessage(api="openai-completions", provider="mistral", model="magistral-medium-latest",
                           content=[ThinkingContent(thinking="Plan.", thinking_signature="reasoning_content"),
                                    TextContent(text="Answer.")])
    messages = build_request(mistral, Context(messages=[UserMessage(content="q"), own]),
                             StreamOptions(api_key=KEY)).body["messages"]
    assert messages[1] == {"role": "assistant", "content": "Plan.\n\nAnswer."}


@pytest.mark.parametrize(("provider", "base_url", "level", "fields"), [
    ("openrouter", "https://openrouter.ai/api/v1", "low", {"reasoning": {"effort": "low"}}),
    ("zai", "https://api.z.ai/api/paas/v4", "low", {"thinking": {"type": "enabled"}}),
    ("zai", "https://api.z.ai/api/paas/v4", None, {"thinking": {"type": "disabled"}}),
    ("alibaba", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "high", {"enable_thinking": True}),
    ("deepseek", "https://api.deepseek.com", "high", {}),
    ("groq", "https://api.groq.com/openai/v1", "medium", {"reasoning_effort": "medium"}),
])
def test_reasoning_level_dialects(provider: str, base_url: str, level: str | None, fields: dict[str, Any]) -> None:
    body = build_request(model(provider, base_url, reasoning=True), hello_context(),
                         StreamOptions(api_key=KEY, reasoning=level)).body
    asked = {k: body[k] for k in ("reasoning", "thinking", "enable_thinking", "reasoning_effort") if k in body}
    assert asked == fields


def test_usage_in_streaming_can_be_switched_off() -> None:
    quiet = model("lab", "http://127.0.0.1:9/v1", compat=OpenAICompat(supports_usage_in_streaming=False))
    assert "stream_options" not in build_request(quiet, hello_context(), StreamOptions()).body
