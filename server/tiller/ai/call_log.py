"""One log record per LLM call: which model, how long each phase took, what came back.

A call reports to its `CallObserver` (`StreamOptions.observer`) as it goes: `http.py` (every
HTTP provider) says when the request goes out, each retry and why, when the response headers
arrive and every piece of the raw body; `registry.stream` (every provider, the local and
scripted ones too) passes on each event of the answer. `LlmCall` is the observer that times
all this and, once the call is over, logs one record on the `tiller.llm` logger and hands it
to its listeners (a payload dump, a tracing span).

The hooks run on the call's hot path and must never break it: a listener that raises is
logged and dropped, and the call goes on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

from .types import AssistantMessage, AssistantMessageEvent, DoneEvent, ErrorEvent, Model

log = logging.getLogger("tiller.llm")

# Every key a request carried: formatters scrub them from whatever reaches a log (see
# `redact_known_secrets`), a second line of defence behind http.py's own redaction.
_known_secrets: set[str] = set()


def redact_known_secrets(text: str) -> str:
    for secret in _known_secrets:
        text = text.replace(secret, "***")
    return text


class CallObserver:
    """What one LLM call reports as it goes. Every hook does nothing unless overridden."""

    # Whether `received` wants the raw response body (it costs a copy of every chunk).
    wants_body: bool = False

    def request(self, url: str, headers: Mapping[str, str], body: dict[str, Any], secrets: Sequence[str]) -> None:
        """The request is about to be sent (once per call, whatever the retries)."""

    def retrying(self, reason: str, delay: float) -> None:
        """An attempt failed with `reason`; the next one starts in `delay` seconds."""

    def responded(self, status: int) -> None:
        """The headers of the response that streams arrived."""

    def received(self, text: str) -> None:
        """A piece of the response body, decoded, as it arrived."""

    def event(self, event: AssistantMessageEvent) -> None:
        """An event of the answer, before the caller sees it."""

    def closed(self) -> None:
        """The caller stopped reading the answer (after its end, or before)."""

    def finished(self, record: LlmCallRecord) -> None:
        """The call is over (listeners of `LlmCall`)."""


@dataclass
class Retry:
    reason: str
    delay_ms: float


@dataclass
class LlmCallRecord:
    """What the log says about one call. Times are milliseconds from the call's start
    (`started_ns`, Unix epoch nanoseconds); time to headers counts the retries before."""

    provider: str
    model: str
    api: str
    started_ns: int
    session_id: str | None = None
    run: int | None = None
    turn: int | None = None
    call: int | None = None
    server: str | None = None
    status: int | None = None
    time_to_headers_ms: float | None = None
    time_to_first_token_ms: float | None = None
    duration_ms: float = 0.0
    retries: list[Retry] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    stop_reason: str = "error"
    error: str | None = None

    def fields(self) -> dict[str, Any]:
        """The record as flat JSON-ready fields (the `tiller` extra of the log record)."""
        values = asdict(self)
        values["retries"] = len(self.retries)
        values["retry_reasons"] = [retry.reason for retry in self.retries]
        del values["started_ns"]
        return {"event": "llm_call", **values}

    def label(self) -> str:
        """`LLM call openai/gpt-5 [session 3f9c2a7b1e04 run 1 turn 2 call 3]`"""
        where = " ".join(f"{name} {value}" for name, value in
                         (("session", self.session_id), ("run", self.run), ("turn", self.turn), ("call", self.call))
                         if value is not None)
        return f"LLM call {self.provider}/{self.model}" + (f" [{where}]" if where else "")

    def summary(self) -> str:
        timing = [f"headers {_seconds(self.time_to_headers_ms)}"] if self.time_to_headers_ms is not None else []
        if self.time_to_first_token_ms is not None:
            timing.append(f"first token {_seconds(self.time_to_first_token_ms)}")
        text = f"{self.label()}: {self.stop_reason} in {_seconds(self.duration_ms)}"
        if timing:
            text += f" ({', '.join(timing)})"
        text += (f"; tokens in {self.input_tokens}, out {self.output_tokens}, cache read {self.cache_read_tokens},"
                 f" cache write {self.cache_write_tokens}; ${self.cost_usd:.6f}")
        if self.retries:
            text += f"; {len(self.retries)} retr{'y' if len(self.retries) == 1 else 'ies'}: " + "; ".join(
                retry.reason for retry in self.retries)
        if self.error:
            text += f"; error: {self.error}"
        return text


class LlmCall(CallObserver):
    """Times one call and logs its record when it ends; `listeners` see every hook too."""

    def __init__(
        self,
        model: Model,
        *,
        session_id: str | None = None,
        run: int | None = None,
        turn: int | None = None,
        call: int | None = None,
        listeners: Iterable[CallObserver] = (),
    ) -> None:
        self._started = time.monotonic()
        self.record = LlmCallRecord(provider=model.provider, model=model.id, api=model.api,
                                    started_ns=time.time_ns(), session_id=session_id, run=run, turn=turn, call=call)
        self._listeners = list(listeners)
        self.wants_body = any(listener.wants_body for listener in self._listeners)
        self._answering = False
        self._done = False

    def request(self, url: str, headers: Mapping[str, str], body: dict[str, Any], secrets: Sequence[str]) -> None:
        _known_secrets.update(secret for secret in secrets if secret)
        parts = urlsplit(url)
        self.record.server = parts.netloc.rpartition("@")[2] or None
        self._tell("request", url, headers, body, secrets)

    def retrying(self, reason: str, delay: float) -> None:
        self.record.retries.append(Retry(reason, round(delay * 1000, 1)))
        log.warning("%s: %s; retrying in %s", self.record.label(), reason, _seconds(delay * 1000),
                    extra={"tiller": {"event": "llm_retry", "session_id": self.record.session_id,
                                      "call": self.record.call, "reason": reason, "delay_ms": round(delay * 1000, 1)}})
        self._tell("retrying", reason, delay)

    def responded(self, status: int) -> None:
        self.record.status = status
        self.record.time_to_headers_ms = self._elapsed_ms()
        self._tell("responded", status)

    def received(self, text: str) -> None:
        self._tell("received", text)

    def event(self, event: AssistantMessageEvent) -> None:
        # By `type` rather than isinstance: pydantic's isinstance is slow, and this runs
        # for every delta of every answer.
        kind = event.type
        if kind == "done" or kind == "error":
            self._finish(cast(DoneEvent, event).message if kind == "done" else cast(ErrorEvent, event).error)
        elif kind == "start":
            self._answering = True
        elif self._answering and self.record.time_to_first_token_ms is None:
            self.record.time_to_first_token_ms = self._elapsed_ms()

    def closed(self) -> None:
        """The stream was closed; a call that never said how it ended is logged as cut short."""
        if not self._done:
            self._finish(None)

    def _finish(self, message: AssistantMessage | None) -> None:
        if self._done:
            return
        self._done = True
        record = self.record
        record.duration_ms = self._elapsed_ms()
        if message is None:
            record.stop_reason, record.error = "error", "The stream was closed before the call ended"
        else:
            usage = message.usage
            record.input_tokens, record.output_tokens = usage.input, usage.output
            record.cache_read_tokens, record.cache_write_tokens = usage.cache_read, usage.cache_write
            record.cost_usd = usage.cost.total
            record.stop_reason, record.error = message.stop_reason, message.error_message
        level = logging.WARNING if record.stop_reason == "error" else logging.INFO
        log.log(level, "%s", record.summary(), extra={"tiller": record.fields()})
        self._tell("finished", record)

    def _elapsed_ms(self) -> float:
        return round((time.monotonic() - self._started) * 1000, 1)

    def _tell(self, hook: str, *args: Any) -> None:
        for listener in list(self._listeners):
            try:
                getattr(listener, hook)(*args)
            except Exception:
                log.exception("An observer of an LLM call failed; dropping it")
                self._listeners.remove(listener)


class TappedBody:
    """An HTTP response as an SSE reader sees it (`headers`, `aiter_text()`), with every
    piece of decoded text also handed to `tap`: the raw stream, for a payload dump."""

    def __init__(self, response: Any, tap: Callable[[str], None]) -> None:
        self.headers = response.headers
        self._response = response
        self._tap = tap

    async def aiter_text(self) -> AsyncIterator[str]:
        async for text in self._response.aiter_text():
            self._tap(text)
            yield text


async def observed(call: CallObserver, events: AsyncIterator[AssistantMessageEvent]) -> AsyncIterator[AssistantMessageEvent]:
    """`events` as they are, shown to `call` first; the record is logged at `done`/`error`,
    before the caller sees it (callers stop reading there)."""
    try:
        async for event in events:
            call.event(event)
            yield event
    finally:
        call.closed()
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


def _seconds(ms: float | None) -> str:
    return f"{(ms or 0) / 1000:.2f} s"
