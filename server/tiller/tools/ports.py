"""The three ports through which the tools reach the world beyond the file system.

A host (the editor server, `tiller run`, a test) plugs in what it has; each is optional and
the tools fall back to the disk and to no questions asked.

- `OpenDocument`: the editor's text of a file that is open there (unsaved changes included),
  or None. The model must see, and edit, what the user sees.
- `FileWriter`: where an approved change of write/edit goes (the editor's buffer, the disk).
- `Approve`: asked by edit, write and bash once they know exactly what they would do (the
  new text, its diff and hunks, or the command line), and by MCP tools with the call they
  would send (`tiller.mcp`); returns None to allow, a
  `HunkSelection` to allow only some hunks of an edit or write, and raises to refuse (its
  message becomes the tool's error result, which the model sees). Read-only tools never ask.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from .hunks import Hunk

# mcp: a call of a tool of an MCP server (any effect the server has, as bash's could be).
ApprovalKind = Literal["edit", "write", "execute", "mcp"]


@dataclass(frozen=True)
class ApprovalRequest:
    tool_call_id: str
    tool_name: str
    kind: ApprovalKind
    title: str
    path: Path | None = None  # resolved, absolute (edit, write)
    display_path: str | None = None  # as the model wrote it
    old_text: str | None = None  # None for a new file
    new_text: str | None = None
    diff: str | None = None  # unified diff (edit, write)
    hunks: tuple[Hunk, ...] = ()  # the diff's hunks (edit, write)
    command: str | None = None  # bash
    server: str | None = None  # mcp: the server the call goes to
    arguments: dict[str, Any] | None = None  # mcp: what it sends
    # The tool says it changes nothing (an MCP server's readOnlyHint): what a plan mode
    # may let through. A hint from the server, not a promise.
    read_only: bool = False


@dataclass(frozen=True)
class HunkSelection:
    """Allowed in part: only the hunks `accepted` (ids of `ApprovalRequest.hunks`, at least
    one, not all) are applied; `message` is what the user said about the others."""

    accepted: frozenset[str]
    message: str | None = None


Approve = Callable[[ApprovalRequest], Awaitable[HunkSelection | None] | HunkSelection | None]

# May answer at once (an in-process buffer) or after a round trip to the editor.
OpenDocument = Callable[[Path], Awaitable[str | None] | str | None]


class FileWriter(Protocol):
    async def write(self, path: Path, text: str) -> None:
        """Replace (or create) the file at the resolved `path` with `text`."""
        ...
