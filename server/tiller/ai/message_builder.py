"""Builds one streaming assistant message and the events that describe it.

Every provider (HTTP or in-process) feeds what it parses into an `AssistantMessageBuilder`
and yields the events it returns, so that block bookkeeping, the `*_start/_delta/_end`
contract and the final `done`/`error` are the same for all of them.
"""

from __future__ import annotations

from .partial_json import parse_streaming_json
from .types import (
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    Model,
    StartEvent,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    calculate_cost,
)

ABORTED_TEXT = "Request was aborted"


class AssistantMessageBuilder:
    def __init__(self, model: Model) -> None:
        self.model = model
        # The partial: the same object travels in every event of the stream.
        self.message = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
        self._open: set[int] = set()
        self._tool_json: dict[int, str] = {}

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> StartEvent:
        return StartEvent(partial=self.message)

    def done(self) -> DoneEvent:
        calculate_cost(self.model, self.message.usage)
        reason = self.message.stop_reason
        if reason not in ("stop", "length", "toolUse"):
            reason = "stop"
        return DoneEvent(reason=reason, message=self.message)

    def fail(self, error_message: str, *, aborted: bool) -> ErrorEvent:
        """End the stream with an error; the partial content stays on the message."""
        calculate_cost(self.model, self.message.usage)
        self.message.stop_reason = "aborted" if aborted else "error"
        self.message.error_message = error_message or (ABORTED_TEXT if aborted else "An unknown error occurred")
        return ErrorEvent(reason=self.message.stop_reason, error=self.message)

    def set_usage(self, *, prompt: int, cached: int, output: int) -> None:
        """Usage as OpenAI and Gemini count it: `prompt` includes the `cached` tokens, which
        pi reports apart (input excludes them; nothing is written to a cache)."""
        usage = self.message.usage
        usage.input = prompt - cached
        usage.output = output
        usage.cache_read = cached
        usage.cache_write = 0
        usage.total_tokens = usage.input + usage.output + usage.cache_read

    # --- blocks ------------------------------------------------------------------------

    def is_open(self, index: int) -> bool:
        return index in self._open

    def open_text(self) -> tuple[int, TextStartEvent]:
        index = self._append(TextContent(text=""))
        return index, TextStartEvent(content_index=index, partial=self.message)

    def append_text(self, index: int, delta: str) -> TextDeltaEvent:
        block = self.message.content[index]
        assert isinstance(block, TextContent)
        block.text += delta
        return TextDeltaEvent(content_index=index, delta=delta, partial=self.message)

    def open_thinking(
        self, signature: str | None = None, *, text: str = "", redacted: bool | None = None
    ) -> tuple[int, ThinkingStartEvent]:
        block = ThinkingContent(thinking=text, thinking_signature=signature, redacted=redacted)
        index = self._append(block)
        return index, ThinkingStartEvent(content_index=index, partial=self.message)

    def append_thinking(self, index: int, delta: str) -> ThinkingDeltaEvent:
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        block.thinking += delta
        return ThinkingDeltaEvent(content_index=index, delta=delta, partial=self.message)

    def append_signature(self, index: int, fragment: str) -> None:
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        block.thinking_signature = (block.thinking_signature or "") + fragment

    def open_tool_call(self, call_id: str, name: str) -> tuple[int, ToolCallStartEvent]:
        index = self._append(ToolCall(id=call_id, name=name, arguments={}))
        self._tool_json[index] = ""
        return index, ToolCallStartEvent(content_index=index, partial=self.message)

    def append_tool_arguments(self, index: int, fragment: str) -> ToolCallDeltaEvent:
        block = self.message.content[index]
        assert isinstance(block, ToolCall)
        self._tool_json[index] += fragment
        block.arguments = parse_streaming_json(self._tool_json[index])
        return ToolCallDeltaEvent(content_index=index, delta=fragment, partial=self.message)

    def close(self, index: int) -> TextEndEvent | ThinkingEndEvent | ToolCallEndEvent | None:
        """Close block `index`, returning its `*_end` event (None if not open)."""
        if index not in self._open:
            return None
        self._open.discard(index)
        block = self.message.content[index]
        if isinstance(block, TextContent):
            return TextEndEvent(content_index=index, content=block.text, partial=self.message)
        if isinstance(block, ThinkingContent):
            return ThinkingEndEvent(content_index=index, content=block.thinking, partial=self.message)
        block.arguments = parse_streaming_json(self._tool_json.pop(index, ""))
        return ToolCallEndEvent(content_index=index, tool_call=block, partial=self.message)

    def close_all(self) -> list[TextEndEvent | ThinkingEndEvent | ToolCallEndEvent]:
        """Close every open block, in content order."""
        return [event for index in sorted(self._open) if (event := self.close(index))]

    def _append(self, block: TextContent | ThinkingContent | ToolCall) -> int:
        self.message.content.append(block)
        index = len(self.message.content) - 1
        self._open.add(index)
        return index
