"""Anthropic's Messages API over HTTP (`POST /v1/messages`, server-sent events).

Parsing and conversion follow pi-ai's anthropic provider: blocks are opened and closed
by Anthropic's own `index`, signatures and redacted thinking are kept so they can be
sent back, and a run of tool results becomes one user message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from httpx_sse import ServerSentEvent

from ..http import (
    CUT_SHORT,
    ProviderError,
    SSERequest,
    decode_json,
    endpoint,
    error_text,
    request_headers,
    stream_sse,
)
from ..message_builder import AssistantMessageBuilder
from ..options import StreamOptions
from ..transform import transform_messages
from ..types import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
REDACTED_TEXT = "[Reasoning redacted]"
# Anthropic rejects a thinking budget under this many tokens.
MIN_THINKING_BUDGET = 1024
EPHEMERAL = {"type": "ephemeral"}

STOP_REASONS = {
    "end_turn": "stop",
    "pause_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}
# message_start / message_delta usage fields -> our Usage attributes.
USAGE_FIELDS = {
    "input_tokens": "input",
    "output_tokens": "output",
    "cache_read_input_tokens": "cache_read",
    "cache_creation_input_tokens": "cache_write",
}


async def stream(
    model: Model, context: Context, options: StreamOptions
) -> AsyncIterator[AssistantMessageEvent]:
    async for event in stream_sse(model, options, lambda: build_request(model, context, options), _Parser):
        yield event


# --- request ----------------------------------------------------------------------------


def build_request(model: Model, context: Context, options: StreamOptions) -> SSERequest:
    key = options.api_key
    if not key:
        raise ProviderError(f"No API key for provider: {model.provider}")

    max_tokens = options.max_tokens or model.max_tokens // 3
    body: dict[str, Any] = {"model": model.id, "messages": convert_messages(model, context)}
    budget = options.thinking_budget() if model.reasoning else None
    if budget:
        max_tokens = min(max_tokens + budget, model.max_tokens)
        # The budget must stay below max_tokens, leaving room for the answer itself.
        if budget >= max_tokens:
            budget = max_tokens - MIN_THINKING_BUDGET
        if budget >= MIN_THINKING_BUDGET:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    body["max_tokens"] = max_tokens
    body["stream"] = True
    if context.system_prompt:
        body["system"] = [{"type": "text", "text": context.system_prompt, "cache_control": EPHEMERAL}]
    # With thinking on, Anthropic accepts no temperature but its default.
    if options.temperature is not None and "thinking" not in body:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = [
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
            for tool in context.tools
        ]

    headers = request_headers(
        model, options, {"x-api-key": key, "anthropic-version": API_VERSION}
    )
    url = endpoint(model.base_url, DEFAULT_BASE_URL, "/v1/messages")
    return SSERequest(url=url, body=body, headers=headers, secrets=(key,))


def convert_messages(model: Model, context: Context) -> list[dict[str, Any]]:
    images = "image" in model.input
    out: list[dict[str, Any]] = []
    for message in transform_messages(context.messages, model):
        if isinstance(message, ToolResultMessage):
            block = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": _tool_result_content(message, images),
                "is_error": message.is_error,
            }
            # Anthropic wants all results of one batch in a single user turn.
            previous = out[-1] if out else None
            if previous and previous["role"] == "user" and _is_tool_results(previous["content"]):
                previous["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif isinstance(message, UserMessage):
            if content := _user_content(message, images):
                out.append({"role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            if content := _assistant_content(message):
                out.append({"role": "assistant", "content": content})
    _mark_cache_point(out)
    return out


def _user_content(message: UserMessage, images: bool) -> str | list[dict[str, Any]] | None:
    if isinstance(message.content, str):
        return message.content if message.content.strip() else None
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent) and block.text.strip():
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent) and images:
            blocks.append(_image_block(block))
    return blocks or None


def _assistant_content(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if block.redacted and block.thinking_signature:
                blocks.append({"type": "redacted_thinking", "data": block.thinking_signature})
            elif block.thinking_signature:
                blocks.append({"type": "thinking", "thinking": block.thinking, "signature": block.thinking_signature})
            elif block.thinking.strip():
                # No signature (the stream was cut short): Anthropic would reject it as
                # thinking, but the model may still read it as text.
                blocks.append({"type": "text", "text": block.thinking})
        elif isinstance(block, ToolCall):
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments})
    return blocks


def _tool_result_content(message: ToolResultMessage, images: bool) -> str | list[dict[str, Any]]:
    texts = [b.text for b in message.content if isinstance(b, TextContent)]
    pictures = [_image_block(b) for b in message.content if isinstance(b, ImageContent)] if images else []
    if not pictures:
        return "\n".join(texts)
    return [*({"type": "text", "text": t} for t in texts if t.strip()), *pictures]


def _image_block(block: ImageContent) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": block.mime_type, "data": block.data}}


def _is_tool_results(content: Any) -> bool:
    return isinstance(content, list) and bool(content) and all(b.get("type") == "tool_result" for b in content)


def _mark_cache_point(messages: list[dict[str, Any]]) -> None:
    """Cache the conversation up to the last user turn, so the next call reuses it."""
    for message in reversed(messages):
        if message["role"] != "user":
            continue
        if isinstance(message["content"], str):
            message["content"] = [{"type": "text", "text": message["content"]}]
        message["content"][-1]["cache_control"] = EPHEMERAL
        return


# --- response stream --------------------------------------------------------------------


class _Parser:
    def __init__(self, builder: AssistantMessageBuilder) -> None:
        self.builder = builder
        self.finished = False
        self._blocks: dict[int, int] = {}  # Anthropic's block index -> builder index
        self._stop_reason_seen = False

    def end(self) -> None:
        # Compatible servers may omit message_stop, but a complete message always carries
        # its stop_reason (message_delta); a body that ends with neither was cut.
        if not (self.finished or self._stop_reason_seen):
            raise ProviderError(CUT_SHORT)

    def feed(self, event: ServerSentEvent) -> list[AssistantMessageEvent]:
        if not event.data.strip():
            return []
        data = decode_json(event)
        kind = data.get("type") or event.event
        if kind == "message_start":
            self._usage((data.get("message") or {}).get("usage"))
        elif kind == "content_block_start":
            return self._start(data.get("index"), data.get("content_block") or {})
        elif kind == "content_block_delta":
            return self._delta(data.get("index"), data.get("delta") or {})
        elif kind == "content_block_stop":
            index = self._blocks.pop(data.get("index"), None)  # type: ignore[arg-type]
            end = self.builder.close(index) if index is not None else None
            return [end] if end else []
        elif kind == "message_delta":
            self._stop_reason((data.get("delta") or {}).get("stop_reason"))
            self._usage(data.get("usage"))
        elif kind == "message_stop":
            self.finished = True
        elif kind == "error":
            # e.g. {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            error = data.get("error")
            kind = error.get("type") if isinstance(error, dict) else None
            message = error_text(data) or "Unknown error"
            raise ProviderError(f"{kind}: {message}" if isinstance(kind, str) else message)
        # ping and event types added later need nothing.
        return []

    def _start(self, index: Any, block: dict[str, Any]) -> list[AssistantMessageEvent]:
        kind = block.get("type")
        builder = self.builder
        start: AssistantMessageEvent
        if kind == "text":
            at, start = builder.open_text()
            out: list[AssistantMessageEvent] = [start]
            if block.get("text"):
                out.append(builder.append_text(at, block["text"]))
        elif kind == "thinking":
            at, start = builder.open_thinking(block.get("signature") or None)
            out = [start]
            if block.get("thinking"):
                out.append(builder.append_thinking(at, block["thinking"]))
        elif kind == "redacted_thinking":
            # The encrypted data is what must go back to Anthropic; keep it as the signature.
            at, start = builder.open_thinking(block.get("data") or "", text=REDACTED_TEXT, redacted=True)
            out = [start]
        elif kind == "tool_use":
            at, start = builder.open_tool_call(block.get("id") or "", block.get("name") or "")
            out = [start]
        else:
            return []  # server tools and other block kinds we do not show
        self._blocks[index] = at
        return out

    def _delta(self, index: Any, delta: dict[str, Any]) -> list[AssistantMessageEvent]:
        at = self._blocks.get(index)
        if at is None:
            return []
        kind = delta.get("type")
        if kind == "text_delta":
            return [self.builder.append_text(at, delta.get("text") or "")]
        if kind == "thinking_delta":
            return [self.builder.append_thinking(at, delta.get("thinking") or "")]
        if kind == "input_json_delta":
            return [self.builder.append_tool_arguments(at, delta.get("partial_json") or "")]
        if kind == "signature_delta":
            self.builder.append_signature(at, delta.get("signature") or "")
        return []

    def _usage(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        usage = self.builder.message.usage
        # message_delta repeats only some fields; a missing or null one keeps its value.
        for wire, attr in USAGE_FIELDS.items():
            if isinstance(raw.get(wire), int):
                setattr(usage, attr, raw[wire])
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write

    def _stop_reason(self, reason: Any) -> None:
        if reason is None:
            return
        self._stop_reason_seen = True
        message = self.builder.message
        if reason in STOP_REASONS:
            message.stop_reason = STOP_REASONS[reason]  # type: ignore[assignment]
        else:
            # refusal, sensitive, or one we do not know: a failed turn, not a crash.
            message.stop_reason = "error"
            message.error_message = f"Provider stop_reason: {reason}"
