"""An index of the saved sessions, so that listing them does not mean reading them.

`<data dir>/sessions/index.sqlite3` (SQLite, WAL, so several tiller processes can share it)
holds one row per session file: id, cwd, model, title, message count, times, and how much
of the file was read (`offset`) at which size and mtime. The JSON Lines files stay the
source of truth; the index is only ever derived from them:

- Listing first compares each file's size and mtime (one `stat` per file) with its row. A
  file that grew is read from `offset` on (session files are append-only), a file that
  changed otherwise is read again, a new file is read in full, a row whose file is gone is
  dropped. So an index that is missing, stale, or written by another process is brought up
  to date by the next listing, and a listing never shows what is not on disk.
- Reading a file costs little. A line tiller wrote for a message (it starts with
  `{"type":"message","message":{"role":"` and ends with `}}`) is counted without being
  parsed; only the first user message (the title) is parsed and validated. Every other line
  is parsed as JSON, so damaged lines (a torn write later ended by the next append) count for
  nothing, as when the file is loaded.
- A `branch` record (a rewind of the conversation) is followed as the loader follows it
  (`branch_conversation`): the count becomes the messages it keeps, and the title that of
  the first user message among them. For that a row keeps how many message records the
  file holds, which of them the loader cannot use, and where each user message's line
  starts (a title is read back from there: branches are rare).
- Only complete lines are read: a torn last line (a crash mid-write) is left for later, and
  the session is still listed with what came before it.
- An index that cannot be opened (corrupt, read-only directory) is rebuilt, or kept in
  memory for this listing.

All of it is blocking file and database work: callers run it in a worker thread.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..agent.types import AgentMessage
from .session_files import branch_conversation, session_title

logger = logging.getLogger("tiller.store")

INDEX_NAME = "index.sqlite3"
SCHEMA_VERSION = 2
_MESSAGE = TypeAdapter(AgentMessage)
# How SessionFile.append_message starts a line (compact JSON, keys in this order).
_MESSAGE_LINE = b'{"type":"message","message":{"role":"'
_USER_MESSAGE_LINE = b'{"type":"message","message":{"role":"user"'

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    cwd TEXT,
    model TEXT,
    title TEXT,
    message_count INTEGER NOT NULL DEFAULT 0,
    created INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL DEFAULT 0,
    size INTEGER NOT NULL DEFAULT 0,
    mtime_ns INTEGER NOT NULL DEFAULT 0,
    offset INTEGER NOT NULL DEFAULT 0,
    records INTEGER NOT NULL DEFAULT 0,
    users TEXT NOT NULL DEFAULT '[]',
    unusable TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS sessions_by_update ON sessions (updated_at DESC);
"""


@dataclass
class IndexedSession:
    id: str
    cwd: str
    model: str
    title: str
    message_count: int
    created: int
    updated_at: int


_ROW_COLUMNS = "id, cwd, model, title, message_count, created, updated_at, size, mtime_ns, offset, records, users, unusable"


@dataclass
class _Row:
    """What the index knows of one file, updated as more of the file is read."""

    id: str
    cwd: str | None = None
    model: str | None = None
    title: str | None = None
    message_count: int = 0
    created: int = 0
    updated_at: int = 0
    size: int = 0
    mtime_ns: int = 0
    offset: int = 0
    # For following branch records: message records so far (numbered as the loader numbers
    # them), [record, byte offset of its line] of each user message, records the loader skips.
    records: int = 0
    users: list[list[int]] = field(default_factory=list)
    unusable: list[int] = field(default_factory=list)

    @classmethod
    def from_db(cls, values: tuple[Any, ...]) -> _Row:
        id, cwd, model, title, count, created, updated_at, size, mtime_ns, offset, records, users, unusable = values
        return cls(id, cwd, model, title, count, created, updated_at, size, mtime_ns, offset, records,
                   json.loads(users), json.loads(unusable))

    def to_db(self) -> tuple[Any, ...]:
        return (self.id, self.cwd, self.model, self.title, self.message_count, self.created, self.updated_at,
                self.size, self.mtime_ns, self.offset, self.records, json.dumps(self.users),
                json.dumps(self.unusable))

    def add_message(self, user: bool, offset: int) -> None:
        if user:
            self.users.append([self.records, offset])
        self.records += 1
        self.message_count += 1


