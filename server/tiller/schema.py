"""The JSON Schema of tiller's wire types, generated from the pydantic declarations.

The TypeScript and Lua clients are generated from (or checked against) this schema, so the
pydantic classes stay the single source of truth. `tiller schema` prints it; the copy in
`schema/tiller.schema.json` is kept in step by a test.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.json_schema import GenerateJsonSchema

from .agent.types import AgentEvent, AgentMessage, AgentToolResult
from .ai.types import AssistantMessageEvent, Model, StopReason, ThinkingLevel, Usage
from .protocol import context as c
from .protocol import events as e
from .protocol import methods as p
from .protocol.errors import ErrorCode
from .protocol.mcp import ListToolsResult, McpServerSpec, McpServerStateEvent
from .protocol.methods import METHODS
from .protocol.modes import FEATURES, PROTOCOL_VERSION


class TillerWireTypes(BaseModel):
    """Not a message itself: a holder whose fields name every top-level wire type."""

    model_config = ConfigDict(title="tiller wire types")

    agent_event: AgentEvent
    agent_message: AgentMessage
    assistant_message_event: AssistantMessageEvent
    agent_tool_result: AgentToolResult
    model: Model
    usage: Usage
    stop_reason: StopReason
    thinking_level: ThinkingLevel
    # The agent/* protocol (server/tiller/protocol/).
    event_notification: e.EventNotification
    wire_event: e.WireEvent
    message_update_on_the_wire: e.MessageUpdateDelta
    approval_request_event: e.ApprovalRequestEvent
    approval_resolved_event: e.ApprovalResolvedEvent
    persistence_error_event: e.PersistenceErrorEvent
    respond_approval_params: p.RespondApprovalParams
    set_approval_mode_params: p.SetApprovalModeParams
    set_tool_execution_params: p.SetToolExecutionParams
    list_sessions_params: p.ListSessionsParams
    queue_update_event: e.QueueUpdateEvent
    session_state_event: e.SessionStateEvent
    new_session_params: p.NewSessionParams
    new_session_result: p.NewSessionResult
    prompt_params: p.PromptParams
    prompt_result: p.PromptResult
    queue_params: p.QueueParams
    queue_state: p.QueueState
    session_ref: p.SessionRef
    session_state: p.SessionState
    set_model_params: p.SetModelParams
    set_thinking_level_params: p.SetThinkingLevelParams
    set_queue_modes_params: p.SetQueueModesParams
    list_models_params: p.ListModelsParams
    list_models_result: p.ListModelsResult
    list_sessions_result: p.ListSessionsResult
    empty: p.Empty
    # Command rules, plan mode and checkpoints.
    command_rules: p.CommandRules
    rules_result: p.RulesResult
    set_rules_params: p.SetRulesParams
    list_checkpoints_result: p.ListCheckpointsResult
    rewind_params: p.RewindParams
    rewind_result: p.RewindResult
    checkpoint: p.Checkpoint
    rewind_event: e.RewindEvent
    # Long sessions: the context meter, compaction, project instructions.
    context_usage: c.ContextUsage
    context_usage_event: c.ContextUsageEvent
    compaction_info: c.CompactionInfo
    compaction_settings: c.CompactionSettings
    compaction_start_event: c.CompactionStartEvent
    compaction_end_event: c.CompactionEndEvent
    compaction_undone_event: c.CompactionUndoneEvent
    instructions_event: c.InstructionsEvent
    compact_params: p.CompactParams
    undo_compaction_result: p.UndoCompactionResult
    set_compaction_params: p.SetCompactionParams
    load_session_params: p.LoadSessionParams
    list_tools_result: ListToolsResult
    mcp_server_state_event: McpServerStateEvent
    mcp_server_spec: McpServerSpec


class WireJsonSchema(GenerateJsonSchema):
    """The schema of what `WireModel.dump()` sends.

    `WireModel` sets `json_schema_serialization_defaults_required`, so a field with a default
    is required: it is always on the wire. Except when that default is `None`: `dump()` drops
    `None`-valued fields, so such a field is absent whenever it is unset, and stays optional.
    """

    def field_is_required(self, field: Any, total: bool) -> bool:
        schema = field.get("schema", {})
        if self.mode == "serialization" and schema.get("type") == "default" and "default" in schema:
            if schema["default"] is None:
                return False
        return super().field_is_required(field, total)


def wire_schema() -> dict[str, Any]:
    schema = TillerWireTypes.model_json_schema(
        by_alias=True, mode="serialization", schema_generator=WireJsonSchema
    )
    # What is not a type but a client still needs, so that no client copies it by hand.
    schema["x-tiller"] = {
        "protocolVersion": PROTOCOL_VERSION,
        "features": FEATURES,
        "errorCodes": {code.name: int(code) for code in ErrorCode},
        "methods": {
            name: {"params": method.params.__name__ if method.params else None, "result": method.result.__name__}
            for name, method in METHODS.items()
        },
    }
    return schema


def wire_schema_text() -> str:
    return json.dumps(wire_schema(), indent=2, sort_keys=True) + "\n"
