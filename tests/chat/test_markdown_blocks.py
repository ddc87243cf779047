"""Cutting a streamed reply into markdown blocks that render on their own."""

from __future__ import annotations

from tiller.chat.markdown_blocks import MarkdownBlocks

REPLY = (
    "# Plan\n"
    "First we till.\nThen we sow.\n\n"
    "- beans\n- peas\n\n"
    "```python\nrows = 3\n\nfor row in range(rows):\n    till(row)\n```\n"
    "Done."
)


def streamed(text: str, step: int) -> list[str]:
    blocks = MarkdownBlocks()
    out: list[str] = []
    for start in range(0, len(text), step):
        out += blocks.feed(text[start : start + step])
    return [*out, blocks.flush()]


def test_blocks_end_at_blank_lines_headings_and_closing_fences_however_the_text_is_cut():
    expected = [
        "# Plan",
        "First we till.\nThen we sow.",
        "- beans\n- peas",
        "```python\nrows = 3\n\nfor row in range(rows):\n    till(row)\n```",
        "Done.",
    ]
    for step in (1, 3, 7, len(REPLY)):
        assert streamed(REPLY, step) == expected


def test_an_unclosed_fence_is_flushed_whole_at_the_end():
    blocks = MarkdownBlocks()
    assert blocks.feed("Look:\n\n```\ncode\n\nmore") == ["Look:"]
    assert blocks.flush() == "```\ncode\n\nmore"
    assert blocks.flush() == ""


def test_a_longer_closing_fence_closes_and_a_shorter_one_does_not():
    blocks = MarkdownBlocks()
    assert blocks.feed("````\n```\nnested\n```\n````\nafter\n\n") == ["````\n```\nnested\n```\n````", "after"]
