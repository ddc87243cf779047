"""OpenAI chat completions over HTTP: OpenAI itself and the many servers that copy its API
(llama.cpp, ollama, vLLM, OpenRouter, Groq, DeepSeek, Mistral...). Parsing and conversion
follow pi-ai's openai-completions provider, with its per-server switches (`openai_compat`),
and two additions: parallel tool calls whose deltas interleave by `index` stay separate,
and llama.cpp's legacy `delta.function_call` works.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from httpx_sse import ServerSentEvent

from ..http import (
    CUT_SHORT,
    ProviderError,
    SSERequest,
    as_int,
    decode_json,
    endpoint,
    error_text,
    excerpt,
    request_headers,
    stream_sse,
)
from ..message_builder import AssistantMessageBuilder
from ..options import StreamOptions
from ..transform import tool_result_text, transform_messages
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
from .openai_compat import Compat, compat_for, is_openai

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MAX_TOKENS = 32_000
# Delta fields that carry reasoning, by server: DeepSeek/vLLM, OpenRouter/ollama, others.
# The block's signature records which one, so the reasoning goes back under the same name.
REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
# Key for llama.cpp's legacy single `function_call` in the per-stream-index tool map.
LEGACY_CALL = "function_call"

FINISH_REASONS = {
    "stop": "stop",
    "end": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}


async def stream(
    model: Model, context: Context, options: StreamOptions
) -> AsyncIterator[AssistantMessageEvent]:
    async for event in stream_sse(model, options, lambda: build_request(model, context, options), _Parser):
        yield event


# --- request ----------------------------------------------------------------------------


def build_request(model: Model, context: Context, options: StreamOptions) -> SSERequest:
    compat = compat_for(model)
    key = options.api_key
    if not key and is_openai(model):
        raise ProviderError(f"No API key for provider: {model.provider}")

    body: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(model, context, compat),
        "stream": True,
    }
    if compat.supports_usage_in_streaming:
        body["stream_options"] = {"include_usage": True}
    # OpenAI's reasoning models only accept max_completion_tokens; llama.cpp, ollama and
    # most other servers only know max_tokens.
    body[compat.max_tokens_field] = options.max_tokens or min(model.max_tokens, DEFAULT_MAX_TOKENS)
    if compat.supports_store:
        body["store"] = False
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
            }
            for tool in context.tools
        ]
    if model.reasoning:
        _ask_for_reasoning(body, compat, options.reasoning)
    # Vendor-specific fields the caller asks for (e.g. `tool_choice`) go in as given.
    body.update(options.extra)

    headers = request_headers(model, options, {"authorization": f"Bearer {key}"} if key else {})
    url = endpoint(model.base_url, DEFAULT_BASE_URL, "/chat/completions")
    return SSERequest(url=url, body=body, headers=headers, secrets=(key,) if key else ())


def _ask_for_reasoning(body: dict[str, Any], compat: Compat, level: str | None) -> None:
    """The reasoning level in the dialect the server understands (no level: its default)."""
    effort = "high" if level == "xhigh" else level
    if compat.thinking_format == "zai":
        body["thinking"] = {"type": "enabled" if effort else "disabled"}
    elif compat.thinking_format == "qwen":
        body["enable_thinking"] = bool(effort)
    elif effort and compat.supports_reasoning_effort:
        if compat.thinking_format == "openrouter":
            body["reasoning"] = {"effort": effort}
        else:
            body["reasoning_effort"] = effort


def convert_messages(model: Model, context: Context, compat: Compat | None = None) -> list[dict[str, Any]]:
    compat = compat or compat_for(model)
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        developer = compat.supports_developer_role and model.reasoning
        out.append({"role": "developer" if developer else "system", "content": context.system_prompt})
    images = "image" in model.input
    call_id = _mistral_id if compat.requires_mistral_tool_ids else str
    # Images from a run of tool results: OpenAI's `tool` role takes only text, and nothing
    # may sit between the tool messages of one batch, so they follow the run as a user turn.
    pending_images: list[dict[str, Any]] = []

    def add_user(user: dict[str, Any]) -> None:
        if compat.requires_assistant_after_tool_result and out and out[-1]["role"] == "tool":
            out.append({"role": "assistant", "content": "I have processed the tool results."})
        out.append(user)

    def flush_images() -> None:
        if pending_images:
            text = {"type": "text", "text": "Attached image(s) from tool result:"}
            add_user({"role": "user", "content": [text, *pending_images]})
            pending_images.clear()

    for message in transform_messages(context.messages, model):
        if isinstance(message, ToolResultMessage):
            attached = [_image_part(b) for b in message.content if isinstance(b, ImageContent)] if images else []
            content = tool_result_text(message, images_sent=bool(attached))
            result: dict[str, Any] = {"role": "tool", "content": content, "tool_call_id": call_id(message.tool_call_id)}
            if compat.requires_tool_result_name:
                result["name"] = message.tool_name
            out.append(result)
            pending_images.extend(attached)
            continue
        flush_images()
        if isinstance(message, UserMessage):
            if user := _convert_user(message, images):
                add_user(user)
        elif isinstance(message, AssistantMessage):
            if assistant := _convert_assistant(message, compat, call_id):
                out.append(assistant)
    flush_images()
    return out


def _convert_user(message: UserMessage, images: bool) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        return {"role": "user", "content": message.content}
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent) and images:
            parts.append(_image_part(block))
    return {"role": "user", "content": parts} if parts else None


def _convert_assistant(message: AssistantMessage, compat: Compat, call_id: Any) -> dict[str, Any] | None:
    text = "".join(b.text for b in message.content if isinstance(b, TextContent) and b.text)
    if compat.requires_thinking_as_text:
        thought = "\n".join(b.thinking for b in message.content if isinstance(b, ThinkingContent) and b.thinking)
        text = f"{thought}\n\n{text}" if thought and text else thought or text
    calls = [
        {
            "id": call_id(call.id),
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
        }
        for call in message.content
        if isinstance(call, ToolCall)
    ]
    if not text and not calls:
        return None
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    # Reasoning goes back under the delta field it came from (servers that want it back,
    # e.g. DeepSeek with tools, read it there; others ignore unknown fields).
    for block in message.content if not compat.requires_thinking_as_text else ():
        if isinstance(block, ThinkingContent) and block.thinking and block.thinking_signature in REASONING_FIELDS:
            field = block.thinking_signature
            out[field] = f"{out[field]}\n{block.thinking}" if field in out else block.thinking
    if calls:
        out["tool_calls"] = calls
    return out


def _mistral_id(call_id: str) -> str:
    """Mistral accepts only nine letters or digits; others' ids map to a stable such id."""
    if len(call_id) == 9 and call_id.isascii() and call_id.isalnum():
        return call_id
    return hashlib.sha256(call_id.encode()).hexdigest()[:9]


