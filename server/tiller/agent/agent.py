"""`Agent`: a stateful wrapper around the loop (pi-agent-core 0.58.3's `Agent` class).

It owns the transcript and the steering / follow-up queues, runs one loop at a time,
folds every event into its state *before* listeners see it, and turns a loop that raises
into a visible error message instead of an exception lost in a task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..ai.abort import AbortSignal
from ..ai.models import LOCAL_MODEL_REF, builtin_model
from ..ai.options import StreamOptions
from ..ai.registry import StreamFn
from ..ai.types import AssistantMessage, ImageContent, Model, TextContent, ThinkingLevel, UserMessage
from .loop import default_convert_to_llm, run_agent_loop, run_agent_loop_continue
from .types import (
    AgentContext,
    AgentEndEvent,
    AgentLoopConfig,
    AgentTool,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    SteeringPolicy,
    ToolExecutionEndEvent,
    ToolExecutionMode,
    ToolExecutionStartEvent,
    TurnEndEvent,
)

QueueMode = Literal["all", "one_at_a_time"]

BUSY_PROMPT = (
    "Agent is already processing a prompt. Use steer() or followUp() to queue messages, "
    "or wait for completion."
)
BUSY_CONTINUE = "Agent is already processing. Wait for completion before continuing."

# The offline model that needs no key; the server picks real defaults from its catalogue.
DEFAULT_MODEL = builtin_model(LOCAL_MODEL_REF)


@dataclass
class AgentState:
    system_prompt: str = ""
    model: Model = field(default_factory=lambda: DEFAULT_MODEL.model_copy())
    thinking_level: ThinkingLevel = "off"
    tools: list[AgentTool] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)
    is_streaming: bool = False
    stream_message: Any = None
    pending_tool_calls: frozenset[str] = frozenset()
    error: str | None = None


class Agent:
    def __init__(
        self,
        *,
        initial_state: dict[str, Any] | None = None,
        convert_to_llm: Callable[[list[Any]], Any] | None = None,
        transform_context: Callable[..., Any] | None = None,
        steering_mode: QueueMode = "one_at_a_time",
        follow_up_mode: QueueMode = "one_at_a_time",
        stream_fn: StreamFn | None = None,
        session_id: str | None = None,
        get_api_key: Callable[[str], Any] | None = None,
        get_stream_options: Callable[[Model], StreamOptions] | None = None,
        thinking_budgets: dict[str, int] | None = None,
        max_retry_delay_ms: int | None = None,
        tool_execution: ToolExecutionMode = "parallel",
        steering_policy: SteeringPolicy = "interrupt",
        before_tool_call: Callable[..., Any] | None = None,
        after_tool_call: Callable[..., Any] | None = None,
        max_turns: int | None = None,
    ) -> None:
        self.state = AgentState(**(initial_state or {}))
        self.convert_to_llm = convert_to_llm or default_convert_to_llm
        self.transform_context = transform_context
        self.steering_mode: QueueMode = steering_mode
        self.follow_up_mode: QueueMode = follow_up_mode
        self.stream_fn = stream_fn
        self.session_id = session_id
        self.get_api_key = get_api_key
        self.get_stream_options = get_stream_options
        self.thinking_budgets = thinking_budgets
        self.max_retry_delay_ms = max_retry_delay_ms
        self.tool_execution: ToolExecutionMode = tool_execution
        self.steering_policy: SteeringPolicy = steering_policy
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.max_turns = max_turns
        self._listeners: list[Callable[[Any], Any]] = []
        self._steering: list[Any] = []
        self._follow_ups: list[Any] = []
        self._signal: AbortSignal | None = None
        self._idle: asyncio.Event | None = None

    # --- subscription and mutators (no events) -------------------------------------------------

    def subscribe(self, listener: Callable[[Any], Any]) -> Callable[[], None]:
        """Listeners are called synchronously, in order, after the state is updated."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def set_system_prompt(self, prompt: str) -> None:
        self.state.system_prompt = prompt

    def set_model(self, model: Model) -> None:
        self.state.model = model

    def set_thinking_level(self, level: ThinkingLevel) -> None:
        self.state.thinking_level = level

    def set_tools(self, tools: list[AgentTool]) -> None:
        self.state.tools = tools

    def replace_messages(self, messages: list[Any]) -> None:
        self.state.messages = list(messages)

    def append_message(self, message: Any) -> None:
        self.state.messages = [*self.state.messages, message]

    def clear_messages(self) -> None:
        self.state.messages = []

    # --- queues ------------------------------------------------------------------------------

    def steer(self, message: Any) -> None:
        """Deliver `message` mid-run: after the current tool, before the next LLM call."""
        self._steering.append(_as_message(message))

    def follow_up(self, message: Any) -> None:
        """Run `message` once the agent would otherwise stop."""
        self._follow_ups.append(_as_message(message))

    def clear_steering_queue(self) -> None:
        self._steering = []

    def clear_follow_up_queue(self) -> None:
        self._follow_ups = []

    def clear_all_queues(self) -> None:
        self.clear_steering_queue()
        self.clear_follow_up_queue()

    def has_queued_messages(self) -> bool:
        return bool(self._steering or self._follow_ups)

    @property
    def steering_queue(self) -> list[Any]:
        return list(self._steering)

    @property
    def follow_up_queue(self) -> list[Any]:
        return list(self._follow_ups)

    def _dequeue(self, queue: list[Any], mode: QueueMode) -> list[Any]:
        if not queue:
            return []
        taken = list(queue) if mode == "all" else [queue[0]]
        del queue[: len(taken)]
        return taken

    # --- runs ----------------------------------------------------------------------------------

    async def prompt(self, input: str | Any | list[Any], images: list[ImageContent] | None = None) -> None:
        if self.state.is_streaming:
            raise RuntimeError(BUSY_PROMPT)
        if self.state.model is None:
            raise RuntimeError("No model configured")
        if isinstance(input, str):
            prompts = [UserMessage(content=[TextContent(text=input), *(images or [])])]
        elif isinstance(input, list):
            prompts = list(input)
        else:
            prompts = [input]
        await self._run(prompts)

    async def continue_(self) -> None:
        if self.state.is_streaming:
            raise RuntimeError(BUSY_CONTINUE)
        if not self.state.messages:
            raise RuntimeError("No messages to continue from")
        if getattr(self.state.messages[-1], "role", None) == "assistant":
            steering = self._dequeue(self._steering, self.steering_mode)
            if steering:
                await self._run(steering, skip_initial_steering_poll=True)
                return
            follow_ups = self._dequeue(self._follow_ups, self.follow_up_mode)
            if follow_ups:
                await self._run(follow_ups)
                return
            raise RuntimeError("Cannot continue from message role: assistant")
        await self._run(None)

    def abort(self) -> None:
        """Abort the running loop; does nothing when idle. Queues are kept."""
        if self._signal is not None:
            self._signal.abort()

    async def wait_for_idle(self) -> None:
        if self._idle is not None:
            await self._idle.wait()

    def reset(self) -> None:
        self.state.messages = []
        self.state.is_streaming = False
        self.state.stream_message = None
        self.state.pending_tool_calls = frozenset()
        self.state.error = None
        self.clear_all_queues()

    async def _run(self, prompts: list[Any] | None, *, skip_initial_steering_poll: bool = False) -> None:
        self._idle = asyncio.Event()
        self._signal = signal = AbortSignal()
        self.state.is_streaming = True
        self.state.stream_message = None
        self.state.error = None
        skip_poll = skip_initial_steering_poll

        def get_steering_messages() -> list[Any]:
            nonlocal skip_poll
            if skip_poll:
                skip_poll = False
                return []
            return self._dequeue(self._steering, self.steering_mode)

        context = AgentContext(self.state.system_prompt, list(self.state.messages), self.state.tools)
        config = AgentLoopConfig(
            model=self.state.model,
            convert_to_llm=self.convert_to_llm,
            transform_context=self.transform_context,
            get_api_key=self.get_api_key,
            get_stream_options=self.get_stream_options,
            get_steering_messages=get_steering_messages,
            get_follow_up_messages=lambda: self._dequeue(self._follow_ups, self.follow_up_mode),
            tool_execution=self.tool_execution,
            steering_policy=self.steering_policy,
            before_tool_call=self.before_tool_call,
            after_tool_call=self.after_tool_call,
            max_turns=self.max_turns,
            stream_fn=self.stream_fn,
            signal=signal,
            reasoning=None if self.state.thinking_level == "off" else self.state.thinking_level,
            session_id=self.session_id,
            thinking_budgets=self.thinking_budgets,
            max_retry_delay_ms=self.max_retry_delay_ms,
        )
        try:
            if prompts is not None:
                await run_agent_loop(prompts, context, config, self._process)
            else:
                await run_agent_loop_continue(context, config, self._process)
        except Exception as exc:
            model = self.state.model
            failure = AssistantMessage(
                content=[TextContent(text="")],
                api=model.api,
                provider=model.provider,
                model=model.id,
                stop_reason="aborted" if signal.aborted else "error",
                error_message=str(exc) or type(exc).__name__,
            )
            self.append_message(failure)
            self.state.error = failure.error_message
            self._process(AgentEndEvent(messages=[failure]))
        finally:
            self.state.is_streaming = False
            self.state.stream_message = None
            self.state.pending_tool_calls = frozenset()
            self._signal = None
            self._idle.set()

    def _process(self, event: Any) -> None:
        """Fold the event into the state, then tell the listeners."""
        state = self.state
        if isinstance(event, (MessageStartEvent, MessageUpdateEvent)):
            state.stream_message = event.message
        elif isinstance(event, MessageEndEvent):
            state.stream_message = None
            self.append_message(event.message)
        elif isinstance(event, ToolExecutionStartEvent):
            state.pending_tool_calls = state.pending_tool_calls | {event.tool_call_id}
        elif isinstance(event, ToolExecutionEndEvent):
            state.pending_tool_calls = state.pending_tool_calls - {event.tool_call_id}
        elif isinstance(event, TurnEndEvent):
            if isinstance(event.message, AssistantMessage) and event.message.error_message:
                state.error = event.message.error_message
        elif isinstance(event, AgentEndEvent):
            state.is_streaming = False
            state.stream_message = None
        for listener in list(self._listeners):
            listener(event)


def _as_message(message: Any) -> Any:
    return UserMessage(content=[TextContent(text=message)]) if isinstance(message, str) else message
