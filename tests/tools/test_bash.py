"""bash: output, errors, streaming, truncation, timeouts, aborts and no orphans."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from tiller.agent.types import AgentToolResult
from tiller.ai.abort import AbortSignal
from tiller.tools import BashTool, Workspace, process_group

from .helpers import fails, run, text


@pytest.fixture
def tool(ws: Workspace, tmp_path: Path) -> BashTool:
    return BashTool(ws, log_dir=tmp_path / "logs")


def process_gone(pid: int) -> bool:
    """Dead, or a zombie waiting for a reaper (killed orphans end up as init's zombies)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def wait_for_file(path: Path, timeout: float = 5.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


async def test_simple_command(tool):
    result = await run(tool, command="echo hello")
    assert text(result) == "hello\n" and result.details is None


async def test_no_output(tool):
    assert text(await run(tool, command="true")) == "(no output)"


async def test_stdout_and_stderr_are_merged(tool):
    assert text(await run(tool, command="echo out; echo err >&2; echo out2")) == "out\nerr\nout2\n"


async def test_runs_in_the_workspace_root(tool, project: Path):
    assert text(await run(tool, command="pwd")) == f"{project}\n"


async def test_stdin_is_empty(tool):
    assert text(await run(tool, command="cat; echo done")) == "done\n"


async def test_non_zero_exit_is_an_error(tool):
    assert await fails(tool, command="echo oops; exit 3") == "oops\n\n\nCommand exited with code 3"
    assert await fails(tool, command="exit 1") == "(no output)\n\nCommand exited with code 1"


async def test_killed_by_a_signal_reports_the_shell_code(tool):
    assert await fails(tool, command="kill -9 $$") == "(no output)\n\nCommand exited with code 137"


async def test_missing_working_directory(tmp_path: Path):
    root = tmp_path / "gone"
    root.mkdir()
    tool = BashTool(Workspace(root))
    root.rmdir()
    assert await fails(tool, command="echo hi") == (
        f"Working directory does not exist: {root}\nCannot execute bash commands."
    )


async def test_command_prefix(ws: Workspace):
    tool = BashTool(ws, command_prefix="GREETING=hi")
    assert text(await run(tool, command='echo "$GREETING there"')) == "hi there\n"


async def test_secrets_do_not_reach_the_command(tool, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-should-not-leak")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    monkeypatch.setenv("TILLER_TOOL_ENV", "PLAIN_SETTING")  # only what the user names passes
    output = text(await run(tool, command='echo "${OPENAI_API_KEY:-unset} ${ANTHROPIC_API_KEY:-unset} $PLAIN_SETTING"'))
    assert output == "unset unset visible\n"
    assert "should-not-leak" not in text(await run(tool, command="env"))


# --- streaming ----------------------------------------------------------------------------


async def test_streams_the_rolling_output(tool):
    updates: list[AgentToolResult] = []
    command = "echo one; sleep 0.3; echo two; sleep 0.3; echo three"
    result = await tool.execute("c", {"command": command}, AbortSignal(), updates.append)
    assert text(result) == "one\ntwo\nthree\n"
    assert updates[0].content == []  # announced before any output
    texts = [text(u) for u in updates[1:]]
    assert texts[0] == "one\n"  # each update is the whole output so far, not a delta
    assert "one\ntwo\n" in texts
    assert texts[-1] == "one\ntwo\nthree\n"


async def test_updates_are_throttled(tool):
    updates: list[AgentToolResult] = []
    command = "for i in $(seq 1 50); do echo line $i; sleep 0.01; done"
    started = time.monotonic()
    await tool.execute("c", {"command": command}, AbortSignal(), updates.append)
    elapsed = time.monotonic() - started
    assert len(updates) <= elapsed / 0.1 + 3  # one per 100 ms at most, plus first and last
    assert text(updates[-1]).endswith("line 50\n")


async def test_async_listener_is_awaited(tool):
    seen: list[str] = []

    async def on_update(update: AgentToolResult) -> None:
        await asyncio.sleep(0)
        seen.append(text(update))

    await tool.execute("c", {"command": "echo hi"}, AbortSignal(), on_update)
    assert seen[-1] == "hi\n"


async def test_a_failing_listener_does_not_break_the_command(tool):
    def on_update(update: AgentToolResult) -> None:
        raise RuntimeError("listener bug")

    result = await tool.execute("c", {"command": "echo fine"}, AbortSignal(), on_update)
    assert text(result) == "fine\n"


# --- truncation ---------------------------------------------------------------------------


async def test_tail_truncation_by_lines_keeps_the_full_output(tool):
    result = await run(tool, command="seq 1 3000")
    output = text(result)
    path = result.details["fullOutputPath"]
    # 3000 lines and the empty one after the last newline: pi counts 3001.
    assert output.startswith("1002\n1003\n")
    assert output.endswith(f"3000\n\n\n[Showing lines 1002-3001 of 3001. Full output: {path}]")
    assert Path(path).read_text() == "".join(f"{i}\n" for i in range(1, 3001))
    assert result.details["truncation"]["truncatedBy"] == "lines"


async def test_tail_truncation_by_bytes(tool):
    result = await run(tool, command="for i in $(seq 1 1000); do printf '%099d\\n' $i; done")
    output = text(result)
    path = result.details["fullOutputPath"]
    # 99 digits and a newline per line: the final empty line and 512 more fit in 51200 bytes.
    assert output.startswith("0" * 96 + "489\n")
    assert output.endswith(f"\n\n[Showing lines 489-1001 of 1001 (50.0KB limit). Full output: {path}]")
    assert len(Path(path).read_bytes()) == 100_000


async def test_tail_truncation_of_one_huge_line(tool):
    result = await run(tool, command="head -c 60000 /dev/zero | tr '\\0' b")
    output = text(result)
    path = result.details["fullOutputPath"]
    assert output == "b" * 51200 + f"\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {path}]"
    assert result.details["truncation"]["lastLinePartial"] is True


async def test_output_far_beyond_the_window(tool):
    result = await run(tool, command="seq 1 200000")
    output = text(result)
    assert output.startswith("198002\n") and output.endswith("of 200001. Full output: " + result.details["fullOutputPath"] + "]")
    assert Path(result.details["fullOutputPath"]).stat().st_size == len("".join(f"{i}\n" for i in range(1, 200001)))


async def test_multibyte_output_is_decoded_across_chunks(tool):
    assert text(await run(tool, command="printf 'h\\xc3'; sleep 0.2; printf '\\xa9llo\\n'")) == "h\u00e9llo\n"


async def test_result_serialises_for_the_wire(tool):
    wire = (await run(tool, command="seq 1 3000")).dump()
    assert wire["details"]["truncation"]["totalLines"] == 3001 and wire["details"]["fullOutputPath"]


# --- timeout, abort, orphans --------------------------------------------------------------


async def test_timeout(tool):
    started = time.monotonic()
    message = await fails(tool, command="echo start; sleep 30", timeout=0.5)
    assert message == "start\n\n\nCommand timed out after 0.5 seconds"
    assert time.monotonic() - started < 5


async def test_timeout_without_output(tool):
    assert await fails(tool, command="sleep 30", timeout=0.3) == "Command timed out after 0.3 seconds"


async def test_abort(tool):
    cancel = AbortSignal()
    asyncio.get_running_loop().call_later(0.3, cancel.abort)
    started = time.monotonic()
    assert await fails(tool, cancel, command="echo working; sleep 30") == "working\n\n\nCommand aborted"
    assert time.monotonic() - started < 5


async def test_abort_before_start(tool):
    cancel = AbortSignal()
    cancel.abort()
    assert await fails(tool, cancel, command="echo never") == "Operation aborted"


@pytest.mark.parametrize("how", ["timeout", "abort"])
async def test_background_children_die_with_the_command(tool, project: Path, how: str):
    command = "sleep 300 & echo $! > bg.pid; (sleep 300; echo never) & echo $! > sub.pid; sleep 300"
    cancel = AbortSignal()
    args = {"command": command}
    if how == "timeout":
        args["timeout"] = 1
    task = asyncio.ensure_future(tool.execute("c", args, cancel, lambda u: None))
    background = int(await wait_for_file(project / "bg.pid"))
    subshell = int(await wait_for_file(project / "sub.pid"))
    if how == "abort":
        cancel.abort()
    with pytest.raises(Exception, match=r"Command (timed out|aborted)"):
        await task
    assert process_gone(background) and process_gone(subshell)


async def test_children_ignoring_sigterm_are_killed(tool, project: Path, monkeypatch):
    monkeypatch.setattr(process_group, "GRACE_SECONDS", 0.3)
    command = "trap '' TERM; (trap '' TERM; sleep 300) & echo $! > bg.pid; sleep 300"
    task = asyncio.ensure_future(run(tool, command=command, timeout=1))
    background = int(await wait_for_file(project / "bg.pid"))
    with pytest.raises(Exception, match=r"timed out"):
        await task
    assert process_gone(background)


async def test_cancelling_the_task_leaves_no_orphans(tool, project: Path):
    task = asyncio.ensure_future(run(tool, command="sleep 300 & echo $! > bg.pid; sleep 300"))
    background = int(await wait_for_file(project / "bg.pid"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.1)
    assert process_gone(background)


async def test_normal_exit_does_not_wait_for_background_jobs(tool):
    started = time.monotonic()
    result = await run(tool, command="sleep 300 & echo $!")
    pid = int(text(result))
    try:
        assert time.monotonic() - started < 3
        assert not process_gone(pid)  # a deliberate background job is the user's business
    finally:
        os.kill(pid, signal.SIGKILL)


async def test_group_check_without_procfs(monkeypatch):
    proc = await asyncio.create_subprocess_exec("sleep", "30", start_new_session=True)
    try:
        monkeypatch.setattr(process_group.os, "listdir", lambda path: (_ for _ in ()).throw(OSError("no /proc")))
        assert process_group.group_alive(proc.pid)
        await process_group.terminate_group(proc.pid, grace=1)
        await proc.wait()
        assert not process_group.group_alive(proc.pid)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_approval_sees_the_command_and_a_refusal_runs_nothing(ws: Workspace, tmp_path: Path):
    asked = []

    def refuse(request):
        asked.append(request)
        raise PermissionError("The user rejected this command")

    marker = ws.root / "ran.txt"
    tool = BashTool(ws, log_dir=tmp_path, approve=refuse)
    assert await fails(tool, command="touch ran.txt") == "The user rejected this command"
    assert not marker.exists()
    assert asked[0].kind == "execute" and asked[0].command == "touch ran.txt" and asked[0].tool_name == "bash"

    allowed = BashTool(ws, log_dir=tmp_path, approve=lambda request: None)
    await run(allowed, command="touch ran.txt")
    assert marker.exists()
