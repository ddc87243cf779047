"""The line edits an agent change is sent as: applied as an editor applies them, they turn
the old text into exactly the new one, whatever the lines, the final newline or the
position encoding."""

from __future__ import annotations

import random

import pytest
from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from tiller.lsp.text_edits import line_edits

from .harness import apply_text_edits

WORDS = ["", "", "a", "b", "beta", "naïve", "😀", "总结", "  indent", "x = 1"]


def random_text(rng: random.Random) -> str:
    return "\n".join(rng.choice(WORDS) for _ in range(rng.randint(0, 8)))


def as_json(edits: list[types.TextEdit]) -> list[dict]:
    return [{"range": {"start": {"line": e.range.start.line, "character": e.range.start.character},
                       "end": {"line": e.range.end.line, "character": e.range.end.character}},
             "newText": e.new_text} for e in edits]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_applied_edits_give_exactly_the_new_text(encoding):
    units = PositionCodec(types.PositionEncodingKind(encoding)).client_num_units
    rng = random.Random(9)
    for _ in range(3000):
        old, new = random_text(rng), random_text(rng)
        edits = line_edits(old, new, units)
        assert apply_text_edits(old, as_json(edits), encoding) == new, (old, new, edits)
        assert (edits == []) == (old == new)


def test_unchanged_lines_are_never_part_of_an_edit():
    old = "".join(f"line {n}\n" for n in range(100))
    new = old.replace("line 10\n", "line ten\n").replace("line 90\n", "")
    edits = line_edits(old, new, len)
    assert [(e.range.start.line, e.range.end.line, e.new_text) for e in edits] == [(10, 10, "line ten"), (89, 90, "")]
