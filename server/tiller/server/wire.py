"""Agent events as they travel to clients.

Everything is sent as the pydantic wire shape, except `message_update`: pi's own RPC mode
repeats the whole partial message with every delta, which grows quadratically with the
length of a reply. Here an update carries only the provider event's delta; the client
rebuilds the message from `message_start` (the empty partial) plus the deltas, and
`message_end` carries the final message in full (see protocol.md, "Rebuilding a message").
"""

from __future__ import annotations

from typing import Any

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


def wire_event(event: Any) -> dict[str, Any]:
    if isinstance(event, MessageUpdateEvent):
        return {"type": "message_update", "assistantMessageEvent": _delta_of(event.assistant_message_event)}
    return event.dump()


def _delta_of(event: Any) -> dict[str, Any]:
    wire: dict[str, Any] = {"type": event.type, "contentIndex": event.content_index}
    if isinstance(event, (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)):
        wire["delta"] = event.delta
    elif isinstance(event, (TextEndEvent, ThinkingEndEvent)):
        wire["content"] = event.content
    elif isinstance(event, ToolCallEndEvent):
        wire["toolCall"] = event.tool_call.dump()
    elif isinstance(event, ToolCallStartEvent):
        block = event.partial.content[event.content_index]
        if isinstance(block, ToolCall):
            wire["id"], wire["toolName"] = block.id, block.name
    elif isinstance(event, ThinkingStartEvent):
        block = event.partial.content[event.content_index]
        if getattr(block, "redacted", None):
            wire["redacted"] = True
    return wire
