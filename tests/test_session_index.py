"""The session index (persistence/session_index.py) against real session files and a real
SQLite database: built from the files, brought up to date as they change, rebuilt when it
is deleted or damaged, and never listing what is not on disk."""

from __future__ import annotations

import json
import os
import sqlite3
import threading

from tiller.ai.types import AssistantMessage, TextContent, UserMessage
from tiller.persistence.session_files import SessionStore, session_title
from tiller.persistence.session_index import INDEX_NAME, SessionIndex


def saved_session(store: SessionStore, session_id: str, cwd: str, prompts: list[str], model: str = "faux/faux-1"):
    file = store.create(session_id, cwd=cwd, model=model)
    for prompt in prompts:
        file.append_message(UserMessage(content=[TextContent(text=prompt)]))
        file.append_message(AssistantMessage(content=[TextContent(text="ok")], api="faux", provider="faux", model="x"))
    return file


def listed(index: SessionIndex, cwd: str | None = None) -> dict[str, tuple[int, str, str]]:
    return {s.id: (s.message_count, s.title, s.model) for s in index.list(cwd)}


def test_lists_from_the_files_and_follows_appends(tmp_path):
    store = SessionStore(tmp_path)
    a = saved_session(store, "a", str(tmp_path), ["Fix the parser\nplease", "and the tests"])
    saved_session(store, "b", "/elsewhere", ["Write docs"])
    index = SessionIndex(store.dir)
    assert listed(index) == {"a": (4, "Fix the parser", "faux/faux-1"), "b": (2, "Write docs", "faux/faux-1")}
    assert listed(index, cwd="/elsewhere") == {"b": (2, "Write docs", "faux/faux-1")}
    assert (store.dir / INDEX_NAME).is_file()

    # Appends (by this or any process) and a model change show at the next listing.
    a.append_message(UserMessage(content="one more"))
    a.append_settings("openai/gpt-4.1", "low", "ask")
    assert listed(index)["a"] == (5, "Fix the parser", "openai/gpt-4.1")
    # A deleted file's session is gone from the listing.
    store.delete("b")
    assert set(listed(index)) == {"a"}


def test_a_torn_last_line_still_lists_the_session_and_is_not_counted(tmp_path):
    store = SessionStore(tmp_path)
    saved_session(store, "torn", str(tmp_path), ["Keep me"])
    path = store.dir / "torn.jsonl"
    with path.open("a") as handle:
        handle.write('{"type":"message","message":{"role":"user","content":"cut sh')
    index = SessionIndex(store.dir)
    assert listed(index) == {"torn": (2, "Keep me", "faux/faux-1")}
    # The next append ends the torn line first (SessionStore.open); the torn bytes never count.
    store.open("torn").append_message(UserMessage(content="after the crash"))
    assert listed(index) == {"torn": (3, "Keep me", "faux/faux-1")}
    assert len(store.load("torn").messages) == 3


def test_damaged_files_list_what_can_be_listed(tmp_path):
    store = SessionStore(tmp_path)
    saved_session(store, "good", str(tmp_path), ["Fine"])
    store.dir.joinpath("empty.jsonl").write_text("")
    store.dir.joinpath("number.jsonl").write_text("123\n")
    store.dir.joinpath("badcwd.jsonl").write_text(json.dumps({"type": "session", "id": "badcwd", "cwd": 7,
                                                              "created": 1, "model": "m"}) + "\n")
    nullmodel = saved_session(store, "nullmodel", str(tmp_path), ["Model gone"])
    nullmodel.append({"type": "settings", "model": None})
    mixed = saved_session(store, "mixed", str(tmp_path), ["Survives"])
    mixed.append({"type": "message", "message": 5})  # not a message: the loader skips it, so does the count
    with (store.dir / "mixed.jsonl").open("a") as handle:
        handle.write("not json\n[1, 2]\n")
    index = SessionIndex(store.dir)
    assert listed(index) == {"good": (2, "Fine", "faux/faux-1"), "nullmodel": (2, "Model gone", "faux/faux-1"),
                             "mixed": (2, "Survives", "faux/faux-1")}


