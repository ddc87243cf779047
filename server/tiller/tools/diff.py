"""Diffs for proposals and edit results: standard unified format, so editors can parse them."""

from __future__ import annotations

import difflib

CONTEXT_LINES = 4  # pi shows 4 lines of context around each change


def display_lines(text: str) -> list[str]:
    # Compare what a reader sees: no BOM, LF endings (CRLF would put \r in every line).
    return text.removeprefix("\ufeff").replace("\r\n", "\n").splitlines(keepends=True)


def unified_diff(old: str | None, new: str, path: str) -> str:
    """`old` None means the file is being created."""
    lines = difflib.unified_diff(
        display_lines(old or ""),
        display_lines(new),
        fromfile="/dev/null" if old is None else f"a/{path}",
        tofile=f"b/{path}",
        n=CONTEXT_LINES,
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n")
    return "".join(out)


def first_changed_line(old: str, new: str) -> int | None:
    """1-based line in `new` where it first differs from `old` (None when identical)."""
    a, b = display_lines(old), display_lines(new)
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index + 1
    return None if len(a) == len(b) else min(len(a), len(b)) + 1
