"""One session's context window: what the model is sent, how full it is, and compaction.

The agent keeps every message (so do the session file and `agent/getState`); what the
model is sent is a *view* of them, built by the agent loop's `transform_context` hook
before each call: the latest compaction's summary in place of the messages it replaced,
then the rest verbatim, each oversize tool result cut (tool_output_limit.py).

Compaction happens
- automatically, in that hook, when the request would pass the session's threshold
  (compaction_settings.py);
- when the provider refuses a request as too long (overflow.py): this object is also the
  agent's stream function, so the refused call is compacted and sent again, once, before
  the loop sees anything;
- on `agent/compact`.
Each is announced (`compaction_start`, `compaction_end`), recorded in the session file and
undone by `agent/undoCompaction` while the uncompacted context still fits. A compaction that
fails or is aborted changes nothing.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from ..agent import Agent
from ..agent.types import TurnEndEvent, resolve
from ..ai.abort import AbortSignal
from ..ai.options import StreamOptions
from ..ai.registry import stream as provider_stream
from ..ai.types import (
    AssistantMessageEvent,
    Context,
    ErrorEvent,
    Model,
    StartEvent,
    ToolCall,
    ToolResultMessage,
    Usage,
    now_ms,
    sum_usage,
    total_usage,
)
from ..protocol.context import (
    CompactAtSetting,
    CompactionEndEvent,
    CompactionInfo,
    CompactionReason,
    CompactionSettings,
    CompactionStartEvent,
    CompactionUndoneEvent,
    ContextUsage,
    ContextUsageEvent,
)
from ..protocol.errors import ErrorCode
from ..protocol.events import AnyWireEvent
from .compaction import CompactionError, cut_point, summarize, summary_message
from .compaction_settings import CompactionPolicy
from .context_meter import count_request, estimate_request
from .errors import HostError
from .overflow import is_context_overflow
from .tool_output_limit import limit_tool_result

Emit = Callable[[AnyWireEvent], None]
SaveRecord = Callable[[dict[str, Any]], None]


class ContextWindow:
    def __init__(self, agent: Agent, emit: Emit, save_record: SaveRecord) -> None:
        self._agent = agent
        self._emit = emit
        self._save_record = save_record
        self.policy = CompactionPolicy()
        self._compactions: list[CompactionInfo] = []  # in effect, oldest first; the last one counts
        self._summary_usage: list[Usage] = []  # every summary written, undone ones included (billed)
        self._trusted_from = 0  # provider reports are trusted from this message index on
        # What the last provider report was made with: a report from before a change of the
        # system prompt (AGENTS.md, plan mode), the tools or the model no longer fits.
        self._request_shape: tuple[Any, ...] | None = None
        self._lock = asyncio.Lock()
        self._manual: AbortSignal | None = None
        self._working: list[Any] = []  # the messages of the call being prepared
        self._cuts: dict[int, tuple[Any, int, Any]] = {}  # id(tool result) -> (it, limit, cut copy)
        agent.transform_context = self.transform
        agent.stream_fn = self.stream

    # --- the agent loop's hooks ----------------------------------------------------------

    async def transform(self, messages: list[Any], signal: AbortSignal | None) -> list[Any]:
        """`transform_context`: compact if the request would pass the threshold, then the view."""
        self._working = messages
        async with self._lock:  # a manual compaction in progress finishes first
            settings = self.settings()
            view = self.view(messages)
            if settings.auto:
                tokens, _ = self._count(messages, view)
                if tokens > settings.compact_at and await self._compact_quietly(
                        messages, "threshold", tokens, signal or AbortSignal()):
                    view = self.view(messages)
            return view

    async def stream(self, model: Model, context: Context, options: StreamOptions) -> AsyncIterator[AssistantMessageEvent]:
        """The agent's stream function: the provider's, plus one compacted retry of a
        request refused as too long (before anything of it reached the loop)."""
        started = False
        async with _closing(provider_stream(model, context, options)) as events:
            async for event in events:
                if isinstance(event, ErrorEvent) and not started and self._may_retry(event, options):
                    retry = await self._compacted_for_retry(context, options.signal or AbortSignal())
                    if retry is not None:
                        async with _closing(provider_stream(model, retry, options)) as retried:
                            async for again in retried:
                                yield again
                        return
                started = started or isinstance(event, StartEvent)
                yield event

    def after_agent_event(self, event: Any) -> None:
        """Called by the session after each agent event: the meter after every turn."""
        if isinstance(event, TurnEndEvent):
            self._emit(self.usage_event())

    # --- what the model sees -----------------------------------------------------------

    @property
    def active(self) -> CompactionInfo | None:
        return self._compactions[-1] if self._compactions else None

    def view(self, messages: list[Any]) -> list[Any]:
        """`messages` as the model is sent them."""
        return self._view(messages, self.active)

    def _view(self, messages: list[Any], active: CompactionInfo | None) -> list[Any]:
        """`messages` as the model would be sent them with `active` in effect."""
        start = min(active.first_kept_index, len(messages)) if active else 0
        limit = self.settings().tool_result_max_tokens
        head = [summary_message(active.summary, active.timestamp)] if active else []
        return head + [
            self._limited(message, limit, messages, index) if isinstance(message, ToolResultMessage) else message
            for index, message in enumerate(messages[start:], start)
        ]

    def _limited(self, message: ToolResultMessage, limit: int, messages: list[Any], index: int) -> Any:
        cached = self._cuts.get(id(message))
        if cached is not None and cached[0] is message and cached[1] == limit:
            return cached[2]
        cut = limit_tool_result(message, limit, _arguments_of(message.tool_call_id, messages, index))
        self._cuts[id(message)] = (message, limit, cut)
        return cut

    # --- the meter -----------------------------------------------------------------------

    def _count(self, messages: list[Any], view: list[Any] | None = None) -> tuple[int, Any]:
        """Tokens of the request `messages` make (`view`: their view, if already built)."""
        active = self.active
        start = min(active.first_kept_index, len(messages)) if active else 0
        offset = 1 if active else 0
        state = self._agent.state
        shape = (state.system_prompt, tuple(tool.name for tool in state.tools), state.model.ref)
        if shape != self._request_shape:  # (also the first count of a loaded session)
            self._request_shape = shape
            self._trusted_from = max(self._trusted_from, len(messages))
        return count_request(self.view(messages) if view is None else view, system_prompt=state.system_prompt,
                             tools=state.tools, trusted_from=max(self._trusted_from - start, 0) + offset)

    def _estimate(self, view: list[Any]) -> int:
        state = self._agent.state
        return estimate_request(view, system_prompt=state.system_prompt, tools=state.tools)

    def usage(self) -> ContextUsage:
        messages = self._agent.state.messages
        tokens, source = self._count(messages)
        window = self._agent.state.model.context_window
        return ContextUsage(tokens=tokens, context_window=window, percent=round(100 * tokens / max(window, 1), 1),
                            compact_at=self.settings().compact_at, source=source)

    def billed(self) -> Usage:
        """Every call of the session, summaries included."""
        return sum_usage([total_usage(self._agent.state.messages), *self._summary_usage])

    def usage_event(self) -> ContextUsageEvent:
        return ContextUsageEvent(**dict(self.usage()), usage=self.billed())

    # --- settings ------------------------------------------------------------------------

    def settings(self) -> CompactionSettings:
        return self.policy.resolve(self._agent.state.model)

    def configure(self, *, auto: bool | None = None, compact_at: CompactAtSetting | None = None,
                  keep_recent_tokens: int | None = None, tool_result_max_tokens: int | None = None) -> CompactionSettings:
        before = self.settings()
        self.policy = self.policy.changed(auto=auto, compact_at=compact_at, keep_recent_tokens=keep_recent_tokens,
                                          tool_result_max_tokens=tool_result_max_tokens)
        after = self.settings()
        if after.tool_result_max_tokens != before.tool_result_max_tokens:
            self._trusted_from = len(self._agent.state.messages)  # the view changes shape
        self._save_record({"type": "compactionSettings", **self.policy.record()})
        return after

    # --- compacting ----------------------------------------------------------------------

    @property
    def is_compacting(self) -> bool:
        return self._lock.locked()

    async def wait_idle(self) -> None:
        """Return once no compaction is in progress."""
        async with self._lock:
            pass

    async def compact(self, instructions: str | None = None) -> CompactionInfo:
        """`agent/compact`: compact now, whatever the threshold."""
        if self._agent.state.is_streaming:
            raise HostError(ErrorCode.SESSION_BUSY,
                            "The session is running; it compacts by itself when needed. Abort it or wait to compact now.")
        if self.is_compacting:
            raise HostError(ErrorCode.SESSION_BUSY, "The session is already compacting")
        self._manual = signal = AbortSignal()
        try:
            async with self._lock:
                messages = list(self._agent.state.messages)
                tokens, _ = self._count(messages)
                return await self._compact(messages, "manual", tokens, signal, instructions=instructions)
        except CompactionError as error:
            raise HostError(ErrorCode.COMPACTION_FAILED, str(error)) from None
        finally:
            self._manual = None

    def abort(self) -> None:
        """Abort a manual compaction (one inside a run stops with the run's own abort)."""
        if self._manual is not None:
            self._manual.abort()

    async def _compact_quietly(self, messages: list[Any], reason: CompactionReason, tokens: int,
                               signal: AbortSignal, *, will_retry: bool = False) -> bool:
        """An automatic compaction: a failure is reported in `compaction_end` and the call
        goes on uncompacted."""
        try:
            await self._compact(messages, reason, tokens, signal, will_retry=will_retry)
        except CompactionError:
            return False
        return True

    async def _compact(self, messages: list[Any], reason: CompactionReason, tokens_before: int,
                       signal: AbortSignal, *, instructions: str | None = None, will_retry: bool = False) -> CompactionInfo:
        active = self.active
        start = min(active.first_kept_index, len(messages)) if active else 0
        keep_recent = self.settings().keep_recent_tokens
        if reason == "overflow":  # the estimate fell short of the provider's count: keep less
            keep_recent = min(keep_recent, tokens_before // 4)
        keep = cut_point(messages, start, keep_recent)
        if keep is None:
            raise CompactionError("Nothing to compact: the conversation since the last compaction is one step")
        self._emit(CompactionStartEvent(reason=reason, tokens_before=tokens_before))
        model = self._agent.state.model
        try:
            summary, usage = await summarize(model, messages[start:keep], previous=active.summary if active else None,
                                             instructions=instructions, api_key=self._agent.get_api_key, signal=signal,
                                             stream_options=self._agent.get_stream_options)
        except CompactionError as error:
            if error.usage is not None:
                self._summary_usage.append(error.usage)
            self._emit(CompactionEndEvent(reason=reason, tokens_before=tokens_before, aborted=error.aborted,
                                          error_message=None if error.aborted else str(error)))
            raise
        except asyncio.CancelledError:  # the request was cancelled ($/cancelRequest): every start has its end
            self._emit(CompactionEndEvent(reason=reason, tokens_before=tokens_before, aborted=True))
            raise
        self._summary_usage.append(usage)
        info = CompactionInfo(id=uuid.uuid4().hex[:12], reason=reason, summary=summary, first_kept_index=keep,
                              tokens_before=tokens_before, tokens_after=0, timestamp=now_ms(),
                              instructions=instructions, usage=usage)
        info.tokens_after = self._estimate(self._view(messages, info))
        self._compactions.append(info)
        self._trusted_from = len(messages)
        self._save_record({"type": "compaction", "messageCount": len(messages), **info.dump()})
        self._emit(CompactionEndEvent(reason=reason, tokens_before=tokens_before, tokens_after=info.tokens_after,
                                      summary=summary, compaction=info, will_retry=will_retry))
        self._emit(self.usage_event())
        return info

    def _may_retry(self, event: ErrorEvent, options: StreamOptions) -> bool:
        aborted = options.signal is not None and options.signal.aborted
        return not aborted and self.settings().auto and is_context_overflow(event.error.error_message)

    async def _compacted_for_retry(self, context: Context, signal: AbortSignal) -> Context | None:
        """The refused request again, from the freshly compacted view; None if compacting
        did not work."""
        messages = self._working
        async with self._lock:
            tokens, _ = self._count(messages)
            if not await self._compact_quietly(messages, "overflow", tokens, signal, will_retry=True):
                return None
        converted = await resolve(self._agent.convert_to_llm(self.view(messages)))
        return Context(system_prompt=context.system_prompt, messages=converted, tools=context.tools)

    # --- undo ----------------------------------------------------------------------------

    def undo(self) -> CompactionInfo:
        """`agent/undoCompaction`: the context as it was before the latest compaction,
        if it still fits under the threshold."""
        if self._agent.state.is_streaming or self.is_compacting:
            raise HostError(ErrorCode.SESSION_BUSY, "The session is running or compacting; undo once it is idle")
        if not self._compactions:
            raise HostError(ErrorCode.COMPACTION_FAILED, "No compaction to undo")
        messages = self._agent.state.messages
        previous = self._compactions[-2] if len(self._compactions) > 1 else None
        tokens = self._estimate(self._view(messages, previous))
        threshold = self.settings().compact_at
        if tokens > threshold:
            raise HostError(ErrorCode.COMPACTION_FAILED,
                            f"The uncompacted context (about {tokens:,} tokens) no longer fits under the "
                            f"session's compaction threshold ({threshold:,} tokens)")
        undone = self._compactions.pop()
        self._trusted_from = len(messages)
        self._save_record({"type": "compactionUndone", "id": undone.id})
        self._emit(CompactionUndoneEvent(compaction_id=undone.id))
        self._emit(self.usage_event())
        return undone

    def keep_compactions_within(self, shared: int) -> None:
        """The conversation was replaced by one that shares only its first `shared` messages
        with the old (a rewind): a compaction that summarized more than those stands for
        messages that are gone, so it is undone (and recorded so, for a reload)."""
        dropped = [c for c in self._compactions if c.first_kept_index > shared]
        if not dropped:
            return
        self._compactions = [c for c in self._compactions if c.first_kept_index <= shared]
        for compaction in dropped:
            self._save_record({"type": "compactionUndone", "id": compaction.id})
            self._emit(CompactionUndoneEvent(compaction_id=compaction.id))
        self._trusted_from = len(self._agent.state.messages)
        self._emit(self.usage_event())

    # --- views and restoring ------------------------------------------------------------

    def compactions(self) -> list[CompactionInfo]:
        return list(self._compactions)

    def restore(self, records: list[tuple[int, dict[str, Any]]]) -> None:
        """Compactions, undos and settings from a saved session; each record comes with the
        number of messages read before it. A record that does not read back is skipped."""
        for position, record in records:
            kind = record.get("type")
            if kind == "compaction":
                self._restore_compaction(position, record)
            elif kind == "compactionUndone":
                kept = [c for c in self._compactions if c.id != record.get("id")]
                if len(kept) != len(self._compactions):
                    self._compactions, self._trusted_from = kept, position
            elif kind == "compactionSettings":
                self.policy = CompactionPolicy.from_record(record)

    def _restore_compaction(self, position: int, record: dict[str, Any]) -> None:
        try:
            info = CompactionInfo.model_validate(record)
        except ValueError:
            return
        # Messages the loader skipped (a damaged line) shift the cut by as many.
        count = record.get("messageCount")
        shift = position - count if isinstance(count, int) else 0
        info.first_kept_index = min(max(info.first_kept_index + shift, 0), position)
        self._compactions.append(info)
        self._summary_usage.append(info.usage)
        self._trusted_from = position


@asynccontextmanager
async def _closing(events: AsyncIterator[Any]) -> AsyncIterator[AsyncIterator[Any]]:
    """Close a provider's stream even when it is left early (an async generator left
    unfinished would otherwise be closed whenever the garbage collector gets to it)."""
    try:
        yield events
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


def _arguments_of(tool_call_id: str, messages: list[Any], index: int) -> dict[str, Any] | None:
    """The arguments of the call a tool result answers (its assistant message is just before)."""
    for message in reversed(messages[max(index - 64, 0) : index]):
        for block in getattr(message, "content", None) or ():
            if isinstance(block, ToolCall) and block.id == tool_call_id:
                return block.arguments
    return None
