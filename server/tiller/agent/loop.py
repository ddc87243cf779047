"""The agent loop, with pi-agent-core 0.58.3 semantics.

A *run* starts from prompts (or continues from the context's tail) and repeats *turns*:
one assistant response, then the tools it called. Steering messages (typed while the
agent works) and follow-up messages (queued for when it would stop) keep the run going.

    agent_start
      turn_start, message_start/end per prompt
      [per turn] message_start, message_update*, message_end   (the assistant)
                 tool_execution_*, message_start/end per result (its tools)
                 turn_end(message, toolResults)
      turn_start opens every later turn
    agent_end(all new messages)

`run_agent_loop` / `run_agent_loop_continue` emit to a callback and return the new
messages; `agent_loop` / `agent_loop_continue` are the same runs as async iterators.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from ..ai.options import StreamOptions
from ..ai.registry import stream as registry_stream
from ..ai.text_only import calls_tools
from ..ai.types import (
    AssistantMessage,
    Context,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextContent,
    ToolCall,
    ToolResultMessage,
)
from .tool_execution import execute_tool_calls
from .types import (
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentLoopConfig,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
    resolve,
)

Emit = Callable[[Any], Any]
LLM_ROLES = ("user", "assistant", "toolResult")


def default_convert_to_llm(messages: list[Any]) -> list[Any]:
    """Keep the messages an LLM understands; custom application messages are dropped."""
    return [m for m in messages if getattr(m, "role", None) in LLM_ROLES]


# --- entry points ---------------------------------------------------------------------------


async def run_agent_loop(
    prompts: list[Any], context: AgentContext, config: AgentLoopConfig, emit: Emit
) -> list[Any]:
    """Run from new prompts; resolves to the run's new messages."""
    new_messages = list(prompts)
    working = AgentContext(context.system_prompt, [*context.messages, *prompts], context.tools)
    await _emit(emit, AgentStartEvent())
    await _emit(emit, TurnStartEvent())
    for prompt in prompts:
        await _emit(emit, MessageStartEvent(message=prompt))
        await _emit(emit, MessageEndEvent(message=prompt))
    await _run(working, new_messages, config, emit)
    return new_messages


async def run_agent_loop_continue(
    context: AgentContext, config: AgentLoopConfig, emit: Emit
) -> list[Any]:
    """Continue from the context's tail (a user or tool-result message); no prompt events."""
    validate_continue(context)
    return await _continue_validated(context, config, emit)


async def _continue_validated(context: AgentContext, config: AgentLoopConfig, emit: Emit) -> list[Any]:
    new_messages: list[Any] = []
    working = AgentContext(context.system_prompt, list(context.messages), context.tools)
    await _emit(emit, AgentStartEvent())
    await _emit(emit, TurnStartEvent())
    await _run(working, new_messages, config, emit)
    return new_messages


def validate_continue(context: AgentContext) -> None:
    if not context.messages:
        raise ValueError("Cannot continue: no messages in context")
    role = getattr(context.messages[-1], "role", None)
    if role == "assistant":
        raise ValueError("Cannot continue from message role: assistant")


def agent_loop(prompts: list[Any], context: AgentContext, config: AgentLoopConfig) -> AgentEventStream:
    return AgentEventStream(lambda emit: run_agent_loop(prompts, context, config, emit))


def agent_loop_continue(context: AgentContext, config: AgentLoopConfig) -> AgentEventStream:
    """Raises at once (before any event) when the context cannot be continued."""
    validate_continue(context)
    return AgentEventStream(lambda emit: _continue_validated(context, config, emit))


# --- the main loop --------------------------------------------------------------------------


async def _run(context: AgentContext, new_messages: list[Any], config: AgentLoopConfig, emit: Emit) -> None:
    first_turn = True
    turns = 0
    pending = await _poll(config.get_steering_messages)

    while True:
        has_more_tool_calls = True
        while has_more_tool_calls or pending:
            if first_turn:
                first_turn = False
            else:
                await _emit(emit, TurnStartEvent())

            for message in pending:
                await _emit(emit, MessageStartEvent(message=message))
                await _emit(emit, MessageEndEvent(message=message))
                context.messages.append(message)
                new_messages.append(message)
            pending = []

            if config.max_turns is not None and turns >= config.max_turns:
                message = await _turn_limit_reached(config, context, emit)
            else:
                message = await _stream_assistant_response(context, config, emit)
                turns += 1
            new_messages.append(message)

            if message.stop_reason in ("error", "aborted"):
                await _emit(emit, TurnEndEvent(message=message, tool_results=[]))
                await _emit(emit, AgentEndEvent(messages=new_messages))
                return

            # Tools run whenever the message holds calls, whatever its stop reason.
            tool_calls = [b for b in message.content if isinstance(b, ToolCall)]
            has_more_tool_calls = bool(tool_calls)
            tool_results: list[ToolResultMessage] = []
            steering: list[Any] = []
            if tool_calls:
                tool_results, steering = await execute_tool_calls(context, message, tool_calls, config, emit)
                context.messages.extend(tool_results)
                new_messages.extend(tool_results)

            await _emit(emit, TurnEndEvent(message=message, tool_results=tool_results))
            pending = steering or await _poll(config.get_steering_messages)

        follow_ups = await _poll(config.get_follow_up_messages)
        if not follow_ups:
            break
        pending = follow_ups

    await _emit(emit, AgentEndEvent(messages=new_messages))


