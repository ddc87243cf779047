"""The smallest line edits that turn a document's text into a new text.

An agent edit reaches the editor as these edits rather than one whole-buffer replacement,
so cursors, marks, folds and diagnostics outside the changed lines survive, and the change
is one undo step of a few lines.

Lines are the `\\n`-separated pieces of the text (LSP's lines): a text that ends with a
newline has an empty last line. Vim-like editors keep that final newline as a property of
the file, not as a line, and clamp or append edits that reach it in their own ways (Neovim's
`apply_text_edits` appends an edit that starts there as new lines, and drops an empty last
line after an edit that ends there). So edits are placed to touch that empty last line as
rarely as the change allows: common leading and trailing lines are never part of an edit,
insertions and deletions hang off the end of the line before them, and replacements end at
the end of their last line, never at the start of the next.
"""

from __future__ import annotations

from collections.abc import Callable
from difflib import SequenceMatcher

from lsprotocol import types

from ..sequences import common_prefix_length

# How many units of the negotiated position encoding a line's text takes.
Units = Callable[[str], int]


def line_edits(old: str, new: str, units: Units) -> list[types.TextEdit]:
    """Edits (positions in `old`, non-overlapping, in document order) from `old` to `new`."""
    a, b = old.split("\n"), new.split("\n")
    head = common_prefix_length(a, b)
    tail = common_prefix_length(a[head:][::-1], b[head:][::-1])
    middle = SequenceMatcher(None, a[head : len(a) - tail], b[head : len(b) - tail], autojunk=False)
    return [
        _edit(a, b, head + i1, head + i2, head + j1, head + j2, units)
        for tag, i1, i2, j1, j2 in middle.get_opcodes()
        if tag != "equal"
    ]


def _edit(a: list[str], b: list[str], i1: int, i2: int, j1: int, j2: int, units: Units) -> types.TextEdit:
    """The edit replacing lines a[i1:i2] with b[j1:j2]."""

    def at(line: int, character: int) -> types.Position:
        return types.Position(line=line, character=character)

    def end_of(line: int) -> types.Position:
        return at(line, units(a[line]))

    if i1 < i2 and j1 < j2:  # replace the lines' text, keeping the newlines around them
        start, end, text = at(i1, 0), end_of(i2 - 1), "\n".join(b[j1:j2])
    elif i1 == 0:  # insert or delete at the very top: whole lines with their newlines
        start, end = at(0, 0), at(i2, 0)
        text = "".join(line + "\n" for line in b[j1:j2])
    else:  # insert or delete after line i1 - 1, from its end
        start, end = end_of(i1 - 1), end_of(i2 - 1)
        text = "".join("\n" + line for line in b[j1:j2])
    return types.TextEdit(range=types.Range(start=start, end=end), new_text=text)
