"""What the command line and the environment asked tiller to tell, for the whole process.

    --dump-payloads DIR   or TILLER_DUMP_PAYLOADS=DIR   every LLM request and response to files
    --otel                or TILLER_OTEL=1, or OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT set: spans

Flags win over the environment; `TILLER_OTEL=0` or `OTEL_SDK_DISABLED=true` turn tracing off.
The tracer starts with the first session, and only then is OpenTelemetry imported.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..agent import Agent
from .run_log import ApprovalWait, RunLog

log = logging.getLogger("tiller.telemetry")

_YES = ("1", "true", "yes", "on")
_NO = ("0", "false", "no", "off")


@dataclass(frozen=True)
class TelemetrySettings:
    dump_dir: str | None = None
    tracing: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TelemetrySettings:
        return cls(dump_dir=env.get("TILLER_DUMP_PAYLOADS") or None, tracing=tracing_requested(env))


def tracing_requested(env: Mapping[str, str]) -> bool:
    switch = env.get("TILLER_OTEL", "").strip().lower()
    if switch in _NO or env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return switch in _YES or bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


_settings = TelemetrySettings.from_env(os.environ)
_tracer: Any = None


def configure(*, dump_dir: str | None = None, tracing: bool | None = None) -> None:
    """The command line's choices (None keeps what the environment said)."""
    global _settings
    _settings = replace(_settings, dump_dir=dump_dir or _settings.dump_dir,
                        tracing=_settings.tracing if tracing is None else tracing)


def current() -> TelemetrySettings:
    return _settings


def observe_agent(
    agent: Agent,
    session_id: str,
    *,
    dump_dir: str | None = None,
    approval_wait: Callable[[str], ApprovalWait | None] | None = None,
) -> RunLog:
    """Log (and trace, and dump, as asked) every LLM and tool call of `agent`'s session.
    `dump_dir` overrides the process's (an editor's `dumpPayloads` option)."""
    # Dumps and traces are rare: their modules load only when asked for.
    directory = dump_dir or _settings.dump_dir
    dump = None
    if directory:
        from .payload_dump import PayloadDump

        dump = PayloadDump(directory)
    tracer = _start_tracer() if _settings.tracing else None
    spans = None
    if tracer is not None:
        from .tracing import SessionSpans

        spans = SessionSpans(tracer, session_id)
    return RunLog(session_id, dump=dump, spans=spans, approval_wait=approval_wait).attach(agent)


def shutdown() -> None:
    """Flush what tracing holds; call before the process ends (it may end with os._exit)."""
    global _tracer
    if _tracer is not None:
        from .tracing import stop_tracing

        stop_tracing()
        _tracer = None


def _start_tracer() -> Any:
    global _tracer, _settings
    if _tracer is None:
        try:
            from .tracing import start_tracing

            _tracer = start_tracing()
        except ImportError as error:
            log.warning("Tracing is on but OpenTelemetry is not installed (%s): pip install 'tiller[otel]'", error)
            _settings = replace(_settings, tracing=False)
    return _tracer
