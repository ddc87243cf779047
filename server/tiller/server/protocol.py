"""The `agent/*` protocol: method names, params, results, events and error codes.

Declared once here; `protocol.md` documents these classes and `schema/tiller.schema.json`
(generated from them) is what the TypeScript and Lua clients follow. Params are validated
with `model_validate`, so a bad field becomes a -32602 answer that names it.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import Field

from ..agent.types import (
    AgentEndEvent,
    AgentMessage,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from ..ai.types import ImageContent, StopReason, ThinkingLevel, ToolCall, Usage, WireModel

PROTOCOL_VERSION = 1

# --- error codes (JSON-RPC reserves -32000..-32099 for implementation errors) -------------

INVALID_PARAMS = -32602
SESSION_NOT_FOUND = -32001
SESSION_BUSY = -32002
MODEL_NOT_FOUND = -32003
APPROVAL_NOT_FOUND = -32004
REQUEST_CANCELLED = -32800

ERROR_CODES: dict[int, str] = {
    INVALID_PARAMS: "Invalid params: a field is missing, has the wrong type or an unknown value",
    SESSION_NOT_FOUND: "No session with that id in this server",
    SESSION_BUSY: "The session is running; use streamingBehavior, agent/steer or agent/followUp",
    MODEL_NOT_FOUND: "The model reference is malformed or unknown",
    APPROVAL_NOT_FOUND: "No pending approval with that id (answered, cancelled, or never asked)",
    REQUEST_CANCELLED: "The request was cancelled with $/cancelRequest",
}

QueueMode = Literal["all", "one_at_a_time"]
ApprovalMode = Literal["ask", "acceptEdits", "yolo"]
ApprovalOptionId = Literal["allow_once", "allow_always", "reject_once", "reject_always"]

# --- shared pieces ----------------------------------------------------------------------


class Position(WireModel):
    line: int
    character: int


class Range(WireModel):
    start: Position
    end: Position


class EditorContext(WireModel):
    """A file or selection the editor attaches to a prompt."""

    uri: str
    range: Range | None = None
    # The text, if the client already has it; otherwise the server reads the open buffer
    # (text document sync) or the file.
    text: str | None = None


class ModelInfo(WireModel):
    provider: str
    id: str
    name: str
    api: str
    reasoning: bool
    input: list[str]
    context_window: int
    max_tokens: int
    has_key: bool


class SessionRef(WireModel):
    session_id: str


# --- requests ---------------------------------------------------------------------------


class NewSessionParams(WireModel):
    cwd: str | None = None
    model: str | None = None
    system_prompt: str | None = None
    thinking_level: ThinkingLevel | None = None
    tools: list[str] | None = None
    approval_mode: ApprovalMode | None = None


class NewSessionResult(WireModel):
    session_id: str
    model: str
    tools: list[str]
    cwd: str
    approval_mode: ApprovalMode
    message_count: int = 0


class PromptParams(SessionRef):
    text: str
    images: list[ImageContent] | None = None
    context: list[EditorContext] | None = None
    streaming_behavior: Literal["steer", "followUp"] | None = None


class PromptResult(WireModel):
    # "queued" when the prompt was queued with streamingBehavior on a busy session.
    stop_reason: StopReason | Literal["queued"]
    new_messages: list[AgentMessage] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    error_message: str | None = None


class QueueParams(SessionRef):
    text: str


class QueueState(WireModel):
    steering: list[str]
    follow_up: list[str]


class SetModelParams(SessionRef):
    model: str


class SetThinkingLevelParams(SessionRef):
    level: ThinkingLevel


class SetQueueModesParams(SessionRef):
    steering_mode: QueueMode | None = None
    follow_up_mode: QueueMode | None = None


class ListModelsResult(WireModel):
    models: list[ModelInfo]
    default: str


class SessionSummary(WireModel):
    session_id: str
    cwd: str
    model: str
    is_streaming: bool
    message_count: int
    title: str
    updated_at: int
    # Hosted by this server process now (else only saved on disk: agent/loadSession it).
    loaded: bool


class ListSessionsParams(WireModel):
    cwd: str | None = None


class RespondApprovalParams(SessionRef):
    approval_id: str
    option_id: ApprovalOptionId
    # What the user typed with a rejection; the model sees it.
    message: str | None = None


class SetApprovalModeParams(SessionRef):
    mode: ApprovalMode


class ListSessionsResult(WireModel):
    sessions: list[SessionSummary]


class PendingToolCall(WireModel):
    tool_call_id: str
    tool_name: str


class SessionState(WireModel):
    session_id: str
    cwd: str
    model: str
    thinking_level: ThinkingLevel
    steering_mode: QueueMode
    follow_up_mode: QueueMode
    approval_mode: ApprovalMode
    is_streaming: bool
    messages: list[AgentMessage]
    stream_message: AgentMessage | None = None
    pending_tool_calls: list[str]
    error: str | None = None
    queue: QueueState
    # The `seq` of the last event sent for this session (0 before any).
    seq: int
    pending_approvals: list[ApprovalRequestEvent] = Field(default_factory=list)


# --- events (server -> client `agent/event` notifications) -------------------------------


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


class ApprovalOption(WireModel):
    option_id: ApprovalOptionId
    name: str
    kind: ApprovalOptionId


class ApprovalRequestEvent(WireModel):
    type: Literal["approval_request"] = "approval_request"
    approval_id: str
    tool_call_id: str
    tool_name: str
    kind: Literal["edit", "write", "execute"]
    title: str
    path: str | None = None
    diff: str | None = None
    # The complete proposed text of the file (edit, write), for a side-by-side diff view.
    new_text: str | None = None
    command: str | None = None
    options: list[ApprovalOption]


class ApprovalResolvedEvent(WireModel):
    type: Literal["approval_resolved"] = "approval_resolved"
    approval_id: str
    tool_call_id: str
    outcome: Literal["selected", "cancelled"]
    option_id: ApprovalOptionId | None = None


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


# Every event as it is sent in `agent/event` (message_update in its delta form).
WireEvent = Annotated[
    Union[
        AgentStartEvent, AgentEndEvent, TurnStartEvent, TurnEndEvent, MessageStartEvent, MessageUpdateDelta,
        MessageEndEvent, ToolExecutionStartEvent, ToolExecutionUpdateEvent, ToolExecutionEndEvent,
        QueueUpdateEvent, SessionStateEvent, ApprovalRequestEvent, ApprovalResolvedEvent, PersistenceErrorEvent,
    ],
    Field(discriminator="type"),
]


class EventNotification(WireModel):
    """`agent/event`: one event of one session; `seq` rises by one per session."""

    session_id: str
    seq: int
    event: WireEvent

