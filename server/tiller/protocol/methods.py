"""The `agent/*` methods: each one's params and result, and the table that names them.

Params are validated with `model_validate`, so a bad field becomes a -32602 answer that
names it; results are dumped from their class, so every answer has the documented shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field, PositiveInt

from ..agent.types import AgentMessage
from ..ai.types import ImageContent, ModelCost, StopReason, ThinkingLevel, Usage, WireModel
from .context import CompactAtSetting, CompactionInfo, CompactionSettings, ContextUsage, InstructionFile
from .events import ApprovalRequestEvent, ApprovalResolvedEvent, SessionStateEvent
from .mcp import ListToolsResult, McpServerSpec
from .modes import (
    ApprovalMode,
    ApprovalOptionId,
    QueueMode,
    RestoreWhat,
    RuleScope,
    StreamingBehavior,
    ToolExecutionMode,
)
from .params import AbsolutePath, Identifier, LineOrColumn, ModelRef, Params, ToolName, Uri

# --- shared pieces ----------------------------------------------------------------------


class Position(WireModel):
    line: LineOrColumn
    character: LineOrColumn


class Range(WireModel):
    start: Position
    end: Position


class EditorContext(WireModel):
    """A file or selection the editor attaches to a prompt."""

    uri: Uri
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


class SessionRef(Params):
    session_id: Identifier


# --- requests ---------------------------------------------------------------------------


class NewSessionParams(Params):
    cwd: AbsolutePath | None = None
    model: ModelRef | None = None
    system_prompt: str | None = None
    thinking_level: ThinkingLevel | None = None
    tools: list[ToolName] | None = Field(default=None, max_length=64)
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
    model: ModelRef


class SetThinkingLevelParams(SessionRef):
    level: ThinkingLevel


class SetQueueModesParams(SessionRef):
    steering_mode: QueueMode | None = None
    follow_up_mode: QueueMode | None = None


class ListModelsParams(Params):
    # Words that must all occur in a model's provider/id, name or provider name.
    query: str | None = Field(default=None, max_length=1000)
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


class ListSessionsParams(Params):
    cwd: AbsolutePath | None = None


class RespondApprovalParams(SessionRef):
    approval_id: Identifier
    option_id: ApprovalOptionId
    # What the user typed with a rejection (or about the hunks left out); the model sees it.
    message: str | None = None
    # With allow_once / allow_always on an edit or write: apply only these hunks (ids of the
    # request's `hunks`).
    accepted_hunks: list[Identifier] | None = Field(default=None, max_length=10_000)


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
    # How full the context is, and what the session has been billed so far.
    context_usage: ContextUsage
    usage: Usage
    compaction: CompactionSettings
    # The compactions in effect, oldest first (the last one's summary is what the model sees).
    compactions: list[CompactionInfo] = Field(default_factory=list)
    is_compacting: bool = False
    # The AGENTS.md / CLAUDE.md files in the system prompt, farthest first.
    instructions: list[InstructionFile] = Field(default_factory=list)


class CompactParams(SessionRef):
    # What the summary should keep or stress ("keep the details of the parser work").
    instructions: str | None = None


class UndoCompactionResult(WireModel):
    undone: CompactionInfo
    context_usage: ContextUsage


class SetCompactionParams(SessionRef):
    """Absent fields stay as they are."""

    auto: bool | None = None
    # Tokens, a share of the window ("80%"), or "default" (the model's or the default).
    compact_at: CompactAtSetting | None = None
    keep_recent_tokens: PositiveInt | None = None
    tool_result_max_tokens: PositiveInt | None = None


# --- command rules ----------------------------------------------------------------------


class CommandRules(WireModel):
    """Patterns on bash commands (`git diff *`, `npm test`, `rm -rf *`): deny wins over ask,
    ask over allow; `readOnly` lists what plan mode may run."""

    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    read_only: list[str] = Field(default_factory=list)


class RuleFileInfo(WireModel):
    path: str
    rules: CommandRules
    # Why the file could not be read (then every command asks until it is fixed).
    error: str | None = None


class ProjectRulesInfo(RuleFileInfo):
    # Whether its allow and readOnly rules apply: the user trusted the file as it is now.
    # Its deny and ask rules always apply.
    trusted: bool


class RulesResult(WireModel):
    session: CommandRules
    project: ProjectRulesInfo
    user: RuleFileInfo
    # tiller's own list of read-only commands (plan mode), extended by readOnly rules.
    built_in_read_only: list[str]


class SetRulesParams(SessionRef):
    scope: RuleScope
    # Replaces the scope's four lists (send them as agent/getRules gave them, minus a rule,
    # to remove it). Absent: the rules stay as they are.
    rules: CommandRules | None = None
    # Project scope only: trust the project's file as it is after this call.
    trust: bool | None = None


# --- checkpoints -------------------------------------------------------------------------


class Checkpoint(WireModel):
    """The workspace's files and the conversation as they were at one moment (see
    protocol.md, "Checkpoints and rewind")."""

    checkpoint_id: str
    created_at: int
    # turn: taken before a prompt ran; rewind: taken just before a rewind (rewind to it to undo).
    kind: Literal["turn", "rewind"]
    # How many messages the conversation had then: for a turn, messages[messageCount] is
    # the user message that started it ("rewind to here").
    message_count: int
    # The prompt's first line, or what the rewind went back to.
    title: str
    # Its conversation is the start of the session's current one.
    on_current_branch: bool


class ListCheckpointsResult(WireModel):
    # Oldest first.
    checkpoints: list[Checkpoint]
    # Whether this session records checkpoints (they need git), and why not.
    available: bool
    reason: str | None = None


class RewindParams(SessionRef):
    checkpoint_id: str
    restore: RestoreWhat
    # Restore even files that changed since the agent last touched the workspace.
    force: bool | None = None


class SkippedFile(WireModel):
    path: str
    reason: str


class RewindResult(WireModel):
    # The checkpoint taken just before this rewind: rewind to it (same `restore`) to undo.
    undo_checkpoint_id: str
    # Paths relative to the session's cwd.
    restored: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    skipped: list[SkippedFile] = Field(default_factory=list)
    # The conversation's length after the rewind.
    message_count: int


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
    "agent/getRules": Method(SessionRef, RulesResult),
    "agent/setRules": Method(SetRulesParams, RulesResult),
    "agent/listCheckpoints": Method(SessionRef, ListCheckpointsResult),
    "agent/rewind": Method(RewindParams, RewindResult),
    "agent/compact": Method(CompactParams, CompactionInfo),
    "agent/undoCompaction": Method(SessionRef, UndoCompactionResult),
    "agent/setCompaction": Method(SetCompactionParams, CompactionSettings),
    "agent/listTools": Method(SessionRef, ListToolsResult),
}
