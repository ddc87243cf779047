"""Saving a session as it goes, so that no completed message is ever lost.

The file is created when the first message ends (an empty session leaves nothing on disk);
its header records what the session may do (model, tools, system prompt) and a settings
line the thinking level and approval mode chosen before then. Each completed message is
appended (fsynced) before the client hears of its end, and so is how each approval went. A
loaded session appends to its existing file.

It also knows which record of the file each message of the conversation is (records are
numbered in file order), so a checkpoint can name the conversation it saw and a rewind can
bring it back from the file, dropped messages included (see persistence/session_files.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..persistence.session_files import (
    SessionFile,
    SessionStore,
    approval_record,
    message_record,
    settings_record,
    to_ranges,
)
from ..protocol.events import ApprovalResolvedEvent, PersistenceErrorEvent


@dataclass(frozen=True)
class SessionSettings:
    model: str
    thinking_level: str
    approval_mode: str
    tool_execution: str
    tools: list[str]
    system_prompt: str


class SessionRecorder:
    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        cwd: str,
        settings: Callable[[], SessionSettings],
        report: Callable[[PersistenceErrorEvent], None],
        file: SessionFile | None = None,
    ) -> None:
        self._store = store
        self._session_id = session_id
        self._cwd = cwd
        self._settings = settings
        self._report = report
        self._file = file
        self.last_saved: Any = None
        self._records = 0  # message records in the file
        # id(message) -> (the message, its record number); the message is held so that its
        # id is never reused by another object.
        self._numbers: dict[int, tuple[Any, int]] = {}
        self._pending: list[dict[str, Any]] = []  # records made before the file existed

    def save_message(self, message: Any) -> None:
        """Durably append a completed message (fsync). Losing the file must not lose the
        session: a failure is reported (once per failure) and the session goes on."""
        try:
            if self._file is None:
                self._file = self._create(message_record(message))
            else:
                self._file.append_message(message)
            self._numbers[id(message)] = (message, self._records)
            self._records += 1
        except OSError as error:
            self._report(PersistenceErrorEvent(message=f"Could not save the session: {error}"))
        self.last_saved = message

    def save_approval(self, event: ApprovalResolvedEvent) -> None:
        """Record how an approval went (a reloaded session shows the outcome again)."""
        try:
            record = approval_record(event.model_dump(mode="json", by_alias=True, exclude_none=True))
            if self._file is None:
                self._file = self._create(record)
            else:
                self._file.append(record)
        except OSError as error:
            self._report(PersistenceErrorEvent(message=f"Could not save the session: {error}"))

    # --- the conversation as records ------------------------------------------------------

    def adopt(self, messages: list[Any], records: list[int], total: int) -> None:
        """A loaded session: its messages are these records of a file holding `total`."""
        self._records = total
        self._numbers = {id(m): (m, n) for m, n in zip(messages, records, strict=True)}

    def records_of(self, messages: list[Any]) -> list[int] | None:
        """The record numbers of a conversation; None if a message of it was never saved."""
        numbers = []
        for message in messages:
            entry = self._numbers.get(id(message))
            if entry is None or entry[0] is not message:
                return None
            numbers.append(entry[1])
        return numbers

    async def restore(self, records: list[int]) -> list[Any]:
        """The conversation made of these records, read back from the file; recorded there as a
        branch, so a reload finds it (the other messages stay in the file). The file is read in
        a worker thread: a long session takes a second to parse, and every other session's
        stream would stall meanwhile."""
        if not records:
            if self._file is not None:
                self._file.append_branch([])
            return []
        if self._file is None:
            raise ValueError("the session has no saved messages to restore")
        saved = await asyncio.to_thread(self._store.load, self._session_id)
        if any(not 0 <= n < len(saved.records) or saved.records[n] is None for n in records):
            raise ValueError("the session file no longer holds every message of that conversation")
        messages = [saved.records[n] for n in records]
        self._file.append_branch(to_ranges(records))
        self._records = len(saved.records)
        self._numbers.update({id(m): (m, n) for m, n in zip(messages, records, strict=True)})
        return messages

    def save_record(self, record: dict[str, Any]) -> None:
        """Durably append a record of another kind (a compaction, ...); before the file
        exists it waits to follow the file's first lines."""
        if self._file is None:
            self._pending.append(record)
            return
        try:
            self._file.append(record)
        except OSError as error:
            self._report(PersistenceErrorEvent(message=f"Could not save the session: {error}"))

    def save_settings(self) -> None:
        """Record changed settings; before the file exists they go into its first lines."""
        if self._file is None:
            return
        settings = self._settings()
        try:
            self._file.append_settings(settings.model, settings.thinking_level, settings.approval_mode,
                                       settings.tool_execution)
        except OSError as error:
            self._report(PersistenceErrorEvent(message=f"Could not save the session's settings: {error}"))

    def _create(self, first: dict[str, Any]) -> SessionFile:
        # Header, settings and the first record in one write and one fsync: the first
        # prompt of a session then waits for the disk no longer than any later prompt.
        settings = self._settings()
        # Records made before the file existed (a compaction setting, ...) go in that same write.
        pending, self._pending = tuple(self._pending), []
        return self._store.create(
            self._session_id, self._cwd, settings.model, tools=settings.tools, system_prompt=settings.system_prompt,
            approval_mode=settings.approval_mode,
            then=(settings_record(settings.model, settings.thinking_level, settings.approval_mode,
                                  settings.tool_execution),
                  *pending, first),
        )
