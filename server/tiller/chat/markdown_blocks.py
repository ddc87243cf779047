"""Streamed markdown cut into blocks that can be rendered on their own.

A terminal cannot re-render what it already printed, so `tiller chat` renders a reply one
block at a time: a block ends at a blank line, except inside a fenced code block, which
ends at its closing fence. Headings are blocks of their own. What is left when the reply
ends is the last block.
"""

from __future__ import annotations

FENCES = ("```", "~~~")


class MarkdownBlocks:
    def __init__(self) -> None:
        self._pending = ""  # text after the last complete line
        self._lines: list[str] = []  # complete lines of the current block
        self._fence: str | None = None  # the open fence's marker, inside a code block

    def feed(self, text: str) -> list[str]:
        """Take streamed text; return the blocks it completed, in order."""
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        blocks: list[str] = []
        for line in lines:
            blocks.extend(self._line(line))
        return blocks

    def flush(self) -> str:
        """The rest of the reply, as one block ("" if nothing is left)."""
        lines = [*self._lines, self._pending] if self._pending else self._lines
        self._lines, self._pending, self._fence = [], "", None
        return "\n".join(lines).strip("\n")

    def _line(self, line: str) -> list[str]:
        stripped = line.strip()
        if self._fence is not None:
            self._lines.append(line)
            if stripped.startswith(self._fence) and stripped.strip(self._fence[0]) == "":
                self._fence = None
                return self._close()
            return []
        marker = next((fence for fence in FENCES if stripped.startswith(fence)), None)
        if marker is not None:
            done = self._close()  # a fence starts a block of its own
            self._fence = stripped[: len(stripped) - len(stripped.lstrip(marker[0]))]
            self._lines.append(line)
            return done
        if not stripped:
            return self._close()
        if stripped.startswith("#"):
            return [*self._close(), line]
        self._lines.append(line)
        return []

    def _close(self) -> list[str]:
        block = "\n".join(self._lines).strip("\n")
        self._lines = []
        return [block] if block.strip() else []
