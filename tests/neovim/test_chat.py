"""The chat in real Neovim: replies stream into the chat buffer, steering, follow-ups and
abort work from the prompt buffer's keys and from commands, errors show, and a gap in the
event stream is repaired."""

from __future__ import annotations

import pytest

from tests.server.harness import HOLD, GatedSSEServer, openai_text, reply, text, thinking
from tests.support.sse_server import Reply


@pytest.mark.parametrize("api", ["0.11", "0.10"])
def test_a_reply_streams_into_the_chat_buffer(start_neovim, api):
    with GatedSSEServer() as server:
        server.reply(Reply(chunks=openai_text("Hello from ", HOLD, "**tiller**.\nSecond line.")))
        nvim = start_neovim(sse=server)
        if api == "0.10":
            nvim.use_neovim_010_api()
        nvim.type_prompt("say hello")

        # Mid-stream: the first piece is in the buffer, the rest is not there yet.
        nvim.wait_chat("Hello from")
        assert "tiller**" not in nvim.chat_text()
        assert nvim.chat("streaming") is True
        server.release()
        nvim.wait_idle()

    lines = nvim.chat_lines()
    assert lines[:6] == ["## You", "say hello", "", "## tiller", "Hello from **tiller**.", "Second line."]
    assert lines[-1].startswith("─ ↑10 ↓3") and "context 13" in lines[-1]
    assert nvim.lua("return vim.bo[require('tiller.chat').chat_buffer(require('tiller').chat())].filetype") == "tiller"
    assert nvim.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)") == [""]  # the prompt was taken


def test_thinking_is_folded_and_tool_calls_are_one_line(start_neovim, workspace):
    (workspace / "notes.md").write_text("one\ntwo\nthree\n")
    nvim = start_neovim([
        reply(thinking("Let me look.\nAt the notes."), {"type": "toolCall", "id": "r1", "name": "read",
                                                         "arguments": {"path": "notes.md"}}),
        reply(text("Three lines.")),
    ])
    nvim.type_prompt("count the lines")
    nvim.wait_idle()

    lines = nvim.chat_lines()
    think = lines.index("∴ Thinking")
    assert lines[think + 1 : think + 3] == ["  Let me look.", "  At the notes."]
    assert "✓ read notes.md → 4 lines" in lines
    # In the chat window the thinking block is a closed fold.
    closed = nvim.lua("""
        local line = ...
        local wins = require('tiller.chat').windows(require('tiller').chat())
        return vim.api.nvim_win_call(wins[1], function() return vim.fn.foldclosed(line) end)
    """, think + 1)
    assert closed == think + 1


# How a message sent while a run streams is typed: the prompt buffer's key, or the command.
SEND_WHILE_STREAMING = {
    ("steering", "key"): "<CR>",  # steer: the next turn sees it
    ("steering", "command"): ":TillerSteer",
    ("followUp", "key"): "<M-CR>",  # the modifier: queued until the run ends
    ("followUp", "command"): ":TillerFollowUp",
}


@pytest.mark.parametrize(("queue", "how"), list(SEND_WHILE_STREAMING))
def test_a_message_sent_while_the_reply_streams_is_queued_for_the_model(start_neovim, queue, how):
    with GatedSSEServer() as server:
        server.reply(Reply(chunks=openai_text("Working on it", HOLD, " still.")),
                     Reply(chunks=openai_text("Switched to Rust.")))
        nvim = start_neovim(sse=server)
        nvim.type_prompt("write it in Go")
        nvim.wait_chat("Working on it")
        keys = SEND_WHILE_STREAMING[queue, how]
        if how == "key":
            nvim.type_prompt("actually, use Rust", keys=keys)
        else:
            nvim.nvim.command(f"{keys[1:]} actually, use Rust")
        nvim.wait(f"#require('tiller').chat().queue.{queue} == 1", what="the message to be queued")
        assert sum(len(queued) for queued in nvim.chat("queue").values()) == 1
        server.release()
        nvim.wait_chat("Switched to Rust.")
        nvim.wait_idle()

    # The model's second call saw the message after the first reply, and the chat shows it
    # as a prompt between the two replies.
    assert server.requests[1].json["messages"][-2:] == [
        {"role": "assistant", "content": "Working on it still."},
        {"role": "user", "content": [{"type": "text", "text": "actually, use Rust"}]},
    ]
    text_now = nvim.chat_text()
    assert text_now.index("Working on it still.") < text_now.index("## You\nactually, use Rust")
    assert text_now.index("## You\nactually, use Rust") < text_now.index("Switched to Rust.")


def test_a_model_error_is_shown_in_the_chat(start_neovim):
    with GatedSSEServer() as server:
        server.reply(Reply.json(400, {"error": {"message": "This model's maximum context length is 8 tokens",
                                                "type": "invalid_request_error"}}))
        nvim = start_neovim(sse=server)
        nvim.type_prompt("a long question")
        nvim.wait_idle()

    lines = nvim.chat_lines()
    [error] = [line for line in lines if line.startswith("**Error** ")]
    assert "maximum context length is 8 tokens" in error
    assert nvim.chat("streaming") is False


@pytest.mark.parametrize("how", ["key", "command"])
def test_abort_from_the_prompt_buffer_or_a_command(start_neovim, how):
    nvim = start_neovim([reply(text("slow " * 2000))], chunk_chars=1, delay_ms=20)
    nvim.type_prompt("go slowly")
    nvim.wait_chat("slow slow")
    if how == "key":
        nvim.feed("<C-c>")
    else:
        nvim.nvim.command("TillerAbort")
    nvim.wait_idle()
    lines = nvim.chat_lines()
    assert lines[-3:-1] == ["⚠ Aborted.", ""] and lines[-1].startswith("─ ↑")
    assert nvim.chat("streaming") is False


def test_a_gap_in_seq_is_repaired_from_get_state(start_neovim):
    with GatedSSEServer() as server:
        server.reply(Reply(chunks=openai_text("Before the gap, ", HOLD, "after the gap.")))
        nvim = start_neovim(sse=server)
        nvim.type_prompt("hello")
        nvim.wait_chat("Before the gap,")
        # Forget having seen the last events: the next one looks like it skipped some.
        nvim.lua("local chat = require('tiller').chat(); chat.seq = chat.seq - 3")
        nvim.lua("""
            local client = require('tiller.client')
            local request = client.request
            _G.requests = {}
            client.request = function(lsp, method, ...)
              table.insert(_G.requests, method)
              return request(lsp, method, ...)
            end
        """)
        server.release()
        nvim.wait_idle()
        nvim.wait_chat("after the gap.")

    assert "agent/getState" in nvim.lua("return _G.requests")
    lines = nvim.chat_lines()
    assert lines[:5] == ["## You", "hello", "", "## tiller", "Before the gap, after the gap."]
    assert lines.count("## tiller") == 1


def test_the_chat_can_be_a_float(start_neovim):
    nvim = start_neovim([reply(text("Floating."))], setup={"chat": {"layout": "float"}})
    nvim.type_prompt("hi")
    nvim.wait_idle()
    chats, prompts = nvim.lua("return { require('tiller.chat').windows(require('tiller').chat()) }")
    assert nvim.lua("return vim.api.nvim_win_get_config(...).relative", chats[0]) == "editor"
    assert nvim.lua("return vim.api.nvim_get_current_win()") == prompts[0]
    assert "Floating." in nvim.chat_lines()
    nvim.nvim.command("Tiller")
    assert nvim.lua("return #vim.api.nvim_list_wins()") == 1
