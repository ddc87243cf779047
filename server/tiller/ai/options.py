"""Options for one LLM call (pi-ai's SimpleStreamOptions)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .abort import AbortSignal
from .call_log import CallObserver

# A TCP connection that takes longer than this is to a host that is not there.
CONNECT_TIMEOUT_MS = 30_000
# A server on this machine may load the model before it sends its headers.
LOCAL_TIMEOUT_MS = 600_000

# Budget-based thinking: tokens the model may spend reasoning at each level.
DEFAULT_THINKING_BUDGETS: dict[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
}


@dataclass
class StreamOptions:
    temperature: float | None = None
    max_tokens: int | None = None
    signal: AbortSignal | None = None
    api_key: str | None = None
    session_id: str | None = None
    headers: dict[str, str] | None = None
    # Thinking level without "off" (None means no reasoning requested).
    reasoning: str | None = None
    thinking_budgets: dict[str, int] | None = None
    # Retries of connection errors and 408/409/429/5xx before the response streams.
    max_retries: int = 3
    retry_base_delay_ms: int = 1000
    # A server asking (Retry-After) to wait longer than this fails at once.
    max_retry_delay_ms: int = 60_000
    # Longest wait for the response headers, connecting and every retry included (connecting
    # alone gives up after CONNECT_TIMEOUT_MS). Servers on this machine get LOCAL_TIMEOUT_MS.
    timeout_ms: int = 120_000
    # Longest silence between two chunks of the body: reasoning models may think for
    # minutes before their first token (raise it per model in models.toml for slower ones).
    idle_timeout_ms: int = 300_000
    # Called with the request body just before it is sent (debugging, tests).
    on_payload: Callable[[dict[str, Any]], None] | None = None
    # Watches this one call (timings, retries, the raw exchange) for logs, dumps and traces;
    # `registry.stream` gives every call one (see call_log.py).
    observer: CallObserver | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def thinking_budget(self) -> int | None:
        if not self.reasoning:
            return None
        budgets = {**DEFAULT_THINKING_BUDGETS, **(self.thinking_budgets or {})}
        level = "high" if self.reasoning == "xhigh" else self.reasoning
        return budgets.get(level)
