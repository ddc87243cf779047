"""The `agent/*` methods: each one's params and result, and the table that names them.

Params are validated with `model_validate`, so a bad field becomes a -32602 answer that
names it; results are dumped from their class, so every answer has the documented shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from ..agent.types import AgentMessage
from ..ai.types import ImageContent, ModelCost, StopReason, ThinkingLevel, Usage, WireModel
from .events import ApprovalRequestEvent, ApprovalResolvedEvent, SessionStateEvent
from .mcp import ListToolsResult, McpServerSpec
from .modes import ApprovalMode, ApprovalOptionId, QueueMode, StreamingBehavior, ToolExecutionMode

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
    # Dollars per million tokens (input, output, cacheRead, cacheWrite).
    cost: ModelCost
    # The provider has a key or needs none (a local server may still be down).
    has_key: bool
    # The provider can be called now: a key is set, or its local server answers.
    ready: bool
    # What a provider that is not ready lacks, for people ("set OPENAI_API_KEY").
    setup_hint: str | None = None


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
    # How a reply's tool calls run: "parallel" (the default, as pi) or one by one.
    tool_execution: ToolExecutionMode | None = None
    # MCP servers for this session, besides the config file's and the workspace's .mcp.json.
    mcp_servers: list[McpServerSpec] | None = None


class NewSessionResult(WireModel):
    session_id: str
    model: str
    tools: list[str]
    cwd: str
    approval_mode: ApprovalMode
    message_count: int = 0


class LoadSessionParams(SessionRef):
    # The session's own MCP servers again (they are not saved with it).
    mcp_servers: list[McpServerSpec] | None = None


class PromptParams(SessionRef):
    text: str
    images: list[ImageContent] | None = None
    context: list[EditorContext] | None = None
    streaming_behavior: StreamingBehavior | None = None


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


class ListModelsParams(WireModel):
    # Words that must all occur in a model's provider/id, name or provider name.
    query: str | None = None
    # Also models of providers that are not ready.
    all: bool | None = None
    # Paging over the ranked matches; no limit: every match.
    offset: int | None = Field(default=None, ge=0)
    limit: int | None = Field(default=None, ge=0)


class ListModelsResult(WireModel):
    models: list[ModelInfo]
    default: str
    # Matches before paging.
    total: int


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
    # What the user typed with a rejection (or about the hunks left out); the model sees it.
    message: str | None = None
    # With allow_once / allow_always on an edit or write: apply only these hunks (ids of the
    # request's `hunks`).
    accepted_hunks: list[str] | None = None


class SetApprovalModeParams(SessionRef):
    mode: ApprovalMode


class SetToolExecutionParams(SessionRef):
    mode: ToolExecutionMode


class ListSessionsResult(WireModel):
    sessions: list[SessionSummary]


class SessionState(WireModel):
    session_id: str
    cwd: str
    model: str
    thinking_level: ThinkingLevel
    steering_mode: QueueMode
    follow_up_mode: QueueMode
    approval_mode: ApprovalMode
    tool_execution: ToolExecutionMode
    is_streaming: bool
    messages: list[AgentMessage]
    stream_message: AgentMessage | None = None
    pending_tool_calls: list[str]
    error: str | None = None
    queue: QueueState
    # The `seq` of the last event sent for this session (0 before any).
    seq: int
    pending_approvals: list[ApprovalRequestEvent] = Field(default_factory=list)
    # How each answered or cancelled approval of the session went (its approval_resolved
    # event), oldest first: a client rebuilding its view shows the outcomes again.
    resolved_approvals: list[ApprovalResolvedEvent] = Field(default_factory=list)



class Empty(WireModel):
    """The result of a method that only acknowledges (`{}`)."""


# --- the table -------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    params: type[WireModel] | None  # None: the method takes no params
    result: type[WireModel]


METHODS: dict[str, Method] = {
    "agent/newSession": Method(NewSessionParams, NewSessionResult),
    "agent/prompt": Method(PromptParams, PromptResult),
    "agent/steer": Method(QueueParams, QueueState),
    "agent/followUp": Method(QueueParams, QueueState),
    "agent/abort": Method(SessionRef, Empty),
    "agent/clearQueue": Method(SessionRef, QueueState),
    "agent/getState": Method(SessionRef, SessionState),
    "agent/setModel": Method(SetModelParams, SessionStateEvent),
    "agent/setThinkingLevel": Method(SetThinkingLevelParams, SessionStateEvent),
    "agent/setQueueModes": Method(SetQueueModesParams, SessionStateEvent),
    "agent/listModels": Method(ListModelsParams, ListModelsResult),
    "agent/listSessions": Method(ListSessionsParams, ListSessionsResult),
    "agent/loadSession": Method(LoadSessionParams, NewSessionResult),
    "agent/closeSession": Method(SessionRef, Empty),
    "agent/deleteSession": Method(SessionRef, Empty),
    "agent/respondApproval": Method(RespondApprovalParams, Empty),
    "agent/setApprovalMode": Method(SetApprovalModeParams, SessionStateEvent),
    "agent/setToolExecution": Method(SetToolExecutionParams, SessionStateEvent),
    "agent/listTools": Method(SessionRef, ListToolsResult),
}
