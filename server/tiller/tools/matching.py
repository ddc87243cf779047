"""Finding an edit's oldText in a file, exactly or after normalisation, as a span of the
ORIGINAL text.

Line endings never matter (CRLF, CR and LF all compare as LF). When the exact text is not
there, both sides are compared "loosely": NFKC, smart quotes to ASCII, Unicode dashes to
`-`, special spaces to a space, trailing whitespace dropped per line (pi's fuzzy match).

pi 0.58.3 then writes back the *normalised whole file*, so one fuzzy edit silently rewrites
every curly quote and trailing space elsewhere in the file. We keep, for each character of
the normalised view, the span of original text it came from, and map the match back: only
the matched region is replaced and the rest of the file stays byte for byte as it was.
"""

from __future__ import annotations

import unicodedata
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

_LOOSE_CHARS = str.maketrans(
    {
        **dict.fromkeys(map(ord, "\u2018\u2019\u201a\u201b"), "'"),
        **dict.fromkeys(map(ord, "\u201c\u201d\u201e\u201f"), '"'),
        **dict.fromkeys(map(ord, "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"), "-"),
        **dict.fromkeys([0x00A0, *range(0x2002, 0x200B), 0x202F, 0x205F, 0x3000], " "),
    }
)


def _loosen(cluster: str) -> str:
    # NFKC first: it maps e.g. a small em dash (U+FE58) to an em dash the table then folds.
    return unicodedata.normalize("NFKC", cluster).translate(_LOOSE_CHARS)


class TextView:
    """A normalised view of `original` that remembers where each of its characters came from."""

    def __init__(self, original: str, *, loose: bool) -> None:
        self.original = original
        chars: list[str] = []
        self._starts = array("q")  # original offset where the source of each char begins
        self._ends = array("q")  # ... and ends (NFKC may turn one char into several)
        for start, end, newline_end in _lines(original):
            line, starts, ends = _view_line(original, start, end, loose)
            chars.append(line)
            self._starts.extend(starts)
            self._ends.extend(ends)
            if newline_end > end:  # "\r\n", "\r" and "\n" all read as "\n"
                chars.append("\n")
                self._starts.append(end)
                self._ends.append(newline_end)
        self.text = "".join(chars)

    def span(self, start: int, end: int) -> tuple[int, int] | None:
        """The original range behind text[start:end], or None if that would cut a character
        cluster in half (say, half of what NFKC made of a ligature)."""
        starts, size = self._starts, len(self.text)
        if (start > 0 and starts[start] == starts[start - 1]) or (end < size and starts[end] == starts[end - 1]):
            return None
        original_end = self._ends[end - 1]
        if not self.text[start:end].endswith("\n") and (end == size or self.text[end] == "\n"):
            # The match runs to the end of a line whose trailing whitespace the view
            # dropped: replace that whitespace too rather than strand it after newText.
            original_end = starts[end] if end < size else len(self.original)
        return starts[start], original_end


def _lines(text: str) -> Iterator[tuple[int, int, int]]:
    """(start, end, end including the line break) for each line; the last has no break."""
    pos, size = 0, len(text)
    next_cr = text.find("\r")
    while True:
        if next_cr != -1 and next_cr < pos:
            next_cr = text.find("\r", pos)
        next_lf = text.find("\n", pos)
        breaks = [i for i in (next_lf, next_cr) if i != -1]
        if not breaks:
            yield pos, size, size
            return
        eol = min(breaks)
        width = 2 if text.startswith("\r\n", eol) else 1
        yield pos, eol, eol + width
        pos = eol + width


def _view_line(text: str, start: int, end: int, loose: bool) -> tuple[str, range | list[int], range | list[int]]:
    body = text[start:end]
    if not loose or body.isascii():  # ASCII is its own NFKC: only whitespace can change
        if loose:
            body = body.rstrip()
        return body, range(start, start + len(body)), range(start + 1, start + len(body) + 1)
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i = 0
    while i < len(body):
        j = i + 1
        while j < len(body) and unicodedata.combining(body[j]):
            j += 1  # keep combining marks with their base: NFKC may compose them
        piece = _loosen(body[i:j])
        pieces.append(piece)
        starts.extend([start + i] * len(piece))
        ends.extend([start + j] * len(piece))
        i = j
    line = "".join(pieces).rstrip()
    return line, starts[: len(line)], ends[: len(line)]


@dataclass(frozen=True)
class Match:
    count: int  # occurrences in the loose view (pi counts there, so near-duplicates are refused)
    span: tuple[int, int] | None  # where to replace in the original text


def find(exact: TextView, loose: TextView, old_text: str) -> Match:
    """Locate `old_text` in the file seen through `exact` and `loose` (views of one text).

    The exact occurrence is preferred; the loose one is used only when there is none.
    """
    exact_key = TextView(old_text, loose=False).text
    loose_key = TextView(old_text, loose=True).text
    count = max(loose.text.count(loose_key) if loose_key else 0, exact.text.count(exact_key))
    if count != 1:
        return Match(count, None)
    at = exact.text.find(exact_key)
    if at != -1:
        return Match(1, exact.span(at, at + len(exact_key)))
    at = loose.text.find(loose_key)
    return Match(1, loose.span(at, at + len(loose_key)))
