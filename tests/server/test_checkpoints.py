"""Checkpoints and rewind end to end: the real server, real git, real bash, a scripted model.

A turn edits a file open in the editor, runs `sed -i`, creates and deletes files with bash and
appends to an ignored file; the rewinds put files and conversation back (and undo that), refuse
to lose the user's later work unless forced, and never touch what lies outside the workspace."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from pygls.exceptions import JsonRpcException

from tiller.ai.types import TextContent, UserMessage
from tiller.persistence.session_files import message_record

from .harness import FAUX, editor_capabilities, one_call_per_turn, reply, text, tool_call

APPROVALS = editor_capabilities(approvals=True)


def files(root) -> dict[str, str]:
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(root))] = path.read_text()
    return found


@pytest.fixture
def seeded(workspace):
    (workspace / "a.txt").write_text("one\n")
    (workspace / "b.txt").write_text("x = 1\n")
    (workspace / "gone.txt").write_text("bye\n")
    (workspace / ".gitignore").write_text("*.log\n")
    (workspace / "build.log").write_text("old log\n")
    return workspace


FIRST_TURN = one_call_per_turn(
    tool_call("edit", {"path": "a.txt", "oldText": "one", "newText": "ONE"}, id="e1"),
    tool_call("bash", {"command": "sed -i 's/1/2/' b.txt"}, id="b1"),
    tool_call("bash", {"command": "echo fresh > created.txt && rm gone.txt && echo new log >> build.log"}, id="b2"),
)
SECOND_TURN = one_call_per_turn(tool_call("bash", {"command": "echo second > second.txt"}, id="b3"))


async def after_one_bash_turn(start_tiller, command: str, **session_params):
    """A server whose agent ran `command` with bash in one turn: the client, the session and the
    checkpoint taken before the turn."""
    client = await start_tiller(one_call_per_turn(tool_call("bash", {"command": command}, id="b1")),
                                capabilities=APPROVALS)
    session = await client.new_session(approvalMode="yolo", **session_params)
    await client.prompt(session, "do it").result()
    (checkpoint,) = (await client.request("agent/listCheckpoints", {"sessionId": session}))["checkpoints"]
    return client, session, checkpoint


async def rewind(client, session, checkpoint, restore, **extra):
    return await client.request("agent/rewind", {"sessionId": session, "checkpointId": checkpoint,
                                                 "restore": restore, **extra})


async def test_rewind_files_conversation_and_both_and_undo_each(start_tiller, seeded, tmp_path):
    workspace = seeded
    client = await start_tiller([*FIRST_TURN, *SECOND_TURN], capabilities=APPROVALS)
    client.open_document(workspace / "a.txt", "one\n")
    client.edit_like_an_editor()
    session = await client.new_session(approvalMode="yolo")
    before = files(workspace)
    await client.prompt(session, "change things").result()
    after_first = files(workspace)
    await client.prompt(session, "one more").result()
    after_both = files(workspace)
    assert after_first["a.txt"] == "ONE\n" and after_first["b.txt"] == "x = 2\n" and "gone.txt" not in after_first
    assert after_first["build.log"] == "old log\nnew log\n" and after_both["second.txt"] == "second\n"

    listed = await client.request("agent/listCheckpoints", {"sessionId": session})
    assert listed["available"] is True
    first, second = listed["checkpoints"]
    assert (first["kind"], first["title"], first["messageCount"], first["onCurrentBranch"]) == (
        "turn", "change things", 0, True)
    assert (second["title"], second["messageCount"]) == ("one more", 8)

    # Files only: everything the agent did (its edit, sed -i, bash's new and deleted files) goes back;
    # the ignored build.log is not touched; the conversation stays.
    edits_before = len(client.applied_edits)
    done = await rewind(client, session, first["checkpointId"], "files")
    assert sorted(done["restored"]) == ["a.txt", "b.txt", "gone.txt"]
    assert sorted(done["deleted"]) == ["created.txt", "second.txt"] and done["skipped"] == []
    assert done["messageCount"] == 12
    assert files(workspace) == {**before, "build.log": "old log\nnew log\n"}
    # The open a.txt went back through the editor (workspace/applyEdit), where the user can undo it.
    changes = [c for e in client.applied_edits[edits_before:] for c in e["edit"]["documentChanges"]]
    in_editor = [c for c in changes if c.get("textDocument", {}).get("uri", "").endswith("/a.txt")]
    assert len(in_editor) == 1 and client.buffers[(workspace / "a.txt").as_uri()][0] == "one\n"
    event = client.events_of(session, "rewind")[-1]
    assert event == {"type": "rewind", "checkpointId": first["checkpointId"], "restore": "files",
                     "undoCheckpointId": done["undoCheckpointId"], "messageCount": 12}

    # The rewind is itself a checkpoint: rewinding to it undoes it.
    undone = await rewind(client, session, done["undoCheckpointId"], "files")
    assert files(workspace) == after_both
    assert sorted(undone["restored"]) == ["a.txt", "b.txt", "created.txt", "second.txt"]
    assert undone["deleted"] == ["gone.txt"]

    # Conversation only: the second turn's messages are dropped, the files stay.
    dropped = await rewind(client, session, second["checkpointId"], "conversation")
    assert dropped["messageCount"] == 8 and dropped["restored"] == [] and files(workspace) == after_both
    state = await client.request("agent/getState", {"sessionId": session})
    assert [m["role"] for m in state["messages"]][:1] == ["user"] and len(state["messages"]) == 8
    listed = (await client.request("agent/listCheckpoints", {"sessionId": session}))["checkpoints"]
    # The three rewinds so far each recorded the 12 messages before them: no longer the current branch.
    assert [c["onCurrentBranch"] for c in listed] == [True, True, False, False, False]

    # Both, then undo both: files and the conversation come back together.
    both = await rewind(client, session, first["checkpointId"], "both")
    assert both["messageCount"] == 0 and files(workspace)["a.txt"] == "one\n"
    back = await rewind(client, session, both["undoCheckpointId"], "both")
    assert back["messageCount"] == 8 and files(workspace) == after_both

    # The dropped messages are still in the session file (a branch); a reload gets the current one.
    lines = [json.loads(line) for line in (tmp_path / "tiller-data" / "sessions" / f"{session}.jsonl").open()]
    assert sum(1 for line in lines if line["type"] == "message") == 12
    await client.request("agent/closeSession", {"sessionId": session})
    loaded = await client.request("agent/loadSession", {"sessionId": session})
    assert loaded["messageCount"] == 8


async def test_a_rewind_that_would_lose_the_users_changes_is_refused_unless_forced(start_tiller, seeded):
    workspace = seeded
    client = await start_tiller(FIRST_TURN, capabilities=APPROVALS)
    session = await client.new_session(approvalMode="yolo")
    await client.prompt(session, "change things").result()
    (checkpoint,) = (await client.request("agent/listCheckpoints", {"sessionId": session}))["checkpoints"]
    (workspace / "a.txt").write_text("ONE\nthe user's own line\n")  # after the agent's turn

    with pytest.raises(JsonRpcException) as refused:
        await rewind(client, session, checkpoint["checkpointId"], "files")
    assert refused.value.code == -32007 and "a.txt changed after the agent's last turn" in str(refused.value)
    assert (workspace / "a.txt").read_text() == "ONE\nthe user's own line\n"
    assert len((await client.request("agent/listCheckpoints", {"sessionId": session}))["checkpoints"]) == 1

    forced = await rewind(client, session, checkpoint["checkpointId"], "files", force=True)
    assert (workspace / "a.txt").read_text() == "one\n"
    await rewind(client, session, forced["undoCheckpointId"], "files")
    assert (workspace / "a.txt").read_text() == "ONE\nthe user's own line\n"  # nothing was lost

    for bad, code in (({"checkpointId": "0123456789abcdef"}, -32006), ({"restore": "everything"}, -32602)):
        with pytest.raises(JsonRpcException) as raised:
            await client.request("agent/rewind", {"sessionId": session, "checkpointId": checkpoint["checkpointId"],
                                                  "restore": "files", **bad})
        assert raised.value.code == code


async def test_a_rewind_never_writes_outside_the_workspace(start_tiller, workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.txt").write_text("outside\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "x.txt").write_text("inside\n")
    client, session, checkpoint = await after_one_bash_turn(start_tiller, f"rm -r sub && ln -s {outside} sub")
    assert os.path.islink(workspace / "sub")

    done = await rewind(client, session, checkpoint["checkpointId"], "files")
    assert done["deleted"] == ["sub"] and done["restored"] == ["sub/x.txt"]
    assert not os.path.islink(workspace / "sub") and (workspace / "sub" / "x.txt").read_text() == "inside\n"
    assert (outside / "x.txt").read_text() == "outside\n" and sorted(os.listdir(outside)) == ["x.txt"]
    # The shadow repository lives in tiller's data directory, not in the workspace.
    assert not (workspace / ".git").exists()
    assert list((tmp_path / "tiller-data" / "checkpoints").iterdir())


async def test_a_rewind_leaves_ignored_files_alone(start_tiller, workspace):
    (workspace / "data.txt").write_text("recorded\n")
    (workspace / ".gitignore").write_text("*.log\n")
    client, session, checkpoint = await after_one_bash_turn(
        start_tiller, "echo data.txt >> .gitignore && echo 'not recorded' > data.txt")

    done = await rewind(client, session, checkpoint["checkpointId"], "files")
    assert done["restored"] == [".gitignore"]
    assert done["skipped"] == [{"path": "data.txt", "reason": "it is ignored or too large to be in checkpoints, "
                                                            "so what is there now was never recorded"}]
    assert (workspace / "data.txt").read_text() == "not recorded\n"


async def test_a_conversation_rewind_reads_the_session_file_off_the_event_loop(start_tiller, workspace, tmp_path):
    # A long session: 12 MB of messages an earlier rewind dropped (a branch), so it loads empty
    # but a rewind of its conversation reads the whole file back.
    session = "0123456789ab"
    sessions = tmp_path / "tiller-data" / "sessions"
    sessions.mkdir(parents=True)
    records = [{"type": "session", "version": 1, "id": session, "cwd": str(workspace), "created": 1, "model": FAUX}]
    records += [message_record(UserMessage(content=[TextContent(text=f"{n} " + "x" * 500)])) for n in range(24_000)]
    records.append({"type": "branch", "conversation": []})
    (sessions / f"{session}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    # Another session streams a long answer a character every 10 ms while the rewind runs.
    client = await start_tiller([reply(text("Done.")), reply(text("Done.")), reply(text("y" * 3000))],
                                chunk_chars=1, delay_ms=10)
    await client.request("agent/loadSession", {"sessionId": session})
    await client.prompt(session, "one").result()
    await client.prompt(session, "two").result()
    second = (await client.request("agent/listCheckpoints", {"sessionId": session}))["checkpoints"][-1]
    (settled,) = (tmp_path / "tiller-data" / "checkpoints").glob(f"*/refs/tiller/settled/{session}")
    before = settled.read_text()
    other = await client.new_session()
    streaming = client.prompt(other, "talk")
    await client.wait_event(lambda p: p["sessionId"] == other and p["event"]["type"] == "message_update")

    rewinding = client.send("agent/rewind", {"sessionId": session, "checkpointId": second["checkpointId"],
                                             "restore": "conversation"})
    # The rewind has recorded its undo checkpoint (the settled ref moved); next it reads the file.
    while settled.read_text() == before and not rewinding.future.done():
        await asyncio.sleep(0.005)
    reading_from = len(client.events)
    assert (await rewinding.result())["messageCount"] == 2
    assert rewinding.events_before is not None
    streamed = [p for p in client.events[reading_from:rewinding.events_before] if p["sessionId"] == other]
    # While the file was read, the other session's stream went on (a blocked loop sends nothing).
    assert len(streamed) >= 10, f"only {len(streamed)} events of the other session while the rewind read the file"
    await client.request("agent/abort", {"sessionId": other})
    await streaming.result()


async def test_a_rewind_never_deletes_what_the_checkpoint_left_out(start_tiller, workspace):
    (workspace / ".gitignore").write_text(".env\n")
    (workspace / ".env").write_text("TOKEN=the user's only copy\n")
    with (workspace / "data.csv").open("wb") as handle:  # over the 10 MiB limit: not recorded
        handle.truncate(11 * 1024 * 1024)
    # The agent stops ignoring .env and shrinks data.csv: both are recorded from now on.
    client, session, checkpoint = await after_one_bash_turn(
        start_tiller, "printf '' > .gitignore && printf 'header\\n' > data.csv")

    done = await rewind(client, session, checkpoint["checkpointId"], "files")
    assert done["restored"] == [".gitignore"] and done["deleted"] == []
    assert done["skipped"] == [
        {"path": ".env", "reason": "it was ignored when the checkpoint was taken, so what is there now is kept"},
        {"path": "data.csv", "reason": "it was too large to be in the checkpoint, so what is there now is kept"},
    ]
    assert (workspace / ".env").read_text() == "TOKEN=the user's only copy\n"
    assert (workspace / "data.csv").read_text() == "header\n"
    assert (workspace / ".gitignore").read_text() == ".env\n"


async def test_a_workspace_in_a_repository_follows_the_ignore_files_above_it(start_tiller, workspace):
    # The session works in pkg/ of a repository whose top ignores .env and node_modules/.
    await asyncio.to_thread(subprocess.run, ["git", "init", "-q", str(workspace)], check=True)
    (workspace / ".gitignore").write_text(".env\nnode_modules/\n")
    package = workspace / "pkg"
    package.mkdir()
    (package / "main.py").write_text("print(1)\n")
    (package / ".gitignore").write_text("*.log\n")
    (package / ".env").write_text("TOKEN=old\n")
    # The agent edits main.py and un-ignores .env in pkg/.gitignore (so it is recorded since).
    client, session, checkpoint = await after_one_bash_turn(
        start_tiller, "echo 'print(2)' > main.py && echo '!.env' >> .gitignore", cwd=str(package))
    (package / "node_modules" / "x").mkdir(parents=True)  # the user installs packages: never recorded
    (package / "node_modules" / "x" / "i.js").write_text("1\n")

    done = await rewind(client, session, checkpoint["checkpointId"], "files", force=True)
    assert sorted(done["restored"]) == [".gitignore", "main.py"] and done["deleted"] == []
    assert done["skipped"] == [{"path": ".env", "reason": "it was ignored when the checkpoint was taken, "
                                                          "so what is there now is kept"}]
    assert (package / "main.py").read_text() == "print(1)\n" and (package / ".env").read_text() == "TOKEN=old\n"
    assert (package / "node_modules" / "x" / "i.js").read_text() == "1\n"
    # What the repository ignores was never copied into tiller's data directory.
    shadow = next((workspace.parent / "tiller-data" / "checkpoints").iterdir())
    recorded = (await asyncio.to_thread(
        subprocess.run, ["git", f"--git-dir={shadow}", "log", "--all", "--name-only", "--format="],
        capture_output=True, text=True, check=True)).stdout.split()
    assert "main.py" in recorded and not any(path.startswith("node_modules") for path in recorded)


async def first_turn_with_a_txt_open(start_tiller, workspace):
    """FIRST_TURN with a.txt open in an editor that applies edits: the client, the session and
    the checkpoint taken before the turn."""
    client = await start_tiller(FIRST_TURN, capabilities=APPROVALS)
    client.open_document(workspace / "a.txt", "one\n")
    client.edit_like_an_editor()
    session = await client.new_session(approvalMode="yolo")
    await client.prompt(session, "change things").result()
    (checkpoint,) = (await client.request("agent/listCheckpoints", {"sessionId": session}))["checkpoints"]
    return client, session, checkpoint


async def test_unsaved_changes_in_the_editor_refuse_a_rewind_unless_forced(start_tiller, seeded):
    workspace = seeded
    client, session, checkpoint = await first_turn_with_a_txt_open(start_tiller, workspace)
    uri = (workspace / "a.txt").as_uri()
    assert client.buffers[uri][0] == "ONE\n"
    client.change_document(workspace / "a.txt", "ONE\nunsaved words\n", client.buffers[uri][1] + 1)  # not saved
    await client.request("agent/getState", {"sessionId": session})  # the server has seen the change

    with pytest.raises(JsonRpcException) as refused:
        await rewind(client, session, checkpoint["checkpointId"], "files")
    assert refused.value.code == -32007 and "a.txt has unsaved changes in the editor" in str(refused.value)
    assert client.buffers[uri][0] == "ONE\nunsaved words\n" and (workspace / "b.txt").read_text() == "x = 2\n"

    # Forced, the buffer is replaced through the editor (where the user can undo it).
    done = await rewind(client, session, checkpoint["checkpointId"], "files", force=True)
    assert "a.txt" in done["restored"] and client.buffers[uri][0] == "one\n"


async def test_a_file_changed_while_the_rewind_runs_is_left_alone(start_tiller, seeded):
    workspace = seeded
    client, session, checkpoint = await first_turn_with_a_txt_open(start_tiller, workspace)
    apply_edit = client.answer_apply_edit

    def user_saves_b_meanwhile(params):
        # As the rewind puts a.txt back in the editor, the user saves b.txt (which comes next).
        (workspace / "b.txt").write_text("x = 3, the user's\n")
        return apply_edit(params)

    client.answer_apply_edit = user_saves_b_meanwhile
    done = await rewind(client, session, checkpoint["checkpointId"], "files")
    assert sorted(done["restored"]) == ["a.txt", "gone.txt"] and done["deleted"] == ["created.txt"]
    assert done["skipped"] == [{"path": "b.txt", "reason": "it changed while the rewind ran, so what is there now is kept"}]
    assert (workspace / "b.txt").read_text() == "x = 3, the user's\n"
    assert client.buffers[(workspace / "a.txt").as_uri()][0] == "one\n"


async def test_changes_in_a_nested_repository_are_reported_not_rewound(start_tiller, workspace):
    (workspace / "main.c").write_text("int main;\n")
    library = workspace / "lib"  # a vendored clone: git records it as a commit id, not its files
    library.mkdir()
    (library / "lib.c").write_text("int lib = 1;\n")
    for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "vendored"]):
        await asyncio.to_thread(subprocess.run, ["git", "-C", str(library), "-c", "user.name=u", "-c",
                                                 "user.email=u@example.com", *command], check=True)
    client, session, checkpoint = await after_one_bash_turn(
        start_tiller, "echo 'int lib = 2;' > lib/lib.c && echo 'int main2;' > main.c")

    done = await rewind(client, session, checkpoint["checkpointId"], "files")
    assert done["restored"] == ["main.c"] and (workspace / "main.c").read_text() == "int main;\n"
    assert done["skipped"] == [{"path": "lib", "reason": "it is a nested git repository, whose files checkpoints "
                                                         "do not hold, so what changed in it is not rewound"}]
    assert (library / "lib.c").read_text() == "int lib = 2;\n"


async def test_deleting_a_saved_session_removes_its_checkpoints(start_tiller, workspace, tmp_path):
    client = await start_tiller([reply(text("Done.")), reply(text("Done."))])
    first, second = await client.new_session(), await client.new_session()
    for session in (first, second):
        await client.prompt(session, "work").result()
        await client.request("agent/closeSession", {"sessionId": session})  # saved, no longer loaded
    (shadow,) = (tmp_path / "tiller-data" / "checkpoints").iterdir()

    async def refs() -> set[str]:
        listed = await asyncio.to_thread(subprocess.run, ["git", f"--git-dir={shadow}", "for-each-ref",
                                                          "--format=%(refname)"], capture_output=True, text=True,
                                         check=True)
        return set(listed.stdout.split())

    assert {f"refs/tiller/{kind}/{s}" for kind in ("sessions", "settled") for s in (first, second)} <= await refs()
    await client.request("agent/deleteSession", {"sessionId": first})
    env = {k: v for k, v in os.environ.items() if not k.startswith("TILLER_")}
    deleted = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "tiller", "sessions", "delete", second],
                                      capture_output=True, text=True, env={**env, "TILLER_DATA_DIR": str(tmp_path / "tiller-data")})
    assert deleted.returncode == 0 and deleted.stdout == f"deleted {second}\n", deleted.stderr
    assert not any(first in ref or second in ref for ref in await refs())
