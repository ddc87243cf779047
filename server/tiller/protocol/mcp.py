"""MCP servers on the wire: how a client hands one to a session, and how a session reports
its servers and their tools (`agent/listTools`, the `mcp_server_state` event).

`McpServerSpec` is also the shape of one entry of `[mcpServers.NAME]` in the config file and
of `.mcp.json`'s `mcpServers` object (the entry's key is its `name` there), so the three
places that name servers accept the same keys.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..ai.types import WireModel

McpTransport = Literal["stdio", "http", "sse"]
# pending: the workspace's .mcp.json waits for the user's approval; starting: launching or
# connecting; ready: its tools are offered; restarting: it crashed and is started again
# after a pause; failed: it could not be used (`message` says why); disabled: not started
# (turned off in the config, or the user rejected the project file).
McpServerState = Literal["pending", "starting", "ready", "restarting", "failed", "disabled"]
# config: the user's config file; project: the workspace's .mcp.json; session: passed by
# the client with the session.
McpServerSource = Literal["config", "project", "session"]

# Letters, digits, `_` and `-`, as the model APIs allow in tool names; `__` separates the
# server from the tool in `<server>__<tool>`, so a server name may not contain it.
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


class McpServerSpec(WireModel):
    """One MCP server: a command to run (stdio) or a URL to connect to (http, sse)."""

    name: str
    # Inferred when absent: `command` means stdio, `url` means http (streamable HTTP).
    type: McpTransport | None = None
    command: str | None = None
    args: list[str] | None = None
    # Variables for the server's process, on top of a minimal environment (PATH, HOME, ...):
    # tiller's own environment, provider keys included, is not passed on.
    env: dict[str, str] | None = None
    # The server's working directory (relative: to the session's cwd); default the session's cwd.
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    # A call that gets neither an answer nor a progress notification for this long fails
    # (default 300000, five minutes).
    timeout_ms: int | None = Field(default=None, ge=1)
    # Starting and listing the tools may take this long (default 30000).
    startup_timeout_ms: int | None = Field(default=None, ge=1)
    # Tools that run without asking: their names as the server lists them, or "*" for all.
    # Ignored in a project's .mcp.json (a repository cannot approve its own tools).
    auto_approve: list[str] | None = None
    # Listed but not started.
    disabled: bool | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not SERVER_NAME.match(value) or "__" in value:
            raise ValueError("must be 1-40 letters, digits, '_' or '-', without '__'")
        return value

    @model_validator(mode="after")
    def _transport(self) -> McpServerSpec:
        if self.type is None:
            self.type = "stdio" if self.command is not None else "http" if self.url is not None else None
        if self.type is None:
            raise ValueError("give a command (a server to run) or a url (a server to connect to)")
        if self.type == "stdio" and not (self.command or "").strip():
            raise ValueError("a stdio server needs a command")
        if self.type != "stdio" and not (self.url or "").strip():
            raise ValueError(f"an {self.type} server needs a url")
        return self


class McpToolInfo(WireModel):
    # As the model calls it: `<server>__<tool>`.
    name: str
    # As the server names it.
    tool: str
    title: str | None = None
    description: str
    # The server's `readOnlyHint`: the tool does not change anything (a hint, not a promise).
    read_only: bool


class McpServerInfo(WireModel):
    name: str
    source: McpServerSource
    transport: McpTransport
    state: McpServerState
    # Why it is failed, restarting, pending or disabled; which tools it could not offer.
    message: str | None = None
    tools: list[McpToolInfo] = Field(default_factory=list)


class ToolInfo(WireModel):
    """A tool the model may call now."""

    name: str
    description: str
    read_only: bool
    # The MCP server it comes from; absent for tiller's built-in tools.
    server: str | None = None


class ListToolsResult(WireModel):
    tools: list[ToolInfo]
    mcp_servers: list[McpServerInfo]


class McpServerStateEvent(WireModel):
    """One of the session's MCP servers changed: it started, failed, crashed and is being
    restarted, or its tools changed."""

    type: Literal["mcp_server_state"] = "mcp_server_state"
    server: McpServerInfo
