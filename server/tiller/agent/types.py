"""The agent-level vocabulary: tools, the events a run emits, the loop's configuration.

Events and tool results are pydantic wire models (camelCase JSON, `None` omitted), so the
server streams them to editors as they are and the exported JSON Schema describes them.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Union

from pydantic import ConfigDict, Field

from ..ai.abort import AbortSignal
from ..ai.options import StreamOptions
from ..ai.registry import StreamFn
from ..ai.types import (
    AssistantMessage,
    AssistantMessageEvent,
    Message,
    Model,
    ThinkingLevel,
    ToolResultBlock,
    ToolResultMessage,
    WireModel,
)

# --- messages ---------------------------------------------------------------------------


class CustomMessage(WireModel):
    """An application-defined message (any role the LLM never sees unless converted)."""

    model_config = ConfigDict(extra="allow")
    role: str
    timestamp: int = 0


AgentMessage = Union[Message, CustomMessage]

# --- tools ------------------------------------------------------------------------------


class AgentToolResult(WireModel):
    content: list[ToolResultBlock] = Field(default_factory=list)
    details: Any = None


OnUpdate = Callable[[AgentToolResult], Any]


class AgentTool:
    """A tool the model may call. Subclass and implement `execute`, or use `from_function`.

    `execute` reports failure by raising; the loop turns the exception's message into an
    `isError: true` result the model sees.
    """

    name: str = ""
    label: str = ""
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    # The tool only looks (read, grep, find, ls; an MCP tool its server marks read-only):
    # what a read-only mode may let run.
    read_only: bool = False

    async def execute(
        self,
        tool_call_id: str,
        args: dict[str, Any],
        cancel: AbortSignal,
        on_update: OnUpdate,
    ) -> AgentToolResult:
        raise NotImplementedError

    @classmethod
    def from_function(
        cls,
        name: str,
        description: str,
        parameters: dict[str, Any],
        fn: Callable[[str, dict[str, Any], AbortSignal, OnUpdate], Awaitable[AgentToolResult]],
        label: str | None = None,
    ) -> AgentTool:
        tool = cls()
        tool.name, tool.description, tool.parameters = name, description, parameters
        tool.label = label or name
        tool.execute = fn  # type: ignore[method-assign,assignment]
        return tool


# --- events -----------------------------------------------------------------------------


class AgentStartEvent(WireModel):
    type: Literal["agent_start"] = "agent_start"


class AgentEndEvent(WireModel):
    type: Literal["agent_end"] = "agent_end"
    messages: list[AgentMessage]


class TurnStartEvent(WireModel):
    type: Literal["turn_start"] = "turn_start"


class TurnEndEvent(WireModel):
    type: Literal["turn_end"] = "turn_end"
    message: AgentMessage
    tool_results: list[ToolResultMessage]


class MessageStartEvent(WireModel):
    type: Literal["message_start"] = "message_start"
    message: AgentMessage


class MessageUpdateEvent(WireModel):
    type: Literal["message_update"] = "message_update"
    message: AssistantMessage
    assistant_message_event: AssistantMessageEvent


class MessageEndEvent(WireModel):
    type: Literal["message_end"] = "message_end"
    message: AgentMessage


class ToolExecutionStartEvent(WireModel):
    type: Literal["tool_execution_start"] = "tool_execution_start"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]


class ToolExecutionUpdateEvent(WireModel):
    type: Literal["tool_execution_update"] = "tool_execution_update"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    partial_result: AgentToolResult


class ToolExecutionEndEvent(WireModel):
    type: Literal["tool_execution_end"] = "tool_execution_end"
    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    is_error: bool


AgentEvent = Annotated[
    Union[
        AgentStartEvent,
        AgentEndEvent,
        TurnStartEvent,
        TurnEndEvent,
        MessageStartEvent,
        MessageUpdateEvent,
        MessageEndEvent,
        ToolExecutionStartEvent,
        ToolExecutionUpdateEvent,
        ToolExecutionEndEvent,
    ],
    Field(discriminator="type"),
]

# --- loop configuration -----------------------------------------------------------------


@dataclass
class AgentContext:
    system_prompt: str = ""
    messages: list[Any] = field(default_factory=list)
    tools: list[AgentTool] = field(default_factory=list)


@dataclass
class BeforeToolCallResult:
    block: bool = False
    reason: str | None = None


@dataclass
class AfterToolCallResult:
    """Each field that is set replaces the original result's field wholesale."""

    content: list[Any] | None = None
    details: Any = None
    is_error: bool | None = None


@dataclass
class ToolCallContext:
    assistant_message: AssistantMessage
    tool_call: Any
    args: dict[str, Any]
    context: AgentContext
    result: AgentToolResult | None = None
    is_error: bool | None = None


ToolExecutionMode = Literal["sequential", "parallel"]
# "interrupt": pi-agent-core 0.58.3 — steering is polled after each tool (or each parallel
# preflight) and skips the rest of the batch. "after_tools": newer pi — steering waits until
# the turn's tools have finished and is delivered before the next LLM call.
SteeringPolicy = Literal["interrupt", "after_tools"]
Maybe = Any  # a value or an awaitable of it


@dataclass
class AgentLoopConfig:
    model: Model
    convert_to_llm: Callable[[list[Any]], Maybe] | None = None
    transform_context: Callable[[list[Any], AbortSignal | None], Maybe] | None = None
    get_api_key: Callable[[str], Maybe] | None = None
    # The base options for a call to a model (the catalogue's request settings: retries,
    # timeouts); the loop completes them with the settings below, the signal and the key.
    get_stream_options: Callable[[Model], StreamOptions] | None = None
    get_steering_messages: Callable[[], Maybe] | None = None
    get_follow_up_messages: Callable[[], Maybe] | None = None
    tool_execution: ToolExecutionMode = "parallel"
    steering_policy: SteeringPolicy = "interrupt"
    before_tool_call: Callable[[ToolCallContext, AbortSignal | None], Maybe] | None = None
    after_tool_call: Callable[[ToolCallContext, AbortSignal | None], Maybe] | None = None
    # Stop the run with an error message once this many LLM calls have been made.
    max_turns: int | None = None
    # Overrides the provider registry lookup by `model.api`.
    stream_fn: StreamFn | None = None
    signal: AbortSignal | None = None
    # Passed through to the provider.
    api_key: str | None = None
    reasoning: ThinkingLevel | None = None
    session_id: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    thinking_budgets: dict[str, int] | None = None
    # None keeps the base options' value (StreamOptions' default, or the catalogue's).
    max_retry_delay_ms: int | None = None


async def resolve(value: Any) -> Any:
    """Await `value` if it is awaitable: hooks may be plain or async functions."""
    if inspect.isawaitable(value):
        return await value
    return value
