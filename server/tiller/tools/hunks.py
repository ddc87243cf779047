"""The hunks of a proposed change, and the text with only some of them applied.

The hunks are those of the unified diff the approval shows (`diff.unified_diff`: the same
difflib grouping, the same context), so `@@` headers match one to one. A user who reviews an
edit hunk by hunk answers with the ids of the hunks to keep; `apply_hunks` builds the text
with those changes and the original text everywhere else.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from .diff import CONTEXT_LINES, display_lines


@dataclass(frozen=True)
class Hunk:
    id: str  # "h1", "h2", … in file order
    header: str  # the @@ line of the diff
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int


def _range(start: int, stop: int) -> tuple[int, int]:
    """A unified diff's (start, length): 1-based, and the line before an empty range."""
    length = stop - start
    return (start + 1 if length else start), length


def _groups(old: str | None, new: str) -> list[list[tuple[str, int, int, int, int]]]:
    matcher = difflib.SequenceMatcher(None, display_lines(old or ""), display_lines(new))
    return list(matcher.get_grouped_opcodes(CONTEXT_LINES))


def diff_hunks(old: str | None, new: str) -> list[Hunk]:
    hunks = []
    for number, group in enumerate(_groups(old, new), 1):
        old_start, old_lines = _range(group[0][1], group[-1][2])
        new_start, new_lines = _range(group[0][3], group[-1][4])
        old_range = f"{old_start}" if old_lines == 1 else f"{old_start},{old_lines}"
        new_range = f"{new_start}" if new_lines == 1 else f"{new_start},{new_lines}"
        hunks.append(Hunk(f"h{number}", f"@@ -{old_range} +{new_range} @@", old_start, old_lines, new_start, new_lines))
    return hunks


def apply_hunks(old: str | None, new: str, accepted: set[str]) -> str:
    """`old` with the changes of the `accepted` hunks of old -> new, and no others. Lines
    keep their own endings (and a BOM its place), so an accepted hunk reads as in `new`."""
    bom = "\ufeff" if (new if old is None else old).startswith("\ufeff") else ""
    # The same lines the diff compared (display_lines only drops the BOM and unifies CRLF,
    # which never changes how many lines there are), with their real endings.
    old_lines = (old or "").removeprefix("\ufeff").splitlines(keepends=True)
    new_lines = new.removeprefix("\ufeff").splitlines(keepends=True)
    out: list[str] = []
    position = 0  # next line of old_lines to copy
    for number, group in enumerate(_groups(old, new), 1):
        keep = f"h{number}" in accepted
        for tag, i1, i2, j1, j2 in group:
            out += old_lines[position:i1]
            out += new_lines[j1:j2] if keep and tag != "equal" else old_lines[i1:i2]
            position = i2
    out += old_lines[position:]
    return bom + "".join(out)
