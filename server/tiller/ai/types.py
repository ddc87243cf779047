"""The LLM-level vocabulary: content blocks, messages, usage, models and stream events.

Declared once here with pydantic; every wire format (the agent protocol, the JSON Schema
exported for the TypeScript and Lua clients, session files) is derived from these classes.
The JSON shape is pi-ai's: camelCase keys, epoch-millisecond timestamps, and optional
fields *absent* rather than null (serialise with `to_json`/`dump`, which drop `None`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


def now_ms() -> int:
    return int(time.time() * 1000)


class WireModel(BaseModel):
    """Base for every wire type: camelCase on the wire, snake_case in Python."""

    # Fields with defaults are required in the exported JSON Schema: `dump()` drops only
    # `None`-valued fields, so a defaulted field is always present on the wire.
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        json_schema_serialization_defaults_required=True,
    )

    def dump(self) -> dict[str, Any]:
        """The wire dict: camelCase keys, `None` fields omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, exclude_none=True)


# --- content blocks -------------------------------------------------------------------


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str
    text_signature: str | None = None


class ThinkingContent(WireModel):
    type: Literal["thinking"] = "thinking"
    thinking: str
    # For openai-completions: the name of the delta field the reasoning came from.
    # For Anthropic: the opaque signature (or redacted data) to send back.
    thinking_signature: str | None = None
    redacted: bool | None = None


class ImageContent(WireModel):
    type: Literal["image"] = "image"
    data: str  # base64
    mime_type: str


class ToolCall(WireModel):
    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    thought_signature: str | None = None


UserBlock = Annotated[Union[TextContent, ImageContent], Field(discriminator="type")]
AssistantBlock = Annotated[
    Union[TextContent, ThinkingContent, ToolCall], Field(discriminator="type")
]
ToolResultBlock = UserBlock

# --- usage and stop reasons -----------------------------------------------------------

StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]
ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]


class Cost(WireModel):
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


class Usage(WireModel):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = Field(default_factory=Cost)


# --- messages -------------------------------------------------------------------------


class UserMessage(WireModel):
    role: Literal["user"] = "user"
    content: Union[str, list[UserBlock]]
    timestamp: int = Field(default_factory=now_ms)


class AssistantMessage(WireModel):
    role: Literal["assistant"] = "assistant"
    content: list[AssistantBlock] = Field(default_factory=list)
    api: str
    provider: str
    model: str
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    timestamp: int = Field(default_factory=now_ms)

    def tool_calls(self) -> list[ToolCall]:
        return [block for block in self.content if isinstance(block, ToolCall)]

    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


class ToolResultMessage(WireModel):
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[ToolResultBlock] = Field(default_factory=list)
    details: Any = None
    is_error: bool = False
    timestamp: int = Field(default_factory=now_ms)


Message = Annotated[
    Union[UserMessage, AssistantMessage, ToolResultMessage], Field(discriminator="role")
]

# --- models ---------------------------------------------------------------------------


class ModelCost(WireModel):
    """Prices in dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class OpenAICompat(WireModel):
    """How a server speaking OpenAI's chat completions differs from OpenAI (pi-ai's compat).

    Unset switches are detected from the provider and base URL (see
    `providers/openai_compat.py`); a models.toml `compat` table sets them explicitly.
    """

    # Accepts `store: false` (OpenAI does; most copies reject unknown fields).
    supports_store: bool | None = None
    # Takes the system prompt as role `developer` for reasoning models.
    supports_developer_role: bool | None = None
    # Accepts the reasoning level (as `reasoning_effort`, or as `thinking_format` says).
    supports_reasoning_effort: bool | None = None
    # Accepts `stream_options: {include_usage: true}`.
    supports_usage_in_streaming: bool | None = None
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] | None = None
    # Tool results carry the tool's `name` (Mistral).
    requires_tool_result_name: bool | None = None
    # A user message may not follow tool results directly (Mistral).
    requires_assistant_after_tool_result: bool | None = None
    # Earlier reasoning goes back as plain text rather than a reasoning field.
    requires_thinking_as_text: bool | None = None
    # Tool-call ids must be exactly nine letters or digits (Mistral).
    requires_mistral_tool_ids: bool | None = None
    # How a reasoning level is asked for: `reasoning_effort` (openai), `reasoning: {effort}`
    # (openrouter), `thinking: {type}` (zai) or `enable_thinking` (qwen).
    thinking_format: Literal["openai", "openrouter", "zai", "qwen"] | None = None


# When a session compacts its context: a token count, or a share of the model's context
# window ("80%"). See host/compaction_settings.py.
CompactAt = Union[
    Annotated[int, Field(gt=0)],
    Annotated[str, Field(pattern=r"^(100|[1-9]?[0-9])(\.[0-9]+)?%$")],
]


class Model(WireModel):
    id: str
    name: str
    # "openai-completions" | "openai-responses" | "anthropic-messages" | "google-generative-ai"
    # | "local" | "faux"
    api: str
    provider: str
    base_url: str = ""
    reasoning: bool = False
    input: list[Literal["text", "image"]] = Field(default_factory=lambda: ["text"])  # type: ignore[arg-type]
    cost: ModelCost = Field(default_factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: dict[str, str] | None = None
    compat: OpenAICompat | None = None
    # models.toml's `compactAt` for this model (else the session's setting or the default).
    compact_at: CompactAt | None = None

    @property
    def ref(self) -> str:
        """The wire name of a model: `provider/id`."""
        return f"{self.provider}/{self.id}"


def calculate_cost(model: Model, usage: Usage) -> Cost:
    """Dollar cost of `usage` at `model`'s prices; also stored on `usage.cost`."""
    price = model.cost
    cost = Cost(
        input=price.input / 1_000_000 * usage.input,
        output=price.output / 1_000_000 * usage.output,
        cache_read=price.cache_read / 1_000_000 * usage.cache_read,
        cache_write=price.cache_write / 1_000_000 * usage.cache_write,
    )
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    usage.cost = cost
    return cost


