"""Context, saved sessions and a server that goes away, in real Neovim."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from pynvim.api.common import NvimError

from tests.server.harness import openai_text
from tests.support.sse_server import Reply, SSEServer


def user_text(request) -> str:
    """Everything the model was sent as the last user message."""
    content = request.json["messages"][-1]["content"]
    return "\n".join(part["text"] for part in content) if isinstance(content, list) else content


def test_a_multibyte_selection_is_attached_as_context(start_neovim, workspace):
    path = workspace / "words.txt"
    path.write_text("first line\n总结😀 pick me ✓ 👍 rest\n")
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("Seen.")))
        nvim = start_neovim(sse=server)
        buffer = nvim.edit(path)
        nvim.lua("vim.api.nvim_buf_set_lines(..., 0, 1, false, { 'unsaved first line' })", buffer)
        nvim.lua("vim.cmd('normal! 2G0fpvf👍\\27')")  # select "pick me ✓ 👍"
        nvim.nvim.command("'<,'>TillerPrompt explain this")
        nvim.wait_idle()

    sent = user_text(server.requests[0])
    assert sent == f"explain this\nAttached from the editor: {path} (selection, lines 2-2)\n```txt\npick me ✓ 👍\n```"
    # Neovim 0.11 offers utf-8 first; the range was counted in it.
    assert nvim.lua("return vim.lsp.get_clients({ name = 'tiller' })[1].offset_encoding") == "utf-8"
    assert "↳ attached: words.txt (selection, lines 2-2)" in nvim.chat_lines()


def test_a_saved_session_is_resumed_with_tiller_sessions(start_neovim):
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("Noted: 42.")), Reply(chunks=openai_text("It was 42.")))
        first = start_neovim(sse=server)
        first.type_prompt("remember the number 42")
        first.wait_idle()
        first.close()

        nvim = start_neovim(sse=server)
        nvim.nvim.command("TillerSessions")
        question = nvim.wait_asked(1)
        assert question["prompt"] == "Resume a tiller session"
        assert question["labels"][0].startswith("remember the number 42  (2 messages, openai/test-model")
        nvim.answer(1, 1)
        nvim.wait_chat("Noted: 42.")
        nvim.type_prompt("which number?")
        nvim.wait_chat("It was 42.")
        nvim.wait_idle()

    # The resumed conversation went to the model with the new prompt.
    history = [m["content"] for m in server.requests[1].json["messages"] if m["role"] != "system"]
    assert str(history[0]).count("remember the number 42") == 1 and history[1] == "Noted: 42."
    assert nvim.chat_text().startswith("## You\nremember the number 42\n\n## tiller\nNoted: 42.")


def server_pid(nvim) -> int:
    parent = nvim.lua("return vim.fn.getpid()")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == parent and b"tiller\0serve" in cmdline:
            return int(stat.parent.name)
    raise AssertionError("no tiller serve under this Neovim")


def test_the_server_exiting_is_shown_and_the_next_prompt_restarts_it(start_neovim):
    with SSEServer() as server:
        server.reply(Reply(chunks=openai_text("One.")), Reply(chunks=openai_text("Two.")))
        nvim = start_neovim(sse=server)
        nvim.type_prompt("first")
        nvim.wait_idle()
        os.kill(server_pid(nvim), signal.SIGKILL)
        nvim.wait_chat("tiller exited (signal 9). It starts again with your next prompt.")

        nvim.type_prompt("second")
        nvim.wait_chat("Two.")
        nvim.wait_idle()

    # The new server resumed the saved session: the model saw the first exchange.
    assert [m["role"] for m in server.requests[1].json["messages"] if m["role"] != "system"] == [
        "user", "assistant", "user"]
    text = nvim.chat_text()
    assert text.index("One.") < text.index("tiller exited") < text.index("## You\nsecond") < text.index("Two.")


def test_model_and_approval_mode_are_picked_for_the_session(start_neovim):
    nvim = start_neovim()
    nvim.nvim.command("TillerModel")
    question = nvim.wait_asked(1)
    assert question["prompt"] == "tiller model"
    faux = next(i for i, label in enumerate(question["labels"], 1) if label.startswith("faux/faux-1"))
    nvim.answer(1, faux)
    nvim.wait("require('tiller').chat().model == 'faux/faux-1'", what="the model to be set")
    nvim.nvim.command("TillerApprovalMode yolo")
    nvim.wait("require('tiller').chat().approval_mode == 'yolo'", what="the approval mode to be set")
    session_id = nvim.chat("id")
    state = nvim.lua("""
        local lsp = vim.lsp.get_clients({ name = 'tiller' })[1]
        return lsp:request_sync('agent/getState', { sessionId = ... }, 5000).result
    """, session_id)
    assert (state["model"], state["approvalMode"]) == ("faux/faux-1", "yolo")
    with pytest.raises(NvimError, match="approval mode must be one of ask, acceptEdits, yolo"):
        nvim.nvim.command("TillerApprovalMode sometimes")
