"""The MCP tests run the real server (`tiller serve`, `tiller acp`) with the fixtures of the
server tests, and real MCP servers built with the SDK (`servers/`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.server.conftest import start_tiller, workspace

__all__ = ["SERVERS", "start_tiller", "toolbox", "workspace"]

SERVERS = Path(__file__).parent / "servers"


def toolbox(work: Path, name: str = "toolbox", **extra: Any) -> dict[str, Any]:
    """An `mcpServers` entry that runs the toolbox server over stdio, recording in `work`."""
    work.mkdir(parents=True, exist_ok=True)
    return {"name": name, "command": sys.executable, "args": [str(SERVERS / "toolbox.py"), "stdio"],
            "env": {"TOOLBOX_DIR": str(work)}, **extra}
