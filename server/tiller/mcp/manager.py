"""Every MCP server this tiller process runs: one connection per way of launching a server,
shared by the sessions that use it, stopped when the last of them lets go (or when tiller
stops)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .config import McpServerConfig
from .connection import McpConnection


@dataclass
class _Shared:
    connection: McpConnection
    users: int = 0


class McpServerPool:
    def __init__(self, redact: Callable[[str], str] = str) -> None:
        self._redact = redact
        self._shared: dict[tuple[Any, ...], _Shared] = {}

    def acquire(self, config: McpServerConfig) -> McpConnection:
        """The connection for `config`, started (or tried again, if it had failed)."""
        shared = self._shared.get(config.launch)
        if shared is None:
            shared = self._shared[config.launch] = _Shared(McpConnection(config, redact=self._redact))
        shared.users += 1
        shared.connection.ensure_running()
        return shared.connection

    async def release(self, connection: McpConnection) -> None:
        shared = self._shared.get(connection.config.launch)
        if shared is None or shared.connection is not connection:
            return
        shared.users -= 1
        if shared.users <= 0:
            del self._shared[connection.config.launch]
            await connection.stop()

    async def stop_all(self) -> None:
        connections = [shared.connection for shared in self._shared.values()]
        self._shared.clear()
        await asyncio.gather(*(connection.stop() for connection in connections), return_exceptions=True)
