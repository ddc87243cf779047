"""The MCP servers an ACP client passes with `session/new`, `session/load` and
`session/resume`, as the host's `McpServerSpec`s.

ACP names servers for people ("GitHub Issues"); tiller's tool names need letters, digits,
`_` and `-` (`<server>__<tool>`), so other characters become `-`. An ACP-transport server
(unstable, carried over ACP itself) is not supported: it is skipped with a warning.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer
from pydantic import ValidationError

from ..protocol.mcp import McpServerSpec

logger = logging.getLogger("tiller.acp")


def mcp_specs(servers: list[Any] | None) -> list[McpServerSpec]:
    specs: list[McpServerSpec] = []
    for index, server in enumerate(servers or []):
        name = _tool_safe(str(getattr(server, "name", "")), index, {spec.name for spec in specs})
        if isinstance(server, McpServerStdio):
            raw: dict[str, Any] = {"name": name, "type": "stdio", "command": server.command, "args": server.args,
                                   "env": {variable.name: variable.value for variable in server.env or []}}
        elif isinstance(server, (HttpMcpServer, SseMcpServer)):
            raw = {"name": name, "type": server.type, "url": server.url,
                   "headers": {header.name: header.value for header in server.headers or []}}
        else:
            logger.warning("MCP server %s: its transport (%s) is not supported; not connecting it", name,
                           getattr(server, "type", type(server).__name__))
            continue
        try:
            specs.append(McpServerSpec.model_validate(raw))
        except ValidationError as error:
            logger.warning("MCP server %s cannot be used: %s", name, error)
    return specs


def _tool_safe(name: str, index: int, taken: set[str]) -> str:
    safe = re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9-]", "-", name.strip())).strip("-")[:32] or f"server{index + 1}"
    candidate, number = safe, 2
    while candidate in taken:
        candidate, number = f"{safe}-{number}", number + 1
    return candidate