async def _stream_assistant_response(
    context: AgentContext, config: AgentLoopConfig, emit: Emit
) -> AssistantMessage:
    """One LLM call; the partial message lives at the end of the context while it streams."""
    messages = context.messages
    if config.transform_context:
        messages = await resolve(config.transform_context(messages, config.signal))
    convert = config.convert_to_llm or default_convert_to_llm
    llm_context = Context(
        system_prompt=context.system_prompt,
        messages=await resolve(convert(messages)),
        # A model that cannot call tools is not offered them (it would only talk about them).
        tools=context.tools if calls_tools(config.model) else None,
    )
    api_key = None
    if config.get_api_key:
        api_key = await resolve(config.get_api_key(config.model.provider))
    base = config.get_stream_options(config.model) if config.get_stream_options else StreamOptions()
    options = dataclasses.replace(
        base,
        temperature=config.temperature if config.temperature is not None else base.temperature,
        max_tokens=config.max_tokens or base.max_tokens,
        signal=config.signal,
        api_key=api_key or config.api_key,
        session_id=config.session_id,
        reasoning=None if config.reasoning in (None, "off") else config.reasoning,
        thinking_budgets=config.thinking_budgets,
        max_retry_delay_ms=config.max_retry_delay_ms or base.max_retry_delay_ms,
    )
    stream_fn = config.stream_fn or registry_stream

    partial: AssistantMessage | None = None
    final: AssistantMessage | None = None
    async for event in stream_fn(config.model, llm_context, options):
        # Listeners get a shallow copy of the partial, as pi does: a kept event shows the stop
        # reason and error as they were when it was sent, while the content list (and usage)
        # stay shared with the live message, so each copy costs a few fields, not the text.
        if isinstance(event, StartEvent):
            partial = event.partial
            context.messages.append(partial)
            await _emit(emit, MessageStartEvent(message=partial.model_copy()))
        elif isinstance(event, (DoneEvent, ErrorEvent)):
            final = event.message if isinstance(event, DoneEvent) else event.error
            break
        elif partial is not None:  # deltas before `start` are dropped
            partial = event.partial
            context.messages[-1] = partial
            await _emit(emit, MessageUpdateEvent(message=partial.model_copy(), assistant_message_event=event))

    if final is None:  # a stream must end in done/error; treat silence as a failure
        final = partial or _error_message(config, "")
        if final.stop_reason not in ("error", "aborted"):
            final.stop_reason = "error"
        final.error_message = final.error_message or "Provider stream ended without a result"
    if partial is not None:
        context.messages[-1] = final
    else:
        context.messages.append(final)
        await _emit(emit, MessageStartEvent(message=final.model_copy()))
    await _emit(emit, MessageEndEvent(message=final))
    return final


async def _turn_limit_reached(config: AgentLoopConfig, context: AgentContext, emit: Emit) -> AssistantMessage:
    message = _error_message(
        config,
        f"Stopped after {config.max_turns} turns (max_turns). "
        "Raise the limit or continue the run to let the agent go on.",
    )
    context.messages.append(message)
    await _emit(emit, MessageStartEvent(message=message))
    await _emit(emit, MessageEndEvent(message=message))
    return message


def _error_message(config: AgentLoopConfig, text: str) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text="")],
        api=config.model.api,
        provider=config.model.provider,
        model=config.model.id,
        stop_reason="error",
        error_message=text,
    )


async def _poll(source: Callable[[], Any] | None) -> list[Any]:
    if source is None:
        return []
    return list(await resolve(source()) or [])


async def _emit(emit: Emit, event: Any) -> None:
    await resolve(emit(event))


# --- the iterator form ----------------------------------------------------------------------


class AgentEventStream:
    """Async iterator over a run's events; `await stream.result()` gives its new messages.

    The run executes in its own task feeding a queue, so a slow consumer never blocks
    tools, and an exception from the run (e.g. a throwing `get_api_key`) is re-raised to
    the consumer after the events emitted before it.
    """

    _END = object()

    def __init__(self, start: Callable[[Emit], Awaitable[list[Any]]]) -> None:
        self._start = start
        self._task: asyncio.Task[list[Any]] | None = None
        self._queue: asyncio.Queue[Any] = asyncio.Queue()

    def _ensure_started(self) -> asyncio.Task[list[Any]]:
        if self._task is None:
            async def runner() -> list[Any]:
                try:
                    return await self._start(self._queue.put_nowait)
                finally:
                    self._queue.put_nowait(self._END)

            self._task = asyncio.ensure_future(runner())
        return self._task

    def __aiter__(self) -> AsyncIterator[AgentEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        task = self._ensure_started()
        try:
            while (event := await self._queue.get()) is not self._END:
                yield event
            await task  # re-raises the run's exception, if any
        finally:
            if not task.done():
                task.cancel()

    async def result(self) -> list[Any]:
        task = self._ensure_started()
        return await asyncio.shield(task)
