"""Sessions saved as append-only JSON Lines, so no completed message is ever lost.

One file per session, `<data dir>/sessions/<sessionId>.jsonl`:

    {"type":"session","version":1,"id":"…","cwd":"…","created":1760000000000,"model":"openai/gpt-4.1-mini",
     "tools":["read","bash"],"systemPrompt":"…"}
    {"type":"message","message":{…a wire message…}}
    {"type":"settings","model":"…","thinkingLevel":"low","approvalMode":"ask","toolExecution":"parallel"}
    {"type":"approval","event":{…an approval_resolved event…}}

Each line is written, flushed and fsynced when a message ends, so `kill -9` loses at most
the message in flight. A torn last line (the process died mid-write) is skipped on load.
The data directory is `initializationOptions.dataDir`, else `$TILLER_DATA_DIR`, else
`$XDG_DATA_HOME/tiller`, else `~/.local/share/tiller`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping
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
    messages: list[Any] = field(default_factory=list)
    # The approval_resolved events, as saved (wire JSON), oldest first.
    resolved_approvals: list[dict[str, Any]] = field(default_factory=list)
    updated_at: int = 0
    # Records of other kinds (compactions, ...), each with the number of messages read
    # before it: their owners (host/context_window.py) make sense of them.
    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)


class SessionFile:
    """An open session file; every append is durable before it returns."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, *records: dict[str, Any]) -> None:
        """Append records as lines: one write, one fsync."""
        lines = "".join(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n" for record in records)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, lines.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)

    def append_message(self, message: Any) -> None:
        self.append(message_record(message))

    def append_settings(self, model: str, thinking_level: str, approval_mode: str,
                        tool_execution: str | None = None) -> None:
        self.append(settings_record(model, thinking_level, approval_mode, tool_execution))


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
               system_prompt: str | None = None, then: tuple[dict[str, Any], ...] = ()) -> SessionFile:
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
        path = self._path(session_id)
        saved: SavedSession | None = None
        for number, line in enumerate(_lines(path), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                # Only a torn final line is expected (a crash mid-write); skip any bad line
                # rather than lose the whole session.
                logger.warning("%s:%d: skipping an unreadable line", path, number)
                continue
            kind = record.get("type")
            if kind == "session":
                saved = SavedSession(id=record["id"], cwd=record["cwd"], created=record["created"],
                                     model=record["model"], updated_at=record["created"],
                                     tools=record.get("tools"), system_prompt=record.get("systemPrompt"))
            elif saved is None:
                raise ValueError(f"{path} does not start with a session header")
            elif kind == "message":
                try:
                    message = _MESSAGE.validate_python(record["message"])
                except ValidationError:
                    logger.warning("%s:%d: skipping a message that does not validate", path, number)
                    continue
                saved.messages.append(message)
                saved.updated_at = max(saved.updated_at, getattr(message, "timestamp", 0) or 0)
            elif kind == "approval" and isinstance(record.get("event"), dict):
                saved.resolved_approvals.append(record["event"])
            elif kind == "settings":
                saved.model = record.get("model", saved.model)
                saved.thinking_level = record.get("thinkingLevel", saved.thinking_level)
                saved.approval_mode = record.get("approvalMode", saved.approval_mode)
                saved.tool_execution = record.get("toolExecution", saved.tool_execution)
            else:
                saved.records.append((len(saved.messages), record))
        if saved is None:
            raise ValueError(f"{path} holds no session")
        saved.updated_at = max(saved.updated_at, int(path.stat().st_mtime * 1000))
        return saved

    def list(self, cwd: str | None = None) -> list[SavedSession]:
        if not self.dir.is_dir():
            return []
        sessions = []
        for path in self.dir.glob("*.jsonl"):
            try:
                saved = self.load(path.stem)
            except (OSError, ValueError, KeyError) as error:
                logger.warning("Skipping %s: %s", path, error)
                continue
            if cwd is None or os.path.realpath(saved.cwd) == os.path.realpath(cwd):
                sessions.append(saved)
        return sorted(sessions, key=lambda s: s.updated_at, reverse=True)

    def delete(self, session_id: str) -> bool:
        path = self._path(session_id)
        if not path.exists():
            return False
        path.unlink()
        return True


def _lines(path: Path) -> Iterator[str]:
    """The file's lines (split on LF only), read as they are needed: a worker thread loading
    a big session then lets the event loop run between lines, instead of holding the
    interpreter while it decodes the whole file at once."""
    with path.open("r", encoding="utf-8", errors="replace", newline="\n") as handle:
        yield from handle


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
