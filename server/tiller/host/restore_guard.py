"""Whether a path still holds, as the user sees it, what a rewind recorded of it.

A rewind first records the workspace as it is ("now"), then puts paths back one at a time,
open documents through the editor. What the user sees of a file is the editor's buffer where
one is open (unsaved changes included), else the disk. Two checks keep the user's work:

- Up front, an open buffer whose text is not what was recorded holds unsaved changes that no
  checkpoint has: the rewind refuses (unless forced; a forced restore replaces the buffer
  through the editor, where the user can undo it).
- Just before a path is written or deleted, it is compared with what it held when the rewind
  began: one that changed meanwhile (the user typed or saved, a build wrote it) is left alone.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from .editor import Editor
from .shadow_git import MODE_ABSENT, MODE_GITLINK, MODE_SYMLINK, Change, ShadowRepo

# What a path that is now a directory (where a file was recorded) holds: never what was recorded.
_DIRECTORY = object()


class RestoreGuard:
    def __init__(self, repo: ShadowRepo, editor: Editor, session_id: str) -> None:
        self._repo = repo
        self._editor = editor
        self._session_id = session_id
        # The buffers a forced rewind found with unsaved changes: what it will replace.
        self._buffers: dict[str, bytes] = {}

    async def unsaved(self, targets: list[tuple[Change, Path]]) -> list[str]:
        """The paths whose open buffer differs from what was recorded of them."""
        found = []
        for change, path in targets:
            if change.old_mode in (MODE_ABSENT, MODE_SYMLINK, MODE_GITLINK) or os.path.islink(path):
                continue
            document = await self._editor.read_document(self._session_id, path)
            if document is None:
                continue
            text = document.text.encode("utf-8", "surrogateescape")
            if text != await self._repo.blob(change.old_blob):
                found.append(change.path)
                self._buffers[change.path] = text
        return found

    async def still_holds(self, change: Change, path: Path) -> bool:
        """Whether `path` holds what it held when the rewind began."""
        if change.old_mode == MODE_GITLINK:
            return True  # a nested repository: its files were never recorded, nor are they touched
        expected = self._buffers.get(change.path)
        if expected is None and change.old_mode != MODE_ABSENT:
            expected = await self._repo.blob(change.old_blob)
        return await self._current(path) == expected

    async def _current(self, path: Path) -> bytes | object | None:
        if os.path.islink(path):
            return os.fsencode(await asyncio.to_thread(os.readlink, path))
        if not os.path.lexists(path):
            return None
        if os.path.isdir(path):
            return _DIRECTORY
        document = await self._editor.read_document(self._session_id, path)
        if document is not None:
            return document.text.encode("utf-8", "surrogateescape")
        return await asyncio.to_thread(path.read_bytes)
