"""What a session streams to its client, besides the agent's own events.

Over LSP each event travels in an `agent/event` notification (`EventNotification`); the ACP
front end translates them into `session/update`s. `WireEvent` is the complete set, with
`message_update` in its delta form (see `wire_events.py`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field

from ..agent.types import (
    AgentEndEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from ..ai.types import ThinkingLevel, ToolCall, WireModel
from .context import (
    CompactionEndEvent,
    CompactionStartEvent,
    CompactionUndoneEvent,
    ContextUsageEvent,
    InstructionsEvent,
)
from .mcp import McpServerStateEvent
from .modes import (
    ApprovalKind,
    ApprovalMode,
    ApprovalOptionId,
    ApprovalOptionKind,
    QueueMode,
    RestoreWhat,
    RuleScope,
    ToolExecutionMode,
)


class QueueUpdateEvent(WireModel):
    type: Literal["queue_update"] = "queue_update"
    steering: list[str]
    follow_up: list[str]


class SessionStateEvent(WireModel):
    type: Literal["session_state"] = "session_state"
    model: str
    thinking_level: ThinkingLevel
    steering_mode: QueueMode
    follow_up_mode: QueueMode
    approval_mode: ApprovalMode
    tool_execution: ToolExecutionMode


class SavedRule(WireModel):
    """The command rule an "always allow" option saves, exactly as it will be saved."""

    scope: RuleScope
    # One pattern per command of the line that no rule allowed yet.
    patterns: list[str]
    # The settings file it is written to (project and user scopes).
    path: str | None = None


class ApprovalOption(WireModel):
    option_id: ApprovalOptionId
    name: str
    kind: ApprovalOptionKind
    rule: SavedRule | None = None


class DiffHunk(WireModel):
    """One hunk of an approval's `diff`: `header` is its @@ line, the numbers are the line
    ranges it covers in the file before and after (unified diff conventions)."""

    id: str
    header: str
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int


class ApprovalRequestEvent(WireModel):
    type: Literal["approval_request"] = "approval_request"
    approval_id: str
    tool_call_id: str
    tool_name: str
    kind: ApprovalKind
    title: str
    path: str | None = None
    diff: str | None = None
    # The diff's hunks (edit, write): agent/respondApproval may accept only some of them.
    hunks: list[DiffHunk] | None = None
    # The complete proposed text of the file (edit, write), for a side-by-side diff view.
    new_text: str | None = None
    command: str | None = None
    # Why the user is asked although a rule or the mode might not ask (a rule that asks, a
    # line that cannot be parsed, a redirection that writes a file).
    reason: str | None = None
    # An MCP tool call (kind "mcp"): the server it goes to and the arguments it sends.
    server: str | None = None
    arguments: dict[str, Any] | None = None
    options: list[ApprovalOption]


class ApprovalResolvedEvent(WireModel):
    type: Literal["approval_resolved"] = "approval_resolved"
    approval_id: str
    tool_call_id: str
    outcome: Literal["selected", "cancelled"]
    option_id: ApprovalOptionId | None = None
    # Present when the user allowed only some hunks: the ids of those applied.
    accepted_hunks: list[str] | None = None


class RewindEvent(WireModel):
    """The files and/or the conversation went back to a checkpoint: a client reloads the
    messages (agent/getState) when the conversation was restored."""

    type: Literal["rewind"] = "rewind"
    checkpoint_id: str
    restore: RestoreWhat
    # The checkpoint taken just before the rewind: rewinding to it undoes this one.
    undo_checkpoint_id: str
    message_count: int


class AssistantDelta(WireModel):
    """What `message_update` carries on the wire instead of the whole partial message
    (protocol.md, "Rebuilding a streaming message")."""

    type: Literal[
        "text_start", "text_delta", "text_end",
        "thinking_start", "thinking_delta", "thinking_end",
        "toolcall_start", "toolcall_delta", "toolcall_end",
    ]
    content_index: int
    delta: str | None = None  # *_delta: the new text (raw JSON fragment for tool calls)
    content: str | None = None  # text_end / thinking_end: the block's full text
    tool_call: ToolCall | None = None  # toolcall_end: the parsed call
    id: str | None = None  # toolcall_start
    tool_name: str | None = None  # toolcall_start
    redacted: bool | None = None  # thinking_start of redacted reasoning


class MessageUpdateDelta(WireModel):
    type: Literal["message_update"] = "message_update"
    assistant_message_event: AssistantDelta


class PersistenceErrorEvent(WireModel):
    type: Literal["persistence_error"] = "persistence_error"
    message: str


# Every event as it is sent (message_update in its delta form).
WireEvent = Annotated[
    Union[
        AgentStartEvent, AgentEndEvent, TurnStartEvent, TurnEndEvent, MessageStartEvent, MessageUpdateDelta,
        MessageEndEvent, ToolExecutionStartEvent, ToolExecutionUpdateEvent, ToolExecutionEndEvent,
        QueueUpdateEvent, SessionStateEvent, ApprovalRequestEvent, ApprovalResolvedEvent, PersistenceErrorEvent,
        RewindEvent,
        ContextUsageEvent, CompactionStartEvent, CompactionEndEvent, CompactionUndoneEvent, InstructionsEvent,
        McpServerStateEvent,
    ],
    Field(discriminator="type"),
]

# The same union without the discriminator annotation, for isinstance checks and signatures.
AnyWireEvent = Union[
    AgentStartEvent, AgentEndEvent, TurnStartEvent, TurnEndEvent, MessageStartEvent, MessageUpdateDelta,
    MessageEndEvent, ToolExecutionStartEvent, ToolExecutionUpdateEvent, ToolExecutionEndEvent,
    QueueUpdateEvent, SessionStateEvent, ApprovalRequestEvent, ApprovalResolvedEvent, PersistenceErrorEvent,
    RewindEvent,
    ContextUsageEvent, CompactionStartEvent, CompactionEndEvent, CompactionUndoneEvent, InstructionsEvent,
    McpServerStateEvent,
]


class EventNotification(WireModel):
    """`agent/event`: one event of one session; `seq` rises by one per session."""

    session_id: str
    seq: int
    event: WireEvent
