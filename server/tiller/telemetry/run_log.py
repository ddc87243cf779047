"""Following one agent's runs: each LLM call gets an observer that knows its session, run,
turn and number (call_log.py logs the call), each tool call gets one record on the
`tiller.tool` logger, and when tracing is on every run, turn and call becomes a span.

Tool calls are timed from their `tool_execution_start` to their `tool_execution_end` event:
exact when tools run one at a time; in parallel mode a call that finished before an earlier
one is reported (and timed) when its turn in source order comes, as pi reports it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..agent import Agent
from ..agent.types import (
    AgentEndEvent,
    AgentStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from ..ai.call_log import CallObserver, LlmCall, LlmCallRecord
from ..ai.options import StreamOptions
from ..ai.types import Model

if TYPE_CHECKING:
    from .payload_dump import PayloadDump

log = logging.getLogger("tiller.tool")

# The part of a tool's error text a record keeps: enough to tell what failed.
ERROR_EXCERPT = 200


@dataclass
class ApprovalWait:
    """How the user answered a tool call's approval request, and how long it took.
    `option_id` is None when the run was aborted while the user decided."""

    option_id: str | None
    waited_ms: float


@dataclass
class ToolCallRecord:
    tool: str
    tool_call_id: str
    started_ns: int
    session_id: str
    run: int
    turn: int
    duration_ms: float = 0.0
    # ok, error, rejected (by the user or the approval mode) or cancelled (aborted while asked)
    outcome: str = "ok"
    approval: str | None = None
    approval_wait_ms: float | None = None
    error: str | None = None

    def fields(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)
        del values["started_ns"]
        return {"event": "tool_call", **values}

    def summary(self) -> str:
        text = (f"Tool call {self.tool} [session {self.session_id} run {self.run} turn {self.turn}]: "
                f"{self.outcome} in {self.duration_ms / 1000:.2f} s")
        if self.approval_wait_ms is not None:
            text += f" (approval {self.approval or 'cancelled'} after {self.approval_wait_ms / 1000:.2f} s)"
        if self.error:
            text += f"; {self.error}"
        return text


class RunSpans(Protocol):
    """Where runs, turns and calls become trace spans (tracing.py)."""

    def run_started(self, model: Model) -> None: ...

    def turn_started(self, turn: int) -> None: ...

    def llm_call(self, record: LlmCallRecord) -> None: ...

    def tool_call(self, record: ToolCallRecord) -> None: ...

    def turn_ended(self) -> None: ...

    def run_ended(self) -> None: ...


class RunLog:
    def __init__(
        self,
        session_id: str,
        *,
        dump: PayloadDump | None = None,
        spans: RunSpans | None = None,
        approval_wait: Callable[[str], ApprovalWait | None] | None = None,
    ) -> None:
        self.session_id = session_id
        self._dump = dump
        self._spans = spans
        self._approval_wait = approval_wait
        self.run = 0
        self.turn = 0
        self._calls: int | None = None
        self._tools: dict[str, tuple[float, int]] = {}
        self._agent: Agent | None = None

    def attach(self, agent: Agent) -> RunLog:
        """Follow `agent`'s events and observe each of its LLM calls."""
        self._agent = agent
        agent.subscribe(self._on_event)
        base = agent.get_stream_options

        def stream_options(model: Model) -> StreamOptions:
            options = base(model) if base is not None else StreamOptions()
            return dataclasses.replace(options, observer=self.llm_call(model))

        agent.get_stream_options = stream_options
        return self

    def llm_call(self, model: Model) -> LlmCall:
        if self._calls is None:
            self._calls = self._dump.next_call_number(self.session_id) - 1 if self._dump else 0
        self._calls += 1
        listeners: list[CallObserver] = []
        if self._dump is not None:
            listeners.append(self._dump.call(self.session_id, self._calls))
        if self._spans is not None:
            listeners.append(_CallSpan(self._spans))
        return LlmCall(model, session_id=self.session_id, run=self.run or None, turn=self.turn or None,
                       call=self._calls, listeners=listeners)

    # --- the agent's events ------------------------------------------------------------

    def _on_event(self, event: Any) -> None:
        if isinstance(event, ToolExecutionStartEvent):
            self._tools[event.tool_call_id] = (time.monotonic(), time.time_ns())
        elif isinstance(event, ToolExecutionEndEvent):
            self._tool_ended(event)
        elif isinstance(event, TurnStartEvent):
            self.turn += 1
            if self._spans is not None:
                self._spans.turn_started(self.turn)
        elif isinstance(event, TurnEndEvent):
            if self._spans is not None:
                self._spans.turn_ended()
        elif isinstance(event, AgentStartEvent):
            self.run += 1
            self.turn = 0
            if self._spans is not None and self._agent is not None:
                self._spans.run_started(self._agent.state.model)
        elif isinstance(event, AgentEndEvent):
            if self._spans is not None:
                self._spans.run_ended()

    def _tool_ended(self, event: ToolExecutionEndEvent) -> None:
        started, started_ns = self._tools.pop(event.tool_call_id, (time.monotonic(), time.time_ns()))
        record = ToolCallRecord(tool=event.tool_name, tool_call_id=event.tool_call_id, started_ns=started_ns,
                                session_id=self.session_id, run=self.run, turn=self.turn,
                                duration_ms=round((time.monotonic() - started) * 1000, 1))
        wait = self._approval_wait(event.tool_call_id) if self._approval_wait is not None else None
        if wait is not None:
            record.approval, record.approval_wait_ms = wait.option_id, wait.waited_ms
        if event.is_error:
            record.outcome = _failure(wait)
            record.error = _excerpt(event.result.content)
        log.info("%s", record.summary(), extra={"tiller": record.fields()})
        if self._spans is not None:
            self._spans.tool_call(record)


class _CallSpan(CallObserver):
    def __init__(self, spans: RunSpans) -> None:
        self._spans = spans

    def finished(self, record: LlmCallRecord) -> None:
        self._spans.llm_call(record)


def _failure(wait: ApprovalWait | None) -> str:
    if wait is None:
        return "error"
    if wait.option_id is None:
        return "cancelled"
    return "rejected" if wait.option_id.startswith("reject") else "error"


def _excerpt(content: list[Any]) -> str:
    text = "".join(getattr(block, "text", "") for block in content).strip()
    first_line = text.splitlines()[0] if text else ""
    return first_line if len(first_line) <= ERROR_EXCERPT else first_line[:ERROR_EXCERPT] + "…"
