"""OpenAI's Responses API over HTTP (`POST {baseUrl}/responses`, server-sent events).

OpenAI's own models are served here (the codex models only here). Calls are stateless
(`store: false`), yet reasoning continues across tool calls: every reasoning item comes
back encrypted (`include: ["reasoning.encrypted_content"]`), is kept whole as its thinking
block's signature, and goes back in front of the output it led to. The ids OpenAI pairs
reasoning with ride along: a message's on its text block (`text_signature`), a function
call's on the tool call (`thought_signature`). Reasoning summaries stream as thinking.
"""

from __future__ import annotations

import json
import re
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
from .openai_compat import is_openai

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MAX_TOKENS = 32_000
# Models that accept reasoning effort "xhigh" (others get "high"); codex models reject "minimal".
XHIGH_MODELS = re.compile(r"codex-max|gpt-5\.[2-9]")
# Call ids other vendors made may hold characters or lengths OpenAI refuses.
UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")
MAX_ID = 64


async def stream(
    model: Model, context: Context, options: StreamOptions
) -> AsyncIterator[AssistantMessageEvent]:
    async for event in stream_sse(model, options, lambda: build_request(model, context, options), _Parser):
        yield event


# --- request ----------------------------------------------------------------------------


def build_request(model: Model, context: Context, options: StreamOptions) -> SSERequest:
    key = options.api_key
    if not key and is_openai(model):
        raise ProviderError(f"No API key for provider: {model.provider}")
    body: dict[str, Any] = {
        "model": model.id,
        "input": convert_input(model, context),
        "stream": True,
        "store": False,
        "max_output_tokens": options.max_tokens or min(model.max_tokens, DEFAULT_MAX_TOKENS),
    }
    if context.system_prompt:
        body["instructions"] = context.system_prompt
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.session_id:
        body["prompt_cache_key"] = options.session_id  # keeps one session's calls on one cache
    if context.tools:
        # `strict` defaults to true here, which would demand OpenAI's restricted schemas.
        body["tools"] = [
            {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters,
             "strict": False}
            for t in context.tools
        ]
    if model.reasoning:
        body["include"] = ["reasoning.encrypted_content"]
        if options.reasoning:
            body["reasoning"] = {"effort": _effort(model, options.reasoning), "summary": "auto"}
    body.update(options.extra)

    headers = request_headers(model, options, {"authorization": f"Bearer {key}"} if key else {})
    url = endpoint(model.base_url, DEFAULT_BASE_URL, "/responses")
    return SSERequest(url=url, body=body, headers=headers, secrets=(key,) if key else ())


def _effort(model: Model, level: str) -> str:
    if level == "xhigh" and not XHIGH_MODELS.search(model.id):
        return "high"
    if level == "minimal" and "codex" in model.id:
        return "low"
    return level


def convert_input(model: Model, context: Context) -> list[dict[str, Any]]:
    images = "image" in model.input
    items: list[dict[str, Any]] = []
    # Images from a run of tool results follow the run as a user turn (outputs are text).
    pending_images: list[dict[str, Any]] = []

    def flush_images() -> None:
        if pending_images:
            text = {"type": "input_text", "text": "Attached image(s) from tool result:"}
            items.append({"role": "user", "content": [text, *pending_images]})
            pending_images.clear()

    for message in transform_messages(context.messages, model):
        if isinstance(message, ToolResultMessage):
            attached = [_image(b) for b in message.content if isinstance(b, ImageContent)] if images else []
            output = tool_result_text(message, images_sent=bool(attached))
            items.append({"type": "function_call_output", "call_id": _call_id(message.tool_call_id), "output": output})
            pending_images.extend(attached)
            continue
        flush_images()
        if isinstance(message, UserMessage):
            if user := _user_item(message, images):
                items.append(user)
        elif isinstance(message, AssistantMessage):
            items.extend(_assistant_items(message))
    flush_images()
    return items


def _user_item(message: UserMessage, images: bool) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        blocks: list[Any] = [TextContent(text=message.content)]
    else:
        blocks = list(message.content)
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextContent) and block.text:
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, ImageContent) and images:
            parts.append(_image(block))
    return {"role": "user", "content": parts} if parts else None


def _assistant_items(message: AssistantMessage) -> list[dict[str, Any]]:
    """The assistant's output items in order. Thinking from another model is plain text by
    now (transform_messages) and carries no ids; ours carries the encrypted reasoning."""
    reasoning = {
        index: _reasoning_item(block.thinking_signature)
        for index, block in enumerate(message.content)
        if isinstance(block, ThinkingContent)
    }
    # OpenAI pairs an output item with the reasoning before it by id: without all of this
    # turn's reasoning (a summary-only item cannot be sent back), send no ids at all.
    keep_ids = all(item is not None for item in reasoning.values())
    items: list[dict[str, Any]] = []
    for index, block in enumerate(message.content):
        if isinstance(block, ThinkingContent):
            if (item := reasoning[index]) is not None:
                items.append(item)
        elif isinstance(block, TextContent) and block.text:
            item_id = block.text_signature or ""
            if keep_ids and item_id.startswith("msg"):
                items.append({
                    "type": "message", "role": "assistant", "id": item_id, "status": "completed",
                    "content": [{"type": "output_text", "text": block.text, "annotations": []}],
                })
            else:
                items.append({"role": "assistant", "content": block.text})
        elif isinstance(block, ToolCall):
            call = {"type": "function_call", "call_id": _call_id(block.id), "name": block.name,
                    "arguments": json.dumps(block.arguments, ensure_ascii=False)}
            item_id = block.thought_signature or ""
            if keep_ids and item_id.startswith("fc"):
                call["id"] = item_id
            items.append(call)
    return items


