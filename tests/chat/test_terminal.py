"""`tiller chat` on a terminal, driven through a pseudo-terminal as a person would use it:
approvals answered with a key, markdown rendered, history, the status line."""

from __future__ import annotations

import pytest

from tests.support.sse_server import Reply, SSEServer

from ..server.harness import openai_text
from .helpers import text_reply, write_script
from .terminal_screen import CTRL_C, CTRL_D, UP, TerminalScreen, environment, tree

WRITE = {"type": "toolCall", "name": "write", "arguments": {"path": "hello.py", "content": "print('hi')\n"}}
QUESTION = "Allow? [y] once"


def write_then(tmp_path, *after: dict) -> str:
    return write_script(tmp_path, [
        {"content": [{"type": "text", "text": "I will write the file."}, WRITE]},
        *after,
    ], chunk_chars=8)


@pytest.fixture
def work(tmp_path):
    root = tmp_path / "work"
    root.mkdir()
    return root


@pytest.fixture
def terminals():
    opened: list[TerminalScreen] = []

    def open_terminal(*args: str, env: dict[str, str], cwd) -> TerminalScreen:
        opened.append(TerminalScreen(*args, env=env, cwd=cwd))
        return opened[-1]

    yield open_terminal
    for terminal in opened:
        terminal.close()


def test_an_approved_write_shows_its_diff_and_lands(tmp_path, work, terminals):
    script = write_then(tmp_path, text_reply("Done: `hello.py` is **written**."))
    term = terminals("write hello", env=environment(script), cwd=work)
    screen = term.wait_text(QUESTION)
    assert "● Create hello.py" in screen
    assert "+print('hi')" in screen  # the diff of the new file
    assert tree(work) == []  # nothing written before the answer
    term.type("y\r")
    screen = term.wait_text("is written")
    assert "**" not in screen and "`hello.py`" not in screen  # markdown rendered, not shown raw
    assert "✓ " in screen, screen
    assert term.wait_exit() == 0
    assert (work / "hello.py").read_text() == "print('hi')\n"


def test_reject_with_a_reason_tells_the_model_why(tmp_path, work, terminals):
    script = write_then(tmp_path, text_reply("Understood."))
    term = terminals("write hello", env=environment(script), cwd=work)
    term.wait_text(QUESTION)
    term.type("r\r")
    term.wait_text("Reason")
    term.type("use greet.py instead\r")
    screen = term.wait_text("Understood.")
    assert "✗ The user rejected this edit: use greet.py instead" in screen, screen
    assert term.wait_exit() == 0
    assert tree(work) == []


def test_ctrl_c_during_an_approval_rejects_it_and_the_run_goes_on(tmp_path, work, terminals):
    script = write_then(tmp_path, text_reply("Fine, I will not."))
    term = terminals("write hello", env=environment(script), cwd=work)
    term.wait_text(QUESTION)
    term.type(CTRL_C)
    screen = term.wait_text("Fine, I will not.")
    assert "✗ The user rejected this edit" in screen
    assert term.wait_exit() == 0
    assert tree(work) == []


def test_always_allow_is_not_asked_again(tmp_path, work, terminals):
    second = {"type": "toolCall", "name": "write", "arguments": {"path": "again.py", "content": "x = 1\n"}}
    script = write_script(tmp_path, [
        {"content": [WRITE]}, {"content": [second]}, text_reply("Both written."),
    ])
    term = terminals("write two files", env=environment(script), cwd=work)
    term.wait_text(QUESTION)
    term.type("a\r")
    screen = term.wait_text("Both written.")
    assert screen.count("Allow? [y]") == 1
    assert term.wait_exit() == 0
    assert tree(work) == ["again.py", "hello.py"]


def idle_prompt_after(marker: str):
    """The idle prompt (`>` alone: the steering prompt reads `steer›`) below `marker`."""
    def seen(text: str) -> bool:
        lines = text.splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith(marker)]
        return bool(starts) and ">" in lines[starts[-1] + 1 :]
    return seen


