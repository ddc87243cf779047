"""bash `{command, timeout?}`: run a command in the workspace root (pi 13.5).

`/bin/bash -c` in its own session (so its process group holds everything it starts), stdin
from /dev/null, stdout and stderr merged into one pipe, the environment of `child_env` (an
allowlist, never a provider key). Output streams through `on_update` (the rolling tail, at most every
100 ms). A timeout or an abort ends the whole process group, background jobs included.

When the command finishes normally, jobs it left running in the background (`server &`)
are left alone: starting one is a legitimate thing to ask for. We stop reading shortly
after bash exits instead of waiting for them to close the pipe. They live until tiller
ends: then the watchdog (watchdog.py) ends the group, whether tiller exited or was killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

from ..agent.types import AgentTool, AgentToolResult, OnUpdate, resolve
from ..ai.abort import AbortSignal
from ..ai.types import TextContent
from ..environment import child_env
from .aborts import raise_if_aborted, unless_aborted
from .output import CommandOutput
from .ports import ApprovalRequest, Approve
from .process_group import signal_group, terminate_group
from .results import text_result
from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Truncation, format_size
from .watchdog import watch
from .workspace import Workspace

UPDATE_INTERVAL = 0.1  # seconds between streamed updates, at most
DRAIN_SECONDS = 0.5  # after bash exits, how long output may still arrive (its background jobs hold the pipe)


class CommandFailed(Exception):
    """Non-zero exit, timeout or abort: the message is the output plus the reason."""


class BashTool(AgentTool):
    name = "bash"
    label = "bash"
    description = (
        "Execute a bash command in the current working directory. Returns stdout and stderr. Output is "
        f"truncated to last {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit "
        "first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds."
    )
    parameters = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Bash command to execute"},
            "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"},
        },
        "required": ["command"],
    }

    def __init__(
        self,
        workspace: Workspace,
        *,
        log_dir: Path | None = None,
        command_prefix: str | None = None,
        approve: Approve | None = None,
    ) -> None:
        self.workspace = workspace
        self.approve = approve
        self.log_dir = log_dir or Path(tempfile.gettempdir())
        self.command_prefix = command_prefix

    async def execute(
        self, tool_call_id: str, args: dict[str, Any], cancel: AbortSignal, on_update: OnUpdate
    ) -> AgentToolResult:
        raise_if_aborted(cancel)
        cwd = self.workspace.root
        if not cwd.is_dir():
            raise FileNotFoundError(f"Working directory does not exist: {cwd}\nCannot execute bash commands.")
        command = args["command"]
        if self.approve is not None:
            request = ApprovalRequest(tool_call_id=tool_call_id, tool_name=self.name, kind="execute",
                                      title=f"Run {command.splitlines()[0][:80] if command.strip() else '(empty command)'}",
                                      command=command)
            await unless_aborted(resolve(self.approve(request)), cancel)
            raise_if_aborted(cancel)
        if self.command_prefix:
            command = f"{self.command_prefix}\n{command}"
        timeout = args.get("timeout")
        output = CommandOutput(self.log_dir)
        try:
            ending = await _run(command, cwd, timeout if timeout and timeout > 0 else None, cancel, output, on_update)
            return _finish(output, ending, timeout)
        finally:
            output.close()


async def _run(
    command: str, cwd: Path, timeout: float | None, cancel: AbortSignal, output: CommandOutput, on_update: OnUpdate
) -> str | int:
    """Run to completion; the exit code, or "timeout" / "aborted"."""
    # Our own pipe rather than asyncio's: asyncio's wait() also waits for every holder of
    # the pipe to close it, which a background job may never do.
    read_end, write_end = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            _shell(), "-c", command, cwd=cwd, env=child_env(), start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=write_end, stderr=write_end,
        )  # fmt: skip
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    watch(proc.pid)  # its own session: the group id is its pid
    # Opened here, not in the pump, so it is closed even if the pump never gets to run.
    pipe = os.fdopen(read_end, "rb", buffering=0)
    updates = _Updates(output, on_update)
    reader = asyncio.ensure_future(_pump(pipe, output))
    streamer = asyncio.ensure_future(updates.run())
    try:
        ending = await _wait(proc, timeout, cancel)
        if not isinstance(ending, int):
            await terminate_group(proc.pid)
            await proc.wait()
        await asyncio.wait({reader}, timeout=DRAIN_SECONDS)
        return ending
    finally:
        if proc.returncode is None:  # we were cancelled: no waiting, but no survivors either
            signal_group(proc.pid, signal.SIGKILL)
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        pipe.close()
        updates.stop()  # it sends the final state, if the last tick missed it
        await streamer


async def _wait(proc: asyncio.subprocess.Process, timeout: float | None, cancel: AbortSignal) -> str | int:
    exited = asyncio.ensure_future(proc.wait())
    aborted = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({exited, aborted}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        aborted.cancel()
    if exited.done():
        code = exited.result()
        return 128 - code if code < 0 else code  # killed by signal N: report it as a shell would
    exited.cancel()
    return "aborted" if cancel.aborted else "timeout"


async def _pump(pipe: BinaryIO, output: CommandOutput) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    try:
        while chunk := await reader.read(65536):
            output.append(chunk)
    finally:
        transport.close()


class _Updates:
    """Streams the rolling tail through `on_update`: an empty update first (as pi does),
    then the current tail on each tick in which output arrived, and a last one on stop.

    Stopped by a flag, never cancelled: cancelling our await of the agent loop's update
    future would cancel that future too, and the loop waits for every update it handed out.
    """

    def __init__(self, output: CommandOutput, on_update: OnUpdate) -> None:
        self._output, self._on_update = output, on_update
        self._sent = 0
        self._stopped = asyncio.Event()

    def stop(self) -> None:
        self._stopped.set()

    async def run(self) -> None:
        await self._emit(AgentToolResult())
        while not self._stopped.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), UPDATE_INTERVAL)
            await self._flush()

    async def _flush(self) -> None:
        if self._sent == self._output.version:
            return
        self._sent = self._output.version
        tail = self._output.tail()
        details = None
        if tail.truncated:
            path = self._output.log_path
            details = {"truncation": tail.as_details(), "fullOutputPath": str(path) if path else None}
        await self._emit(AgentToolResult(content=[TextContent(text=tail.content)], details=details))

    async def _emit(self, partial: AgentToolResult) -> None:
        with contextlib.suppress(Exception):  # a failing listener must not break the command
            await resolve(self._on_update(partial))


def _finish(output: CommandOutput, ending: str | int, timeout: Any) -> AgentToolResult:
    tail = output.tail()
    text = tail.content
    details = None
    if tail.truncated:
        path = output.save()
        details = {"truncation": tail.as_details(), "fullOutputPath": str(path)}
        text += f"\n\n[{_truncation_notice(tail, output.last_line_bytes, path)}]"
    if ending == 0:
        return text_result(text or "(no output)", details)
    if ending == "aborted":
        reason = "Command aborted"
    elif ending == "timeout":
        reason = f"Command timed out after {timeout:g} seconds"
    else:
        text = text or "(no output)"
        reason = f"Command exited with code {ending}"
    raise CommandFailed(f"{text}\n\n{reason}" if text else reason)


def _truncation_notice(tail: Truncation, last_line_bytes: int, path: Path) -> str:
    first, last = tail.total_lines - tail.output_lines + 1, tail.total_lines
    if tail.last_line_partial:
        shown, whole = format_size(tail.output_bytes), format_size(last_line_bytes)
        return f"Showing last {shown} of line {last} (line is {whole}). Full output: {path}"
    limit = "" if tail.truncated_by == "lines" else f" ({format_size(DEFAULT_MAX_BYTES)} limit)"
    return f"Showing lines {first}-{last} of {tail.total_lines}{limit}. Full output: {path}"


def _shell() -> str:
    if os.path.exists("/bin/bash"):
        return "/bin/bash"
    return shutil.which("bash") or "/bin/sh"