def _image_part(block: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}}


# --- response stream --------------------------------------------------------------------


class _Parser:
    """Chat-completion chunks to builder events.

    Text and reasoning each use one open block; switching between them closes the other.
    Tool calls keep one block per stream `index` (a new `id` on an index starts a new
    call), so parallel calls whose deltas interleave never merge.
    """

    def __init__(self, builder: AssistantMessageBuilder) -> None:
        self.builder = builder
        self.finished = False
        self._text: int | None = None
        self._thinking: int | None = None
        self._tools: dict[Any, int] = {}  # stream index (or LEGACY_CALL) -> builder index
        self._tool_ids: dict[int, str] = {}  # builder index -> call id
        self._finish_reason_seen = False

    def end(self) -> None:
        # Some servers omit [DONE], some a finish_reason; every complete stream has one of
        # them. A body that ends with neither was cut (a proxy, a dropped connection that
        # still closed cleanly), and its partial text is not a finished answer.
        if not (self.finished or self._finish_reason_seen):
            raise ProviderError(CUT_SHORT)

    def feed(self, event: ServerSentEvent) -> list[AssistantMessageEvent]:
        data = event.data.strip()
        if not data:
            return []
        if data == "[DONE]":
            self.finished = True
            return []
        chunk = decode_json(event)
        if chunk.get("error"):
            # OpenRouter, vLLM and llama.cpp report failures inside the stream this way.
            raise ProviderError(error_text(chunk) or f"Provider error: {excerpt(data)}")
        if isinstance(chunk.get("usage"), dict):
            self._usage(chunk["usage"])
        choices = chunk.get("choices")
        if not choices or not isinstance(choices[0], dict):
            return []
        choice = choices[0]
        out: list[AssistantMessageEvent] = []
        delta = choice.get("delta") or {}
        reasoning_field = next((f for f in REASONING_FIELDS if isinstance(delta.get(f), str) and delta[f]), None)
        if reasoning_field:
            self._reasoning(reasoning_field, delta[reasoning_field], out)
        if isinstance(delta.get("content"), str) and delta["content"]:
            self._content(delta["content"], out)
        for position, entry in enumerate(delta.get("tool_calls") or []):
            if isinstance(entry, dict):
                self._tool_delta(entry.get("index", position), entry.get("id"), entry.get("function") or {}, out)
        # llama.cpp's server sends a call both as `tool_calls` and as the legacy
        # `function_call` in one delta; the legacy form only counts when it is alone.
        if isinstance(delta.get("function_call"), dict) and not delta.get("tool_calls"):
            self._tool_delta(LEGACY_CALL, None, delta["function_call"], out)
        if reason := choice.get("finish_reason"):
            self._finish(reason)
        return out

    # --- blocks -------------------------------------------------------------------------

    def _reasoning(self, field: str, text: str, out: list[AssistantMessageEvent]) -> None:
        if self._thinking is None or not self.builder.is_open(self._thinking):
            self._close_others(out, keep="thinking")
            self._thinking, start = self.builder.open_thinking(signature=field)
            out.append(start)
        out.append(self.builder.append_thinking(self._thinking, text))

    def _content(self, text: str, out: list[AssistantMessageEvent]) -> None:
        if self._text is None or not self.builder.is_open(self._text):
            self._close_others(out, keep="text")
            self._text, start = self.builder.open_text()
            out.append(start)
        out.append(self.builder.append_text(self._text, text))

    def _tool_delta(self, key: Any, call_id: Any, function: dict[str, Any], out: list[AssistantMessageEvent]) -> None:
        block = self._tools.get(key)
        new_id = isinstance(call_id, str) and call_id and (block is None or call_id != self._tool_ids.get(block))
        if block is None or not self.builder.is_open(block) or new_id:
            self._close_others(out, keep="tools")
            name = function["name"] if isinstance(function.get("name"), str) else ""
            # llama.cpp's legacy calls and some servers send no id; the agent needs one.
            call_id = call_id if isinstance(call_id, str) and call_id else f"call_{uuid.uuid4().hex[:24]}"
            block, start = self.builder.open_tool_call(call_id, name)
            self._tools[key], self._tool_ids[block] = block, call_id
            out.append(start)
        elif isinstance(function.get("name"), str) and function["name"]:
            call = self.builder.message.content[block]
            assert isinstance(call, ToolCall)
            call.name = function["name"]
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # some servers send the arguments already parsed
            arguments = json.dumps(arguments)
        out.append(self.builder.append_tool_arguments(block, arguments if isinstance(arguments, str) else ""))

    def _close_others(self, out: list[AssistantMessageEvent], *, keep: str) -> None:
        """A new kind of content ends the blocks of the other kinds (pi's rule); parallel
        tool calls stay open together until something else starts or the stream ends."""
        indices = [] if keep == "tools" else list(self._tools.values())
        if keep != "text" and self._text is not None:
            indices.append(self._text)
        if keep != "thinking" and self._thinking is not None:
            indices.append(self._thinking)
        for index in sorted(indices):
            if end := self.builder.close(index):
                out.append(end)

    # --- usage and stop reason ----------------------------------------------------------

    def _usage(self, raw: dict[str, Any]) -> None:
        reasoning = as_int((raw.get("completion_tokens_details") or {}).get("reasoning_tokens"))
        self.builder.set_usage(
            prompt=as_int(raw.get("prompt_tokens")),
            cached=as_int((raw.get("prompt_tokens_details") or {}).get("cached_tokens")),
            output=as_int(raw.get("completion_tokens")) + reasoning,
        )

    def _finish(self, reason: Any) -> None:
        self._finish_reason_seen = True
        message = self.builder.message
        if reason in FINISH_REASONS:
            message.stop_reason = FINISH_REASONS[reason]  # type: ignore[assignment]
        else:
            # content_filter, or a value we do not know: the turn failed, but readably.
            message.stop_reason = "error"
            message.error_message = f"Provider finish_reason: {reason}"

