"""Running one assistant message's tool calls (pi-agent-core 0.58.3, section 6).

Each call is *prepared* (tool found, arguments validated, `before_tool_call` consulted),
which either yields an immediate error outcome or a runnable call, then *executed*, then
*finalised* (`after_tool_call` consulted) and its outcome emitted as `tool_execution_end`
plus the toolResult message.

Parallel mode (the default, as in pi) prepares every call first, runs the runnable ones
concurrently and finalises them in source order. Sequential mode does one call at a time.
Under the "interrupt" steering policy, steering is polled after each call (sequential) or
each preparation (parallel); queued steering skips the rest of the batch.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..ai.abort import AbortSignal
from ..ai.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage
from .types import (
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    MessageEndEvent,
    MessageStartEvent,
    ToolCallContext,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    resolve,
)
from .validation import validate_tool_arguments

SKIPPED_TEXT = "Skipped due to queued user message."


@dataclass
class Outcome:
    result: AgentToolResult
    is_error: bool

    @classmethod
    def error(cls, text: str) -> Outcome:
        return cls(AgentToolResult(content=[TextContent(text=text)], details={}), True)


@dataclass
class Prepared:
    call: ToolCall
    tool: AgentTool
    args: dict[str, Any]


async def execute_tool_calls(
    context: AgentContext,
    assistant: AssistantMessage,
    calls: list[ToolCall],
    config: AgentLoopConfig,
    emit: Any,
) -> tuple[list[ToolResultMessage], list[Any]]:
    """Run the calls; returns their result messages and any steering messages found."""
    batch = _Batch(context, assistant, config, emit)
    if config.tool_execution == "sequential":
        return await batch.run_sequential(calls)
    return await batch.run_parallel(calls)  # pi's rule: anything but "sequential" is parallel


class _Batch:
    def __init__(self, context: AgentContext, assistant: AssistantMessage, config: AgentLoopConfig, emit: Any):
        self.context = context
        self.assistant = assistant
        self.config = config
        self.emit = emit
        self.signal = config.signal or AbortSignal()
        self.results: list[ToolResultMessage] = []

    async def run_sequential(self, calls: list[ToolCall]) -> tuple[list[ToolResultMessage], list[Any]]:
        for index, call in enumerate(calls):
            await self._start(call)
            prepared = await self._prepare(call)
            if isinstance(prepared, Outcome):
                await self._finish(call, prepared)
            else:
                await self._finish(call, await self._after_tool_call(prepared, await self._execute(prepared)))
            steering = await self._poll_steering()
            if steering:
                for skipped in calls[index + 1 :]:
                    await self._start(skipped)
                    await self._finish(skipped, Outcome.error(SKIPPED_TEXT))
                return self.results, steering
        return self.results, []

    async def run_parallel(self, calls: list[ToolCall]) -> tuple[list[ToolResultMessage], list[Any]]:
        runnable: list[Prepared] = []
        for index, call in enumerate(calls):
            await self._start(call)
            prepared = await self._prepare(call)
            if isinstance(prepared, Outcome):
                await self._finish(call, prepared)  # immediate outcomes are emitted first
            else:
                runnable.append(prepared)
            steering = await self._poll_steering()
            if steering:
                # Nothing of this batch runs: prepared calls are skipped (they already had
                # their start event), the rest get start + skip.
                for prepared_call in runnable:
                    await self._finish(prepared_call.call, Outcome.error(SKIPPED_TEXT))
                for skipped in calls[index + 1 :]:
                    await self._start(skipped)
                    await self._finish(skipped, Outcome.error(SKIPPED_TEXT))
                return self.results, steering

        tasks = [asyncio.ensure_future(self._execute(p)) for p in runnable]
        try:
            # Outcomes in source order; `after_tool_call` runs here too, so hooks see the calls
            # one at a time in source order whatever order the tools finished in (as pi does).
            for prepared, task in zip(runnable, tasks, strict=False):
                await self._finish(prepared.call, await self._after_tool_call(prepared, await task))
        finally:
            for task in tasks:
                task.cancel()
        return self.results, await self._poll_steering()

    # --- steps ------------------------------------------------------------------------------

    async def _start(self, call: ToolCall) -> None:
        await resolve(self.emit(ToolExecutionStartEvent(tool_call_id=call.id, tool_name=call.name, args=call.arguments)))

    async def _prepare(self, call: ToolCall) -> Prepared | Outcome:
        tool = next((t for t in self.context.tools if t.name == call.name), None)
        if tool is None:
            return Outcome.error(f"Tool {call.name} not found")
        try:
            args = validate_tool_arguments(tool.name, tool.parameters, call.arguments)
        except Exception as exc:
            return Outcome.error(_message_of(exc))
        if self.config.before_tool_call:
            hook_context = ToolCallContext(self.assistant, call, args, self.context)
            try:
                verdict = await resolve(self.config.before_tool_call(hook_context, self.signal))
            except Exception as exc:
                return Outcome.error(_message_of(exc))
            if verdict is not None and verdict.block:
                return Outcome.error(verdict.reason or "Tool execution was blocked")
        return Prepared(call, tool, args)

    async def _execute(self, prepared: Prepared) -> Outcome:
        call = prepared.call
        updates: list[asyncio.Future[Any]] = []

        def on_update(partial: AgentToolResult) -> asyncio.Future[Any]:
            event = ToolExecutionUpdateEvent(
                tool_call_id=call.id, tool_name=call.name, args=call.arguments, partial_result=_as_result(partial)
            )
            future = asyncio.ensure_future(resolve(self.emit(event)))
            updates.append(future)
            return future

        try:
            result = _as_result(await prepared.tool.execute(call.id, prepared.args, self.signal, on_update))
            outcome = Outcome(result, False)
        except Exception as exc:
            outcome = Outcome.error(_message_of(exc))
        if updates:  # every update reaches the client before the tool counts as finished
            await asyncio.gather(*updates)
        return outcome

    async def _after_tool_call(self, prepared: Prepared, outcome: Outcome) -> Outcome:
        if not self.config.after_tool_call:
            return outcome
        hook_context = ToolCallContext(
            self.assistant, prepared.call, prepared.args, self.context, outcome.result, outcome.is_error
        )
        override = await resolve(self.config.after_tool_call(hook_context, self.signal))
        if override is None:
            return outcome
        result = outcome.result.model_copy()
        if override.content is not None:
            result.content = override.content
        if override.details is not None:
            result.details = override.details
        return Outcome(result, outcome.is_error if override.is_error is None else override.is_error)

    async def _finish(self, call: ToolCall, outcome: Outcome) -> None:
        await resolve(
            self.emit(
                ToolExecutionEndEvent(
                    tool_call_id=call.id, tool_name=call.name, result=outcome.result, is_error=outcome.is_error
                )
            )
        )
        message = ToolResultMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            content=outcome.result.content,
            details=outcome.result.details,
            is_error=outcome.is_error,
        )
        await resolve(self.emit(MessageStartEvent(message=message)))
        await resolve(self.emit(MessageEndEvent(message=message)))
        self.results.append(message)

    async def _poll_steering(self) -> list[Any]:
        if self.config.steering_policy != "interrupt" or self.config.get_steering_messages is None:
            return []
        return list(await resolve(self.config.get_steering_messages()) or [])


def _as_result(value: Any) -> AgentToolResult:
    if isinstance(value, AgentToolResult):
        return value
    if isinstance(value, dict):
        return AgentToolResult.model_validate(value)
    raise TypeError(f"Tool returned {type(value).__name__}, expected AgentToolResult")


def _message_of(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