def test_interactive_history_markdown_and_status_line(tmp_path, work, terminals):
    script = write_script(tmp_path, [
        text_reply("# Rows\n\nA list:\n\n- beans\n- peas\n\n```python\nprint('till')\n```\n"),
        text_reply("Second answer."),
    ])
    term = terminals(env=environment(script), cwd=work)
    term.wait_text("faux/faux-1 · context")  # the status line: model, context use, cost
    term.type("first question\r")
    screen = term.wait_text("print('till')")
    assert "# Rows" not in screen and "Rows" in screen  # a rendered heading
    assert "• beans" in screen or "• beans" in screen.replace("  ", " ")
    assert "```" not in screen
    term.wait_for(idle_prompt_after("[faux/faux-1: "), "the idle prompt after the run")
    term.type(UP)  # the line editor's history brings the last prompt back
    term.wait_for(lambda text: text.count("> first question") == 2, "the recalled line at the prompt")
    term.type("\r")
    term.wait_text("Second answer.")
    term.type(CTRL_D)
    assert term.wait_exit() == 0
    assert "first question" in (tmp_path / "state" / "tiller" / "chat_history").read_text()


def test_a_spinner_while_the_model_has_not_answered(tmp_path, work, terminals):
    with SSEServer() as provider:
        # The status line looks the model up (agent/listModels), which asks a server on
        # this machine for its models first; then the prompt, answered after 3 s.
        provider.reply(Reply.json(200, {"data": [{"id": "slow"}]}), Reply(chunks=openai_text("At last."), delay=3.0))
        env = environment(None, TILLER_MODEL="openai/slow", OPENAI_BASE_URL=provider.url + "/v1",
                          OPENAI_API_KEY="test-key")
        term = terminals("hello", env=env, cwd=work)
        term.wait_text("waiting for the model")
        term.wait_text("At last.")
        assert term.wait_exit() == 0


def test_bash_cannot_read_keys_from_the_chat_process_either(tmp_path, work, terminals):
    # tiller chat runs tiller serve, which runs bash: the chat process is bash's grandparent,
    # and its environment block is as readable as the server's.
    grandparent = "$(ps -o ppid= -p $PPID | tr -d ' ')"
    bash = {"type": "toolCall", "name": "bash",
            "arguments": {"command": f"tr '\\0' '\\n' < /proc/{grandparent}/environ > chat-env.txt"}}
    script = write_script(tmp_path, [{"content": [bash]}, text_reply("Looked.")])
    secret = "sk-chat-secret-0123456789"
    term = terminals("look", env=environment(script, OPENAI_API_KEY=secret, GH_PAT="ghp_chat_pat"), cwd=work)
    term.wait_text(QUESTION)
    term.type("y\r")
    term.wait_text("Looked.")
    assert term.wait_exit() == 0
    seen = (work / "chat-env.txt").read_text()
    assert "TILLER_FAUX_SCRIPT=" in seen  # it did read the chat process's block
    assert secret not in seen and "ghp_chat_pat" not in seen


def test_a_commands_always_options_show_the_exact_rule_and_u_saves_it_for_every_project(tmp_path, work, terminals):
    first = {"type": "toolCall", "name": "bash", "arguments": {"command": "echo one"}}
    second = {"type": "toolCall", "name": "bash", "arguments": {"command": "echo two"}}
    script = write_script(tmp_path, [{"content": [first]}, {"content": [second]}, text_reply("Both echoed.")])
    config = tmp_path / "config"
    term = terminals("echo twice", env=environment(script, XDG_CONFIG_HOME=str(config)), cwd=work)
    screen = term.wait_text("[p] project  [u] every project  [n] reject")
    assert "[a] Always allow `echo *` in this session" in screen, screen
    assert "[u] Always allow `echo *` in every project" in screen
    term.type("u\r")
    screen = term.wait_text("Both echoed.")
    assert screen.count("Allow? [y]") == 1  # echo two ran under the saved rule
    assert term.wait_exit() == 0
    assert '"echo *"' in (config / "tiller" / "settings.json").read_text()
    assert not (work / ".tiller").exists()
