"""A stdio MCP server's stderr: into tiller's log, never into the protocol stream.

The server process gets the write end of a pipe as its stderr; tiller reads the other end,
logs each line (logger `tiller.mcp.<server>`, INFO) and keeps the last lines, which say why
a server that died died. Each line is redacted first: a key the server prints must reach
neither the log nor, through the tail, a client. (Its end says nothing about the process: a
server may close its stderr and live on; the end of its stdout tells, watched_stream.py.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import deque
from collections.abc import Callable
from typing import TextIO

TAIL_LINES = 12
MAX_LINE = 2000  # characters of one line kept or logged


class ServerStderr:
    def __init__(self, server: str, redact: Callable[[str], str] = str) -> None:
        self._redact = redact
        self._log = logging.getLogger(f"tiller.mcp.{server}")
        read_fd, write_fd = os.pipe()
        # Handed to the process as its stderr; ours is closed once the process has its copy.
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "rb", buffering=0)
        self._tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._partial = b""
        self.ended = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self._reader)
        self._task = loop.create_task(self._pump(reader))

    def release_writer(self) -> None:
        """Close tiller's copy of the write end (the process keeps its own)."""
        with contextlib.suppress(OSError):
            self.writer.close()

    def tail(self) -> str:
        return "\n".join(self._tail)

    async def drained(self, timeout: float) -> None:
        """Wait (a little) for the last lines of a process that is exiting."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.ended.wait(), timeout)

    async def close(self) -> None:
        self.release_writer()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(OSError):
            self._reader.close()

    async def _pump(self, reader: asyncio.StreamReader) -> None:
        try:
            while chunk := await reader.read(65536):
                *lines, self._partial = (self._partial + chunk).split(b"\n")
                for line in lines:
                    self._line(line)
                if len(self._partial) > 65536:  # a line without end: log what there is
                    self._line(self._partial)
                    self._partial = b""
            if self._partial:
                self._line(self._partial)
        finally:
            self.ended.set()

    def _line(self, raw: bytes) -> None:
        text = self._redact(raw.decode("utf-8", "replace").rstrip("\r"))[:MAX_LINE]
        if text.strip():
            self._tail.append(text)
            self._log.info("%s", text)
