"""Editor context (a file or a selection) turned into text the model sees with a prompt."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse

from ..ai.types import TextContent
from ..protocol.methods import EditorContext, Position
from .editor import EditorCapabilities, EditorDocument, PositionEncoding

# Attached files are capped so one huge file cannot crowd out the conversation.
MAX_CONTEXT_CHARS = 50_000


class ContextSource(Protocol):
    """What attaching context needs of the editor (the `Editor` port provides it)."""

    @property
    def capabilities(self) -> EditorCapabilities: ...

    async def document_at(self, uri: str) -> EditorDocument | None: ...


def uri_to_path(uri: str) -> Path | None:
    """The file a `file:` URI names, else None."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path)) if parsed.path else None


def _read_attachment(path: Path) -> str:
    """The start of a regular file: a named pipe or a device must not hang the prompt, and a
    huge file is cut anyway (MAX_CONTEXT_CHARS), so more is never read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a regular file")
        data = os.read(fd, MAX_CONTEXT_CHARS * 4 + 4)  # UTF-8: at most 4 bytes a character
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")


async def context_blocks(items: list[EditorContext], editor: ContextSource) -> list[TextContent]:
    return [TextContent(text=await _describe(item, editor)) for item in items]


async def _describe(item: EditorContext, editor: ContextSource) -> str:
    path = uri_to_path(item.uri)
    name = str(path) if path else item.uri
    text = item.text
    if text is None:
        # Prefer the editor's buffer (unsaved changes included) over the file on disk.
        document = await editor.document_at(item.uri)
        text = document.text if document is not None else None
    if text is None and path is not None:
        try:
            text = await asyncio.to_thread(_read_attachment, path)
        except OSError as error:
            return f"[Could not attach {name}: {error.strerror or error}]"
    text = text or ""

    where = "file"
    if item.range is not None and item.text is None:
        start, end = item.range.start, item.range.end
        text = selected_text(text, start, end, editor.capabilities.position_encoding)
        where = f"selection, lines {start.line + 1}-{end.line + 1}"
    elif item.range is not None:
        where = f"selection, lines {item.range.start.line + 1}-{item.range.end.line + 1}"

    if len(text) > MAX_CONTEXT_CHARS:
        text = text[:MAX_CONTEXT_CHARS] + f"\n[... truncated at {MAX_CONTEXT_CHARS} characters]"
    fence = "````" if "```" in text else "```"
    language = path.suffix.lstrip(".") if path else ""
    return f"Attached from the editor: {name} ({where})\n{fence}{language}\n{text}\n{fence}"


def selected_text(text: str, start: Position, end: Position, encoding: PositionEncoding) -> str:
    """The text between two LSP positions, whose characters count in `encoding`."""
    lines = text.split("\n")

    def offset(position: Position) -> int:
        if position.line >= len(lines):
            return len(text)
        before = sum(len(line) + 1 for line in lines[: position.line])
        return before + _code_points(lines[position.line], position.character, encoding)

    return text[offset(start) : max(offset(start), offset(end))]


def _code_points(line: str, units: int, encoding: PositionEncoding) -> int:
    """How many characters of `line` take `units` units of `encoding` (a position inside
    a character counts as after it, one past the end of the line as its end)."""
    if encoding == "utf-32":
        return min(units, len(line))
    used = 0
    for index, char in enumerate(line):
        if used >= units:
            return index
        used += len(char.encode("utf-16-le")) // 2 if encoding == "utf-16" else len(char.encode("utf-8"))
    return len(line)
