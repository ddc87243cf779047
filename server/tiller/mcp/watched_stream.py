"""What a stdio server says on its stdout, watched on its way to the SDK's session.

- Its end is how tiller learns that the server is gone: the pipe closes when the process
  exits (a server's stderr says nothing about that: a wrapper such as
  `sh -c "exec server 2>/dev/null"` closes it at once and lives on).
- A line that is not JSON-RPC: the SDK logs it with a full traceback and passes the error
  on, once per line, so a server that prints garbage flooded the log (74,000 lines in 3 s).
  The SDK's record is dropped (a filter on its logger) and the line summarised here: the
  first few logged, then a count at most every GARBAGE_REPORT_SECONDS, at the next good
  message and at the end.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import anyio
from mcp.client._transport import ReadStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

GARBAGE_LOGGED = 3  # lines logged one by one before they are only counted
GARBAGE_REPORT_SECONDS = 10.0
MAX_LOGGED_CHARS = 200
SDK_PARSE_FAILURE = "Failed to parse JSONRPC message"


def _not_a_parse_failure(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith(SDK_PARSE_FAILURE)


# Once, for every server: GarbageReport says it instead.
logging.getLogger("mcp.client.stdio").addFilter(_not_a_parse_failure)


class GarbageReport:
    """Lines of a server's stdout that are not JSON-RPC, for the log without flooding it."""

    def __init__(self, server: str) -> None:
        self._log = logging.getLogger(f"tiller.mcp.{server}")
        self.count = 0
        self._unreported = 0
        self._reported_at = 0.0

    def add(self, error: Exception) -> None:
        self.count += 1
        if self.count <= GARBAGE_LOGGED:
            self._log.warning("Ignoring a line of its stdout that is not JSON-RPC: %s", _line_of(error))
            self._reported_at = time.monotonic()
            return
        self._unreported += 1
        if time.monotonic() - self._reported_at >= GARBAGE_REPORT_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self._unreported:
            self._log.warning("Ignored %d more lines of its stdout that are not JSON-RPC (%d in all)",
                              self._unreported, self.count)
            self._unreported = 0
            self._reported_at = time.monotonic()


def _line_of(error: Exception) -> str:
    """The offending line, as the SDK's parse error holds it."""
    if isinstance(error, ValidationError) and error.errors():
        return repr(error.errors()[0].get("input"))[:MAX_LOGGED_CHARS]
    return (str(error).splitlines() or [type(error).__name__])[0][:MAX_LOGGED_CHARS]


class WatchedReadStream:
    """The SDK's read stream, telling `on_end` when it ends and keeping garbage out."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], on_end: Callable[[], None],
                 garbage: GarbageReport) -> None:
        self._inner = inner
        self._on_end = on_end
        self._garbage = garbage

    @property
    def last_context(self) -> Any:  # the SDK reads it duck-typed
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            try:
                item = await self._inner.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._garbage.flush()
                self._on_end()
                raise
            if not isinstance(item, Exception):
                self._garbage.flush()
                return item
            self._garbage.add(item)

    def __aiter__(self) -> WatchedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._garbage.flush()
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedReadStream:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc_val: BaseException | None,
                        exc_tb: TracebackType | None) -> None:
        await self.aclose()
