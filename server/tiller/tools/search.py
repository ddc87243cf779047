"""What grep, find and ls share: a workspace, and the path they start from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..agent.types import AgentTool
from .workspace import Workspace


class SearchTool(AgentTool):
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def search_root(self, args: dict[str, Any]) -> Path:
        """The resolved `path` argument (default: the workspace root); it must exist."""
        path = self.workspace.resolve(args.get("path") or ".")
        if not path.exists():
            raise FileNotFoundError(f"Path not found: {path}")
        return path
