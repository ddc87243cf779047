"""Sessions saved as append-only JSON Lines, so no completed message is ever lost.

One file per session, `<data dir>/sessions/<sessionId>.jsonl`:

    {"type":"session","version":1,"id":"…","cwd":"…","created":1760000000000,"model":"openai/gpt-4.1-mini",
     "tools":["read","bash"],"systemPrompt":"…","approvalMode":"ask"}
    {"type":"message","message":{…a wire message…}}
    {"type":"settings","model":"…","thinkingLevel":"low","approvalMode":"ask","toolExecution":"parallel"}
    {"type":"approval","event":{…an approval_resolved event…}}
    {"type":"branch","conversation":[[0,4]]}

Message records are numbered in file order from 0. A `branch` record (written by a rewind of
the conversation) makes the conversation those records (ranges, end exclusive); messages after
it extend it. The messages it left out stay in the file, as a branch.

Each line is written, flushed and fsynced when a message ends, so `kill -9` loses at most
the message in flight. A torn last line (the process died mid-write) is skipped on load, as
is any line that cannot be used (not JSON, not an object, a message that does not validate,
a setting that is not a string); a file without a usable header cannot be loaded
(UnreadableSession) and is left out of listings.
The data directory is `initializationOptions.dataDir`, else `$TILLER_DATA_DIR`, else
`$XDG_DATA_HOME/tiller`, else `~/.local/share/tiller`.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..agent.types import AgentMessage
from ..ai.types import now_ms

logger = logging.getLogger("tiller.store")

FORMAT_VERSION = 1
_MESSAGE = TypeAdapter(AgentMessage)


def default_data_dir(env: Mapping[str, str] | None = None, configured: str | None = None) -> Path:
    env = os.environ if env is None else env
    if configured:
        return Path(configured).expanduser()
    if env.get("TILLER_DATA_DIR"):
        return Path(env["TILLER_DATA_DIR"]).expanduser()
    base = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "tiller"


@dataclass
class SavedSession:
    id: str
    cwd: str
    created: int
    model: str
    thinking_level: str = "off"
    # What the session was allowed to do: a reload must not widen it. None in files
    # written before these were recorded (then the defaults apply).
    tools: list[str] | None = None
    system_prompt: str | None = None
    approval_mode: str | None = None
    tool_execution: str | None = None
    # The approval mode the header recorded when tiller created the file: a reload never
    # grants more than this, whatever later lines say (see host.load).
    header_approval_mode: str | None = None
    messages: list[Any] = field(default_factory=list)
    # The approval_resolved events, as saved (wire JSON), oldest first.
    resolved_approvals: list[dict[str, Any]] = field(default_factory=list)
    updated_at: int = 0
    # Every message record of the file in order (None where one did not validate), and the
    # record numbers of `messages`.
    records: list[Any] = field(default_factory=list)
    conversation: list[int] = field(default_factory=list)
    # Records of other kinds (compactions, ...), each with the length the conversation had
    # when it was read: their owners (host/context_window.py) make sense of them.
    other_records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)


class SessionFile:
    """An open session file; every append is durable before it returns."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, *records: dict[str, Any]) -> None:
        """Append records as whole lines, durably (fsync), or not at all: an OSError leaves the
        file as it was."""
        lines = "".join(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n" for record in records)
        # backslashreplace: a lone surrogate (JSON lets a model stream one) is saved as its
        # JSON escape, so the line stays valid UTF-8 and loads back as it was.
        data = lines.encode("utf-8", "backslashreplace")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            size = os.fstat(fd).st_size
            try:
                _write_all(fd, data)
                os.fsync(fd)
            except OSError:
                # A disk that filled up or a file-size limit writes part of the data: the half
                # line would swallow the next record appended after it. Cut it off again.
                os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)

    def append_message(self, message: Any) -> None:
        self.append(message_record(message))

    def append_settings(self, model: str, thinking_level: str, approval_mode: str,
                        tool_execution: str | None = None) -> None:
        self.append(settings_record(model, thinking_level, approval_mode, tool_execution))

    def append_branch(self, conversation: list[list[int]]) -> None:
        self.append({"type": "branch", "conversation": conversation})