class SessionIndex:
    def __init__(self, sessions_dir: Path) -> None:
        self.dir = sessions_dir
        self.path = sessions_dir / INDEX_NAME

    def list(self, cwd: str | None = None) -> list[IndexedSession]:
        """Every readable saved session (of `cwd`, if given), most recently updated first."""
        if not self.dir.is_dir():
            return []
        with self._open() as db:
            self._refresh(db)
            query = ("SELECT id, cwd, model, title, message_count, created, updated_at FROM sessions "
                     "WHERE cwd IS NOT NULL AND model IS NOT NULL")
            params: tuple[Any, ...] = ()
            if cwd is not None:
                query += " AND cwd = ?"
                params = (os.path.realpath(cwd),)
            rows = db.execute(query + " ORDER BY updated_at DESC, id", params).fetchall()
        return [IndexedSession(id, cwd, model, title or "(new session)", count, created, updated)
                for id, cwd, model, title, count, created, updated in rows]

    # --- the database --------------------------------------------------------------------

    def _open(self) -> _Database:
        try:
            return _Database(self._connect(self.path))
        except sqlite3.DatabaseError as error:
            logger.warning("Session index %s unusable (%s); rebuilding it", self.path, error)
        for suffix in ("", "-wal", "-shm"):
            try:
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            except OSError:
                pass
        try:
            return _Database(self._connect(self.path))
        except sqlite3.DatabaseError as error:
            logger.warning("Session index %s cannot be written (%s); indexing in memory", self.path, error)
            return _Database(self._connect(":memory:"))

    @staticmethod
    def _connect(target: Path | str) -> sqlite3.Connection:
        db = sqlite3.connect(target, timeout=10.0, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            # Checked and (re)built under the write lock: two listings opening a new index at
            # once must not drop the table the other has just made.
            db.execute("BEGIN IMMEDIATE")
            try:
                if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                    db.execute("DROP TABLE IF EXISTS sessions")
                    for statement in filter(str.strip, _SCHEMA.split(";")):
                        db.execute(statement)
                    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("SELECT count(*) FROM sessions").fetchone()
        except sqlite3.DatabaseError:
            db.close()
            raise
        if isinstance(target, Path):
            try:
                os.chmod(target, 0o600)  # it holds titles (the user's words), like the session files
            except OSError:
                pass
        return db

    def _refresh(self, db: sqlite3.Connection) -> None:
        on_disk: dict[str, os.stat_result] = {}
        with os.scandir(self.dir) as entries:
            for entry in entries:
                if entry.name.endswith(".jsonl") and not entry.name.startswith("."):
                    try:
                        # Only regular files, as the loader: a FIFO would block the read,
                        # and a symlink could point anywhere.
                        if entry.is_file(follow_symlinks=False):
                            on_disk[entry.name[: -len(".jsonl")]] = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
        # (size, mtime_ns, offset) by id: all a listing with nothing changed needs to read.
        known = {id: (size, mtime_ns, offset) for id, size, mtime_ns, offset in
                 db.execute("SELECT id, size, mtime_ns, offset FROM sessions")}
        gone = [session_id for session_id in known if session_id not in on_disk]
        changed: list[_Row] = []
        for session_id, status in on_disk.items():
            seen = known.get(session_id)
            if seen is not None and seen[0] == status.st_size and seen[1] == status.st_mtime_ns:
                continue
            if seen is None or status.st_size < seen[2] or status.st_size == seen[0]:
                row = _Row(session_id)  # new, shrunk or rewritten: read it all
            else:
                row = _Row.from_db(db.execute(f"SELECT {_ROW_COLUMNS} FROM sessions WHERE id = ?",
                                              (session_id,)).fetchone())
            try:
                _read_on(row, self.dir / f"{session_id}.jsonl", status)
            except OSError as error:
                logger.warning("Cannot index %s: %s", session_id, error)
                continue
            changed.append(row)
        if not gone and not changed:
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("DELETE FROM sessions WHERE id = ?", [(session_id,) for session_id in gone])
            db.executemany(
                f"INSERT OR REPLACE INTO sessions ({_ROW_COLUMNS}) VALUES ({', '.join('?' * 13)})",
                [row.to_db() for row in changed],
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


class _Database:
    """A connection that closes when the `with` block ends (sqlite3's own context manager
    only ends a transaction)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        return self.db

    def __exit__(self, *exc: object) -> None:
        self.db.close()


def _read_on(row: _Row, path: Path, status: os.stat_result) -> None:
    """Read `path` from `row.offset` to its last complete line into `row`."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)  # swapped for a FIFO meanwhile: no wait
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        handle.seek(row.offset)
        data = handle.read(max(status.st_size - row.offset, 0))
    end = data.rfind(b"\n") + 1
    at = row.offset
    for line in data[:end].split(b"\n"):
        if line:
            _read_line(row, line, at, path)
        at += len(line) + 1
    row.offset += end
    row.size, row.mtime_ns = status.st_size, status.st_mtime_ns
    row.updated_at = max(row.created, status.st_mtime_ns // 1_000_000)


def _read_line(row: _Row, line: bytes, offset: int, path: Path) -> None:
    if line.startswith(_MESSAGE_LINE) and line.endswith(b"}}"):  # the bulk of a file: count it
        user = line.startswith(_USER_MESSAGE_LINE)
        if user and row.title is None:
            try:
                row.title = _title(json.loads(line)["message"])
            except ValueError:
                return  # not whole after all: not a record for the loader either
        row.add_message(user, offset)
        return
    try:
        record = json.loads(line)
    except ValueError:
        return  # a damaged line (a torn write, later ended by the next append); the loader skips it too
    if not isinstance(record, dict):
        return
    kind = record.get("type")
    if kind == "message":
        message = record.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            row.unusable.append(row.records)  # the loader skips it as a message that does not validate
            row.records += 1
            return
        row.add_message(message["role"] == "user", offset)
        if row.title is None and message["role"] == "user":
            row.title = _title(message)
    elif kind == "branch":
        kept = branch_conversation(record, row.records, set(row.unusable))
        row.message_count = len(kept)
        row.title = _first_title(path, row.users, set(kept))
    elif kind == "session":
        cwd, model, created = record.get("cwd"), record.get("model"), record.get("created")
        if row.cwd is not None:
            return  # a second header: the loader skips it too
        if isinstance(cwd, str) and os.path.isabs(cwd) and isinstance(model, str):
            row.cwd, row.model = os.path.realpath(cwd), model
        if isinstance(created, int) and not isinstance(created, bool):
            row.created = created
    elif kind == "settings" and isinstance(record.get("model"), str):
        row.model = record["model"]


def _first_title(path: Path, users: list[list[int]], kept: set[int]) -> str | None:
    """The title of the first user message among the `kept` records, read from its line."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        for record, offset in users:
            if record in kept:
                handle.seek(offset)
                try:
                    title = _title(json.loads(handle.readline())["message"])
                except (ValueError, KeyError, TypeError):
                    continue
                if title is not None:
                    return title
    return None


def _title(message: dict[str, Any]) -> str | None:
    try:
        return session_title([_MESSAGE.validate_python(message)])
    except ValidationError:
        return None
