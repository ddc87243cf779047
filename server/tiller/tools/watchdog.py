"""Tool processes die with the process that started them, however it ends (even kill -9).

A parent-death signal would reach only bash itself, not what bash started, and
`cmd &` jobs outlive bash by design. So every command's process group is handed to a small
watchdog process: it reads group ids from a pipe whose other end only tiller holds, and when
that pipe closes (tiller exited, crashed or was killed) it ends every group it was given
(SIGTERM, then SIGKILL after a second) and exits. Groups whose processes are all gone are
forgotten every second, so a reused id is never signalled.

This file runs as the watchdog itself (`python -I -S watchdog.py`), standard library only;
`watch(pgid)` is the tiller side.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time

PRUNE_SECONDS = 1.0
GRACE_SECONDS = 1.0

_lock = threading.Lock()
_pipe: int | None = None


def watch(pgid: int) -> None:
    """Have the watchdog end process group `pgid` when this process ends."""
    global _pipe
    with _lock:
        if _pipe is None:
            _pipe = _start()
        try:
            os.write(_pipe, b"%d\n" % pgid)
        except OSError:  # the watchdog died: start another
            os.close(_pipe)
            _pipe = _start()
            os.write(_pipe, b"%d\n" % pgid)


def _start() -> int:
    read_end, write_end = os.pipe()  # both not inheritable: no tool process holds the pipe
    try:
        subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__)], stdin=read_end, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, env={},
        )
    finally:
        os.close(read_end)
    return write_end


# --- the watchdog process -----------------------------------------------------------------------


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs. Zombies do not count: killed orphans
    stay zombies until init reaps them, and some container inits never do."""
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:  # no procfs: ask the kernel, zombies included
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def _end(groups: set[int]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
        deadline = time.monotonic() + GRACE_SECONDS
        while sig == signal.SIGTERM and time.monotonic() < deadline and any(group_alive(g) for g in groups):
            time.sleep(0.05)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in tiller's terminal is tiller's
    groups: set[int] = set()
    pending = b""
    last_prune = time.monotonic()
    while True:
        ready, _, _ = select.select([0], [], [], PRUNE_SECONDS)
        if ready:
            data = os.read(0, 4096)
            if not data:
                break
            pending += data
            *lines, pending = pending.split(b"\n")
            groups.update(int(line) for line in lines if line.strip().isdigit())
        if time.monotonic() - last_prune >= PRUNE_SECONDS:
            groups = {g for g in groups if group_alive(g)}
            last_prune = time.monotonic()
    _end({g for g in groups if group_alive(g)})


if __name__ == "__main__":
    main()
