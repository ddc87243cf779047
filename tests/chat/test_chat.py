"""`tiller chat` end to end: the real command, the real server, a scripted (faux) model."""

from __future__ import annotations

import json
import re
import signal

import pytest

from .helpers import ChatProcess, run_chat, text_reply, write_script

SLOW_TEXT = "".join(f"{i:03d} " for i in range(60))  # 240 characters


def slow_script(tmp_path, *more: dict, delay_ms: float = 25) -> str:
    """A reply streamed 2 characters per chunk, `delay_ms` apart: long enough to act on."""
    return write_script(tmp_path, [text_reply(SLOW_TEXT), *more], chunk_chars=2, delay_ms=delay_ms)


# --- one-shot ------------------------------------------------------------------------------


def test_one_shot_streams_the_reply_to_stdout_exactly(tmp_path):
    script = write_script(tmp_path, [text_reply("Tilled and sown.\nRows of beans.")])
    result = run_chat("hello", script=script)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Tilled and sown.\nRows of beans.\n"
    assert "[faux/faux-1: " in result.stderr and " out, $0.0000; " in result.stderr
    # The context meter and the session's cost, from the server's context_usage event.
    assert re.search(r"; context [\d,]+/128,000 \(\d+%\), session \$0\.0000\]", result.stderr)
    assert "\x1b" not in result.stdout + result.stderr  # no ANSI when not on a terminal


