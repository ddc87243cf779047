"""ls `{path?, limit?}`: one directory, alphabetical, `/` after directories, dotfiles included.

Entries .gitignore hides are left out, with ripgrep deciding what is ignored (we do not
re-implement gitignore). ripgrep lists files only, so:
- a file is shown when `rg --files --max-depth 1` lists it;
- a directory is shown when ripgrep finds some file beneath it (a second walk, stopped as
  soon as every directory has shown one), or when it is empty: a directory whose every file
  is ignored (`__pycache__/` under `*.pyc`) counts as ignored, a fresh empty one does not;
- a symlink is shown as a name (ripgrep skips links); `/` is added only when it points to
  a directory inside the workspace, so nothing outside is even looked at.
`.git/` is never shown.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..agent.types import AgentToolResult, OnUpdate
from ..ai.abort import AbortSignal
from .aborts import raise_if_aborted
from .results import limited_listing, positive_int, text_result
from .ripgrep import run_rg, strip_dot, walk_args
from .search import SearchTool
from .truncate import DEFAULT_MAX_BYTES

DEFAULT_LIMIT = 500


class LsTool(SearchTool):
    name = "ls"
    read_only = True
    label = "ls"
    description = (
        "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. "
        f"Includes dotfiles; leaves out what .gitignore ignores. Output is truncated to {DEFAULT_LIMIT} "
        f"entries or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first)."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Directory to list (default: current directory)"},
            "limit": {
                "type": "integer",
                "description": f"Maximum number of entries to return (default: {DEFAULT_LIMIT})",
            },
        },
    }

    async def execute(
        self, tool_call_id: str, args: dict[str, Any], cancel: AbortSignal, on_update: OnUpdate
    ) -> AgentToolResult:
        raise_if_aborted(cancel)
        directory = self.search_root(args)
        if not directory.is_dir():
            raise NotADirectoryError(f"Not a directory: {directory}")
        limit = positive_int(args, "limit", DEFAULT_LIMIT)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: (e.name.lower(), e.name))
        except OSError as exc:
            raise OSError(f"Cannot read directory: {exc.strerror}") from None
        entries = [e for e in entries if e.name != ".git"]
        visible = await self._visible(directory, entries, cancel)
        shown: list[str] = []
        for entry in entries:
            if entry.is_symlink():
                shown.append(entry.name + self._link_suffix(entry))
            elif entry.name in visible:
                shown.append(entry.name + ("/" if entry.is_dir(follow_symlinks=False) else ""))
        if not shown:
            return text_result("(empty directory)")
        notice = f"{limit} entries limit reached. Use limit={limit * 2} for more"
        return limited_listing(shown, limit, notice, "entryLimitReached")

    async def _visible(self, directory: Path, entries: list[os.DirEntry[str]], cancel: AbortSignal) -> set[str]:
        """Names of the entries ripgrep does not ignore (see the module docstring)."""
        visible: set[str] = set()

        def add_file(line: str) -> None:
            visible.add(strip_dot(line))

        top_level = ["--files", "--max-depth=1", *walk_args(), "--", "."]
        await run_rg(top_level, cwd=directory, cancel=cancel, on_line=add_file)
        pending = set()
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if _is_empty(entry.path):
                    visible.add(entry.name)
                else:
                    pending.add(entry.name)

        def add_dir(line: str) -> bool:
            top = strip_dot(line).split("/", 1)[0]
            pending.discard(top)
            visible.add(top)
            return bool(pending)

        if pending:
            await run_rg(["--files", *walk_args(), "--", "."], cwd=directory, cancel=cancel, on_line=add_dir)
        return visible

    def _link_suffix(self, entry: os.DirEntry[str]) -> str:
        target = Path(os.path.realpath(entry.path))
        return "/" if self.workspace.contains(target) and target.is_dir() else ""


def _is_empty(path: str) -> bool:
    try:
        with os.scandir(path) as it:
            return next(it, None) is None
    except OSError:
        return False
