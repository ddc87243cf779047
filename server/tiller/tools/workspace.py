"""The session's workspace: which paths the tools may touch.

Every tool path goes through `Workspace.resolve`, which resolves symlinks *before* checking
containment, so a link inside the workspace that points outside is refused just like `../`.
The resolved path is checked again where it is used: reads open its last part without
following a symlink (files.py), writes walk its directories with no-follow descriptors
(atomic_write.py), so a directory swapped for a symlink after the check (say, while the user
looked at the approval) fails the tool instead of writing outside.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

# pi turns these into plain spaces in paths: models sometimes copy them from rendered text.
_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")

class OutsideWorkspaceError(PermissionError):
    """A tool path that resolves outside every workspace root."""


class Workspace:
    def __init__(self, root: str | os.PathLike[str], extra_roots: Iterable[str | os.PathLike[str]] = ()) -> None:
        self.root = _real(root)
        self.extra_roots = tuple(_real(r) for r in extra_roots)

    @classmethod
    def of(cls, value: Workspace | str | os.PathLike[str]) -> Workspace:
        return value if isinstance(value, Workspace) else cls(value)

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.root, *self.extra_roots)

    def allowing(self, *roots: str | os.PathLike[str]) -> Workspace:
        """A copy that also admits `roots` (e.g. the directory bash saves full output in)."""
        return Workspace(self.root, (*self.extra_roots, *roots))

    def contains(self, real_path: Path) -> bool:
        """Whether an already-resolved path lies under one of the roots."""
        return any(real_path == root or real_path.is_relative_to(root) for root in self.roots)

    def resolve(self, path: str | None) -> Path:
        """The real absolute path for a tool argument, or OutsideWorkspaceError.

        Relative paths are taken from the root; a leading `@` (how editors and pi mention
        files) is dropped and `~` expands. Symlinks are resolved as far as the path exists,
        so a file that does not exist yet is judged by its nearest existing parent.
        """
        cleaned = _UNICODE_SPACES.sub(" ", path or "")
        if cleaned.startswith("@"):
            cleaned = cleaned[1:]
        cleaned = os.path.expanduser(cleaned) or "."
        real = Path(os.path.realpath(os.path.join(self.root, cleaned)))
        if not self.contains(real):
            roots = ", ".join(str(r) for r in self.roots)
            raise OutsideWorkspaceError(
                f"Path is outside the workspace: {path} (resolves to {real}); tools may only touch files under {roots}"
            )
        return real


def _real(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))
