"""Writing a file so that no reader ever sees half of it: the tools' default `FileWriter`.

A host may substitute a writer that routes the change through the editor (its buffers, its
undo) and uses this one for the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path


class AtomicFileWriter:
    """Temp file in the same directory, then `os.replace`: readers (the editor, a running
    build) see the old file or the new one, never half of it. An existing file keeps its
    permission bits; a new one gets the usual 0666 minus the umask."""

    async def write(self, path: Path, text: str) -> None:
        await asyncio.to_thread(write_atomically, path, text.encode("utf-8"))


class PathChangedError(PermissionError):
    """A directory on the way to the file became a symlink (or no directory) after the
    path was resolved and checked: writing now could land anywhere."""


def write_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path`, which must be resolved (absolute, no symlinks in it).

    The directories are walked from `/` one at a time without following symlinks, and the
    file is created and renamed relative to its directory's descriptor: if any part of the
    path was swapped for a symlink after the tools checked it (say while the user looked at
    the approval), the write fails instead of following it out of the workspace.
    """
    directory = open_directory(path.parent, create=True)
    name = path.name
    temp = f".{name}.{secrets.token_hex(6)}.tmp"
    try:
        try:
            existing = os.stat(name, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None and stat.S_ISLNK(existing.st_mode):
            raise PathChangedError(f"{path} changed since it was checked (it is now a symbolic link)")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666,
                     dir_fd=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                if existing is not None:
                    os.fchmod(handle.fileno(), stat.S_IMODE(existing.st_mode))
                os.fsync(handle.fileno())
            os.replace(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=directory)
            raise
    finally:
        os.close(directory)


def open_directory(path: Path, *, create: bool = False) -> int:
    """A descriptor of the directory `path`, reached from `/` without following a symlink;
    missing directories are made when `create`."""
    if not path.is_absolute():
        raise ValueError(f"Not an absolute path: {path}")
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open("/", flags)
    try:
        for part in path.parts[1:]:
            try:
                child = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, flags, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise PathChangedError(
                        f"{path} changed since it was checked: {part} is now a symbolic link or not a directory"
                    ) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd
