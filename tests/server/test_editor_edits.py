"""Approved changes land in the editor: an open buffer gets a versioned `TextDocumentEdit`
through `workspace/applyEdit` (the test client plays the editor), a stale buffer fails the
tool, a new file is created with `CreateFile`, and files not open go straight to disk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol.types import ResourceOperationKind

from .harness import (
    TillerClient,
    editor_capabilities,
    one_call_per_turn,
    reply,
    result_text,
    text,
    tool_call,
    tool_results,
)


def like_an_editor(client: TillerClient, path: Path) -> Callable[[dict], dict]:
    """An applyEdit answer as VS Code gives it for a whole-buffer edit of `path`: the buffer
    takes the new text (a didChange with the next version reaches the server first)."""

    def answer(params: dict) -> dict:
        change = params["edit"]["documentChanges"][0]
        client.change_document(path, change["edits"][0]["newText"], change["textDocument"]["version"] + 1)
        return {"applied": True}

    return answer


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
    client.answer_apply_edit = like_an_editor(client, path)
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
    assert client.applied_edits == [{
        "label": "tiller: edit notes.md",
        "edit": {"documentChanges": [{
            "textDocument": {"uri": path.as_uri(), "version": 7},
            "edits": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 19}},
                       "newText": edited}],
        }]},
    }]
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
    client.answer_apply_edit = like_an_editor(client, path)
    prompt = client.prompt(session, "set x to 3")
    approval = await client.wait_approval(session, 2)
    client.change_document(path, "x = 1\ny = 0\n", version=2)
    await client.respond(session, approval["approvalId"], "allow_once")
    typed = tool_results(await prompt.result())["typed"]
    assert typed["isError"] is True
    assert "changed in the editor after it was read (version 1 -> 2)" in result_text(typed)
    assert "Read the file again and redo the edit." in result_text(typed)
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


async def test_an_open_buffer_the_client_cannot_edit_is_still_saved(start_tiller, workspace):
    # Neovim declares no workspaceEdit.documentChanges, so no versioned edit can be sent;
    # a tiller plugin for it may still declare savesEditedDocuments. The change must not
    # be lost between the two.
    path = workspace / "init.lua"
    path.write_text("local x = 1\n")
    client = await start_tiller(
        one_call_per_turn(tool_call("edit", {"path": "init.lua", "oldText": "x = 1", "newText": "x = 2"}, id="e1")),
        capabilities=editor_capabilities("neovim@v0.11", saves_edited_documents=True),
    )
    client.open_document(path, "local x = 1\n", version=3, language_id="lua")
    session = await client.new_session(approvalMode="yolo")
    answer = await client.prompt(session, "bump x").result()

    assert tool_results(answer)["e1"]["isError"] is False
    assert client.applied_edits == []
    assert path.read_text() == "local x = 2\n"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-32"])
async def test_the_edit_range_counts_in_the_negotiated_position_encoding(start_tiller, workspace, encoding):
    path = workspace / "menu.txt"
    last_line = "naïve 😀 café"  # no final newline: the range must end exactly at its end
    path.write_text(f"soup\n{last_line}")
    capabilities = editor_capabilities()
    capabilities.general.position_encodings = [encoding, "utf-16"]  # preferred first
    client = await start_tiller(
        one_call_per_turn(tool_call("edit", {"path": "menu.txt", "oldText": "soup", "newText": "stew"}, id="e1")),
        capabilities=capabilities,
    )
    assert client.initialize_result.capabilities.position_encoding == encoding
    client.open_document(path, f"soup\n{last_line}")
    session = await client.new_session(approvalMode="yolo")
    answer = await client.prompt(session, "change the soup").result()

    assert tool_results(answer)["e1"]["isError"] is False
    [edit] = client.applied_edits[0]["edit"]["documentChanges"][0]["edits"]
    units = {"utf-8": len(last_line.encode("utf-8")), "utf-32": len(last_line)}[encoding]  # 17, 12 (UTF-16: 13)
    assert edit["range"]["end"] == {"line": 1, "character": units}
    assert edit["newText"] == f"stew\n{last_line}"


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
