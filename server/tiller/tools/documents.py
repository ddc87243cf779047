"""Current file text, preferring the editor's unsaved buffer over the disk.

The server passes an `open_document(path)` callback that returns the editor's text for a
file that is open in it (None otherwise). The model must see, and edit, what the user sees.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

OpenDocument = Callable[[Path], "str | None"]


async def current_text(path: Path, open_document: OpenDocument | None, *, strict: bool = False) -> str | None:
    """The editor's text for `path`, else the file decoded as UTF-8, else None if missing.

    `strict` refuses undecodable files instead of replacing bad bytes, for callers that
    write the text back (an edit must not silently corrupt a Latin-1 file).
    """
    if open_document is not None:
        text = open_document(path)
        if text is not None:
            return text
    try:
        data = await asyncio.to_thread(path.read_bytes)
    except FileNotFoundError:
        return None
    try:
        return data.decode("utf-8", "strict" if strict else "replace")
    except UnicodeDecodeError as exc:
        raise ValueError(f"Cannot edit {path}: it is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