def test_the_index_is_rebuilt_when_deleted_damaged_or_of_another_version(tmp_path):
    store = SessionStore(tmp_path)
    for n in range(5):
        saved_session(store, f"s{n}", str(tmp_path), [f"Prompt {n}"])
    index = SessionIndex(store.dir)
    expected = listed(index)
    assert len(expected) == 5

    for suffix in ("", "-wal", "-shm"):
        (store.dir / f"{INDEX_NAME}{suffix}").unlink(missing_ok=True)
    assert listed(index) == expected

    (store.dir / INDEX_NAME).write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        (store.dir / f"{INDEX_NAME}{suffix}").unlink(missing_ok=True)
    assert listed(index) == expected

    with sqlite3.connect(store.dir / INDEX_NAME) as db:
        db.execute("PRAGMA user_version=999")
    assert listed(index) == expected


def test_a_rewritten_file_is_read_again(tmp_path):
    store = SessionStore(tmp_path)
    saved_session(store, "r", str(tmp_path), ["First version", "second"])
    index = SessionIndex(store.dir)
    assert listed(index)["r"] == (4, "First version", "faux/faux-1")
    path = store.dir / "r.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    # Shorter than what was indexed: read from the start again.
    path.write_text("".join(lines[:3]).replace("First version", "Rewritten"))
    assert listed(index)["r"] == (2, "Rewritten", "faux/faux-1")


def test_listing_from_threads_at_once_while_sessions_grow(tmp_path):
    store = SessionStore(tmp_path)
    files = [saved_session(store, f"t{n}", str(tmp_path), ["Go"]) for n in range(20)]
    index = SessionIndex(store.dir)
    errors: list[BaseException] = []

    def lister() -> None:
        try:
            for _ in range(10):
                index.list()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=lister) for _ in range(4)]
    for thread in threads:
        thread.start()
    for file in files:
        file.append_message(UserMessage(content="more"))
    for thread in threads:
        thread.join()
    assert errors == []
    assert {s.message_count for s in index.list()} == {3}


def test_no_index_is_created_without_sessions_and_the_index_is_private(tmp_path):
    store = SessionStore(tmp_path)
    assert SessionIndex(store.dir).list() == []
    assert not store.dir.exists()
    saved_session(store, "p", str(tmp_path), ["Private"])
    SessionIndex(store.dir).list()
    assert os.stat(store.dir / INDEX_NAME).st_mode & 0o077 == 0


def test_branch_records_are_followed_as_the_loader_follows_them(tmp_path):
    store = SessionStore(tmp_path)
    file = saved_session(store, "r", str(tmp_path), ["first prompt", "second", "third"])  # records 0-5
    index = SessionIndex(store.dir)
    assert listed(index)["r"] == (6, "first prompt", "faux/faux-1")

    def agree(count: int, title: str) -> None:
        saved = store.load("r")
        assert (len(saved.messages), session_title(saved.messages)) == (count, title)
        assert listed(index)["r"][:2] == (count, title)  # read on from where the last listing stopped
        (store.dir / INDEX_NAME).unlink()
        assert listed(index)["r"][:2] == (count, title)  # and the whole file read at once

    file.append_branch([])  # a rewind to before the first prompt
    agree(0, "(new session)")
    file.append_message(UserMessage(content=[TextContent(text="a new start")]))  # record 6
    agree(1, "a new start")
    file.append_branch([[2, 4], [6, 7]])  # a later rewind keeps the second turn and the new start
    agree(3, "second")
    file.append_branch([[0, 2], [6, 7]])  # and an undo brings the first turn back
    agree(3, "first prompt")
    # A message the loader cannot use keeps its number but is in no conversation.
    with file.path.open("a") as handle:
        handle.write('{"type":"message","message":{"content":"no role"}}\n')  # record 7
    file.append_message(UserMessage(content="after it"))  # record 8
    file.append_branch([[6, 9]])
    agree(2, "a new start")
