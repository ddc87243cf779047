"""The built-in coding tools (read, bash, edit, write, grep, find, ls), confined to a workspace."""

from __future__ import annotations

import os
import secrets
import tempfile

from ..agent.types import AgentTool
from .atomic_write import AtomicFileWriter
from .bash import BashTool
from .change import PathLocks, Proposal
from .edit import EditTool
from .find import FindTool
from .grep import GrepTool
from .ls import LsTool
from .ports import ApprovalKind, ApprovalRequest, Approve, FileWriter, OpenDocument
from .read import ReadTool
from .workspace import OutsideWorkspaceError, Workspace
from .write import WriteTool

DEFAULT_TOOLS = ["read", "bash", "edit", "write", "grep", "find", "ls"]

__all__ = [
    "DEFAULT_TOOLS",
    "ApprovalKind",
    "ApprovalRequest",
    "Approve",
    "AtomicFileWriter",
    "BashTool",
    "EditTool",
    "FileWriter",
    "FindTool",
    "GrepTool",
    "LsTool",
    "OpenDocument",
    "OutsideWorkspaceError",
    "Proposal",
    "ReadTool",
    "Workspace",
    "WriteTool",
    "create_coding_tools",
]


def create_coding_tools(
    workspace: Workspace | str | os.PathLike[str],
    *,
    open_document: OpenDocument | None = None,
    writer: FileWriter | None = None,
    approve: Approve | None = None,
) -> dict[str, AgentTool]:
    """All seven tools for one session, keyed by name.

    bash saves long output to a private temp directory and tells the model the file's path,
    so read may also open files there (and only there, beyond the workspace). The directory
    is only named here: bash creates it the first time output overflows, so a session that
    never needs it leaves nothing behind in the temp directory.
    """
    workspace = Workspace.of(workspace)
    log_dir = os.path.join(tempfile.gettempdir(), f"tiller-bash-{secrets.token_hex(8)}")
    locks = PathLocks()  # write and edit of one session take turns on a file
    tools: list[AgentTool] = [
        ReadTool(workspace.allowing(log_dir), open_document=open_document),
        BashTool(workspace, log_dir=Workspace(log_dir).root, approve=approve),
        EditTool(workspace, open_document=open_document, writer=writer, approve=approve, locks=locks),
        WriteTool(workspace, open_document=open_document, writer=writer, approve=approve, locks=locks),
        GrepTool(workspace),
        FindTool(workspace),
        LsTool(workspace),
    ]
    return {tool.name: tool for tool in tools}
