"""Agent edits in real Neovim: the approval is shown as a diff and answered through
`vim.ui.select`; an approved edit lands in the open buffer (unsaved text kept, saved so the
disk agrees, one `u` reverts it); a rejection changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.harness import one_call_per_turn, reply, text, tool_call

NOTES = ["alpha", "beta", "gamma"]
UNSAVED = [*NOTES, "typed, not saved 😀"]


def open_with_unsaved_text(nvim, path):
    buffer = nvim.edit(path)
    nvim.lua("vim.api.nvim_buf_set_lines(..., 3, 3, false, { 'typed, not saved 😀' })", buffer)
    assert nvim.lua("return vim.bo[...].modified", buffer) is True
    return buffer


def approval_preview(nvim):
    """The filetype and text of the split that shows the proposal."""
    return nvim.lua("""
        for _, win in ipairs(vim.api.nvim_list_wins()) do
          local buf = vim.api.nvim_win_get_buf(win)
          if vim.api.nvim_buf_get_name(buf):find('tiller://approval/', 1, true) then
            return { vim.bo[buf].filetype, vim.api.nvim_buf_get_lines(buf, 0, -1, false) }
          end
        end
        return vim.NIL
    """)


@pytest.mark.parametrize("api", ["0.11", "0.10"])
def test_an_approved_edit_lands_in_the_buffer_with_its_unsaved_text(start_neovim, workspace, api):
    path = workspace / "notes.md"
    path.write_text("\n".join(NOTES) + "\n")
    nvim = start_neovim(one_call_per_turn(
        tool_call("edit", {"path": "notes.md", "oldText": "beta", "newText": "BETA"}, id="e1"), end="Shouted."))
    if api == "0.10":
        nvim.use_neovim_010_api()
    buffer = open_with_unsaved_text(nvim, path)
    nvim.nvim.command("normal! 3G")  # the cursor on "gamma", which the edit does not touch
    nvim.type_prompt("shout beta")

    question = nvim.wait_asked(1)
    assert question["kind"] == "select" and question["prompt"] == "Edit notes.md"
    assert question["labels"] == ["Allow once", "Always allow edit in this session", "Reject",
                                  "Always reject edit in this session"]
    filetype, diff = approval_preview(nvim)
    assert filetype == "diff"
    assert diff[-5:] == [" alpha", "-beta", "+BETA", " gamma", " typed, not saved 😀"]
    assert "⋯ edit notes.md → waiting for approval (Edit notes.md)" in nvim.chat_lines()
    nvim.answer(1, 1)  # Allow once
    nvim.wait_idle()

    edited = ["alpha", "BETA", "gamma", "typed, not saved 😀"]
    assert nvim.lines(buffer) == edited
    assert nvim.lua("return vim.bo[...].modified", buffer) is False  # saved: the disk agrees
    assert path.read_text() == "\n".join(edited) + "\n"
    assert approval_preview(nvim) is None
    assert "✓ edit notes.md → Successfully replaced text in notes.md." in nvim.chat_lines()
    # No "file changed on disk" question afterwards.
    nvim.nvim.command("checktime")
    assert "W1" not in nvim.nvim.command_output("messages")

    # One `u` takes the agent's edit back, and only it.
    nvim.lua("vim.api.nvim_set_current_buf(...)", buffer)
    nvim.feed("u")
    assert nvim.lines(buffer) == UNSAVED


def test_a_multi_hunk_edit_is_one_undo_step_and_keeps_marks(start_neovim, workspace):
    path = workspace / "poem.txt"
    before = [f"line {n}" for n in range(1, 11)]
    path.write_text("\n".join(before) + "\n")
    after = ["line 0", *before[:4], "LINE 5", *before[5:9], "line 11"]  # line 10 replaced by 11
    nvim = start_neovim(one_call_per_turn(
        tool_call("write", {"path": "poem.txt", "content": "\n".join(after) + "\n"}, id="w1")),
        setup={"approval_mode": "yolo"})
    buffer = nvim.edit(path)
    nvim.nvim.command("normal! 8Gmx")  # a mark on "line 8"
    nvim.type_prompt("renumber")
    nvim.wait_idle()

    assert nvim.lines(buffer) == after
    assert path.read_text() == "\n".join(after) + "\n"
    assert nvim.lua("return vim.api.nvim_buf_get_mark(..., 'x')", buffer) == [9, 0]  # still on "line 8"
    nvim.lua("vim.api.nvim_set_current_buf(...)", buffer)
    nvim.feed("u")
    assert nvim.lines(buffer) == before


def test_parallel_edits_land_in_their_buffers_one_undo_step_each(start_neovim, workspace):
    # One reply, three edits, run in parallel: two files are asked about together, and the
    # second edit of notes.md waits for the first to land in the buffer and starts from it.
    notes, todo = workspace / "notes.md", workspace / "todo.md"
    notes.write_text("\n".join(NOTES) + "\n")
    todo.write_text("buy milk\n")
    nvim = start_neovim([
        reply(tool_call("edit", {"path": "notes.md", "oldText": "beta", "newText": "BETA"}, id="n1"),
              tool_call("edit", {"path": "todo.md", "oldText": "milk", "newText": "bread"}, id="t1"),
              tool_call("edit", {"path": "notes.md", "oldText": "gamma", "newText": "GAMMA"}, id="n2")),
        reply(text("Both done.")),
    ])
    todo_buffer = nvim.edit(todo)
    notes_buffer = open_with_unsaved_text(nvim, notes)
    nvim.type_prompt("shout")

    asked = [nvim.wait_asked(1)["prompt"]]
    nvim.answer(1, 1)
    asked.append(nvim.wait_asked(2)["prompt"])
    nvim.answer(2, 1)
    assert sorted(asked) == ["Edit notes.md", "Edit todo.md"]
    assert nvim.wait_asked(3)["prompt"] == "Edit notes.md"
    _, diff = approval_preview(nvim)
    assert diff[-4:] == [" BETA", "-gamma", "+GAMMA", " typed, not saved 😀"]  # from the first edit's text
    nvim.answer(3, 1)
    nvim.wait_idle()

    edited = ["alpha", "BETA", "GAMMA", "typed, not saved 😀"]
    assert nvim.lines(notes_buffer) == edited and nvim.lines(todo_buffer) == ["buy bread"]
    assert notes.read_text() == "\n".join(edited) + "\n" and todo.read_text() == "buy bread\n"
    assert [line for line in nvim.chat_lines() if line.startswith("✓ edit")] == [
        "✓ edit notes.md → Successfully replaced text in notes.md.",
        "✓ edit todo.md → Successfully replaced text in todo.md.",
        "✓ edit notes.md → Successfully replaced text in notes.md.",
    ]
    nvim.lua("vim.api.nvim_set_current_buf(...)", notes_buffer)
    nvim.feed("u")
    assert nvim.lines(notes_buffer) == ["alpha", "BETA", "gamma", "typed, not saved 😀"]
    nvim.feed("u")
    assert nvim.lines(notes_buffer) == UNSAVED


def test_with_save_edited_buffers_off_an_edit_stays_unsaved_in_its_buffer(start_neovim, workspace):
    path = workspace / "notes.md"
    path.write_text("\n".join(NOTES) + "\n")
    nvim = start_neovim(one_call_per_turn(
        tool_call("edit", {"path": "notes.md", "oldText": "beta", "newText": "BETA"}, id="e1")),
        setup={"approval_mode": "yolo", "save_edited_buffers": False})
    buffer = nvim.edit(path)
    nvim.type_prompt("shout beta")
    nvim.wait_idle()

    assert nvim.lines(buffer) == ["alpha", "BETA", "gamma"]
    assert nvim.lua("return vim.bo[...].modified", buffer) is True  # the user saves it, or not
    assert path.read_text() == "\n".join(NOTES) + "\n"  # nothing written behind the buffer
    assert "✓ edit notes.md → Successfully replaced text in notes.md." in nvim.chat_lines()
    nvim.nvim.command("checktime")
    assert "W1" not in nvim.nvim.command_output("messages")


def test_a_buffer_opened_while_the_server_runs_is_synced_too(start_neovim, workspace):
    path = workspace / "notes.md"
    path.write_text("\n".join(NOTES) + "\n")
    nvim = start_neovim([
        reply(text("Hello.")),
        *one_call_per_turn(tool_call("edit", {"path": "notes.md", "oldText": "beta", "newText": "BETA"}, id="e1")),
    ], setup={"approval_mode": "yolo"})
    nvim.type_prompt("hi")
    nvim.wait_idle()  # the server runs; the file is not open yet
    nvim.nvim.command("wincmd t")  # from the prompt to the editing window
    buffer = open_with_unsaved_text(nvim, path)
    nvim.type_prompt("shout beta")
    nvim.wait_idle()

    edited = ["alpha", "BETA", "gamma", "typed, not saved 😀"]  # planned on the unsaved buffer
    assert nvim.lines(buffer) == edited
    assert path.read_text() == "\n".join(edited) + "\n"


def test_a_rejected_edit_changes_nothing_and_tells_the_model_why(start_neovim, workspace):
    path = workspace / "notes.md"
    path.write_text("\n".join(NOTES) + "\n")
    nvim = start_neovim(one_call_per_turn(
        tool_call("edit", {"path": "notes.md", "oldText": "beta", "newText": "BETA"}, id="e1"), end="Kept it."))
    buffer = open_with_unsaved_text(nvim, path)
    nvim.type_prompt("shout beta")

    # Dismissed: the approval stays pending, and survives closing and reopening the chat.
    nvim.wait_asked(1)
    nvim.answer(1, None)
    nvim.wait_chat("Approval still pending: Edit notes.md")
    assert approval_preview(nvim) is None
    nvim.nvim.command("Tiller")  # close
    assert nvim.lua("return require('tiller.chat').is_open(require('tiller').chat())") is False
    nvim.nvim.command("Tiller")  # reopen: asked again
    assert nvim.wait_asked(2)["prompt"] == "Edit notes.md"

    nvim.answer(2, 3)  # Reject
    assert nvim.wait_asked(3)["kind"] == "input"
    nvim.answer(3, "keep it lowercase")
    nvim.wait_idle()

    assert nvim.lines(buffer) == UNSAVED
    assert nvim.lua("return vim.bo[...].modified", buffer) is True  # the user's text, still unsaved
    assert path.read_text() == "\n".join(NOTES) + "\n"
    assert "✗ edit notes.md → failed: The user rejected this edit: keep it lowercase" in nvim.chat_lines()
    assert nvim.chat_lines()[-3] == "Kept it."


def test_checkhealth_reports_the_server(start_neovim):
    nvim = start_neovim([reply(text("unused"))])
    nvim.nvim.command("checkhealth tiller")
    report = "\n".join(nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)"))
    assert "- ✅ OK protocol version 1" in report
    assert "- ✅ OK tiller 0.1.0" in report
    assert "- ✅ OK provider openai: ready" in report  # the test environment's key
    assert "default model: faux/faux-1" in report


def test_every_command_has_its_help_tag(start_neovim, tmp_path):
    nvim = start_neovim()
    doc = tmp_path / "doc"
    doc.mkdir()
    (doc / "tiller.txt").write_bytes((Path(__file__).parents[2] / "neovim" / "doc" / "tiller.txt").read_bytes())
    nvim.nvim.command(f"helptags {doc}")  # fails on a duplicate tag
    tags = {line.split("\t")[0] for line in (doc / "tags").read_text().splitlines()}
    commands = nvim.lua("return vim.tbl_keys(vim.api.nvim_get_commands({}))")
    assert {f":{name}" for name in commands if name.startswith("Tiller")} <= tags
    assert {"tiller.setup()", "tiller-approvals", "tiller-api"} <= tags
