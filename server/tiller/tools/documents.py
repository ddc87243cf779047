"""Current file text, preferring the editor's unsaved buffer (the `OpenDocument` port) over
the disk."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ..agent.types import resolve
from .files import MAX_EDIT_BYTES, read_regular
from .ports import OpenDocument


async def current_text(path: Path, open_document: OpenDocument | None, *, strict: bool = False) -> str | None:
    """The editor's text for `path`, else the file decoded as UTF-8, else None if missing.
    Only a regular file with one link, of at most MAX_EDIT_BYTES, is read (files.py).

    `strict` refuses undecodable files instead of replacing bad bytes, for callers that
    write the text back (an edit must not silently corrupt a Latin-1 file).
    """
    text = await editor_text(path, open_document)
    if text is not None:
        return text
    try:
        data = await asyncio.to_thread(read_regular, path, None, MAX_EDIT_BYTES)
    except FileNotFoundError:
        return None
    try:
        return data.decode("utf-8", "strict" if strict else "replace")
    except UnicodeDecodeError as exc:
        raise ValueError(f"Cannot edit {path}: it is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


async def editor_text(path: Path, open_document: OpenDocument | None) -> str | None:
    """The editor's text of `path` if it is open there, else None."""
    if open_document is None:
        return None
    text: str | None = await resolve(open_document(path))
    return text
