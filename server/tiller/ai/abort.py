"""Cooperative cancellation, the Python counterpart of the web's AbortSignal.

One object is both controller and signal: whoever owns a run calls `abort()`, everything
the run touches (providers, tools, hooks) checks `aborted` or awaits `wait()`. Reading
`aborted` is thread-safe, so worker threads (the local model) can poll it too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import anyio


class AbortSignal:
    def __init__(self) -> None:
        self._aborted = False
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], object]] = []
        self._event: anyio.Event | None = None

    @property
    def aborted(self) -> bool:
        return self._aborted

    def abort(self) -> None:
        """Abort once; later calls do nothing. Callbacks run in the caller's thread."""
        with self._lock:
            if self._aborted:
                return
            self._aborted = True
            callbacks, self._callbacks = self._callbacks, []
        if self._event is not None:
            self._event.set()
        for callback in callbacks:
            callback()

    def on_abort(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run `callback` on abort (at once if already aborted); returns a remover."""
        with self._lock:
            if not self._aborted:
                self._callbacks.append(callback)
                return lambda: self._callbacks.remove(callback) if callback in self._callbacks else None
        callback()
        return lambda: None

    async def wait(self) -> None:
        """Return when aborted. Must be awaited from the event loop's thread."""
        if self._aborted:
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()
