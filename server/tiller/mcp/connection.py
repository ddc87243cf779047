"""One MCP server, connected through the SDK's `Client` and shared by every session whose
configuration launches it the same way.

A task owns the connection (the SDK's client is an async context, entered and left in one
task): it starts the server, lists its tools, then waits until the server is lost (its
process exited, a call found the connection closed) or the connection is stopped. A server
lost after it was ready is started again after a pause that doubles each time (1 s, 2 s,
... 30 s); after MAX_RESTARTS failed tries in a row it stays failed. A server that cannot
be started the first time fails at once: a bad command does not get better by waiting (a
session that needs it later tries again).

Calls run in the caller's task, each bounded by a timeout that a progress notification
restarts, and abortable. Listeners (the sessions) hear every change of state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any, Literal

import anyio
from pydantic import ValidationError

from mcp import Client, MCPError
from mcp import types as mcp_types

from .. import __version__
from ..ai.abort import AbortSignal
from ..tools.aborts import ToolAborted
from .config import McpServerConfig
from .stderr import ServerStderr
from .transports import open_transport

logger = logging.getLogger("tiller.mcp")

ConnectionState = Literal["starting", "ready", "restarting", "failed", "stopped"]
RESTART_DELAYS = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
MAX_RESTARTS = 5
# A server that stayed up this long has recovered: its next crash starts the count again.
STABLE_SECONDS = 60.0
MAX_TOOL_PAGES = 100
STOP_SECONDS = 10.0  # the SDK's own shutdown of a process takes at most ~6 s

Progress = Callable[[float, float | None, str | None], None]


class McpCallFailed(Exception):
    """A call that brought no result; the message is for the model."""


class McpConnection:
    def __init__(self, config: McpServerConfig, restart_delays: tuple[float, ...] = RESTART_DELAYS,
                 redact: Callable[[str], str] = str) -> None:
        self.config = config
        self._redact = redact  # for what the server writes to its stderr and its log
        self.name = config.name
        self.state: ConnectionState = "stopped"
        self.message: str | None = None
        self.tools: list[mcp_types.Tool] = []
        self._restart_delays = restart_delays
        self._client: Client | None = None
        self._generation = 0  # one per connection made: a loss reported by an older one is stale
        self._lost: asyncio.Future[str] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        self._listeners: list[Callable[[], None]] = []

    # --- lifecycle ---------------------------------------------------------------------

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def ensure_running(self) -> None:
        """Start the server unless it runs (or is being started); a failed one is tried again."""
        if self._task is not None and not self._task.done():
            return
        self._stop = asyncio.Event()
        self._set("starting", None)
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"mcp-{self.name}")

    async def stop(self) -> None:
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), STOP_SECONDS)
            except TimeoutError:
                task.cancel()
                await asyncio.wait({task})
        self._set("stopped", None)

    async def settled(self) -> None:
        """Return once the server is no longer being started for the first time."""
        await self._settled.wait()

    def unavailable(self) -> str:
        """Why calls cannot go through now, for the model."""
        if self.state == "starting":
            return f"The MCP server {self.name} is still starting."
        if self.state == "restarting":
            return f"The MCP server {self.name} is being restarted: {self.message}"
        return f"The MCP server {self.name} is not available: {self.message or self.state}"

    def _set(self, state: ConnectionState, message: str | None) -> None:
        if (state, message) == (self.state, self.message):
            return
        self.state, self.message = state, message
        if state == "starting":
            self._settled.clear()
        else:
            self._settled.set()
        if state in ("failed", "restarting"):
            logger.warning("MCP server %s (%s): %s", self.name, self.config.describe(), message)
        for listener in list(self._listeners):
            listener()

    async def _run(self) -> None:
        failures = 0
        ever_ready = False
        while True:
            started = asyncio.get_running_loop().time()
            reason, was_ready = await self._connect_once()
            if self._stop.is_set():
                self._set("stopped", None)
                return
            if not ever_ready and not was_ready:
                self._set("failed", reason)
                return
            ever_ready = ever_ready or was_ready
            stable = was_ready and asyncio.get_running_loop().time() - started >= STABLE_SECONDS
            failures = 1 if stable else failures + 1
            if failures > MAX_RESTARTS:
                self._set("failed", f"{reason} (gave up after {MAX_RESTARTS} restarts)")
                return
            delay = self._restart_delays[min(failures, len(self._restart_delays)) - 1]
            self._set("restarting", f"{reason}; starting it again in {delay:g} s (try {failures} of {MAX_RESTARTS})")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), delay)
            if self._stop.is_set():
                self._set("stopped", None)
                return

    async def _connect_once(self) -> tuple[str, bool]:
        """Connect, list the tools, serve until lost or stopped: why it ended, and whether it
        got as far as ready."""
        config = self.config
        stderr = ServerStderr(self.name, self._redact) if config.transport == "stdio" else None
        self._generation += 1
        generation = self._generation
        lost: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._lost = lost
        stdout_ended = asyncio.Event()
        watcher: asyncio.Task[None] | None = None
        ready = False
        try:
            if stderr is not None:
                await stderr.start()
                watcher = asyncio.get_running_loop().create_task(self._watch_exit(stdout_ended, stderr, generation))
            async with AsyncExitStack() as stack:
                try:
                    # asyncio's timeout, not anyio's cancel scope: the client's task group,
                    # entered inside it, outlives it.
                    async with asyncio.timeout(config.startup_timeout):
                        client = await stack.enter_async_context(Client(
                            open_transport(config, stderr.writer if stderr else None, stdout_ended.set), cache=None,
                            client_info=mcp_types.Implementation(name="tiller", version=__version__),
                            logging_callback=self._server_log,
                        ))
                        tools = await _all_tools(client)
                finally:
                    if stderr is not None:
                        stderr.release_writer()  # the process has its copy: its end is the pipe's end
                self._client, self.tools, ready = client, tools, True
                self._set("ready", None)
                stop: asyncio.Future[Any] = asyncio.ensure_future(self._stop.wait())
                waiting: set[asyncio.Future[Any]] = {stop, lost}
                try:
                    await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stop.cancel()
                self._client = None
                if not self._stop.is_set():
                    self._set("restarting", lost.result())
            return (lost.result() if lost.done() else "stopped"), ready
        except Exception as error:
            if lost.done():  # the SDK's clean-up of a dead connection complained too
                return lost.result(), ready
            if stderr is not None:
                await stderr.drained(1.0)
            return _explain(error, config, stderr), ready
        finally:
            self._client = None
            if watcher is not None:
                watcher.cancel()
            if stderr is not None:
                await stderr.close()

    async def _watch_exit(self, stdout_ended: asyncio.Event, stderr: ServerStderr, generation: int) -> None:
        """The end of its stdout is the end of a stdio server (never its stderr's: a server
        may close that and live on)."""
        await stdout_ended.wait()
        if self._stop.is_set():
            return
        await stderr.drained(1.0)  # its last words, if it has a stderr left
        self._lose(generation, _with_tail("the server process exited (its stdout closed)", stderr))

    def _lose(self, generation: int, reason: str) -> None:
        lost = self._lost
        if generation == self._generation and lost is not None and not lost.done():
            lost.set_result(reason)

    async def _server_log(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        logging.getLogger(f"tiller.mcp.{self.name}").info("[%s] %s", params.level, self._redact(str(params.data)))

    # --- calls -------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any], *, timeout: float, cancel: AbortSignal,
                   on_progress: Progress) -> mcp_types.CallToolResult:
        """The server's result; raises McpCallFailed (its message is for the model) or
        ToolAborted."""
        client = self._client
        if self.state != "ready" or client is None:
            raise McpCallFailed(self.unavailable())
        generation = self._generation
        progressed = asyncio.Event()

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            progressed.set()
            on_progress(progress, total, message)

        call = asyncio.ensure_future(client.call_tool(tool, arguments, progress_callback=progress))
        try:
            await _await_call(call, progressed, cancel, timeout, f"{self.name} did not answer {tool}")
        finally:
            if not call.done():
                call.cancel()  # the SDK tells the server the request is cancelled
                await asyncio.wait({call})
        try:
            return call.result()
        except MCPError as error:
            if error.code == mcp_types.CONNECTION_CLOSED:
                self._lose(generation, f"the connection closed while {tool} was running")
                raise McpCallFailed(f"The MCP server {self.name} stopped while running {tool} (it crashed or "
                                    "closed the connection); tiller starts it again.") from None
            raise McpCallFailed(f"The MCP server {self.name} refused the call of {tool}: {error.message} "
                                f"(error {error.code})") from None
        except ValidationError as error:
            raise McpCallFailed(f"The MCP server {self.name} answered {tool} with something that is not a valid "
                                f"tool result: {_first_problem(error)}") from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as error:
            self._lose(generation, f"the connection broke while {tool} was running")
            raise McpCallFailed(f"The MCP server {self.name} stopped while running {tool}; tiller starts it "
                                f"again. ({type(error).__name__})") from None
        except Exception as error:
            raise McpCallFailed(f"Calling {tool} on the MCP server {self.name} failed: "
                                f"{_message(error)}") from None


async def _all_tools(client: Client) -> list[mcp_types.Tool]:
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


async def _await_call(call: asyncio.Future[Any], progressed: asyncio.Event, cancel: AbortSignal, timeout: float,
                      silent: str) -> None:
    """Wait for the call; a progress notification restarts the timeout."""
    aborted = asyncio.ensure_future(cancel.wait())
    try:
        while not call.done():
            progressed.clear()
            heard = asyncio.ensure_future(progressed.wait())
            try:
                done, _ = await asyncio.wait({call, aborted, heard}, timeout=timeout,
                                             return_when=asyncio.FIRST_COMPLETED)
            finally:
                heard.cancel()
            if call.done():
                return
            if aborted in done:
                raise ToolAborted()
            if not done:
                raise McpCallFailed(f"{silent} within {timeout:g} s (no result and no progress); the call was "
                                    "cancelled.")
    finally:
        aborted.cancel()


def _explain(error: BaseException, config: McpServerConfig, stderr: ServerStderr | None) -> str:
    """Why a server could not be started or reached, in a sentence."""
    error = _leaf(error)
    if isinstance(error, TimeoutError):
        text = f"did not start within {config.startup_timeout:g} s"
    elif isinstance(error, FileNotFoundError) and config.transport == "stdio":
        text = f"cannot run {config.command!r}: command not found"
    elif isinstance(error, OSError) and config.transport == "stdio":
        text = f"cannot run {config.command!r}: {error.strerror or error}"
    elif isinstance(error, MCPError) and error.code == mcp_types.CONNECTION_CLOSED:
        text = "the server closed the connection while starting"
    elif isinstance(error, ValidationError):
        text = f"answered with something that is not MCP: {_first_problem(error)}"
    elif config.transport != "stdio" and type(error).__module__.startswith("httpx"):
        text = f"cannot connect to {config.url}: {_message(error)}"
    else:
        text = _message(error)
    return _with_tail(text, stderr)


def _with_tail(text: str, stderr: ServerStderr | None) -> str:
    tail = stderr.tail() if stderr is not None else ""
    return f"{text}; its stderr ended with:\n{tail}" if tail else text


def _leaf(error: BaseException) -> BaseException:
    """The first real error inside task-group exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _message(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _first_problem(error: ValidationError) -> str:
    first = error.errors()[0]
    return f"{'.'.join(str(part) for part in first['loc']) or 'result'}: {first['msg']}"
