"""A command's merged output as it streams: a bounded tail for the model, everything on disk.

Memory stays bounded whatever the command prints: we keep the last 2 x 50 KB (enough to
tail-truncate exactly as if we had it all, since the result never exceeds 50 KB) plus
counters. Once output passes 50 KB it all goes to a log file (pi does the same), so the
model can be pointed at the full text.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Truncation, truncate_tail


class CommandOutput:
    def __init__(self, log_dir: Path, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._log_dir = log_dir
        self._max_lines, self._max_bytes = max_lines, max_bytes
        self._window = bytearray()  # the last 2 * max_bytes bytes
        self._unsaved = bytearray()  # everything not yet written to the log (all of it, until saved)
        self._log: int | None = None
        self.log_path: Path | None = None
        self.total_bytes = 0
        self.line_breaks = 0
        self.last_line_bytes = 0  # size of the (possibly unfinished) last line
        self.version = 0  # bumps on every append, for change detection

    def append(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.version += 1
        self.total_bytes += len(chunk)
        breaks = chunk.count(b"\n")
        self.line_breaks += breaks
        self.last_line_bytes = len(chunk) - chunk.rfind(b"\n") - 1 if breaks else self.last_line_bytes + len(chunk)
        self._window += chunk
        excess = len(self._window) - 2 * self._max_bytes
        if excess > 0:
            del self._window[:excess]
        self._unsaved += chunk
        if self._log is not None or self.total_bytes > self._max_bytes:
            self.save()

    def save(self) -> Path:
        """Write everything so far to the log file (created on first use); return its path."""
        if self._log is None:
            self._log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # private: the output may hold secrets
            self.log_path = self._log_dir / f"tiller-bash-{secrets.token_hex(8)}.log"
            self._log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        if self._unsaved:
            os.write(self._log, self._unsaved)  # a regular file: writes complete
            self._unsaved.clear()
        assert self.log_path is not None
        return self.log_path

    def close(self) -> None:
        if self._log is not None:
            os.close(self._log)
            self._log = None

    def tail(self) -> Truncation:
        """pi's tail truncation of the whole output, computed from the window."""
        data = bytes(self._window)
        if len(data) < self.total_bytes:  # the window starts mid-stream: skip a cut character
            while data and (data[0] & 0xC0) == 0x80:
                data = data[1:]
        result = truncate_tail(data.decode("utf-8", "replace"), self._max_lines, self._max_bytes)
        if len(data) == self.total_bytes:
            return result
        return Truncation(
            result.content, True, result.truncated_by or "bytes", self.line_breaks + 1, self.total_bytes,
            result.output_lines, result.output_bytes, result.last_line_partial, False,
            self._max_lines, self._max_bytes,
        )  # fmt: skip
