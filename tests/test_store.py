"""Session files: durable appends, torn last lines, listing and deleting."""

from __future__ import annotations

from tiller.ai.types import AssistantMessage, TextContent, UserMessage
from tiller.persistence.session_files import SessionStore, default_data_dir, session_title


def test_round_trip_and_torn_last_line(tmp_path):
    store = SessionStore(tmp_path)
    file = store.create("abc123", cwd=str(tmp_path), model="faux/faux-1", tools=["read", "ls"],
                        system_prompt="Only read.")
    file.append_message(UserMessage(content=[TextContent(text="Fix the flaky test\nplease")]))
    file.append_message(AssistantMessage(content=[TextContent(text="On it.")], api="faux", provider="faux", model="faux-1"))
    file.append_settings("openai/gpt-4.1-mini", "low", "acceptEdits")
    with file.path.open("a") as handle:
        handle.write('{"type":"message","message":{"role":"assistant","content":[{"type":"te')  # kill -9 mid-write

    saved = store.load("abc123")
    assert [m.role for m in saved.messages] == ["user", "assistant"]
    assert saved.messages[1].text() == "On it."
    assert saved.model == "openai/gpt-4.1-mini" and saved.thinking_level == "low"
    assert saved.approval_mode == "acceptEdits"
    assert saved.tools == ["read", "ls"] and saved.system_prompt == "Only read."
    assert session_title(saved.messages) == "Fix the flaky test"
    assert file.path.stat().st_mode & 0o777 == 0o600


def test_list_filters_by_cwd_and_delete(tmp_path):
    store = SessionStore(tmp_path)
    store.create("one", cwd="/work/a", model="faux/faux-1")
    store.create("two", cwd="/work/b", model="faux/faux-1")
    (store.dir / "junk.jsonl").write_text("not json\n")
    assert sorted(s.id for s in store.list()) == ["one", "two"]
    assert [s.id for s in store.list(cwd="/work/b")] == ["two"]
    assert store.delete("one") and not store.delete("one")
    assert [s.id for s in store.list()] == ["two"]


def test_ids_cannot_escape_the_store(tmp_path):
    store = SessionStore(tmp_path)
    for bad in ("../x", "", ".hidden"):
        try:
            store.load(bad)
        except ValueError as error:
            assert "Invalid session id" in str(error)
        else:
            raise AssertionError(f"{bad!r} was accepted")


def test_data_dir_resolution(tmp_path):
    assert default_data_dir({}, configured=str(tmp_path / "d")) == tmp_path / "d"
    assert default_data_dir({"TILLER_DATA_DIR": "/x"}) == default_data_dir({"TILLER_DATA_DIR": "/x", "XDG_DATA_HOME": "/y"})
    assert str(default_data_dir({"XDG_DATA_HOME": "/y"})) == "/y/tiller"


# Run in a child process: RLIMIT_FSIZE and SIGXFSZ are process-wide.
SHORT_WRITE = r"""
import json, resource, signal, sys
from pathlib import Path
from tiller.ai.types import TextContent, UserMessage
from tiller.persistence.session_files import SessionStore

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # as when the disk fills: the write fails, no signal
store = SessionStore(Path(sys.argv[1]))
file = store.create("abc", cwd="/tmp", model="faux/faux-1")
file.append_message(UserMessage(content=[TextContent(text="one")]))
size = file.path.stat().st_size
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 20, hard))  # room for part of the next line only
try:
    file.append_message(UserMessage(content=[TextContent(text="two " * 20)]))
    error = None
except OSError as raised:
    error = raised.errno
size_after = file.path.stat().st_size
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
file.append_message(UserMessage(content=[TextContent(text="three")]))
saved = store.load("abc")
print(json.dumps({"error": error, "grew": size_after - size, "texts": [m.content[0].text for m in saved.messages]}))
"""


def test_a_short_write_raises_and_leaves_no_half_line(tmp_path):
    import errno
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", SHORT_WRITE, str(tmp_path)], capture_output=True, text=True,
                         check=True).stdout
    result = json.loads(out)
    assert result["error"] == errno.EFBIG  # the caller hears of it (and reports a persistence error)
    assert result["grew"] == 0  # the part that was written is cut off again
    assert result["texts"] == ["one", "three"]  # the next append is a line of its own
