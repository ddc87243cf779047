"""The SDK transport for one server's configuration: a process on stdio, streamable HTTP, or
the older HTTP+SSE transport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TextIO

from mcp.client._transport import Transport, TransportStreams
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

# The SDK's own factory for its HTTP clients (its default timeouts: 30 s, 300 s for a
# response stream); the SDK's ClientSessionGroup builds header-carrying clients the same way.
from mcp.shared._httpx_utils import create_mcp_http_client

from .config import McpServerConfig
from .watched_stream import GarbageReport, WatchedReadStream


def open_transport(config: McpServerConfig, stderr: TextIO | None,
                   on_stdout_end: Callable[[], None] = lambda: None) -> Transport:
    """`on_stdout_end` hears when a stdio server's stdout ends (watched_stream.py)."""
    if config.transport == "stdio":
        assert config.command is not None and stderr is not None
        # The process gets the SDK's minimal environment (PATH, HOME, USER, SHELL, TERM,
        # LOGNAME) plus the configured variables: never tiller's own, with its keys.
        parameters = StdioServerParameters(command=config.command, args=list(config.args), env=dict(config.env),
                                           cwd=config.cwd)
        return _watched(stdio_client(parameters, errlog=stderr), on_stdout_end, GarbageReport(config.name))
    assert config.url is not None
    if config.transport == "sse":
        return sse_client(config.url, headers=dict(config.headers) or None)
    return _streamable_http(config.url, dict(config.headers))


@asynccontextmanager
async def _watched(transport: Transport, on_end: Callable[[], None],
                   garbage: GarbageReport) -> AsyncIterator[TransportStreams]:
    async with transport as (read, write):
        yield WatchedReadStream(read, on_end, garbage), write


@asynccontextmanager
async def _streamable_http(url: str, headers: dict[str, str]) -> AsyncIterator[TransportStreams]:
    async with create_mcp_http_client(headers=headers or None) as http, streamable_http_client(url, http_client=http) as streams:
        yield streams
