"""What a tool asks permission for, before it changes anything.

edit, write and bash call the session's `approve(request)` hook (if any) once they know
exactly what they would do: the new file text and its diff, or the command line. The hook
returns to allow and raises to refuse (its message becomes the tool's error result, which
the model sees). Read-only tools never ask.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ApprovalKind = Literal["edit", "write", "execute"]


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
    command: str | None = None  # bash


Approve = Callable[[ApprovalRequest], Awaitable[None] | None]
