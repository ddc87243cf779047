"""One agent session as the server hosts it: an `Agent`, its event stream and its run.

A session numbers its events (`seq`, +1 per event, per session) so a client can detect a
gap and re-sync with `agent/getState`. A run executes in a task the session owns, not in
the request handler: cancelling an `agent/prompt` request (or `agent/abort`) aborts the
agent and waits for the run to wind down, so every completed message is kept and the
event stream always ends with `agent_end`.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable
from typing import Any

from ..agent import Agent, AgentTool
from ..agent.types import AgentEndEvent, MessageEndEvent
from ..ai.types import AssistantMessage, ImageContent, Model, TextContent, UserMessage, total_usage
from .approvals import ApprovalMode, Approvals
from .context import context_blocks
from .protocol import (
    ApprovalRequestEvent,
    EditorContext,
    PromptResult,
    QueueState,
    QueueUpdateEvent,
    SessionState,
    SessionStateEvent,
    SessionSummary,
)
from .store import SessionFile
from .wire import wire_event

Notify = Callable[[str, dict[str, Any]], None]
DELTA_TYPES = frozenset({"text_delta", "thinking_delta", "toolcall_delta"})


class SessionBusyError(Exception):
    pass


class Session:
    def __init__(
        self,
        *,
        cwd: str,
        agent: Agent,
        notify: Notify,
        read_document: Callable[[str], str | None] = lambda uri: None,
        session_id: str | None = None,
        approval_mode: ApprovalMode = "ask",
        client_shows_approvals: bool = False,
        file: SessionFile | Callable[[], SessionFile] | None = None,
    ) -> None:
        self.id = session_id or uuid.uuid4().hex[:12]
        self.cwd = cwd
        self.agent = agent
        self.agent.session_id = self.id
        self.seq = 0
        self._notify = notify
        self._read_document = read_document
        self.approvals = Approvals(self.emit, approval_mode, client_shows_approvals)
        # The session file is created when the first message ends (an empty session leaves
        # nothing on disk); a loaded session appends to its existing file.
        self._file = file
        self._last_saved: Any = None
        self._held_delta: dict[str, Any] | None = None
        self._run: asyncio.Task[None] | None = None
        self._last_run_messages: list[Any] = []
        self._sent_queue: tuple[list[str], list[str]] = ([], [])
        agent.subscribe(self._on_agent_event)

    # --- events --------------------------------------------------------------------------

    def emit(self, event: dict[str, Any]) -> None:
        self._flush_delta()  # a held delta always goes out before anything that follows it
        self._send(event)

    def _send(self, event: dict[str, Any]) -> None:
        self.seq += 1
        self._notify("agent/event", {"sessionId": self.id, "seq": self.seq, "event": event})

    def _emit_delta(self, event: dict[str, Any]) -> None:
        """Hold a `*_delta` update until the event loop's next pass; deltas of the same block
        that arrive meanwhile are appended to it. A real provider's deltas arrive one per pass
        and go out unchanged; a burst (a fast local model, a replayed stream) becomes one
        event per pass instead of thousands. Nothing is dropped or reordered."""
        delta = event["assistantMessageEvent"]
        held = self._held_delta
        if held is not None:
            previous = held["assistantMessageEvent"]
            if previous["type"] == delta["type"] and previous["contentIndex"] == delta["contentIndex"]:
                previous["delta"] += delta["delta"]
                return
            self._flush_delta()
        self._held_delta = event
        asyncio.get_running_loop().call_soon(self._flush_delta)

    def _flush_delta(self) -> None:
        held, self._held_delta = self._held_delta, None
        if held is not None:
            self._send(held)

    def _on_agent_event(self, event: Any) -> None:
        if isinstance(event, AgentEndEvent):
            self._last_run_messages = list(event.messages)
            if event.messages and event.messages[-1] is not self._last_saved:
                self._save(event.messages[-1])  # a run that failed before any message_end
        elif isinstance(event, MessageEndEvent):
            self._save(event.message)
        wire = wire_event(event)
        if wire["type"] == "message_update" and wire["assistantMessageEvent"]["type"] in DELTA_TYPES:
            self._emit_delta(wire)
        else:
            self.emit(wire)
        # The loop takes queued messages as it goes; tell the client when the queue moved.
        self._emit_queue_if_changed()

    def _emit_queue_if_changed(self) -> None:
        if not (self.agent.has_queued_messages() or self._sent_queue[0] or self._sent_queue[1]):
            return  # the common case on every streamed event: nothing queued before or now
        queue = self.queue_state()
        current = (queue.steering, queue.follow_up)
        if current != self._sent_queue:
            self._sent_queue = current
            self.emit(QueueUpdateEvent(steering=queue.steering, follow_up=queue.follow_up).dump())

    def emit_session_state(self) -> SessionStateEvent:
        event = self.session_state_event()
        self.emit(event.dump())
        if self._file is not None and not callable(self._file):
            self._file.append_settings(event.model, event.thinking_level, event.approval_mode)
        return event

    # --- persistence ---------------------------------------------------------------------

    def _save(self, message: Any) -> None:
        """Durably append a completed message (fsync) before the client hears of it."""
        if self._file is None:
            return
        if callable(self._file):
            self._file = self._file()
        try:
            self._file.append_message(message)
        except OSError as error:
            # Losing the file must not lose the session; say so loudly once per failure.
            self.emit({"type": "persistence_error", "message": f"Could not save the session: {error}"})
        self._last_saved = message

    # --- runs ----------------------------------------------------------------------------

    @property
    def is_running(self) -> bool:
        return self._run is not None and not self._run.done()

    async def prompt(
        self,
        text: str,
        images: list[ImageContent] | None = None,
        context: list[EditorContext] | None = None,
        streaming_behavior: str | None = None,
    ) -> PromptResult:
        message = self._user_message(text, images, context)
        if self.is_running:
            if streaming_behavior == "steer":
                self.steer(message)
                return PromptResult(stop_reason="queued")
            if streaming_behavior == "followUp":
                self.follow_up(message)
                return PromptResult(stop_reason="queued")
            raise SessionBusyError(
                f"Session {self.id} is already running. Send agent/steer or agent/followUp, "
                'or pass streamingBehavior: "steer" | "followUp" to queue this prompt.'
            )
        self._run = asyncio.create_task(self.agent.prompt(message))
        try:
            await asyncio.shield(self._run)
        except asyncio.CancelledError:
            # $/cancelRequest on this prompt: stop the run but let it end cleanly.
            await self.abort()
            raise
        return self._result()

    def _user_message(
        self, text: str, images: list[ImageContent] | None, context: list[EditorContext] | None
    ) -> UserMessage:
        blocks: list[Any] = [TextContent(text=text)]
        blocks.extend(context_blocks(context or [], self._read_document))
        blocks.extend(images or [])
        return UserMessage(content=blocks)

    def _result(self) -> PromptResult:
        messages = self._last_run_messages
        last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
        return PromptResult(
            stop_reason=last.stop_reason if last else "error",
            new_messages=messages,
            usage=total_usage(messages),
            error_message=last.error_message if last else None,
        )

    async def abort(self) -> None:
        """Abort the run (if any) and return once it has ended; pending approvals are
        resolved as cancelled."""
        run = self._run
        if run is None or run.done():
            return
        self.agent.abort()
        self.approvals.cancel_all()
        await asyncio.shield(run)

    # --- queues --------------------------------------------------------------------------

    def steer(self, message: str | UserMessage) -> QueueState:
        self.agent.steer(message)
        self._emit_queue_if_changed()
        return self.queue_state()

    def follow_up(self, message: str | UserMessage) -> QueueState:
        self.agent.follow_up(message)
        self._emit_queue_if_changed()
        return self.queue_state()

    def clear_queue(self) -> QueueState:
        cleared = self.queue_state()
        self.agent.clear_all_queues()
        self._emit_queue_if_changed()
        return cleared

    def queue_state(self) -> QueueState:
        return QueueState(
            steering=[_text_of(m) for m in self.agent.steering_queue],
            follow_up=[_text_of(m) for m in self.agent.follow_up_queue],
        )

    # --- settings ------------------------------------------------------------------------

    def set_model(self, model: Model) -> None:
        self.agent.set_model(model)

    def set_tools(self, tools: list[AgentTool]) -> None:
        self.agent.set_tools(tools)

    def session_state_event(self) -> SessionStateEvent:
        state = self.agent.state
        return SessionStateEvent(
            model=state.model.ref,
            thinking_level=state.thinking_level,
            steering_mode=self.agent.steering_mode,
            follow_up_mode=self.agent.follow_up_mode,
            approval_mode=self.approvals.mode,
        )

    # --- views ---------------------------------------------------------------------------

    def state(self) -> SessionState:
        state = self.agent.state
        return SessionState(
            session_id=self.id,
            cwd=self.cwd,
            model=state.model.ref,
            thinking_level=state.thinking_level,
            steering_mode=self.agent.steering_mode,
            follow_up_mode=self.agent.follow_up_mode,
            approval_mode=self.approvals.mode,
            is_streaming=state.is_streaming,
            messages=state.messages,
            stream_message=state.stream_message,
            pending_tool_calls=sorted(state.pending_tool_calls),
            error=state.error,
            queue=self.queue_state(),
            seq=self.seq,
            pending_approvals=[ApprovalRequestEvent.model_validate(e) for e in self.approvals.pending_events()],
        )

    def summary(self) -> SessionSummary:
        state = self.agent.state
        return SessionSummary(
            session_id=self.id,
            cwd=self.cwd,
            model=state.model.ref,
            is_streaming=state.is_streaming,
            message_count=len(state.messages),
            title=session_title(state.messages),
            updated_at=max((getattr(m, "timestamp", 0) or 0 for m in state.messages), default=0),
            loaded=True,
        )


def session_title(messages: list[Any]) -> str:
    """The first line of the first user message's first text block."""
    for message in messages:
        if getattr(message, "role", None) == "user":
            content = message.content
            text = content if isinstance(content, str) else next(
                (b.text for b in content if getattr(b, "type", None) == "text"), ""
            )
            line = text.strip().splitlines()[0] if text.strip() else ""
            return line[:80] or "(untitled)"
    return "(new session)"


def _text_of(message: Any) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(getattr(block, "text", "") for block in content if getattr(block, "type", "") == "text")


def default_cwd(root: str | None) -> str:
    return os.path.realpath(root or os.getcwd())
