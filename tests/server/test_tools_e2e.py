"""The coding tools as a session runs them inside `tiller serve`: a real file tree in the
session's cwd, scripted tool calls, and what comes back (results, streamed updates, the
files on disk, the processes left behind). Sessions run in yolo mode: nothing is asked."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from .harness import SECRET, WAIT, one_call_per_turn, reply, result_text, text, tool_call, tool_results


def running(pid: int) -> bool:
    """Whether the process runs (a zombie does not: killed orphans may stay unreaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def ended(pid: int) -> bool:
    """True once `pid` no longer runs (a liveness bound of WAIT seconds, not a timing check)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while running(pid):
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under `root`: file bytes, or a symlink's target, or "<dir>"."""
    entries: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            entries[key] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            entries[key] = "<dir>"
        else:
            entries[key] = path.read_bytes()
    return entries


async def test_every_tool_works_on_the_session_cwd(start_tiller, workspace):
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("def main():\n    return 1\n")
    (workspace / "src" / "util.py").write_text("def helper():\n    return 'x'\n")
    (workspace / "README.md").write_text("# Demo\n")
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "gen.py").write_text("return 0\n")  # ignored: ls, find and grep skip it
    calls = [
        tool_call("read", {"path": "src/app.py"}, id="read"),
        tool_call("edit", {"path": "src/app.py", "edits": [{"oldText": "return 1", "newText": "return 2"}]}, id="edit"),
        tool_call("write", {"path": "notes/todo.txt", "content": "ship it\n"}, id="write"),
        tool_call("ls", {"path": "."}, id="ls"),
        tool_call("find", {"pattern": "*.py"}, id="find"),
        tool_call("grep", {"pattern": "return"}, id="grep"),
        tool_call("bash", {"command": "cat notes/todo.txt && grep -c return src/app.py"}, id="bash"),
    ]
    client = await start_tiller(one_call_per_turn(*calls))
    session = await client.new_session(approvalMode="yolo")
    answer = await client.prompt(session, "Tidy up").result()

    results = tool_results(answer)
    assert {call_id: r["isError"] for call_id, r in results.items()} == {c["id"]: False for c in calls}
    texts = {call_id: result_text(r) for call_id, r in results.items()}
    assert texts == {
        "read": "def main():\n    return 1\n",
        "edit": "Successfully replaced text in src/app.py.",
        "write": "Successfully wrote 8 bytes to notes/todo.txt",
        "ls": ".gitignore\nnotes/\nREADME.md\nsrc/",
        "find": "src/app.py\nsrc/util.py",
        "grep": "src/app.py:2:     return 2\nsrc/util.py:2:     return 'x'",
        "bash": "ship it\n1\n",
    }
    assert results["edit"]["details"]["diff"].splitlines()[-2:] == ["-    return 1", "+    return 2"]
    assert (workspace / "src" / "app.py").read_text() == "def main():\n    return 2\n"
    assert (workspace / "notes" / "todo.txt").read_text() == "ship it\n"
    assert answer["stopReason"] == "stop"


async def test_bash_streams_its_output_and_gets_no_secrets(start_tiller, workspace):
    # The command prints, then waits for a file the test creates only once it has seen that
    # output in a tool_execution_update: the update cannot be a copy of the final result.
    wait_for_go = "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second"
    client = await start_tiller(one_call_per_turn(
        tool_call("bash", {"command": wait_for_go}, id="stream"), tool_call("bash", {"command": "env"}, id="env"),
    ))
    session = await client.new_session(approvalMode="yolo")
    prompt = client.prompt(session, "run it")

    def first_output(params):
        event = params["event"]
        return (event["type"] == "tool_execution_update" and event["toolCallId"] == "stream"
                and "first" in result_text(event["partialResult"]))

    update = (await client.wait_event(first_output))["event"]
    assert "second" not in result_text(update["partialResult"])
    (workspace / "go").touch()
    answer = await prompt.result()

    stream_events = [e for e in client.events_of(session, "tool_execution_update", "tool_execution_end")
                     if e["toolCallId"] == "stream"]
    assert [e["type"] for e in stream_events][-1] == "tool_execution_end"
    assert stream_events.index(update) < len(stream_events) - 1
    results = tool_results(answer)
    assert result_text(results["stream"]) == "first\nsecond\n"

    # The agent's shell gets the server's environment minus keys and tiller's own settings.
    env = dict(line.split("=", 1) for line in result_text(results["env"]).splitlines() if "=" in line)
    assert results["env"]["isError"] is False and "PATH" in env
    assert "OPENAI_API_KEY" not in env and SECRET not in result_text(results["env"])
    assert not [name for name in env if name.startswith("TILLER_")]


