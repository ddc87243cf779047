"""The shared flow of the tools that change files: plan, approve, apply.

write and edit first compute the complete new text and a diff (a `Proposal`) without
touching anything; an optional `approve(request)` hook (see ports.py) then runs (the server asks the user
there, and raises to refuse); only then, and only if the file still holds the text the
change was planned on, does the `FileWriter` apply it. The user may allow
only some hunks: then only those are applied, and the result tells the model which hunks
went in and which did not, and why. Changes to one path are serialised so two parallel
edits cannot both start from the same original.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..agent.types import AgentTool, AgentToolResult, OnUpdate, resolve
from ..ai.abort import AbortSignal
from .aborts import raise_if_aborted, unless_aborted
from .atomic_write import AtomicFileWriter, PathChangedError
from .diff import unified_diff
from .documents import current_text
from .hunks import Hunk, apply_hunks, diff_hunks
from .ports import ApprovalKind, ApprovalRequest, Approve, FileWriter, HunkSelection, OpenDocument
from .results import text_result
from .workspace import OutsideWorkspaceError, Workspace


@dataclass(frozen=True)
class Proposal:
    path: Path  # resolved, absolute
    display_path: str  # as the model wrote it; what messages mention
    old_text: str | None  # None: the file does not exist yet
    new_text: str
    diff: str  # unified diff of old_text -> new_text
    details: Any = None  # extra result details (edit: firstChangedLine)


class FileChangedError(Exception):
    """The file changed between planning a change and applying it."""


class PathLocks:
    """One lock per file, shared by the write and edit tools of a session."""

    def __init__(self) -> None:
        self._locks: dict[Path, asyncio.Lock] = {}

    def __call__(self, path: Path) -> asyncio.Lock:
        return self._locks.setdefault(path, asyncio.Lock())


class FileChangeTool(AgentTool):
    def __init__(
        self,
        workspace: Workspace,
        *,
        open_document: OpenDocument | None = None,
        writer: FileWriter | None = None,
        approve: Approve | None = None,
        locks: PathLocks | None = None,
    ) -> None:
        self.workspace = workspace
        self.open_document = open_document
        self.writer = writer or AtomicFileWriter()
        self.approve = approve
        self.locks = locks or PathLocks()

    async def plan(self, args: dict[str, Any]) -> Proposal:
        """The change `args` would make, computed without side effects."""
        raise NotImplementedError

    def result(self, proposal: Proposal) -> AgentToolResult:
        raise NotImplementedError

    def approval_request(self, tool_call_id: str, proposal: Proposal) -> ApprovalRequest:
        kind: ApprovalKind = "write" if self.name == "write" else "edit"
        verb = "Create" if proposal.old_text is None else ("Overwrite" if kind == "write" else "Edit")
        return ApprovalRequest(
            tool_call_id=tool_call_id, tool_name=self.name, kind=kind, title=f"{verb} {proposal.display_path}",
            path=proposal.path, display_path=proposal.display_path, old_text=proposal.old_text, new_text=proposal.new_text, diff=proposal.diff,
            hunks=tuple(diff_hunks(proposal.old_text, proposal.new_text)),
        )

    async def execute(
        self, tool_call_id: str, args: dict[str, Any], cancel: AbortSignal, on_update: OnUpdate
    ) -> AgentToolResult:
        raise_if_aborted(cancel)
        path = self.workspace.resolve(args.get("path"))
        async with self.locks(path):
            proposal = await self.plan(args)
            selection: HunkSelection | None = None
            if self.approve is not None:
                request = self.approval_request(tool_call_id, proposal)
                selection = await unless_aborted(resolve(self.approve(request)), cancel)
            raise_if_aborted(cancel)
            self._check_unchanged(args.get("path"), proposal.path)
            if self.approve is not None:
                await self._check_text_unchanged(proposal)
            if selection is not None:
                return await self._apply_selected(proposal, request.hunks, selection)
            await self.writer.write(proposal.path, proposal.new_text)
        return self.result(proposal)

    async def _apply_selected(self, proposal: Proposal, hunks: tuple[Hunk, ...], selection: HunkSelection) -> AgentToolResult:
        """Applies the accepted hunks only; the result names each hunk and what became of it."""
        new_text = apply_hunks(proposal.old_text, proposal.new_text, set(selection.accepted))
        applied = replace(proposal, new_text=new_text, diff=unified_diff(proposal.old_text, new_text, proposal.display_path))
        await self.writer.write(applied.path, applied.new_text)
        kept = [h for h in hunks if h.id in selection.accepted]
        dropped = [h for h in hunks if h.id not in selection.accepted]
        said = (selection.message or "").strip()
        reason = f": {said}{'' if said.endswith(('.', '!', '?')) else '.'}" if said else "."
        text = (
            f"The user applied {len(kept)} of the {len(hunks)} hunks of this change to {proposal.display_path}: "
            f"{_hunk_list(kept)}. The user rejected {_hunk_list(dropped)}{reason} "
            "The file now has only the applied hunks; read it again before changing it further."
        )
        return text_result(text, {"diff": applied.diff, "appliedHunks": [h.id for h in kept],
                                  "rejectedHunks": [h.id for h in dropped]})

    async def _check_text_unchanged(self, proposal: Proposal) -> None:
        """The file still holds the text the change was planned on. The user may type in the
        buffer, or save the file from elsewhere, while the approval waits; writing the
        planned text then would silently undo their work."""
        now = await current_text(proposal.path, self.open_document)
        if now != proposal.old_text:
            state = "was created" if proposal.old_text is None else ("was deleted" if now is None else "changed")
            raise FileChangedError(
                f"Not written: {proposal.display_path} {state} while the change waited for approval, "
                "so the approved change no longer fits it. Read the file again and redo the change."
            )

    def _check_unchanged(self, display: str | None, approved: Path) -> None:
        """The path resolves where it did when the change was planned (and approved): a
        directory swapped for a symlink meanwhile would send the write elsewhere. The
        writer re-checks each directory as it writes (atomic_write.py)."""
        try:
            now = self.workspace.resolve(display)
        except OutsideWorkspaceError:
            now = None
        if now != approved:
            raise PathChangedError(
                f"Not written: {display} changed while the change waited for approval "
                f"(it no longer leads to {approved}). Check the path and try again."
            )


def _hunk_list(hunks: list[Hunk]) -> str:
    return ", ".join(f"{h.id} ({h.header})" for h in hunks)
