"""Writing a file so that no reader ever sees half of it: the tools' default `FileWriter`.

A host may substitute a writer that routes the change through the editor (its buffers, its
undo) and uses this one for the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import tempfile
from pathlib import Path


def _process_umask() -> int:
    # os.umask can only be read by setting it; do that once, at import, not from a worker
    # thread where another thread could create a file in between with the wrong mask.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _process_umask()


class AtomicFileWriter:
    """Temp file in the same directory, then `os.replace`: readers (the editor, a running
    build) see the old file or the new one, never half of it. An existing file keeps its
    permission bits; a new one gets the usual 0666 minus the umask."""

    async def write(self, path: Path, text: str) -> None:
        await asyncio.to_thread(write_atomically, path, text.encode("utf-8"))


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_UMASK
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
