"""Cancellation helpers shared by the tools: pi's abort text and racing a wait against it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from ..ai.abort import AbortSignal

OPERATION_ABORTED = "Operation aborted"

T = TypeVar("T")


class ToolAborted(Exception):
    def __init__(self, message: str = OPERATION_ABORTED) -> None:
        super().__init__(message)


def raise_if_aborted(cancel: AbortSignal) -> None:
    if cancel.aborted:
        raise ToolAborted()


async def unless_aborted(awaitable: Awaitable[T], cancel: AbortSignal) -> T:
    """Await `awaitable`, but give up (cancelling it) with `Operation aborted` on abort.

    Used around waits the tool does not control, such as an approval prompt the user may
    never answer: aborting the run must not leave the tool hanging on it.
    """
    raise_if_aborted(cancel)
    work = asyncio.ensure_future(awaitable)
    await done_or_aborted(work, cancel)
    if not work.done():
        work.cancel()
        await asyncio.wait({work})  # let it clean up (e.g. report the approval as cancelled) first
        raise ToolAborted()
    return work.result()


async def done_or_aborted(work: asyncio.Future[Any], cancel: AbortSignal) -> None:
    """Return once `work` is done or the run is aborted, whichever comes first."""
    aborted = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({work, aborted}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        aborted.cancel()
