"""Editor context (a file or a selection) turned into text the model sees with a prompt."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from pygls import uris

from ..ai.types import TextContent
from .protocol import EditorContext

# Attached files are capped so one huge file cannot crowd out the conversation.
MAX_CONTEXT_CHARS = 50_000


def uri_to_path(uri: str) -> Path | None:
    """The file a `file:` URI names (pygls's decoding, as for its own documents), else None."""
    if urlparse(uri).scheme != "file":
        return None
    path = uris.to_fs_path(uri)
    return Path(path) if path else None


def context_blocks(
    items: list[EditorContext], read_document: Callable[[str], str | None]
) -> list[TextContent]:
    return [TextContent(text=_describe(item, read_document)) for item in items]


def _describe(item: EditorContext, read_document: Callable[[str], str | None]) -> str:
    path = uri_to_path(item.uri)
    name = str(path) if path else item.uri
    text = item.text
    if text is None:
        # Prefer the editor's buffer (unsaved changes included) over the file on disk.
        text = read_document(item.uri)
    if text is None and path is not None:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            return f"[Could not attach {name}: {error.strerror or error}]"
    text = text or ""

    where = "file"
    if item.range is not None and item.text is None:
        lines = text.split("\n")
        start, end = item.range.start, item.range.end
        selected = lines[start.line : end.line + 1]
        if selected:
            selected[-1] = selected[-1][: end.character] if start.line != end.line else selected[-1][start.character : end.character]
            if start.line != end.line:
                selected[0] = selected[0][start.character :]
        text = "\n".join(selected)
        where = f"selection, lines {start.line + 1}-{end.line + 1}"
    elif item.range is not None:
        where = f"selection, lines {item.range.start.line + 1}-{item.range.end.line + 1}"

    if len(text) > MAX_CONTEXT_CHARS:
        text = text[:MAX_CONTEXT_CHARS] + f"\n[... truncated at {MAX_CONTEXT_CHARS} characters]"
    fence = "````" if "```" in text else "```"
    language = path.suffix.lstrip(".") if path else ""
    return f"Attached from the editor: {name} ({where})\n{fence}{language}\n{text}\n{fence}"