def _write_all(fd: int, data: bytes) -> None:
    """os.write may write less than asked (a full disk, RLIMIT_FSIZE): go on until all of it is
    written or the next write fails."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, "the file took no more bytes")
        view = view[written:]


def approval_record(event: dict[str, Any]) -> dict[str, Any]:
    return {"type": "approval", "event": event}


def message_record(message: Any) -> dict[str, Any]:
    return {"type": "message", "message": message.dump()}


def settings_record(model: str, thinking_level: str, approval_mode: str,
                    tool_execution: str | None = None) -> dict[str, Any]:
    record = {"type": "settings", "model": model, "thinkingLevel": thinking_level, "approvalMode": approval_mode}
    if tool_execution is not None:
        record["toolExecution"] = tool_execution
    return record


class SessionStore:
    def __init__(self, data_dir: Path) -> None:
        self.dir = data_dir / "sessions"

    def _path(self, session_id: str) -> Path:
        if not session_id or "/" in session_id or session_id.startswith("."):
            raise ValueError(f"Invalid session id: {session_id!r}")
        return self.dir / f"{session_id}.jsonl"

    def create(self, session_id: str, cwd: str, model: str, *, tools: list[str] | None = None,
               system_prompt: str | None = None, approval_mode: str | None = None,
               then: tuple[dict[str, Any], ...] = ()) -> SessionFile:
        """A new session file: its header and `then` (the first records), in one fsync."""
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self._path(session_id)
        file = SessionFile(path)
        header = {"type": "session", "version": FORMAT_VERSION, "id": session_id, "cwd": cwd,
                  "created": now_ms(), "model": model}
        if tools is not None:
            header["tools"] = tools
        if system_prompt is not None:
            header["systemPrompt"] = system_prompt
        if approval_mode is not None:
            header["approvalMode"] = approval_mode
        file.append(header, *then)
        return file

    def open(self, session_id: str) -> SessionFile:
        """The saved session's file, to append to. A torn last line (the process died
        mid-write) is ended first, so the next record starts a line of its own instead of
        being glued to the torn bytes and lost with them on the next load."""
        path = self._path(session_id)
        with path.open("rb+") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")
                    handle.flush()
                    os.fsync(handle.fileno())
        return SessionFile(path)

    def exists(self, session_id: str) -> bool:
        try:
            return self._path(session_id).is_file()
        except ValueError:
            return False

    def load(self, session_id: str) -> SavedSession:
        """The saved session, skipping (and logging) every line that cannot be used. Raises
        UnreadableSession when nothing can be: no file content, or no usable header."""
        path = self._path(session_id)
        lines = read_regular_file(path).decode("utf-8", errors="replace").split("\n")
        saved: SavedSession | None = None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            record = _record(line)
            if record is None:
                # Only a torn final line is expected (a crash mid-write); skip any bad line
                # rather than lose the whole session.
                logger.warning("%s:%d: skipping a line that is not a JSON object", path, number)
                continue
            kind = record.get("type")
            if kind == "session":
                if saved is None:
                    saved = _header(session_id, record, path)
                else:
                    logger.warning("%s:%d: skipping a second session header", path, number)
            elif saved is None:
                logger.warning("%s:%d: skipping a line before the session header", path, number)
            elif kind == "message":
                _add_message(saved, record.get("message"), path, number)
            elif kind == "approval" and isinstance(record.get("event"), dict):
                saved.resolved_approvals.append(record["event"])
            elif kind == "branch":
                unusable = {i for i, message in enumerate(saved.records) if message is None}
                saved.conversation = branch_conversation(record, len(saved.records), unusable)
            elif kind == "settings":
                _apply_settings(saved, record, path, number)
            else:
                saved.other_records.append((len(saved.conversation), record))
        if saved is None:
            raise UnreadableSession(f"{path} holds no session header" if "".join(lines).strip() else f"{path} is empty")
        saved.messages = [saved.records[i] for i in saved.conversation]
        saved.updated_at = max(saved.updated_at, int(path.stat().st_mtime * 1000))
        return saved

    def list(self, cwd: str | None = None) -> list[SavedSession]:
        if not self.dir.is_dir():
            return []
        sessions = []
        for path in self.dir.glob("*.jsonl"):
            try:
                saved = self.load(path.stem)
            except (OSError, ValueError) as error:  # UnreadableSession is a ValueError
                logger.warning("Not listing %s: %s", path, error)
                continue
            if cwd is None or os.path.realpath(saved.cwd) == os.path.realpath(cwd):
                sessions.append(saved)
        return sorted(sessions, key=lambda s: s.updated_at, reverse=True)

    def cwd_of(self, session_id: str) -> str | None:
        """The working directory the session's header names (read from the header alone), if
        the file has a usable one."""
        fd = os.open(self._path(session_id), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            record = _record(handle.readline(MAX_HEADER_BYTES).decode("utf-8", errors="replace"))
        cwd = record.get("cwd") if record is not None and record.get("type") == "session" else None
        return cwd if isinstance(cwd, str) and os.path.isabs(cwd) else None

    def delete(self, session_id: str) -> bool:
        path = self._path(session_id)
        if not path.exists():
            return False
        path.unlink()
        return True


class UnreadableSession(ValueError):
    """A session file nothing can be loaded from; the message says why."""


# A session file larger than this is not one tiller wrote (a long session is a few MiB).
MAX_SESSION_FILE_BYTES = 512 * 1024 * 1024
# A header holds the system prompt: a long one is some tens of KiB.
MAX_HEADER_BYTES = 16 * 1024 * 1024


def read_regular_file(path: Path, limit: int = MAX_SESSION_FILE_BYTES) -> bytes:
    """The bytes of a regular file; a FIFO or device named like a session never blocks us."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableSession(f"{path} is not a regular file")
        if info.st_size > limit:
            raise UnreadableSession(f"{path} is {info.st_size} bytes, more than a session file can be")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _record(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _header(session_id: str, record: dict[str, Any], path: Path) -> SavedSession:
    cwd = record.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise UnreadableSession(f"{path}: the session header's cwd is not an absolute path")
    tools = record.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, str) for t in tools)):
        tools = []  # unreadable: the session gets no tools rather than all of them
    created = record.get("created")
    created = created if isinstance(created, int) and not isinstance(created, bool) else 0
    return SavedSession(
        id=session_id, cwd=cwd, created=created, model=_text(record.get("model")) or "", updated_at=created,
        tools=tools, system_prompt=_text(record.get("systemPrompt")),
        header_approval_mode=_text(record.get("approvalMode")),
    )


