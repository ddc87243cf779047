"""Ending a server process: no task left on the event loop may keep it from exiting.

`asyncio.run` cancels the tasks still running when its main coroutine returns and then waits
for every one of them, without a limit: a single task that swallows its cancellation (or
waits on something that never comes) would keep an editor's dead server process alive. Both
front ends cancel what is left themselves, wait a bounded time, and exit anyway.
"""

from __future__ import annotations

import asyncio
import logging

logger = logging.getLogger("tiller")

EXIT_GRACE_SECONDS = 2.0


async def cancel_leftover_tasks(grace: float = EXIT_GRACE_SECONDS) -> list[asyncio.Task[object]]:
    """Cancel every other task of the running loop and wait up to `grace` seconds for them
    to end; the tasks that are still running then (each logged)."""
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
    for task in tasks:
        task.cancel()
    if not tasks:
        return []
    _, still_running = await asyncio.wait(tasks, timeout=grace)
    for task in still_running:
        logger.warning("A task did not end when cancelled at exit: %s", task.get_coro())
    return list(still_running)
