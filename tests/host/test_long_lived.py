"""A loaded session's objects are kept out of full garbage collections (which pause every
session while they scan), and the collector is as it was once every load has ended."""

from __future__ import annotations

import gc
import threading

from tiller.ai.types import TextContent, UserMessage
from tiller.persistence.long_lived import long_lived_objects
from tiller.persistence.session_files import SessionStore


def test_the_messages_of_a_loaded_session_are_frozen_and_the_collector_comes_back(tmp_path):
    store = SessionStore(tmp_path / "sessions")
    file = store.create("s1", str(tmp_path), "faux/faux-1")
    for i in range(50):
        file.append_message(UserMessage(content=[TextContent(text=f"message {i}")], timestamp=i))
    assert gc.isenabled()
    gc.unfreeze()
    try:
        with long_lived_objects():
            assert not gc.isenabled()  # no full collection while the objects are built
            saved = store.load("s1")
        assert gc.isenabled()
        assert len(saved.messages) == 50
        tracked = {id(o) for o in gc.get_objects()}
        assert not any(id(m) in tracked for m in saved.messages), "the loaded messages are in the permanent generation"
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_overlapping_loads_keep_the_collector_off_until_the_last_ends():
    first_in, second_done = threading.Event(), threading.Event()
    seen: list[bool] = []

    def slow_load() -> None:
        with long_lived_objects():
            first_in.set()
            second_done.wait(10)
            seen.append(gc.isenabled())  # the other load ended: still off while this one runs

    try:
        worker = threading.Thread(target=slow_load)
        worker.start()
        first_in.wait(10)
        with long_lived_objects():
            pass
        second_done.set()
        worker.join(10)
        assert seen == [False] and gc.isenabled()
    finally:
        gc.unfreeze()


def test_a_collector_turned_off_by_the_process_stays_off():
    gc.disable()
    try:
        with long_lived_objects():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
