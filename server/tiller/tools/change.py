"""The shared flow of the tools that change files: plan, approve, apply.

write and edit first compute the complete new text and a diff (a `Proposal`) without
touching anything; an optional `approve(request)` hook (see ports.py) then runs (the server asks the user
there, and raises to refuse); only then does the `FileWriter` apply it. Changes to one path
are serialised so two parallel edits cannot both start from the same original.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agent.types import AgentTool, AgentToolResult, OnUpdate, resolve
from ..ai.abort import AbortSignal
from .aborts import raise_if_aborted, unless_aborted
from .atomic_write import AtomicFileWriter
from .ports import ApprovalKind, ApprovalRequest, Approve, FileWriter, OpenDocument
from .workspace import Workspace


@dataclass(frozen=True)
class Proposal:
    path: Path  # resolved, absolute
    display_path: str  # as the model wrote it; what messages mention
    old_text: str | None  # None: the file does not exist yet
    new_text: str
    diff: str  # unified diff of old_text -> new_text
    details: Any = None  # extra result details (edit: firstChangedLine)




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
        )

    async def execute(
        self, tool_call_id: str, args: dict[str, Any], cancel: AbortSignal, on_update: OnUpdate
    ) -> AgentToolResult:
        raise_if_aborted(cancel)
        path = self.workspace.resolve(args.get("path"))
        async with self.locks(path):
            proposal = await self.plan(args)
            if self.approve is not None:
                request = self.approval_request(tool_call_id, proposal)
                await unless_aborted(resolve(self.approve(request)), cancel)
            raise_if_aborted(cancel)
            await self.writer.write(proposal.path, proposal.new_text)
        return self.result(proposal)
