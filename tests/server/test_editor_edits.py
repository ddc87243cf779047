"""Approved changes land in the editor: an open buffer gets a versioned `TextDocumentEdit`
through `workspace/applyEdit` (the test client plays the editor), a stale buffer fails the
tool, a new file is created with `CreateFile`, and files not open go straight to disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol.types import ResourceOperationKind

from .harness import (
    editor_capabilities,
    one_call_per_turn,
    reply,
    result_text,
    text,
    tool_call,
    tool_results,
)


def files_in(root: Path) -> set[str]:
    """Every path under `root` (an atomic write must leave no temp file behind)."""
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize("editor_saves", [False, True], ids=["server-writes-disk", "editor-saves"])
async def test_an_approved_edit_to_an_open_buffer_goes_through_the_editor(start_tiller, workspace, editor_saves):
    path = workspace / "notes.md"
    path.write_text("alpha\nbeta\n")
    unsaved = "alpha\nbeta\ntyped, not saved 😀"  # no final newline; 😀 is 2 UTF-16 units
    capabilities = editor_capabilities(approvals=True, saves_edited_documents=editor_saves)
    client = await start_tiller(one_call_per_turn(
        tool_call("read", {"path": "notes.md"}, id="r1"),
        tool_call("edit", {"path": "notes.md", "oldText": "beta", "newText": "BETA"}, id="e1"),
    ), capabilities=capabilities)
    client.open_document(path, unsaved, version=7)
    client.edit_like_an_editor()
    session = await client.new_session()
    prompt = client.prompt(session, "shout beta")

    approval = await client.wait_approval(session)
    # The proposal is computed from the buffer the user sees, not from the disk.
    assert approval["diff"].endswith("-beta\n+BETA\n typed, not saved 😀\n\\ No newline at end of file\n")
    assert client.applied_edits == []  # nothing reaches the editor before the user says yes
    await client.respond(session, approval["approvalId"], "allow_once")
    answer = await prompt.result()

    results = tool_results(answer)
    assert result_text(results["r1"]) == unsaved
    assert results["e1"]["isError"] is False
    edited = "alpha\nBETA\ntyped, not saved 😀"
    # Only the changed line is replaced, in a change versioned as the buffer the tool read.
    assert client.applied_edits == [{
        "label": "tiller: edit notes.md",
        "edit": {"documentChanges": [{
            "textDocument": {"uri": path.as_uri(), "version": 7},
            "edits": [{"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 4}},
                       "newText": "BETA"}],
        }]},
    }]
    assert client.buffers[path.as_uri()] == (edited, 8)
    # Without savesEditedDocuments the server writes the new text (the user's unsaved line
    # included); a client that saves the buffer itself is left to do so.
    assert path.read_text() == ("alpha\nbeta\n" if editor_saves else edited)
    assert files_in(workspace) == {"notes.md"}


async def test_a_stale_buffer_fails_the_edit_and_asks_the_model_to_read_again(start_tiller, workspace):
    path = workspace / "app.py"
    path.write_text("x = 1\n")
    client = await start_tiller([
        *one_call_per_turn(tool_call("edit", {"path": "app.py", "oldText": "x = 1", "newText": "x = 2"}, id="refused")),
        *one_call_per_turn(tool_call("edit", {"path": "app.py", "oldText": "x = 1", "newText": "x = 3"}, id="typed")),
    ], capabilities=editor_capabilities(approvals=True))
    client.open_document(path, "x = 1\n", version=1)
    session = await client.new_session()

    # 1. The editor refuses the edit: its buffer is no longer at the version in the edit.
    client.answer_apply_edit = lambda params: {"applied": False, "failureReason": "Document version mismatch"}
    prompt = client.prompt(session, "set x to 2")
    await client.respond(session, (await client.wait_approval(session, 1))["approvalId"], "allow_once")
    refused = tool_results(await prompt.result())["refused"]
    assert refused["isError"] is True
    assert "(Document version mismatch)" in result_text(refused)
    assert "read it again and redo the edit" in result_text(refused)
    assert len(client.applied_edits) == 1 and client.applied_edits[0]["edit"]["documentChanges"][0][
        "textDocument"] == {"uri": path.as_uri(), "version": 1}

    # 2. The user types while the approval is pending: the edit was planned on version 1.
    client.edit_like_an_editor()
    prompt = client.prompt(session, "set x to 3")
    approval = await client.wait_approval(session, 2)
    client.change_document(path, "x = 1\ny = 0\n", version=2)
    await client.respond(session, approval["approvalId"], "allow_once")
    typed = tool_results(await prompt.result())["typed"]
    assert typed["isError"] is True
    assert result_text(typed) == ("Not written: app.py changed while the change waited for approval, so the "
                                  "approved change no longer fits it. Read the file again and redo the change.")
    assert len(client.applied_edits) == 1  # the stale edit never went out

    assert path.read_text() == "x = 1\n"
    assert files_in(workspace) == {"app.py"}


@pytest.mark.parametrize("creates", [True, False], ids=["client-creates-files", "no-create-operation"])
async def test_files_not_open_are_written_to_disk_and_new_ones_created_in_the_editor(start_tiller, workspace, creates):
    closed = workspace / "closed.txt"
    closed.write_text("old\n")
    closed.chmod(0o640)
    operations = [ResourceOperationKind.Rename, ResourceOperationKind.Delete]
    if creates:
        operations.append(ResourceOperationKind.Create)
    client = await start_tiller([
        reply(tool_call("write", {"path": "new/fresh.txt", "content": "fresh\n"}, id="new"),
              tool_call("edit", {"path": "closed.txt", "oldText": "old", "newText": "edited"}, id="closed")),
        reply(text("Done.")),
    ], capabilities=editor_capabilities(resource_operations=operations))
    session = await client.new_session(approvalMode="yolo")
    answer = await client.prompt(session, "write them").result()

    assert not any(r["isError"] for r in tool_results(answer).values())
    fresh = workspace / "new" / "fresh.txt"
    expected = [] if not creates else [{
        "label": "tiller: create fresh.txt",
        "edit": {"documentChanges": [
            {"kind": "create", "uri": fresh.as_uri(), "options": {"overwrite": False, "ignoreIfExists": True}},
            {"textDocument": {"uri": fresh.as_uri(), "version": None},
             "edits": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                        "newText": "fresh\n"}]},
        ]},
    }]
    assert client.applied_edits == expected  # the file that is not open never goes to the editor
    assert fresh.read_text() == "fresh\n"
    assert closed.read_text() == "edited\n" and closed.stat().st_mode & 0o777 == 0o640  # permissions kept
    assert files_in(workspace) == {"closed.txt", "new", "new/fresh.txt"}


@pytest.mark.parametrize("editor_saves", [False, True], ids=["server-writes-disk", "editor-saves"])
async def test_a_client_without_document_changes_gets_the_plain_changes_map(start_tiller, workspace, editor_saves):
    # Neovim declares workspace.applyEdit but not workspaceEdit.documentChanges: the edit
    # still goes to its buffer, as a `changes` map, and its didChange comes after its answer.
    path = workspace / "init.lua"
    path.write_text("local x = 1\nreturn x\n")
    client = await start_tiller(
        one_call_per_turn(tool_call("edit", {"path": "init.lua", "oldText": "x = 1", "newText": "x = 2"}, id="e1")),
        capabilities=editor_capabilities("neovim@v0.11", approvals=True, saves_edited_documents=editor_saves),
    )
    client.open_document(path, "local x = 1\nreturn x\n-- unsaved\n", version=0, language_id="lua")
    client.edit_like_an_editor(sync_delay=0.3)
    session = await client.new_session(approvalMode="yolo")
    answer = await client.prompt(session, "bump x").result()

    assert tool_results(answer)["e1"]["isError"] is False
    assert client.applied_edits == [{"label": "tiller: edit init.lua", "edit": {"changes": {path.as_uri(): [
        {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 11}}, "newText": "local x = 2"},
    ]}}}]
    edited = "local x = 2\nreturn x\n-- unsaved\n"
    assert client.buffers[path.as_uri()] == (edited, 1)
    assert path.read_text() == ("local x = 1\nreturn x\n" if editor_saves else edited)


async def test_an_edit_the_editor_claims_but_does_not_make_fails_and_writes_nothing(start_tiller, workspace):
    # Neovim skips an edit for a buffer newer than the edit, and still answers applied: true.
    path = workspace / "app.py"
    path.write_text("x = 1\n")
    client = await start_tiller(
        one_call_per_turn(tool_call("edit", {"path": "app.py", "oldText": "x = 1", "newText": "x = 2"}, id="e1")),
        capabilities=editor_capabilities("neovim@v0.11", approvals=True),
    )
    client.open_document(path, "x = 1\n", version=0)
    session = await client.new_session(approvalMode="yolo")
    answer = await client.prompt(session, "set x to 2").result()

    result = tool_results(answer)["e1"]
    assert result["isError"] is True
    assert "does not hold the edited text" in result_text(result)
    assert "Nothing was written. Read the file again and redo the edit." in result_text(result)
    assert len(client.applied_edits) == 1
    assert path.read_text() == "x = 1\n"
    assert files_in(workspace) == {"app.py"}


async def test_the_user_typing_as_the_edit_lands_fails_the_edit(start_tiller, workspace):
    # The edit is applied, but the synced text is not the computed text: the user typed too.
    path = workspace / "app.py"
    path.write_text("x = 1\n")
    client = await start_tiller(
        one_call_per_turn(tool_call("edit", {"path": "app.py", "oldText": "x = 1", "newText": "x = 2"}, id="e1")),
        capabilities=editor_capabilities(approvals=True),
    )
    client.open_document(path, "x = 1\n", version=1)

    def typed_meanwhile(params: dict) -> dict:
        client.change_document(path, "x = 2\ny\n", version=2)
        return {"applied": True}

    client.answer_apply_edit = typed_meanwhile
    session = await client.new_session(approvalMode="yolo")
    result = tool_results(await client.prompt(session, "set x to 2").result())["e1"]

    assert result["isError"] is True and "Read the file again" in result_text(result)
    assert path.read_text() == "x = 1\n"


async def test_edits_are_the_changed_line_ranges(start_tiller, workspace):
    path = workspace / "poem.txt"
    before = "one\ntwo\nthree\nfour\nfive\nsix\n"
    after = "zero\none\nTWO\nthree\nfive\nsix\nseven\n"
    path.write_text(before)
    client = await start_tiller(
        one_call_per_turn(tool_call("write", {"path": "poem.txt", "content": after}, id="w1")),
        capabilities=editor_capabilities(),
    )
    client.open_document(path, before, version=2)
    client.edit_like_an_editor()
    session = await client.new_session(approvalMode="yolo")
    answer = await client.prompt(session, "rewrite").result()

    assert tool_results(answer)["w1"]["isError"] is False

    def edit(start: tuple[int, int], end: tuple[int, int], new_text: str) -> dict:
        return {"range": {"start": {"line": start[0], "character": start[1]},
                          "end": {"line": end[0], "character": end[1]}}, "newText": new_text}

    [change] = client.applied_edits[0]["edit"]["documentChanges"]
    assert change["edits"] == [
        edit((0, 0), (0, 0), "zero\n"),  # a line inserted at the top
        edit((1, 0), (1, 3), "TWO"),  # a line replaced
        edit((2, 5), (3, 4), ""),  # a line deleted, with the newline before it
        edit((5, 3), (5, 3), "\nseven"),  # a line added at the end, after the last one
    ]
    assert client.buffers[path.as_uri()] == (after, 3)
    assert path.read_text() == after


async def test_a_client_that_cannot_apply_edits_is_told_what_changed_on_disk(start_tiller, workspace):
    path = workspace / "notes.md"
    path.write_text("draft\n")
    capabilities = editor_capabilities()
    capabilities.workspace.apply_edit = False
    client = await start_tiller(
        one_call_per_turn(tool_call("edit", {"path": "notes.md", "oldText": "draft", "newText": "final"}, id="e1")),
        capabilities=capabilities,
    )
    client.open_document(path, "draft\n", version=1)
    session = await client.new_session(approvalMode="yolo")
    answer = await client.prompt(session, "finish it").result()

    assert tool_results(answer)["e1"]["isError"] is False
    assert client.applied_edits == []
    assert path.read_text() == "final\n"
    message = await client.wait_message(lambda m: m.get("method") == "window/showMessage")
    assert message["params"]["type"] == 2  # Warning
    assert str(path) in message["params"]["message"] and "reload it" in message["params"]["message"]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-32"])
async def test_the_edit_range_counts_in_the_negotiated_position_encoding(start_tiller, workspace, encoding):
    path = workspace / "menu.txt"
    last_line = "naïve 😀 café"  # no final newline: the range must end exactly at its end
    path.write_text(f"soup\n{last_line}")
    capabilities = editor_capabilities()
    capabilities.general.position_encodings = [encoding, "utf-16"]  # preferred first
    client = await start_tiller(
        one_call_per_turn(tool_call("edit", {"path": "menu.txt", "oldText": "café", "newText": "bar"}, id="e1")),
        capabilities=capabilities,
    )
    assert client.initialize_result.capabilities.position_encoding == encoding
    client.open_document(path, f"soup\n{last_line}")
    client.edit_like_an_editor(encoding)
    session = await client.new_session(approvalMode="yolo")
    answer = await client.prompt(session, "change the café").result()

    assert tool_results(answer)["e1"]["isError"] is False
    [edit] = client.applied_edits[0]["edit"]["documentChanges"][0]["edits"]
    units = {"utf-8": len(last_line.encode("utf-8")), "utf-32": len(last_line)}[encoding]  # 17, 12 (UTF-16: 13)
    assert edit["range"] == {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": units}}
    assert edit["newText"] == "naïve 😀 bar"
    assert path.read_text() == "soup\nnaïve 😀 bar"


async def test_open_documents_are_found_however_the_editor_spells_their_uri(start_tiller, workspace, tmp_path):
    # Neovim leaves "(", ")", "+" and "@" unescaped in file URIs (Python escapes them), and an
    # editor may have opened the project through a symlink, while tools use resolved paths.
    odd = workspace / "app" / "(auth)+@page.ts"
    odd.parent.mkdir()
    odd.write_text("on disk\n")
    plain = workspace / "plain.ts"
    plain.write_text("on disk\n")
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    client = await start_tiller(one_call_per_turn(
        tool_call("read", {"path": "app/(auth)+@page.ts"}, id="odd"),
        tool_call("read", {"path": "plain.ts"}, id="plain"),
        tool_call("edit", {"path": "plain.ts", "oldText": "buffer", "newText": "edited"}, id="edit"),
    ))
    client.open_document(odd, "odd buffer\n", uri=f"file://{odd}")
    client.open_document(plain, "plain buffer\n", version=4, uri=(alias / "plain.ts").as_uri())
    client.edit_like_an_editor()
    session = await client.new_session(approvalMode="yolo")
    answer = await client.prompt(session, "look").result()

    results = tool_results(answer)
    assert result_text(results["odd"]) == "odd buffer\n"
    assert result_text(results["plain"]) == "plain buffer\n"
    assert results["edit"]["isError"] is False
    # The edit names the document as the editor does, so the editor finds its buffer.
    [change] = client.applied_edits[0]["edit"]["documentChanges"]
    assert change["textDocument"] == {"uri": (alias / "plain.ts").as_uri(), "version": 4}
    assert plain.read_text() == "plain edited\n"


async def test_parallel_edits_of_open_buffers_all_land_one_file_at_a_time(start_tiller, workspace):
    # Tools of one reply run in parallel: edits of two buffers ask at once, while a second edit
    # of the same buffer waits for the first to land (and sync) and starts from its text. The
    # editor is Neovim-like: no documentChanges, and its didChange comes after its answer.
    notes, todo = workspace / "notes.md", workspace / "todo.md"
    notes.write_text("alpha\nbeta\ngamma\n")
    todo.write_text("buy milk\n")
    client = await start_tiller([
        reply(tool_call("edit", {"path": "notes.md", "oldText": "beta", "newText": "BETA"}, id="n1"),
              tool_call("edit", {"path": "todo.md", "oldText": "milk", "newText": "bread"}, id="t1"),
              tool_call("edit", {"path": "notes.md", "oldText": "gamma", "newText": "GAMMA"}, id="n2")),
        reply(text("Done.")),
    ], capabilities=editor_capabilities("neovim@v0.11", approvals=True))
    client.open_document(notes, "alpha\nbeta\ngamma\n", version=1)
    client.open_document(todo, "buy milk\n", version=1)
    client.edit_like_an_editor(sync_delay=0.05)
    session = await client.new_session()
    prompt = client.prompt(session, "shout")

    first, second = await client.wait_approval(session, 1), await client.wait_approval(session, 2)
    assert {first["title"], second["title"]} == {"Edit notes.md", "Edit todo.md"}  # pending together
    for approval in sorted((first, second), key=lambda a: a["title"], reverse=True):  # todo.md first
        await client.respond(session, approval["approvalId"], "allow_once")
    third = await client.wait_approval(session, 3)
    assert third["title"] == "Edit notes.md"
    assert third["diff"].endswith(" alpha\n BETA\n-gamma\n+GAMMA\n")  # planned on the first edit's text
    await client.respond(session, third["approvalId"], "allow_once")
    answer = await prompt.result()

    assert [r["isError"] for r in tool_results(answer).values()] == [False, False, False]
    assert client.buffers[notes.as_uri()] == ("alpha\nBETA\nGAMMA\n", 3)
    assert client.buffers[todo.as_uri()] == ("buy bread\n", 2)
    assert [list(e["edit"]["changes"]) for e in client.applied_edits] == [
        [todo.as_uri()], [notes.as_uri()], [notes.as_uri()]]
    assert notes.read_text() == "alpha\nBETA\nGAMMA\n" and todo.read_text() == "buy bread\n"
    assert files_in(workspace) == {"notes.md", "todo.md"}


async def test_an_editor_that_never_answers_an_edit_fails_the_tool_not_the_run(start_tiller, workspace, tmp_path):
    path = workspace / "app.py"
    path.write_text("x = 1\n")
    log_file = tmp_path / "tiller.log"
    client = await start_tiller([
        *one_call_per_turn(tool_call("edit", {"path": "app.py", "oldText": "x = 1", "newText": "x = 2"}, id="hung")),
        *one_call_per_turn(tool_call("read", {"path": "app.py"}, id="after")),
    ], capabilities=editor_capabilities(approvals=True), env={"TILLER_EDITOR_TIMEOUT_MS": "300"},
        args=["--log-file", str(log_file)])
    client.open_document(path, "x = 1\n", version=1)
    client.answer_apply_edit = lambda params: None  # an editor that hangs
    session = await client.new_session()

    prompt = client.prompt(session, "set x to 2")
    await client.respond(session, (await client.wait_approval(session))["approvalId"], "allow_once")
    answer = await prompt.result()
    hung = tool_results(answer)["hung"]
    assert hung["isError"] is True and len(client.applied_edits) == 1
    assert "The editor did not answer within 0.3 s while writing" in result_text(hung)
    assert "Read the file again" in result_text(hung)
    # The run went on to its next turn; an answer that comes too late changes nothing, and
    # the server still serves the session.
    assert answer["stopReason"] == "stop" and path.read_text() == "x = 1\n"
    client.release_hung_edits()
    prompt = client.prompt(session, "read it")
    assert "x = 1" in result_text(tool_results(await prompt.result())["after"])
    assert "WARNING tiller.host: The editor did not answer within 0.3 s" in log_file.read_text()
