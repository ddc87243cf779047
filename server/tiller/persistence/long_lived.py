"""Loading a big session without a stop-the-world pause.

Reading a 10 MB session builds some 100,000 Python objects. Their number triggers a full
(generation 2) garbage collection, which scans every object in the process with the GIL
held: ~0.3-0.5 s during which no other session streams, although the file is read in a
worker thread. And each later full collection scans those messages again.

So while a session loads the collector waits, and afterwards everything alive is moved to
the permanent generation (`gc.freeze()`, O(1)): a loaded conversation lives as long as its
session, and the collector has no reason to look at it again. Reference counting still
frees everything that is not in a cycle, at once, as usual.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_loading = 0  # loads under way (they may overlap, from several threads)
_was_enabled = True


@contextmanager
def long_lived_objects() -> Iterator[None]:
    """Around building objects that will live long (a loaded session's messages)."""
    global _loading, _was_enabled
    with _lock:
        if _loading == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _loading += 1
    try:
        yield
    finally:
        with _lock:
            _loading -= 1
            if _loading == 0:
                gc.freeze()
                if _was_enabled:
                    gc.enable()
