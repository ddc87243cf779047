"""Writing protocol frames fast.

Every `agent/event` is one LSP frame. pygls's own path for a notification wraps it in an
attrs object that cattrs then walks key by key, and its stdout writer flushes after every
frame; at streaming rates that is most of the server's CPU (see bench/). Events therefore
go out as frames we serialise directly from their pydantic class, and all frames (pygls's
responses included) pass through one buffer that is flushed once per event-loop pass or
when it holds 64 KiB. Frames are never reordered or dropped: events still precede the
answer they belong to.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any, Protocol

from ..protocol.events import AnyWireEvent, EventNotification

logger = logging.getLogger("tiller.lsp")

FLUSH_AT = 64 * 1024


def frame(message: dict[str, Any]) -> bytes:
    # ensure_ascii (the default) keeps the body ASCII, so its length in characters is its
    # length in bytes, as Content-Length requires.
    body = json.dumps(message, separators=(",", ":"))
    return b"Content-Length: %d\r\n\r\n" % len(body) + body.encode("ascii")


# EventNotification's wire keys. The event inside is dumped from its own class; wrapping it in
# an EventNotification as well would validate it a second time on the hottest path (once per
# streamed delta). The end-to-end tests check every notification against the schema.
_SESSION_ID, _SEQ, _EVENT = (EventNotification.model_fields[name].alias for name in ("session_id", "seq", "event"))


def event_frame(session_id: str, seq: int, event: AnyWireEvent) -> bytes:
    """The `agent/event` notification of one session event."""
    params = {_SESSION_ID: session_id, _SEQ: seq, _EVENT: event.dump()}
    return frame({"jsonrpc": "2.0", "method": "agent/event", "params": params})


class Output(Protocol):
    def write(self, data: bytes, /) -> Any: ...

    def flush(self) -> Any: ...

    def close(self) -> Any: ...


class CoalescingWriter:
    """A pygls writer (`write(bytes)`, `close()`) that batches frames into few syscalls."""

    def __init__(self, out: Output, flush_at: int = FLUSH_AT) -> None:
        self._out = out
        self._flush_at = flush_at
        self._buffer = bytearray()
        self._lock = threading.Lock()
        self._scheduled = False

    def write(self, data: bytes) -> None:
        with self._lock:
            self._buffer += data
            full = len(self._buffer) >= self._flush_at
        if full:
            self.flush()
            return
        if not self._scheduled:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # not on the loop (a worker thread): write through
                self.flush()
                return
            self._scheduled = True
            loop.call_soon(self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        self._scheduled = False
        self.flush()

    def flush(self) -> None:
        with self._lock:
            if not self._buffer:
                return
            data = bytes(self._buffer)
            self._buffer.clear()
            try:
                self._out.write(data)
                self._out.flush()
            except (BrokenPipeError, ValueError):  # the client went away
                logger.warning("The client closed the connection; dropping %d bytes", len(data))

    def close(self) -> None:
        self.flush()
        self._out.close()