def _reasoning_item(signature: str | None) -> dict[str, Any] | None:
    """The reasoning item stored as the block's signature, if it can go back to OpenAI."""
    try:
        item = json.loads(signature or "")
    except ValueError:
        return None
    if not isinstance(item, dict) or item.get("type") != "reasoning" or not item.get("encrypted_content"):
        return None
    return item


def _call_id(call_id: str) -> str:
    return UNSAFE_ID.sub("_", call_id)[:MAX_ID]


def _image(block: ImageContent) -> dict[str, Any]:
    return {"type": "input_image", "detail": "auto", "image_url": f"data:{block.mime_type};base64,{block.data}"}


# --- response stream --------------------------------------------------------------------


class _Parser:
    """Responses events to builder events; blocks follow OpenAI's output items, by
    `output_index`."""

    def __init__(self, builder: AssistantMessageBuilder) -> None:
        self.builder = builder
        self.finished = False
        self._items: dict[int, int] = {}  # output_index -> builder index
        self._streamed_arguments: set[int] = set()  # builder indices that got argument deltas

    def end(self) -> None:
        if not self.finished:  # response.completed (or failed) always ends a whole stream
            raise ProviderError(CUT_SHORT)

    def feed(self, event: ServerSentEvent) -> list[AssistantMessageEvent]:
        if not event.data.strip():
            return []
        data = decode_json(event)
        kind = data.get("type") or event.event
        at = self._items.get(data.get("output_index"))  # type: ignore[arg-type]
        builder = self.builder
        if kind == "response.output_item.added":
            return self._added(data.get("output_index"), data.get("item") or {})
        if kind == "response.output_item.done":
            return self._done(data.get("output_index"), data.get("item") or {})
        if at is None:
            pass
        elif kind == "response.reasoning_summary_part.added":
            if _block_text(builder, at):  # summaries are paragraphs of one thinking block
                return [builder.append_thinking(at, "\n\n")]
        elif kind == "response.reasoning_summary_text.delta":
            return [builder.append_thinking(at, _text(data.get("delta")))]
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            return [builder.append_text(at, _text(data.get("delta")))]
        elif kind == "response.function_call_arguments.delta":
            self._streamed_arguments.add(at)
            return [builder.append_tool_arguments(at, _text(data.get("delta")))]
        elif kind == "response.function_call_arguments.done" and at not in self._streamed_arguments:
            self._streamed_arguments.add(at)
            return [builder.append_tool_arguments(at, _text(data.get("arguments")))]
        if kind in ("response.completed", "response.incomplete", "response.failed", "response.cancelled"):
            self._finish(data.get("response") or {})
        elif kind == "error":
            code = data.get("code")
            message = error_text(data) or "Unknown error"
            raise ProviderError(f"{code}: {message}" if isinstance(code, str) and code else message)
        return []

    def _added(self, index: Any, item: dict[str, Any]) -> list[AssistantMessageEvent]:
        builder = self.builder
        kind = item.get("type")
        start: AssistantMessageEvent
        if kind == "reasoning":
            at, start = builder.open_thinking()
        elif kind == "message":
            at, start = builder.open_text()
        elif kind == "function_call":
            at, start = builder.open_tool_call(_text(item.get("call_id")), _text(item.get("name")))
            call = builder.message.content[at]
            assert isinstance(call, ToolCall)
            call.thought_signature = item.get("id") or None
        else:
            return []  # built-in tools' items (web search...) are not shown
        self._items[index] = at
        return [start]

    def _done(self, index: Any, item: dict[str, Any]) -> list[AssistantMessageEvent]:
        at = self._items.pop(index, None)
        if at is None:
            return []
        builder = self.builder
        block = builder.message.content[at]
        out: list[AssistantMessageEvent] = []
        if isinstance(block, ThinkingContent):
            block.thinking_signature = json.dumps(item, ensure_ascii=False)
        elif isinstance(block, TextContent):
            block.text_signature = item.get("id") or None
            if not block.text:  # no deltas came: the item holds the text
                text = "".join(_text(p.get("text") or p.get("refusal")) for p in item.get("content") or [])
                if text:
                    out.append(builder.append_text(at, text))
        elif isinstance(block, ToolCall) and at not in self._streamed_arguments:
            out.append(builder.append_tool_arguments(at, _text(item.get("arguments"))))
        if end := builder.close(at):
            out.append(end)
        return out

    def _finish(self, response: dict[str, Any]) -> None:
        self.finished = True
        self._usage(response.get("usage"))
        message = self.builder.message
        status = response.get("status")
        if status == "failed":
            raise ProviderError(error_text(response) or "The response failed")
        if status == "cancelled":
            raise ProviderError("The response was cancelled")
        if status == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason")
            if reason == "max_output_tokens":
                message.stop_reason = "length"
            else:
                message.stop_reason = "error"
                message.error_message = f"The response is incomplete: {reason or 'no reason given'}"
            return
        message.stop_reason = "toolUse" if message.tool_calls() else "stop"

    def _usage(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        self.builder.set_usage(
            prompt=as_int(raw.get("input_tokens")),
            cached=as_int((raw.get("input_tokens_details") or {}).get("cached_tokens")),
            output=as_int(raw.get("output_tokens")),  # reasoning tokens are included
        )


def _block_text(builder: AssistantMessageBuilder, at: int) -> str:
    block = builder.message.content[at]
    return block.thinking if isinstance(block, ThinkingContent) else ""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""

