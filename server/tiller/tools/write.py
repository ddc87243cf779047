"""write `{path, content}`: create or overwrite a file (parents are created)."""

from __future__ import annotations

from typing import Any

from ..agent.types import AgentToolResult
from .change import FileChangeTool, Proposal
from .diff import unified_diff
from .documents import current_text
from .results import text_result


class WriteTool(FileChangeTool):
    name = "write"
    label = "write"
    description = (
        "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. "
        "Automatically creates parent directories."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
            "content": {"type": "string", "description": "Content to write to the file"},
        },
        "required": ["path", "content"],
    }

    async def plan(self, args: dict[str, Any]) -> Proposal:
        display = args["path"]
        path = self.workspace.resolve(display)
        if path.is_dir():
            raise IsADirectoryError(f"Cannot write {display}: it is a directory")
        old = await current_text(path, self.open_document)
        content = args["content"]
        return Proposal(path, display, old, content, unified_diff(old, content, display))

    def result(self, proposal: Proposal) -> AgentToolResult:
        # pi reports the JavaScript string length (UTF-16 code units) as "bytes"; we keep
        # its number so results match pi's byte for byte.
        units = len(proposal.new_text.encode("utf-16-le", "surrogatepass")) // 2
        return text_result(f"Successfully wrote {units} bytes to {proposal.display_path}")