def _add_message(saved: SavedSession, raw: Any, path: Path, number: int) -> None:
    try:
        message = _MESSAGE.validate_python(raw)
    except ValidationError:
        logger.warning("%s:%d: skipping a message that does not validate", path, number)
        saved.records.append(None)  # it keeps its number: branch records count it
        return
    saved.conversation.append(len(saved.records))
    saved.records.append(message)
    timestamp = getattr(message, "timestamp", 0)
    saved.updated_at = max(saved.updated_at, timestamp if isinstance(timestamp, int) else 0)


def _apply_settings(saved: SavedSession, record: dict[str, Any], path: Path, number: int) -> None:
    """Each field that is a string counts; the others are ignored, keeping what was before."""
    for key, attribute in (("model", "model"), ("thinkingLevel", "thinking_level"), ("approvalMode", "approval_mode"),
                           ("toolExecution", "tool_execution")):
        if key in record:
            value = _text(record[key])
            if value:
                setattr(saved, attribute, value)
            else:
                logger.warning("%s:%d: ignoring a settings line's %s", path, number, key)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def to_ranges(records: list[int]) -> list[list[int]]:
    """[0, 1, 2, 5, 6] -> [[0, 3], [5, 7]] (end exclusive): a conversation's records, compactly."""
    ranges: list[list[int]] = []
    for record in records:
        if ranges and ranges[-1][1] == record:
            ranges[-1][1] += 1
        else:
            ranges.append([record, record + 1])
    return ranges


def from_ranges(ranges: Any, count: int = 1_000_000) -> list[int]:
    """The record numbers below `count` that `ranges` names; pairs that are not two integers
    (a damaged file) name nothing, and no range can ask for more numbers than `count`."""
    if not isinstance(ranges, list):
        return []
    records: list[int] = []
    for pair in ranges:
        if (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(n, int) and not isinstance(n, bool) for n in pair)):
            records.extend(range(max(pair[0], 0), min(pair[1], count)))
    return records


def branch_conversation(record: dict[str, Any], count: int, unusable: Container[int]) -> list[int]:
    """The conversation a `branch` record makes of the `count` message records before it: the
    ones it names, less the `unusable` (a message that does not validate is in no
    conversation). The loader and the session index both follow branches by this."""
    return [i for i in from_ranges(record.get("conversation"), count) if i not in unusable]


def session_title(messages: list[Any]) -> str:
    """What a session is listed as: the first line of its first user message's text."""
    for message in messages:
        if getattr(message, "role", None) == "user":
            content = message.content
            text = content if isinstance(content, str) else next(
                (b.text for b in content if getattr(b, "type", None) == "text"), ""
            )
            line = text.strip().splitlines()[0] if text.strip() else ""
            return line[:80] or "(untitled)"
    return "(new session)"
