"""The session controls of the Neovim plugin in real Neovim: :TillerRules lists the saved
command rules and removes the one picked, :TillerRewind puts files and the conversation back
to before a prompt, :TillerTools shows the agent's tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.server.harness import reply, text, tool_call


def request(nvim, method: str, params: dict[str, Any]) -> Any:
    """`method` on the plugin's own server connection, for the chat's session."""
    answer = nvim.lua("""
        local method, params = ...
        params.sessionId = require('tiller').chat().id
        local lsp = vim.lsp.get_clients({ name = 'tiller' })[1]
        return lsp:request_sync(method, params, 5000)
    """, method, params)
    assert answer.get("err") is None, answer
    return answer["result"]


def messages(nvim) -> str:
    return nvim.nvim.command_output("messages")


def wait_message(nvim, wanted: str) -> None:
    """Until :messages shows `wanted` (what vim.notify said)."""
    nvim.wait("vim.fn.execute('messages'):find(..., 1, true) ~= nil", wanted, what=f"the message {wanted!r}")


def test_tiller_rules_lists_the_saved_rules_and_removes_the_one_picked(start_neovim):
    nvim = start_neovim()
    nvim.nvim.command("TillerRules")
    nvim.wait("require('tiller').chat().id ~= nil", what="a session")
    wait_message(nvim, "tiller: no saved command rules")

    empty = {"allow": [], "ask": [], "deny": [], "readOnly": []}
    request(nvim, "agent/setRules", {"scope": "user", "rules": {**empty, "allow": ["git status", "pytest *"],
                                                                 "deny": ["git push --force *"]}})
    request(nvim, "agent/setRules", {"scope": "session", "rules": {**empty, "ask": ["make *"]}})
    nvim.nvim.command("TillerRules")
    question = nvim.wait_asked(1)
    assert question["prompt"] == "Remove a tiller command rule"
    assert question["labels"] == ["session  ask       make *", "user     allow     git status",
                                  "user     allow     pytest *", "user     deny      git push --force *"]
    nvim.answer(1, 3)  # pytest *
    wait_message(nvim, 'tiller: removed allow rule "pytest *" (user)')

    rules = request(nvim, "agent/getRules", {})
    assert rules["user"]["rules"] == {**empty, "allow": ["git status"], "deny": ["git push --force *"]}
    assert rules["session"] == {**empty, "ask": ["make *"]}
    saved = json.loads(Path(rules["user"]["path"]).read_text())
    assert "pytest *" not in json.dumps(saved) and "git status" in json.dumps(saved)


def test_tiller_rewind_puts_back_the_files_and_the_conversation(start_neovim, workspace):
    nvim = start_neovim([
        reply(text("Hello.")),
        reply(tool_call("write", {"path": "made.txt", "content": "made by the agent\n"}, id="w1")),
        reply(text("Written.")),
    ], setup={"approval_mode": "yolo"})
    nvim.type_prompt("say hello")
    nvim.wait_idle()
    nvim.type_prompt("make a file")
    nvim.wait_chat("Written.")
    nvim.wait_idle()
    assert (workspace / "made.txt").read_text() == "made by the agent\n"
    # What the run left is recorded in the background after it answers; listing the
    # checkpoints waits for that, so the user's change below is surely the user's.
    request(nvim, "agent/listCheckpoints", {})
    (workspace / "made.txt").write_text("changed by the user after the run\n")

    nvim.nvim.command("TillerRewind")
    question = nvim.wait_asked(1)
    assert question["prompt"] == "Rewind to before"
    assert question["labels"] == ["say hello  (message 1)", "make a file  (message 3)"]
    nvim.answer(1, 2)
    restore = nvim.wait_asked(2)
    assert restore["labels"] == ["files and conversation", "files only", "conversation only"]
    nvim.answer(2, 1)
    # Restoring would lose the user's later change: the plugin asks first.
    force = nvim.wait_asked(3)
    assert "made.txt changed after the agent's last turn" in force["prompt"]
    assert force["labels"] == ["Restore anyway", "Keep my changes"]
    assert (workspace / "made.txt").exists()
    nvim.answer(3, 1)
    wait_message(nvim, "tiller: rewound (2 messages)")
    nvim.wait("not table.concat(vim.api.nvim_buf_get_lines(require('tiller.chat').chat_buffer("
              "require('tiller').chat()), 0, -1, false), '\\n'):find('Written.', 1, true)",
              what="the chat to drop the rewound prompt")

    assert not (workspace / "made.txt").exists()
    assert "deleted made.txt" in messages(nvim)
    chat = nvim.chat_text()
    assert "say hello" in chat and "Hello." in chat and "make a file" not in chat
    assert len(request(nvim, "agent/getState", {})["messages"]) == 2


def test_tiller_tools_shows_the_built_in_tools(start_neovim):
    nvim = start_neovim()
    nvim.nvim.command("TillerTools")
    nvim.wait("vim.bo.filetype == 'markdown' and vim.api.nvim_win_get_config(0).relative ~= ''",
              what="the tools float")
    lines = nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")
    assert lines[0] == "# Built-in tools"
    names = [line.split(":")[0].removeprefix("- ") for line in lines if line.startswith("- ")]
    assert names == ["read (read-only)", "bash", "edit", "write", "grep (read-only)", "find (read-only)",
                     "ls (read-only)"], lines
    assert lines[2].startswith("- read (read-only): Read the contents of a file.")
    nvim.feed("q")
    assert nvim.lua("return vim.api.nvim_win_get_config(0).relative") == ""


def test_a_rule_saved_from_a_bash_approval_is_listed_and_removed(start_neovim):
    nvim = start_neovim([
        reply(tool_call("bash", {"command": "echo saved-rule"}, id="b1")),
        reply(text("Echoed.")),
    ])
    nvim.type_prompt("echo something")
    approval = nvim.wait_asked(1)
    every_project = next(i for i, label in enumerate(approval["labels"], 1) if label.endswith("in every project"))
    nvim.answer(1, every_project)
    nvim.wait_idle()
    pattern = request(nvim, "agent/getRules", {})["user"]["rules"]["allow"]
    assert len(pattern) == 1 and pattern[0].startswith("echo")

    nvim.nvim.command("TillerRules")
    question = nvim.wait_asked(2)
    assert question["labels"] == [f"user     allow     {pattern[0]}"]
    nvim.answer(2, 1)
    wait_message(nvim, f'tiller: removed allow rule "{pattern[0]}" (user)')
    assert request(nvim, "agent/getRules", {})["user"]["rules"]["allow"] == []
