"""`--dump-payloads DIR`: what went over the wire in every LLM call, to debug a provider.

Each call writes two files in DIR, named by session and call:

    <session>-<call>.request.json   {"url", "headers", "body"}: the request as sent
    <session>-<call>.response.sse   the response body exactly as it streamed (decoded text)

Keys never reach the disk: credential headers (Authorization, x-api-key, x-goog-api-key and
any header whose name says key, token, secret or auth) are replaced whatever their value,
and every key the request carried is scrubbed from everything written. The files hold the
whole conversation, so the directory is created private (0700) and the files 0600.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ..ai.call_log import CallObserver, LlmCallRecord

REDACTED = "[redacted]"
_CREDENTIAL_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|auth|cookie", re.IGNORECASE)


class PayloadDump:
    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def next_call_number(self, session_id: str) -> int:
        """The first call number no earlier process used for this session (a reloaded
        session must not overwrite the dumps of its past)."""
        numbers = [int(match.group(1)) for path in self.directory.glob(f"{session_id}-*.request.json")
                   if (match := re.fullmatch(rf"{re.escape(session_id)}-(\d+)\.request\.json", path.name))]
        return max(numbers, default=0) + 1

    def call(self, session_id: str, call: int) -> CallDump:
        return CallDump(self.directory, f"{session_id}-{call:03d}")


class CallDump(CallObserver):
    """The files of one call, written as the call goes (a hung stream is on disk so far)."""

    wants_body = True

    def __init__(self, directory: Path, stem: str) -> None:
        self.request_path = directory / f"{stem}.request.json"
        self.response_path = directory / f"{stem}.response.sse"
        self._secrets: tuple[str, ...] = ()
        self._out: IO[str] | None = None
        self._partial_line = ""

    def request(self, url: str, headers: Mapping[str, str], body: dict[str, Any], secrets: Sequence[str]) -> None:
        self._secrets = tuple(secret for secret in secrets if secret)
        self.request_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shown = {name: REDACTED if _CREDENTIAL_HEADER.search(name) else value for name, value in headers.items()}
        text = json.dumps({"url": url, "headers": shown, "body": body}, indent=2, ensure_ascii=False)
        with _open_private(self.request_path) as out:
            out.write(self._scrub(text) + "\n")

    def received(self, text: str) -> None:
        if self._out is None:
            self._out = _open_private(self.response_path)
        # Whole lines only: a key split across two chunks would escape the scrubbing.
        lines, newline, self._partial_line = (self._partial_line + text).rpartition("\n")
        if newline:
            self._out.write(self._scrub(lines + newline))
            self._out.flush()

    def finished(self, record: LlmCallRecord) -> None:
        if self._out is not None:
            self._out.write(self._scrub(self._partial_line))
            self._out.close()
            self._out = None

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text


def _open_private(path: Path) -> IO[str]:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    return open(descriptor, "w", encoding="utf-8")
