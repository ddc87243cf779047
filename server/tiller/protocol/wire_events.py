"""Agent events in the shape they travel to clients.

Every event is sent as its own pydantic class, except `message_update`: pi's own RPC mode
repeats the whole partial message with every delta, which grows quadratically with the
length of a reply. Here an update carries only the provider event's delta; the client
rebuilds the message from `message_start` (the empty partial) plus the deltas, and
`message_end` carries the final message in full (see protocol.md, "Rebuilding a message").
"""

from __future__ import annotations

from typing import Any, Literal, cast

from ..agent.types import MessageUpdateEvent
from ..ai.types import (
    TextDeltaEvent,
    TextEndEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from .events import AnyWireEvent, AssistantDelta, MessageUpdateDelta

DeltaType = Literal["text_delta", "thinking_delta", "toolcall_delta"]


def wire_event(event: Any) -> AnyWireEvent:
    """`event` (an agent event) as it is sent."""
    if isinstance(event, MessageUpdateEvent):
        return MessageUpdateDelta(assistant_message_event=_delta_of(event.assistant_message_event))
    return cast(AnyWireEvent, event)


def delta_update(kind: DeltaType, content_index: int, text: str) -> MessageUpdateDelta:
    """The `message_update` of one or more consecutive deltas of one block, joined."""
    return MessageUpdateDelta(
        assistant_message_event=AssistantDelta(type=kind, content_index=content_index, delta=text)
    )


def _delta_of(event: Any) -> AssistantDelta:
    fields: dict[str, Any] = {"type": event.type, "content_index": event.content_index}
    if isinstance(event, (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)):
        fields["delta"] = event.delta
    elif isinstance(event, (TextEndEvent, ThinkingEndEvent)):
        fields["content"] = event.content
    elif isinstance(event, ToolCallEndEvent):
        fields["tool_call"] = event.tool_call
    elif isinstance(event, ToolCallStartEvent):
        block = event.partial.content[event.content_index]
        if isinstance(block, ToolCall):
            fields["id"], fields["tool_name"] = block.id, block.name
    elif isinstance(event, ThinkingStartEvent):
        block = event.partial.content[event.content_index]
        if getattr(block, "redacted", None):
            fields["redacted"] = True
    return AssistantDelta(**fields)
