"""Stop a reply that has fallen into a loop: the same line, or the same phrase, over and over.

Small models (the offline SmolLM2-135M above all) sometimes repeat themselves until they run
out of tokens ("A kami, a kami, a kami, …"). `LoopGuard` watches the streamed text and says
when to stop. Two rules:

- a line: the same non-blank line three times in a row. The third copy never reaches the
  user: while a line is shaping up as that third copy it is held back, and released as soon
  as it differs (ordinary text is never delayed: only a line that starts like the two
  identical lines before it is held);
- a phrase: the end of the text is one phrase (2-100 characters, with at least two letters)
  repeated at least `PHRASE_REPEATS` times, covering at least `PHRASE_SPAN` characters.
  Case is ignored ("A kami, a kami"). Rows of dashes or zeros have too few letters to count.
"""

from __future__ import annotations

LINE_REPEATS = 3
PHRASE_REPEATS = 4
PHRASE_SPAN = 32
PHRASE_MAX = 100
NOTE = "\n\n[Stopped: the reply kept repeating itself.]"


class LoopGuard:
    def __init__(self) -> None:
        self._text = ""  # everything the model produced (including text held back)
        self._lower = ""
        self._emitted = 0  # how much of `_text` has been released
        self._line_start = 0  # where the current, unfinished line starts
        self._last_line: str | None = None
        self._last_count = 0
        self.looping = False

    def feed(self, text: str) -> str:
        """Take the model's next text; return the part that may be shown now. Once
        `looping` is set, the reply should end (with `NOTE`) and nothing more is released."""
        if self.looping or not text:
            return ""
        self._text += text
        self._lower += text.lower()
        if self._complete_lines() or self._phrase_repeats():
            self.looping = True
            # A third identical line is dropped; for a phrase, what is left goes out.
            end = self._line_start if self._last_count >= LINE_REPEATS else len(self._text)
            return self._release(max(end, self._emitted))
        return self._release(self._line_start if self._holding() else len(self._text))

    def flush(self) -> str:
        """The text still held back, at the end of a reply that did not loop."""
        return "" if self.looping else self._release(len(self._text))

    def _release(self, end: int) -> str:
        out = self._text[self._emitted : end]
        self._emitted = max(self._emitted, end)
        return out

    def _complete_lines(self) -> bool:
        """Count the lines finished by the new text; True at the third identical one."""
        while (newline := self._text.find("\n", self._line_start)) >= 0:
            line = self._text[self._line_start : newline].rstrip()  # indentation counts
            if line.strip() and line == self._last_line:
                self._last_count += 1
                if self._last_count >= LINE_REPEATS:
                    return True
            elif line.strip():
                self._last_line, self._last_count = line, 1
            self._line_start = newline + 1
        return False

    def _holding(self) -> bool:
        """Whether the unfinished line may be becoming the third identical line."""
        if self._last_count < LINE_REPEATS - 1 or self._last_line is None:
            return False
        return self._last_line.startswith(self._text[self._line_start :])

    def _phrase_repeats(self) -> bool:
        text = self._lower
        for size in range(2, min(PHRASE_MAX, len(text) // PHRASE_REPEATS) + 1):
            unit = text[-size:]
            if sum(ch.isalpha() for ch in unit) < 2:
                continue
            repeats = 1
            while text.endswith(unit, 0, len(text) - repeats * size):
                repeats += 1
            if repeats >= PHRASE_REPEATS and repeats * size >= PHRASE_SPAN:
                return True
        return False