def total_usage(messages: list[Any]) -> Usage:
    """The tokens and cost of every assistant message among `messages`, added up."""
    return sum_usage(message.usage for message in messages if isinstance(message, AssistantMessage))


def sum_usage(usages: Iterable[Usage]) -> Usage:
    # Added up in plain numbers: setting pydantic fields one by one costs ~20x more, and a
    # long session adds up hundreds of messages after every turn.
    tokens = [0, 0, 0, 0, 0]
    cost = [0.0, 0.0, 0.0, 0.0, 0.0]
    for usage in usages:
        tokens[0] += usage.input
        tokens[1] += usage.output
        tokens[2] += usage.cache_read
        tokens[3] += usage.cache_write
        tokens[4] += usage.total_tokens
        spent = usage.cost
        cost[0] += spent.input
        cost[1] += spent.output
        cost[2] += spent.cache_read
        cost[3] += spent.cache_write
        cost[4] += spent.total
    return Usage(input=tokens[0], output=tokens[1], cache_read=tokens[2], cache_write=tokens[3], total_tokens=tokens[4],
                 cost=Cost(input=cost[0], output=cost[1], cache_read=cost[2], cache_write=cost[3], total=cost[4]))


# --- the LLM call ---------------------------------------------------------------------


class Tool(WireModel):
    """What a provider needs to know of a tool: name, description, JSON Schema."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


class Context(BaseModel):
    """One LLM call's input. Tools may be any objects with name/description/parameters."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    system_prompt: str | None = None
    messages: list[Any] = Field(default_factory=list)
    tools: list[Any] | None = None


# --- assistant message events (the provider stream) -----------------------------------


class _PartialEvent(WireModel):
    # The same mutable partial message for every event of one stream.
    partial: AssistantMessage


class StartEvent(_PartialEvent):
    type: Literal["start"] = "start"


class TextStartEvent(_PartialEvent):
    type: Literal["text_start"] = "text_start"
    content_index: int


class TextDeltaEvent(_PartialEvent):
    type: Literal["text_delta"] = "text_delta"
    content_index: int
    delta: str


class TextEndEvent(_PartialEvent):
    type: Literal["text_end"] = "text_end"
    content_index: int
    content: str


class ThinkingStartEvent(_PartialEvent):
    type: Literal["thinking_start"] = "thinking_start"
    content_index: int


class ThinkingDeltaEvent(_PartialEvent):
    type: Literal["thinking_delta"] = "thinking_delta"
    content_index: int
    delta: str


class ThinkingEndEvent(_PartialEvent):
    type: Literal["thinking_end"] = "thinking_end"
    content_index: int
    content: str


class ToolCallStartEvent(_PartialEvent):
    type: Literal["toolcall_start"] = "toolcall_start"
    content_index: int


class ToolCallDeltaEvent(_PartialEvent):
    type: Literal["toolcall_delta"] = "toolcall_delta"
    content_index: int
    delta: str  # the raw JSON fragment of the arguments


class ToolCallEndEvent(_PartialEvent):
    type: Literal["toolcall_end"] = "toolcall_end"
    content_index: int
    tool_call: ToolCall


class DoneEvent(WireModel):
    type: Literal["done"] = "done"
    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage


class ErrorEvent(WireModel):
    type: Literal["error"] = "error"
    reason: Literal["aborted", "error"]
    error: AssistantMessage


AssistantMessageEvent = Annotated[
    Union[
        StartEvent,
        TextStartEvent,
        TextDeltaEvent,
        TextEndEvent,
        ThinkingStartEvent,
        ThinkingDeltaEvent,
        ThinkingEndEvent,
        ToolCallStartEvent,
        ToolCallDeltaEvent,
        ToolCallEndEvent,
        DoneEvent,
        ErrorEvent,
    ],
    Field(discriminator="type"),
]