def test_json_prints_every_event_in_order_with_increasing_seq(tmp_path):
    script = write_script(tmp_path, [text_reply("abcdefgh")])
    result = run_chat("hi", "--json", script=script)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert all(set(line) == {"sessionId", "seq", "event"} for line in lines)
    assert len({line["sessionId"] for line in lines}) == 1
    seqs = [line["seq"] for line in lines]
    assert seqs == sorted(set(seqs)) and seqs[0] >= 1
    events = [line["event"] for line in lines]
    kinds = [e["type"] if e["type"] != "message_update" else e["assistantMessageEvent"]["type"] for e in events]
    # The server may coalesce a burst of deltas (protocol.md 3.1): count kinds, join texts.
    collapsed = [k for i, k in enumerate(kinds) if not (k == "text_delta" and kinds[i - 1] == k)]
    assert collapsed == [
        "agent_start", "turn_start", "message_start", "message_end",          # the prompt
        "message_start", "text_start", "text_delta", "text_end",
        "message_end", "turn_end", "context_usage", "agent_end",
    ]
    assert events[2]["message"]["role"] == "user"
    deltas = [e["assistantMessageEvent"]["delta"] for e in events
              if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta"]
    assert "".join(deltas) == "abcdefgh"
    assert events[-4]["message"]["content"] == [{"type": "text", "text": "abcdefgh"}]
    assert "[faux/faux-1" not in result.stderr  # usage lives in the events


def test_a_run_that_ends_in_error_exits_1_with_the_message(tmp_path):
    script = write_script(tmp_path, [
        {"content": [{"type": "text", "text": "partial"}], "stopReason": "error", "errorMessage": "quota exceeded"}])
    result = run_chat("hi", script=script)
    assert result.returncode == 1
    assert result.stdout == "partial\n"
    assert "tiller: quota exceeded" in result.stderr


def test_an_empty_script_is_an_error_too(tmp_path):
    result = run_chat("hi", script=write_script(tmp_path, []))
    assert result.returncode == 1
    assert "No more faux responses queued" in result.stderr


def test_tool_calls_and_results_render_one_line_each(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.py").write_text("print('hello')\nprint('again')\n")
    script = write_script(tmp_path, [
        {"content": [{"type": "text", "text": "Let me look."},
                     {"type": "toolCall", "name": "read", "arguments": {"path": "a.py"}},
                     {"type": "toolCall", "name": "no_such_tool", "arguments": {}}]},
        text_reply("It prints twice."),
    ])
    result = run_chat("read a.py", "--cwd", str(work), script=script)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # The calls run in parallel: both start, the unknown tool fails at once, then read ends.
    assert lines[:5] == ["Let me look.", '→ read {"path": "a.py"}', "→ no_such_tool {}",
                         "✗ Tool no_such_tool not found", lines[4]]
    assert lines[4].startswith("✓ ") and "print('hello')" in lines[4] and "again" not in lines[4]
    assert lines[5:] == ["It prints twice."]


def test_thinking_is_shown_on_its_own_line_without_ansi_on_a_pipe(tmp_path):
    script = write_script(tmp_path, [
        {"content": [{"type": "thinking", "thinking": "Ponder."}, {"type": "text", "text": "Answer."}]}])
    result = run_chat("why?", script=script)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Ponder.\nAnswer.\n"


def test_unknown_model_and_bad_cwd_are_usage_errors(tmp_path):
    script = write_script(tmp_path, [])
    result = run_chat("hi", "--model", "nope/nothing", script=script)
    assert result.returncode == 2
    assert "Unknown model: nope/nothing" in result.stderr
    result = run_chat("hi", "--cwd", str(tmp_path / "missing"), script=script)
    assert result.returncode == 2
    assert "not a directory" in result.stderr


def test_a_session_is_opened_in_the_cwd_given(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    script = write_script(tmp_path, [text_reply("ok")])
    result = run_chat("hi", "--json", "--cwd", str(work), script=script)
    # The server accepted rootUri and newSession's cwd (it refuses a cwd that is not a
    # directory); the session's cwd itself is not part of the events.
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1])["event"]["type"] == "agent_end"


def test_sigint_during_a_run_aborts_it_and_exits_130(tmp_path):
    chat = ChatProcess("go", script=slow_script(tmp_path))
    try:
        chat.wait_for(lambda: len(chat.stdout) >= 2, "the first delta")
        chat.proc.send_signal(signal.SIGINT)
        assert chat.wait() == 130
    finally:
        chat.kill()
    assert "tiller: aborted" in chat.stderr
    text = chat.stdout.rstrip("\n")
    assert text and SLOW_TEXT.startswith(text) and text != SLOW_TEXT


# --- interactive ---------------------------------------------------------------------------


def test_interactive_prompts_in_turn_then_eof_exits_0(tmp_path):
    script = write_script(tmp_path, [text_reply("reply one"), text_reply("reply two")])
    chat = ChatProcess(script=script)
    try:
        chat.send("first")
        chat.wait_stderr("[faux/faux-1: ")  # the run is over: the next line is a new prompt
        chat.send("second")
        chat.wait_stderr("[faux/faux-1: ", count=2)
        chat.close_stdin()
        assert chat.wait() == 0, chat.stderr
    finally:
        chat.kill()
    assert chat.stdout == "reply one\nreply two\n"
    assert "steering" not in chat.stderr


def test_a_line_typed_while_a_run_streams_steers_it(tmp_path):
    script = slow_script(tmp_path, text_reply("Steered!"))
    chat = ChatProcess("--json", script=script)
    try:
        chat.send("count to sixty")
        chat.wait_stdout('"text_delta"')
        chat.send("stop counting")
        chat.wait_stdout('"agent_end"')
        chat.close_stdin()
        assert chat.wait() == 0, chat.stderr
    finally:
        chat.kill()
    assert "steering: stop counting" in chat.stderr
    events = [line["event"] for line in chat.json_events()]
    kinds = [e["type"] for e in events]
    assert kinds.count("agent_start") == kinds.count("agent_end") == 1  # one run, steered
    assert {"type": "queue_update", "steering": ["stop counting"], "followUp": []} in events
    users = [e["message"] for e in events if e["type"] == "message_start" and e["message"]["role"] == "user"]
    assert [m["content"][0]["text"] for m in users] == ["count to sixty", "stop counting"]
    replies = [e["message"] for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"]
    assert [m["content"][0]["text"] for m in replies] == [SLOW_TEXT, "Steered!"]


def test_sigint_in_interactive_mode_aborts_the_run_and_keeps_the_session(tmp_path):
    script = slow_script(tmp_path, text_reply("still here"))
    chat = ChatProcess("--json", script=script)
    try:
        chat.send("go")
        chat.wait_stdout('"text_delta"')
        chat.proc.send_signal(signal.SIGINT)
        chat.wait_stdout('"agent_end"')
        chat.send("again")
        chat.wait_stdout('"agent_end"', count=2)
        chat.close_stdin()
        assert chat.wait() == 0, chat.stderr
    finally:
        chat.kill()
    assert "aborting" in chat.stderr and "tiller: aborted" in chat.stderr
    replies = [e["event"]["message"] for e in chat.json_events()
               if e["event"]["type"] == "message_end" and e["event"]["message"]["role"] == "assistant"]
    assert [m["stopReason"] for m in replies] == ["aborted", "stop"]
    assert replies[1]["content"][0]["text"] == "still here"


def test_sigint_at_the_idle_prompt_exits_cleanly(tmp_path):
    chat = ChatProcess(script=write_script(tmp_path, [text_reply("hi there")]))
    try:
        chat.send("hello")
        chat.wait_stderr("[faux/faux-1: ")
        chat.proc.send_signal(signal.SIGINT)
        assert chat.wait() == 0, chat.stderr
    finally:
        chat.kill()
    assert chat.stdout == "hi there\n"


@pytest.mark.parametrize("stdin", ["", "\n\n"])
def test_interactive_with_nothing_to_say_exits_0(tmp_path, stdin):
    result = run_chat(script=write_script(tmp_path, []), input=stdin)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


def test_resume_continues_the_latest_saved_session_of_the_directory(tmp_path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    first = write_script(tmp_path, [text_reply("Noted: the answer is 42.")], name="first.json")
    result = run_chat("Remember 42", "--cwd", str(workspace), script=first)
    assert result.returncode == 0, result.stderr

    # A new process, the same data dir: --resume loads the session, and the model sees history.
    second = write_script(tmp_path, [text_reply("You said 42.")], name="second.json")
    resumed = run_chat("What did I say?", "--resume", "--json", "--cwd", str(workspace), script=second)
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed session" in resumed.stderr and "(2 messages)" in resumed.stderr
    events = [json.loads(line)["event"] for line in resumed.stdout.splitlines()]
    final = next(e for e in reversed(events) if e["type"] == "agent_end")
    assert [m["role"] for m in final["messages"]] == ["user", "assistant"]

    nothing = run_chat("hi", "--resume", "--cwd", str(tmp_path), script=second)
    assert nothing.returncode == 2 and "No saved session" in nothing.stderr


def test_rewind_lists_checkpoints_and_goes_back_to_one(tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("as it was\n")
    script = write_script(tmp_path, [text_reply("reply one"), text_reply("reply two")])
    chat = ChatProcess(script=script, cwd=workspace)
    try:
        chat.send("first")
        chat.wait_stderr("[faux/faux-1: ")
        (workspace / "notes.txt").write_text("changed between prompts\n")
        chat.send("second")
        chat.wait_stderr("[faux/faux-1: ", count=2)
        chat.send("/rewind")
        chat.wait_stderr("usage: /rewind")
        chat.send("/rewind 1 both")
        chat.wait_stderr("rewound both to checkpoint 1")
        chat.send("/rewind 9")
        chat.wait_stderr("no checkpoint 9 (there are 3)")
        chat.close_stdin()
        assert chat.wait() == 0, chat.stderr
    finally:
        chat.kill()
    listing = chat.stderr.split("checkpoints (oldest first):")[1]
    assert "  1  " in listing and "turn    first" in listing and "turn    second" in listing
    assert ("rewound both to checkpoint 1; restored notes.txt; 0 messages in the conversation "
            "(undo: /rewind 3 both)") in chat.stderr
    assert (workspace / "notes.txt").read_text() == "as it was\n"
    assert chat.stdout == "reply one\nreply two\n"  # /rewind is never sent as a prompt


def test_approval_mode_plan_refuses_a_write_and_mode_switches_it(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    write = {"content": [{"type": "toolCall", "name": "write", "arguments": {"path": "plan.txt", "content": "x\n"}}]}
    script = write_script(tmp_path, [write, text_reply("planned")])
    result = run_chat("--approval-mode", "plan", "plan it", "--cwd", str(work), script=script)
    assert result.returncode == 0, result.stderr
    assert "plan mode" in result.stdout.splitlines()[1] and result.stdout.endswith("planned\n")
    assert not (work / "plan.txt").exists()

    # Interactive: /mode shows the mode, switches to plan, refuses what is not a mode; never a prompt.
    script = write_script(tmp_path, [write, text_reply("planned")], name="again.json")
    chat = ChatProcess("--cwd", str(work), script=script, cwd=work)
    try:
        chat.send("/mode")
        chat.wait_stderr("usage: /mode")
        chat.send("/mode plan")
        chat.wait_stderr("approval mode: plan (")
        chat.send("/mode sometimes")
        chat.wait_stderr("unknown mode: sometimes")
        chat.send("write it")
        chat.wait_stdout("planned")
        chat.close_stdin()
        assert chat.wait() == 0, chat.stderr
    finally:
        chat.kill()
    assert "approval mode: ask\n" in chat.stderr and "  plan         explore and plan" in chat.stderr
    assert "plan mode" in chat.stdout and not (work / "plan.txt").exists()
