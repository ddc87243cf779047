"""Ending a command together with everything it started.

bash runs in its own session, so it and its children (including `cmd &` jobs) share one
process group: signalling the group reaches them all. A process that deliberately leaves
the group (setsid, a daemon's double fork) is out of reach by design. Groups are also
handed to the watchdog (watchdog.py), which ends them when tiller ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from .watchdog import group_alive

GRACE_SECONDS = 2.0  # between SIGTERM and SIGKILL: time to clean up, not to carry on
KILL_SETTLE_SECONDS = 2.0  # a SIGKILLed process needs no cooperation; this only bounds a stuck kernel


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def terminate_group(pgid: int, grace: float | None = None) -> None:
    """SIGTERM the group, wait up to `grace` seconds for it to go, then SIGKILL what is left."""
    signal_group(pgid, signal.SIGTERM)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (GRACE_SECONDS if grace is None else grace)
    while loop.time() < deadline:
        if not group_alive(pgid):
            return
        await asyncio.sleep(0.02)
    signal_group(pgid, signal.SIGKILL)
    # SIGKILL is delivered asynchronously: wait until the kernel has ended the group, so
    # a caller told "killed" never races a process that is still on its way out.
    deadline = loop.time() + KILL_SETTLE_SECONDS
    while group_alive(pgid) and loop.time() < deadline:
        await asyncio.sleep(0.01)
