"""Running a tool the way the agent loop does, and reading what came back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tiller.agent.types import AgentTool, AgentToolResult
from tiller.ai.abort import AbortSignal


async def run(tool: AgentTool, cancel: AbortSignal | None = None, **args: Any) -> AgentToolResult:
    return await tool.execute("call-1", args, cancel or AbortSignal(), lambda update: None)


async def fails(tool: AgentTool, cancel: AbortSignal | None = None, **args: Any) -> str:
    """The error text the model would see."""
    with pytest.raises(Exception) as info:
        await run(tool, cancel, **args)
    return str(info.value)


def text(result: AgentToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `directory` with its content and mtime, to prove nothing changed."""
    state = {}
    for root, _dirs, files in os.walk(directory):
        for name in files:
            path = Path(root, name)
            state[str(path)] = (path.read_bytes(), path.stat().st_mtime_ns)
    return state