async def test_bash_timeout_and_abort_end_the_whole_process_group(start_tiller, workspace):
    # A background child records its pid, then the foreground waits "forever".
    def command(name: str) -> str:
        return f"sleep 300 & echo $! > {name}.pid; echo $$ > {name}-shell.pid; echo started; sleep 300"

    client = await start_tiller([
        reply(tool_call("bash", {"command": command("timeout"), "timeout": 1}, id="t")),
        reply(text("It timed out.")),
        reply(tool_call("bash", {"command": command("abort")}, id="a")),
        reply(text("never sent: the run is aborted")),
    ])
    session = await client.new_session(approvalMode="yolo")
    pids: list[int] = []
    try:
        answer = await client.prompt(session, "run the server").result()
        timed_out = tool_results(answer)["t"]
        assert timed_out["isError"] is True
        assert result_text(timed_out) == "started\n\n\nCommand timed out after 1 seconds"
        pids += [int((workspace / name).read_text()) for name in ("timeout.pid", "timeout-shell.pid")]
        for pid in pids:
            assert await ended(pid), f"process {pid} survived the timeout"

        prompt = client.prompt(session, "run it again")
        await client.wait_event(lambda p: p["event"]["type"] == "tool_execution_update"
                                and p["event"]["toolCallId"] == "a"
                                and "started" in result_text(p["event"]["partialResult"]))
        aborted_pids = [int((workspace / name).read_text()) for name in ("abort.pid", "abort-shell.pid")]
        pids += aborted_pids
        assert all(running(pid) for pid in aborted_pids)
        assert await client.request("agent/abort", {"sessionId": session}) == {}
        answer = await prompt.result()
        for pid in aborted_pids:
            assert await ended(pid), f"process {pid} survived the abort"
        assert answer["stopReason"] == "aborted"
        aborted = tool_results(answer)["a"]
        assert aborted["isError"] is True and result_text(aborted).endswith("Command aborted")
    finally:
        for pid in pids:  # never leave a stray sleep behind, even when the test fails
            if running(pid):
                os.kill(pid, 9)


async def test_paths_outside_the_workspace_are_refused_and_untouched(start_tiller, workspace, tmp_path):
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text("OUTSIDE SECRET\n")
    (outside / "dir" / "deep.txt").write_text("OUTSIDE DEEP\n")
    (workspace / "inside.txt").write_text("inside\n")
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    (workspace / "linkdir").symlink_to(outside / "dir")
    before_outside, before_workspace = snapshot(outside), snapshot(workspace)

    escapes = [
        ("read", {"path": "../outside/secret.txt"}),
        ("read", {"path": str(outside / "secret.txt")}),
        ("read", {"path": "link.txt"}),
        ("read", {"path": "linkdir/deep.txt"}),
        ("write", {"path": "../outside/new.txt", "content": "x"}),
        ("write", {"path": str(outside / "abs.txt"), "content": "x"}),
        ("write", {"path": "link.txt", "content": "overwritten"}),
        ("write", {"path": "linkdir/new.txt", "content": "x"}),
        ("edit", {"path": "link.txt", "oldText": "OUTSIDE", "newText": "PWNED"}),
        ("edit", {"path": "../outside/secret.txt", "oldText": "OUTSIDE", "newText": "PWNED"}),
        ("edit", {"path": "linkdir/deep.txt", "oldText": "OUTSIDE", "newText": "PWNED"}),
        ("ls", {"path": "linkdir"}),
        ("ls", {"path": ".."}),
        ("find", {"pattern": "*.txt", "path": "linkdir"}),
        ("grep", {"pattern": "OUTSIDE", "path": "../outside"}),
        ("grep", {"pattern": "OUTSIDE", "path": "linkdir"}),
    ]
    calls = [tool_call(name, args, id=f"escape{i}") for i, (name, args) in enumerate(escapes)]
    # Searching the workspace itself does not follow the links out either.
    contained = [tool_call("grep", {"pattern": "OUTSIDE"}, id="grep"), tool_call("find", {"pattern": "*.txt"}, id="find")]
    client = await start_tiller([reply(*calls, *contained), reply(text("Nothing escaped."))])
    session = await client.new_session(approvalMode="yolo")
    answer = await client.prompt(session, "try to escape").result()

    results = tool_results(answer)
    for call in calls:
        result = results[call["id"]]
        assert result["isError"] is True, (call, result)
        assert result_text(result).startswith("Path is outside the workspace"), (call, result_text(result))
        assert "OUTSIDE SECRET" not in result_text(result)
    assert result_text(results["grep"]) == "No matches found"
    assert result_text(results["find"]) == "inside.txt"
    assert snapshot(outside) == before_outside
    assert snapshot(workspace) == before_workspace


async def test_workspace_folders_the_client_declared_are_extra_roots(start_tiller, workspace, tmp_path):
    """A multi-root workspace: a session rooted in one folder may read the others the client
    declared, and still nothing else."""
    other = tmp_path / "other-folder"
    other.mkdir()
    (other / "shared.txt").write_text("from the second root\n")
    (tmp_path / "private.txt").write_text("not declared\n")
    client = await start_tiller(
        [reply(tool_call("read", {"path": str(other / "shared.txt")}, id="r1"),
               tool_call("read", {"path": str(tmp_path / "private.txt")}, id="r2")),
         reply(text("Read both."))],
        workspace_folders=[workspace, other],
    )
    session = await client.new_session(approvalMode="yolo")
    answer = await client.prompt(session, "Read the shared file").result()
    results = {m["toolCallId"]: m for m in answer["newMessages"] if m["role"] == "toolResult"}
    assert results["r1"]["isError"] is False
    assert results["r1"]["content"][0]["text"] == "from the second root\n"
    assert results["r2"]["isError"] is True and "outside the workspace" in results["r2"]["content"][0]["text"]
