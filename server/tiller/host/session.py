"""One hosted session: an `Agent`, its events, its approvals, its file, and its run.

A run executes in a task the session owns, not in the request that started it: cancelling
the request (or `abort`) aborts the agent and waits for the run to wind down, so every
completed message is kept and the event stream always ends with `agent_end`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from ..agent import Agent, AgentTool
from ..agent.types import AgentEndEvent, MessageEndEvent, ToolExecutionEndEvent
from ..ai.types import AssistantMessage, ImageContent, Model, TextContent, UserMessage, total_usage
from ..persistence.session_files import session_title
from ..protocol.context import CompactionInfo
from ..protocol.errors import ErrorCode
from ..protocol.events import QueueUpdateEvent, SessionStateEvent
from ..protocol.methods import (
    CommandRules,
    EditorContext,
    PromptResult,
    QueueState,
    RulesResult,
    SessionState,
    SessionSummary,
)
from ..protocol.modes import ApprovalMode, RuleScope, StreamingBehavior
from ..sequences import common_prefix_length
from . import plan_mode
from .approvals import Approvals
from .checkpoints import SessionCheckpoints
from .command_policy import CommandPolicy
from .context_window import ContextWindow
from .errors import HostError
from .event_channel import EventChannel
from .instructions import ProjectInstructions
from .prompt_context import ContextSource, context_blocks
from .recorder import SessionRecorder
from .system_prompt import system_prompt_for


class Session:
    def __init__(
        self,
        *,
        session_id: str,
        cwd: str,
        agent: Agent,
        events: EventChannel,
        approvals: Approvals,
        recorder: SessionRecorder,
        editor: ContextSource,
        policy: CommandPolicy,
        checkpoints: SessionCheckpoints,
        context: ContextWindow,
        instructions: ProjectInstructions,
    ) -> None:
        self.id = session_id
        self.cwd = cwd
        self.agent = agent
        self.agent.session_id = session_id
        self.events = events
        self.approvals = approvals
        self.recorder = recorder
        self._editor = editor
        self.policy = policy
        self.checkpoints = checkpoints
        self.context = context
        # The project's instruction files extend the session's prompt; plan mode adds to it
        # while it lasts (full_system_prompt).
        self.instructions = instructions
        self._left_plan_mode = False
        self._run: asyncio.Task[None] | None = None
        # An operation that must not overlap a run (a rewind): what it is, while it lasts.
        self._exclusive: str | None = None
        self._last_run_messages: list[Any] = []
        self._sent_queue: tuple[list[str], list[str]] = ([], [])
        agent.subscribe(self._on_agent_event)

    @property
    def seq(self) -> int:
        return self.events.seq

    def _on_agent_event(self, event: Any) -> None:
        if isinstance(event, AgentEndEvent):
            self._last_run_messages = list(event.messages)
            if event.messages and event.messages[-1] is not self.recorder.last_saved:
                self.recorder.save_message(event.messages[-1])  # a run that failed before any message_end
        elif isinstance(event, MessageEndEvent):
            self.recorder.save_message(event.message)
        self.events.emit_agent_event(event)
        if isinstance(event, ToolExecutionEndEvent):
            self.approvals.forget(event.tool_call_id)  # its front ends have seen the end
        self.context.after_agent_event(event)
        # The loop takes queued messages as it goes; tell the client when the queue moved.
        self._emit_queue_if_changed()

    def _emit_queue_if_changed(self) -> None:
        if not (self.agent.has_queued_messages() or self._sent_queue[0] or self._sent_queue[1]):
            return  # the common case on every streamed event: nothing queued before or now
        queue = self.queue_state()
        current = (queue.steering, queue.follow_up)
        if current != self._sent_queue:
            self._sent_queue = current
            self.events.emit(QueueUpdateEvent(steering=queue.steering, follow_up=queue.follow_up))

    # --- runs ----------------------------------------------------------------------------

    @property
    def is_running(self) -> bool:
        return self._run is not None and not self._run.done()

    async def prompt(
        self,
        text: str,
        images: list[ImageContent] | None = None,
        context: list[EditorContext] | None = None,
        streaming_behavior: StreamingBehavior | None = None,
    ) -> PromptResult:
        self._refuse_if_exclusive()
        if not self.is_running and self.context.is_compacting:
            # A manual compaction: the run starts from its result (the conversation it
            # recorded must not grow under it).
            await self.context.wait_idle()
        message = await self._user_message(text, images, context)
        self._refuse_if_exclusive()
        if not self.is_running:  # a changed AGENTS.md applies from the next run on
            await self.instructions.apply(self.agent, self.events.emit)
            self.agent.set_system_prompt(self.full_system_prompt())
        if self.is_running:
            if streaming_behavior == "steer":
                self.steer(message)
                return PromptResult(stop_reason="queued")
            if streaming_behavior == "followUp":
                self.follow_up(message)
                return PromptResult(stop_reason="queued")
            raise HostError(
                ErrorCode.SESSION_BUSY,
                f"Session {self.id} is already running. Send agent/steer or agent/followUp, "
                'or pass streamingBehavior: "steer" | "followUp" to queue this prompt.',
            )
        self._begin_checkpoint(text)
        self._run = asyncio.create_task(self.agent.prompt(message))
        try:
            await asyncio.shield(self._run)
        except asyncio.CancelledError:
            # The request was cancelled: stop the run but let it end cleanly.
            await self.abort()
            raise
        finally:
            await self.checkpoints.end_turn()
        return self._result()

    @contextlib.asynccontextmanager
    async def exclusive(self, what: str) -> AsyncIterator[None]:
        """Hold the session for an operation that must not overlap a run, a compaction or
        another such operation (a rewind replaces the conversation under them)."""
        if self.is_running:
            raise HostError(ErrorCode.SESSION_BUSY, f"Session {self.id} is running; abort it before {what}.")
        if self.context.is_compacting:
            raise HostError(ErrorCode.SESSION_BUSY, f"Session {self.id} is compacting; wait for it before {what}.")
        self._refuse_if_exclusive()
        self._exclusive = what
        try:
            yield
        finally:
            self._exclusive = None

    def _refuse_if_exclusive(self) -> None:
        if self._exclusive is not None:
            raise HostError(ErrorCode.SESSION_BUSY,
                            f"Session {self.id} is busy {self._exclusive}; try again once that is done.")

    async def compact(self, instructions: str | None = None) -> CompactionInfo:
        self._refuse_if_exclusive()
        return await self.context.compact(instructions)

    def undo_compaction(self) -> CompactionInfo:
        self._refuse_if_exclusive()
        return self.context.undo()

    def _begin_checkpoint(self, text: str) -> None:
        """Record the workspace before a run that may change it (see checkpoints.py)."""
        tools = {tool.name for tool in self.agent.state.tools}
        if self.approvals.mode == "plan" or not tools & {"edit", "write", "bash"}:
            return
        title = (text.strip().splitlines() or [""])[0][:80]
        messages = self.agent.state.messages
        self.checkpoints.begin_turn(title, len(messages), self.recorder.records_of(messages))

    async def _user_message(
        self, text: str, images: list[ImageContent] | None, context: list[EditorContext] | None
    ) -> UserMessage:
        blocks: list[Any] = [TextContent(text=text)]
        if self._left_plan_mode:  # the model planned until now: tell it that it may act
            self._left_plan_mode = False
            blocks.append(TextContent(text=plan_mode.left_plan_mode(self.approvals.mode)))
        blocks.extend(await context_blocks(context or [], self._editor))
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
        self.context.abort()
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
        # A default system prompt follows the model (a text-only model gets its own); the
        # base the next runs build on changes with it.
        self.instructions.base_prompt = system_prompt_for(model, self.instructions.base_prompt)
        self.agent.set_system_prompt(self.full_system_prompt())

    def set_tools(self, tools: list[AgentTool]) -> None:
        self.agent.set_tools(tools)

    def set_approval_mode(self, mode: ApprovalMode) -> None:
        """Applies to the next tool call at once, and to the system prompt from the next run."""
        if mode != "plan" and self.approvals.mode == "plan":
            self._left_plan_mode = True
        elif mode == "plan":
            self._left_plan_mode = False
        self.approvals.mode = mode
        self.agent.set_system_prompt(self.full_system_prompt())

    def full_system_prompt(self) -> str:
        return plan_mode.system_prompt(self.instructions.system_prompt(), self.approvals.mode)

    # --- the conversation as the session file holds it -------------------------------------

    def conversation_records(self) -> list[int] | None:
        return self.recorder.records_of(self.agent.state.messages)

    async def restore_conversation(self, records: list[int]) -> None:
        current = self.conversation_records() or []
        self.agent.replace_messages(await self.recorder.restore(records))
        # A compaction stands for a start of the conversation: it stays only while the
        # restored conversation still begins with the messages it summarized.
        self.context.keep_compactions_within(common_prefix_length(current, records))

    def rules(self) -> RulesResult:
        return self.policy.rules()

    def set_rules(self, scope: RuleScope, rules: CommandRules | None, trust: bool | None) -> RulesResult:
        try:
            return self.policy.set_rules(scope, rules, trust)
        except (ValueError, OSError) as error:
            raise HostError(ErrorCode.INVALID_PARAMS, f"Invalid params: rules: {error}") from None

    def session_state_event(self) -> SessionStateEvent:
        state = self.agent.state
        return SessionStateEvent(
            model=state.model.ref,
            thinking_level=state.thinking_level,
            steering_mode=self.agent.steering_mode,
            follow_up_mode=self.agent.follow_up_mode,
            approval_mode=self.approvals.mode,
            tool_execution=self.agent.tool_execution,
        )

    def settings_changed(self) -> SessionStateEvent:
        """Tell the client and the session file that a setting changed; returns the new state."""
        event = self.session_state_event()
        self.events.emit(event)
        self.recorder.save_settings()
        return event

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
            tool_execution=self.agent.tool_execution,
            is_streaming=state.is_streaming,
            messages=state.messages,
            stream_message=state.stream_message,
            pending_tool_calls=sorted(state.pending_tool_calls),
            error=state.error,
            queue=self.queue_state(),
            seq=self.seq,
            pending_approvals=self.approvals.pending_events(),
            resolved_approvals=list(self.approvals.resolved),
            context_usage=self.context.usage(),
            usage=self.context.billed(),
            compaction=self.context.settings(),
            compactions=self.context.compactions(),
            is_compacting=self.context.is_compacting,
            instructions=self.instructions.files,
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


def _text_of(message: Any) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(getattr(block, "text", "") for block in content if getattr(block, "type", "") == "text")
