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
