"""Opening the files the tools read, so that no file can hang a tool or leak one outside.

- Only regular files are read: a FIFO would block the reader until some writer appears,
  and a device (`/dev/zero`) never ends. The file is opened non-blocking and checked with
  `fstat` before the first read, so even opening cannot hang.
- The last part of the path is opened without following a symlink: the path was resolved
  when the tool checked it, so a symlink there now means it changed since.
- A regular file with more than one hard link is refused: its other names may lie outside
  the workspace (a hard link is no symlink: resolving the path cannot see where its data
  also lives), and tiller cannot tell without searching the whole disk.
- Sizes are capped; every function here blocks, so callers run it in a thread.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

MAX_EDIT_BYTES = 32 * 1024 * 1024  # edit and write hold the old and the new text


class UnsafeFileError(PermissionError):
    """A file the tools do not open: not regular, hard-linked, or changed since resolved."""


@dataclass
class OpenFile:
    fd: int
    size: int

    def read(self, limit: int | None = None) -> bytes:
        """The whole file, or ValueError if it holds more than `limit` bytes."""
        chunks, total = [], 0
        while chunk := os.read(self.fd, 1 << 20):
            chunks.append(chunk)
            total += len(chunk)
            if limit is not None and total > limit:
                raise ValueError(f"the file is larger than {limit // (1024 * 1024)} MiB")
        return b"".join(chunks)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> OpenFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_regular(path: Path, display: str | None = None) -> OpenFile:
    """`path` (resolved) opened for reading, or UnsafeFileError / OSError with a message for
    the model; FileNotFoundError when it does not exist."""
    name = display or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ELOOP:  # the last part is now a symlink
            raise UnsafeFileError(f"{name} changed since it was checked (it is now a symbolic link)") from None
        raise
    try:
        info = os.fstat(fd)
        check_regular(info, name)
    except BaseException:
        os.close(fd)
        raise
    return OpenFile(fd, info.st_size)


def check_regular(info: os.stat_result, name: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFileError(f"{name} is not a regular file ({_kind(info.st_mode)}); tools only open regular files")
    if info.st_nlink > 1:
        raise UnsafeFileError(
            f"{name} has {info.st_nlink} hard links: its content may also live outside the workspace, so the "
            "tools do not open it. Copy it (cp) if you need its content here."
        )


def read_regular(path: Path, display: str | None = None, limit: int | None = None) -> bytes:
    with open_regular(path, display) as file:
        try:
            return file.read(limit)
        except ValueError as error:
            raise ValueError(f"{display or path}: {error}") from None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"
