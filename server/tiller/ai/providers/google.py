"""Google's Gemini API over HTTP (`POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse`).

Each SSE event is a whole `GenerateContentResponse`: parts of text, thoughts (`thought:
true`) and function calls (complete, never split), usage, and on the last one a
`finishReason`. Gemini signs its reasoning: `thoughtSignature`s are kept on the blocks they
came with and sent back, which Gemini 3 requires for the calls of the current turn. A
blocked prompt or a safety stop is an error that says so.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote, urlparse

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

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
GOOGLE_HOST = "generativelanguage.googleapis.com"
DEFAULT_MAX_TOKENS = 32_000
# Gemini 3 refuses a function call without its signature; for calls another model made,
# Google documents this value to skip the check.
SKIP_SIGNATURE = "skip_thought_signature_validator"
# Gemini 3 takes a thinking level rather than a token budget.
LEVELS = {"minimal": "low", "low": "low", "medium": "high", "high": "high", "xhigh": "high"}

FINISH_REASONS = {"STOP": "stop", "MAX_TOKENS": "length"}
# What the other finish reasons mean, for the error message.
FINISH_EXPLAINED = {
    "SAFETY": "the answer was blocked by Gemini's safety filters",
    "RECITATION": "the answer was blocked for reciting training data",
    "BLOCKLIST": "the answer contained blocked terms",
    "PROHIBITED_CONTENT": "the answer was blocked as prohibited content",
    "SPII": "the answer was blocked for containing sensitive personal information",
    "IMAGE_SAFETY": "an image was blocked by Gemini's safety filters",
    "LANGUAGE": "the language is not supported",
    "MALFORMED_FUNCTION_CALL": "the model produced a malformed function call",
    "UNEXPECTED_TOOL_CALL": "the model called a tool that was not offered",
}


async def stream(
    model: Model, context: Context, options: StreamOptions
) -> AsyncIterator[AssistantMessageEvent]:
    async for event in stream_sse(model, options, lambda: build_request(model, context, options), _Parser):
        yield event


# --- request ----------------------------------------------------------------------------


def build_request(model: Model, context: Context, options: StreamOptions) -> SSERequest:
    key = options.api_key
    if not key and urlparse(model.base_url or DEFAULT_BASE_URL).hostname == GOOGLE_HOST:
        raise ProviderError(f"No API key for provider: {model.provider}")
    config: dict[str, Any] = {"maxOutputTokens": options.max_tokens or min(model.max_tokens, DEFAULT_MAX_TOKENS)}
    if options.temperature is not None:
        config["temperature"] = options.temperature
    if model.reasoning:
        thinking: dict[str, Any] = {"includeThoughts": True}
        if options.reasoning and _is_gemini_3(model):
            thinking["thinkingLevel"] = LEVELS.get(options.reasoning, "high")
        elif budget := options.thinking_budget():
            thinking["thinkingBudget"] = budget
        config["thinkingConfig"] = thinking
    body: dict[str, Any] = {"contents": convert_contents(model, context), "generationConfig": config}
    if context.system_prompt:
        body["systemInstruction"] = {"parts": [{"text": context.system_prompt}]}
    if context.tools:
        # Full JSON Schema; the older `parameters` field takes only an OpenAPI subset.
        body["tools"] = [{"functionDeclarations": [
            {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
            for t in context.tools
        ]}]
    body.update(options.extra)

    headers = request_headers(model, options, {"x-goog-api-key": key} if key else {})
    path = f"/models/{quote(model.id, safe='')}:streamGenerateContent?alt=sse"
    return SSERequest(url=endpoint(model.base_url, DEFAULT_BASE_URL, path), body=body, headers=headers,
                      secrets=(key,) if key else ())


def _is_gemini_3(model: Model) -> bool:
    return model.id.startswith("gemini-3")


def convert_contents(model: Model, context: Context) -> list[dict[str, Any]]:
    images = "image" in model.input
    contents: list[dict[str, Any]] = []
    for message in transform_messages(context.messages, model):
        if isinstance(message, ToolResultMessage):
            parts = _tool_result_parts(message, images)
            previous = contents[-1] if contents else None
            # One user turn answers all the calls of one model turn.
            if previous and previous["role"] == "user" and "functionResponse" in previous["parts"][0]:
                previous["parts"].extend(parts)
            else:
                contents.append({"role": "user", "parts": parts})
        elif isinstance(message, UserMessage):
            if parts := _user_parts(message, images):
                contents.append({"role": "user", "parts": parts})
        elif isinstance(message, AssistantMessage):
            if parts := _model_parts(model, message):
                contents.append({"role": "model", "parts": parts})
    return contents


def _user_parts(message: UserMessage, images: bool) -> list[dict[str, Any]]:
    if isinstance(message.content, str):
        return [{"text": message.content}] if message.content.strip() else []
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent) and block.text.strip():
            parts.append({"text": block.text})
        elif isinstance(block, ImageContent) and images:
            parts.append(_inline(block))
    return parts


def _model_parts(model: Model, message: AssistantMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            # Ours only (others' became text): Gemini reads a signed thought back.
            if block.thinking_signature:
                parts.append({"text": block.thinking, "thought": True, "thoughtSignature": block.thinking_signature})
        elif isinstance(block, TextContent):
            if block.text.strip():
                part: dict[str, Any] = {"text": block.text}
                if block.text_signature:
                    part["thoughtSignature"] = block.text_signature
                parts.append(part)
        elif isinstance(block, ToolCall):
            part = {"functionCall": {"name": block.name, "args": block.arguments}}
            signature = block.thought_signature or (SKIP_SIGNATURE if _is_gemini_3(model) else None)
            if signature:
                part["thoughtSignature"] = signature
            parts.append(part)
    return parts


def _tool_result_parts(message: ToolResultMessage, images: bool) -> list[dict[str, Any]]:
    pictures = [_inline(b) for b in message.content if isinstance(b, ImageContent)] if images else []
    text = tool_result_text(message, images_sent=bool(pictures))
    response = {"error": text} if message.is_error else {"output": text}
    return [{"functionResponse": {"name": message.tool_name, "response": response}}, *pictures]


def _inline(block: ImageContent) -> dict[str, Any]:
    return {"inlineData": {"mimeType": block.mime_type, "data": block.data}}


# --- response stream --------------------------------------------------------------------


class _Parser:
    """One open text or thinking block at a time (switching closes the other, as pi
    does); each function call is a block of its own, opened and closed at once."""

    def __init__(self, builder: AssistantMessageBuilder) -> None:
        self.builder = builder
        self.finished = False  # Gemini has no end marker: the body just ends
        self._ended = False  # a finishReason arrived
        self._open: int | None = None

    def end(self) -> None:
        if not self._ended:
            raise ProviderError(CUT_SHORT)

    def feed(self, event: ServerSentEvent) -> list[AssistantMessageEvent]:
        if not event.data.strip():
            return []
        data = decode_json(event)
        if data.get("error"):
            raise ProviderError(error_text(data) or f"Provider error: {event.data}")
        self._usage(data.get("usageMetadata"))
        candidates = data.get("candidates")
        if not candidates:
            blocked = (data.get("promptFeedback") or {}).get("blockReason")
            if blocked:
                raise ProviderError(f"Gemini blocked the prompt: {blocked}")
            return []
        candidate = candidates[0] if isinstance(candidates[0], dict) else {}
        out: list[AssistantMessageEvent] = []
        for part in (candidate.get("content") or {}).get("parts") or []:
            if isinstance(part, dict):
                self._part(part, out)
        if reason := candidate.get("finishReason"):
            self._finish(reason, candidate)
        return out

    def _part(self, part: dict[str, Any], out: list[AssistantMessageEvent]) -> None:
        builder = self.builder
        signature = part.get("thoughtSignature") if isinstance(part.get("thoughtSignature"), str) else None
        call = part.get("functionCall")
        if isinstance(call, dict):
            self._call(call, signature, out)
            return
        text = part.get("text")
        if not isinstance(text, str):
            return  # inline data, executable code... not shown
        thought = part.get("thought") is True
        at = self._open
        current = builder.message.content[at] if at is not None else None
        if text and (current is None or isinstance(current, ThinkingContent) != thought):
            self._close(out)
            at, start = builder.open_thinking() if thought else builder.open_text()
            self._open = at
            out.append(start)
        if at is None:
            return
        if text:
            out.append(builder.append_thinking(at, text) if thought else builder.append_text(at, text))
        # The signature comes on the part that ends a stretch of reasoning (sometimes an
        # empty one): it belongs to the block that stretch built.
        if signature:
            block = builder.message.content[at]
            if isinstance(block, ThinkingContent):
                block.thinking_signature = signature
            elif isinstance(block, TextContent):
                block.text_signature = signature

    def _call(self, call: dict[str, Any], signature: str | None, out: list[AssistantMessageEvent]) -> None:
        """A function call arrives whole: its block opens and closes at once."""
        builder = self.builder
        self._close(out)
        args = call.get("args") if isinstance(call.get("args"), dict) else {}
        name = call.get("name")
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id = f"call_{uuid.uuid4().hex[:24]}"  # Gemini 2.x sends no ids; the agent needs one
        at, start = builder.open_tool_call(call_id, name if isinstance(name, str) else "")
        block = builder.message.content[at]
        assert isinstance(block, ToolCall)
        block.thought_signature = signature
        out += [start, builder.append_tool_arguments(at, json.dumps(args, ensure_ascii=False))]
        if end := builder.close(at):
            out.append(end)

    def _close(self, out: list[AssistantMessageEvent]) -> None:
        if self._open is not None and (end := self.builder.close(self._open)):
            out.append(end)
        self._open = None

    def _finish(self, reason: Any, candidate: dict[str, Any]) -> None:
        self._ended = True
        message = self.builder.message
        if reason in FINISH_REASONS:
            stop = FINISH_REASONS[reason]
            message.stop_reason = "toolUse" if stop == "stop" and message.tool_calls() else stop  # type: ignore[assignment]
            return
        message.stop_reason = "error"
        explained = FINISH_EXPLAINED.get(reason, "the model stopped")
        detail = candidate.get("finishMessage")
        message.error_message = f"Gemini stopped ({reason}): {explained}" + (f". {detail}" if detail else "")

    def _usage(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        self.builder.set_usage(
            prompt=as_int(raw.get("promptTokenCount")),
            cached=as_int(raw.get("cachedContentTokenCount")),
            output=as_int(raw.get("candidatesTokenCount")) + as_int(raw.get("thoughtsTokenCount")),
        )
