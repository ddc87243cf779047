"""Output limits shared by the tools (pi `truncate.ts`): 2000 lines or 50 KB, whichever first.

`truncate_head` keeps whole lines from the start (read, listings); `truncate_tail` keeps the
end (command output) and may keep only the tail of an over-long last line.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Literal

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024
GREP_MAX_LINE_LENGTH = 500
UNLIMITED = sys.maxsize


@dataclass(frozen=True)
class Truncation:
    content: str
    truncated: bool
    truncated_by: Literal["lines", "bytes"] | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool = False
    first_line_exceeds_limit: bool = False
    max_lines: int = DEFAULT_MAX_LINES
    max_bytes: int = DEFAULT_MAX_BYTES

    def as_details(self) -> dict[str, Any]:
        """pi's TruncationResult fields for `details`, camelCase, without the content itself
        (it is already the result text; repeating 50 KB on the wire buys nothing)."""
        return {
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": None if self.max_lines == UNLIMITED else self.max_lines,
            "maxBytes": self.max_bytes,
        }


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def format_size(size: int) -> str:
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}KB"
    return f"{size / (1024 * 1024):.1f}MB"


def _untruncated(text: str, lines: int, size: int, max_lines: int, max_bytes: int) -> Truncation:
    return Truncation(text, False, None, lines, size, lines, size, max_lines=max_lines, max_bytes=max_bytes)


def truncate_head(text: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES) -> Truncation:
    lines = text.split("\n")
    total_bytes = utf8_len(text)
    if len(lines) <= max_lines and total_bytes <= max_bytes:
        return _untruncated(text, len(lines), total_bytes, max_lines, max_bytes)
    if utf8_len(lines[0]) > max_bytes:
        return Truncation("", True, "bytes", len(lines), total_bytes, 0, 0, first_line_exceeds_limit=True,
                          max_lines=max_lines, max_bytes=max_bytes)
    kept: list[str] = []
    size = 0
    by: Literal["lines", "bytes"] = "lines"
    for line in lines[:max_lines]:
        cost = utf8_len(line) + (1 if kept else 0)
        if size + cost > max_bytes:
            by = "bytes"
            break
        kept.append(line)
        size += cost
    return Truncation("\n".join(kept), True, by, len(lines), total_bytes, len(kept), size,
                      max_lines=max_lines, max_bytes=max_bytes)


def truncate_tail(text: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES) -> Truncation:
    lines = text.split("\n")
    total_bytes = utf8_len(text)
    if len(lines) <= max_lines and total_bytes <= max_bytes:
        return _untruncated(text, len(lines), total_bytes, max_lines, max_bytes)
    kept: list[str] = []
    size = 0
    by: Literal["lines", "bytes"] = "lines"
    partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        cost = utf8_len(line) + (1 if kept else 0)
        if size + cost > max_bytes:
            by = "bytes"
            if not kept:  # the last line alone is too long: keep its end
                tail = tail_bytes(line, max_bytes)
                kept.append(tail)
                size = utf8_len(tail)
                partial = True
            break
        kept.append(line)
        size += cost
    kept.reverse()
    return Truncation(
        "\n".join(kept), True, by, len(lines), total_bytes, len(kept), size,
        last_line_partial=partial, max_lines=max_lines, max_bytes=max_bytes,
    )  # fmt: skip


def tail_bytes(text: str, max_bytes: int) -> str:
    """The longest suffix of `text` whose UTF-8 encoding fits in `max_bytes`."""
    data = text.encode("utf-8", "surrogatepass")[-max_bytes:]
    start = 0
    while start < len(data) and (data[start] & 0xC0) == 0x80:  # skip a cut multi-byte char
        start += 1
    return data[start:].decode("utf-8", "replace")


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    if len(line) <= max_chars:
        return line, False
    return f"{line[:max_chars]}... [truncated]", True


def append_notices(text: str, notices: list[str]) -> str:
    """pi's notice block: all notices in one bracket, joined by `. `, after a blank line."""
    return f"{text}\n\n[{'. '.join(notices)}]" if notices else text
