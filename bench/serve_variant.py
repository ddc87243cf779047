"""`tiller serve`, optionally profiled and/or with prototype speed-ups patched in at run
time, for stream_bench.py. Nothing here changes the server's code on disk.

    TILLER_BENCH_PROFILE=out.prof     write a cProfile of the serving process there
    TILLER_BENCH_PATCHES=a,b,...      prototypes (each one a proposal, see stream_bench.py):
      plain     agent/event sent as a plain dict through pygls's _send_data: no attrs
                JsonRPCNotification, no cattrs walk over every params dict
      queue     skip building QueueState per event while both queues are (and were) empty
      frame     agent/event framed directly: compact JSON, no Content-Type header
      coalesce  stdout writes gathered and flushed once per event-loop iteration (or 64 KiB)
                instead of one write+flush syscall per message

The server leaves with os._exit (so worker threads cannot hold it open), which skips
atexit: the profile is written from a wrapper around os._exit.
"""

from __future__ import annotations

import asyncio
import cProfile
import json
import os
import sys
import threading
from typing import Any

import tiller.server.app as app
import tiller.server.methods  # noqa: F401  - imported before profiling starts
from tiller.cli import main
from tiller.server.session import Session

PATCHES = {p for p in os.environ.get("TILLER_BENCH_PATCHES", "").split(",") if p}
UNKNOWN = PATCHES - {"plain", "queue", "frame", "coalesce"}
if UNKNOWN:
    sys.exit(f"unknown TILLER_BENCH_PATCHES: {', '.join(sorted(UNKNOWN))}")

if "plain" in PATCHES:
    def notify_event(self: Any, method: str, params: dict[str, Any]) -> None:
        self.protocol._send_data({"jsonrpc": "2.0", "method": method, "params": params})

    app.TillerServer.notify_event = notify_event  # type: ignore[method-assign]

if "frame" in PATCHES:
    def notify_event(self: Any, method: str, params: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", "method": method, "params": params},
                          separators=(",", ":"), ensure_ascii=False).encode()
        self.protocol.writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    app.TillerServer.notify_event = notify_event  # type: ignore[method-assign]

if "queue" in PATCHES:
    _emit_queue = Session._emit_queue_if_changed

    def _emit_queue_if_changed(self: Session) -> None:
        agent = self.agent
        if not agent._steering and not agent._follow_ups and self._sent_queue == ([], []):
            return
        _emit_queue(self)

    Session._emit_queue_if_changed = _emit_queue_if_changed  # type: ignore[method-assign]

if "coalesce" in PATCHES:
    class CoalescingWriter:
        LIMIT = 1 << 16

        def __init__(self, out: Any) -> None:
            self._out, self._chunks, self._size = out, [], 0
            self._scheduled = False
            self._lock = threading.Lock()

        def write(self, data: bytes) -> None:
            with self._lock:
                self._chunks.append(data)
                self._size += len(data)
                if self._size >= self.LIMIT:
                    self._flush_locked()
                    return
                if self._scheduled:
                    return
                try:
                    loop = asyncio.get_running_loop()
                except RuntimeError:  # not on the loop's thread: write through
                    self._flush_locked()
                    return
                self._scheduled = True
            loop.call_soon(self.flush)

        def flush(self) -> None:
            with self._lock:
                self._flush_locked()

        def _flush_locked(self) -> None:
            self._scheduled = False
            if self._chunks:
                self._out.write(b"".join(self._chunks))
                self._out.flush()
                self._chunks, self._size = [], 0

        def close(self) -> None:
            self.flush()
            self._out.close()

    app.StdoutWriter = CoalescingWriter  # type: ignore[misc,assignment]

profile_path = os.environ.get("TILLER_BENCH_PROFILE")
profiler = cProfile.Profile()
if profile_path:
    _real_exit = os._exit

    def _exit(code: int) -> None:
        profiler.disable()
        profiler.dump_stats(profile_path)
        _real_exit(code)

    os._exit = _exit  # type: ignore[assignment]
    profiler.enable()

sys.exit(main(["serve"]))
