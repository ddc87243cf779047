"""Nothing hangs and nothing blocks the others: named pipes are refused (by read, grep, edit,
write and prompt context), a 1 GiB file is read in bounded memory while other sessions are
served, an abort ends a run whatever its tool does, and tool processes die with the server,
even on kill -9."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from .harness import SLOW, SLOW_CHUNKING, WAIT, one_call_per_turn, reply, result_text, text, tool_call, tool_results
from .test_tools_e2e import ended, running


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


async def test_named_pipes_are_refused_not_waited_on(start_tiller, workspace):
    os.mkfifo(workspace / "pipe")
    client = await start_tiller(one_call_per_turn(
        tool_call("read", {"path": "pipe"}, id="read"),
        tool_call("grep", {"pattern": "x", "path": "pipe"}, id="grep"),
        tool_call("edit", {"path": "pipe", "oldText": "a", "newText": "b"}, id="edit"),
        tool_call("write", {"path": "pipe", "content": "x"}, id="write"),
    ))
    session = await client.new_session(approvalMode="yolo")
    results = tool_results(await client.request("agent/prompt", {"sessionId": session, "text": "read the pipe"}))
    for call_id in ("read", "grep", "edit", "write"):
        assert results[call_id]["isError"] and "named pipe" in result_text(results[call_id]), call_id
    assert (workspace / "pipe").is_fifo()

    # A prompt that attaches the pipe is answered; the attachment says why it is missing.
    other = await client.new_session(tools=[])
    answer = await client.request("agent/prompt", {"sessionId": other, "text": "see attached",
                                                   "context": [{"uri": (workspace / "pipe").as_uri()}]})
    user = answer["newMessages"][0]
    assert "Could not attach" in user["content"][1]["text"] and "not a regular file" in user["content"][1]["text"]


async def test_a_1_gib_file_is_read_in_bounded_memory_while_other_sessions_are_served(start_tiller, workspace):
    big = workspace / "big.log"
    with big.open("wb") as handle:  # sparse: 1 GiB of NUL bytes after ten short lines
        handle.write(b"".join(b"line %d\n" % n for n in range(1, 11)))
        handle.truncate(1 << 30)
    client = await start_tiller(one_call_per_turn(
        tool_call("read", {"path": "big.log", "offset": 3, "limit": 2}, id="page"),
        tool_call("read", {"path": "big.log", "offset": 11}, id="huge-line"),
    ))
    pid = client.process.pid
    baseline = peak_rss_kib(pid)
    session = await client.new_session(approvalMode="yolo")
    prompt = client.prompt(session, "read the log")
    await client.wait_event(lambda p: p["event"]["type"] == "tool_execution_start"
                            and p["event"]["toolCallId"] == "huge-line")
    # While the tool reads a gigabyte, another request is answered before the tool ends.
    assert "sessions" in await client.request("agent/listSessions")
    listed_at = len(client.received)
    results = tool_results(await prompt.result())
    ends = [i for i, m in enumerate(client.received) if m.get("method") == "agent/event"
            and m["params"]["event"]["type"] == "tool_execution_end"
            and m["params"]["event"]["toolCallId"] == "huge-line"]
    assert ends and ends[0] >= listed_at

    assert result_text(results["page"]) == "line 3\nline 4\n\n[7 more lines in file. Use offset=5 to continue.]"
    huge = result_text(results["huge-line"])
    assert huge.startswith("[Line 11 is 1024.0MB, exceeds 50.0KB limit. Use bash:"), huge
    # Neither the file nor its one huge line was ever held (well below its gigabyte).
    grown = peak_rss_kib(pid) - baseline
    print(f"\nreading 1 GiB: server peak RSS grew by {grown // 1024} MiB")
    assert grown < 200 * 1024


async def test_abort_ends_a_run_whose_tool_ignores_it(start_tiller, workspace, tmp_path):
    # A tool that never looks at the abort signal: rg pointed at a directory it keeps
    # reading forever is not such a tool, so one is made with a sitecustomize hook.
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import asyncio\n"
        "import tiller.tools.ls as ls\n"
        "async def stuck(self, *args, **kwargs):\n"
        "    await asyncio.Event().wait()  # ignores the abort; only cancellation ends it\n"
        "ls.LsTool.execute = stuck\n"
    )
    client = await start_tiller(one_call_per_turn(tool_call("ls", {"path": "."}, id="stuck")),
                                env={"PYTHONPATH": str(hooks)})
    session = await client.new_session(approvalMode="yolo")
    prompt = client.prompt(session, "list")
    await client.wait_event(lambda p: p["event"]["type"] == "tool_execution_start")
    assert await client.request("agent/abort", {"sessionId": session}) == {}
    answer = await prompt.result()
    assert answer["stopReason"] == "aborted"
    assert result_text(tool_results(answer)["stuck"]) == "Operation aborted"
    assert "sessions" in await client.request("agent/listSessions")


async def test_tool_processes_die_with_the_server_even_on_kill_9(start_tiller, workspace):
    command = "sleep 300 & echo $! > job.pid; echo $$ > shell.pid; echo started; sleep 300"
    client = await start_tiller(one_call_per_turn(tool_call("bash", {"command": command}, id="b")))
    session = await client.new_session(approvalMode="yolo")
    client.prompt(session, "start a server")
    await client.wait_event(lambda p: p["event"]["type"] == "tool_execution_update"
                            and "started" in result_text(p["event"]["partialResult"]))
    pids = [int((workspace / name).read_text()) for name in ("job.pid", "shell.pid")]
    try:
        assert all(running(pid) for pid in pids)
        os.kill(client.process.pid, signal.SIGKILL)
        await asyncio.wait_for(client.process.wait(), WAIT)
        for pid in pids:
            assert await ended(pid), f"process {pid} outlived the server"
    finally:
        for pid in pids:
            if running(pid):
                os.kill(pid, signal.SIGKILL)


async def test_background_jobs_live_until_the_server_exits(start_tiller, workspace):
    client = await start_tiller([
        reply(tool_call("bash", {"command": "sleep 300 > /dev/null 2>&1 & echo $! > job.pid"}, id="b")),
        reply(text("Started.")),
        SLOW,
    ], **SLOW_CHUNKING)
    session = await client.new_session(approvalMode="yolo")
    await client.request("agent/prompt", {"sessionId": session, "text": "start it"})
    job = int((workspace / "job.pid").read_text())
    try:
        assert running(job)  # the command ended; its background job goes on
        await asyncio.wait_for(client.shutdown_session(), WAIT)
        assert await ended(job), "a background job outlived the server"
    finally:
        if running(job):
            os.kill(job, signal.SIGKILL)
