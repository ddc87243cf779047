"""The JSON Schema of tiller's wire types, generated from the pydantic declarations.

The TypeScript and Lua clients are generated from (or checked against) this schema, so the
pydantic classes stay the single source of truth. `tiller schema` prints it; the copy in
`schema/tiller.schema.json` is kept in step by a test.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from .agent.types import AgentEvent, AgentMessage, AgentToolResult
from .ai.types import AssistantMessageEvent, Model, StopReason, ThinkingLevel, Usage


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


def wire_schema() -> dict[str, Any]:
    return TillerWireTypes.model_json_schema(by_alias=True, mode="serialization")


def wire_schema_text() -> str:
    return json.dumps(wire_schema(), indent=2, sort_keys=True) + "\n"
