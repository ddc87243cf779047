"""One session's MCP servers: their tools among the session's tools, the project file's
approval, and what the client is told about them.

The servers of the user's config file and those the client passed start with the session
(a server another session already runs is shared). The servers of the workspace's
`.mcp.json` start once the user approved that file: unless an earlier answer about the same
file (its real path) with the same bytes is remembered, the session asks before its first model call, through its approvals
(an `approval_request` of kind `execute` listing what would run: command lines, the env and
headers as written, working directories). Before each model call the
session also waits for servers that are still starting (each within its startup timeout;
an abort stops the wait), so the first reply can already use their tools.

A server's tools are offered while it is ready or being restarted (a call then says it is
restarting) and withdrawn when it fails; the session's tool list is updated in place, so a
run in progress sees the change from its next model call. Every change of a server is sent
as an `mcp_server_state` event. A server that fails never fails the session: the others
and the built-in tools go on, and the event and `agent/listTools` say what failed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..agent import Agent
from ..agent.types import AgentTool, resolve
from ..ai.abort import AbortSignal
from ..mcp.config import ConfiguredServer, McpConfigProblem, McpServerConfig, ProjectFile
from ..mcp.connection import McpConnection
from ..mcp.manager import McpServerPool
from ..mcp.tool import McpTool, model_name, schema_problem
from ..mcp.trust import ProjectApprovals, project_key
from ..protocol.events import AnyWireEvent
from ..protocol.mcp import (
    McpServerInfo,
    McpServerSource,
    McpServerState,
    McpServerStateEvent,
    McpToolInfo,
    McpTransport,
)
from ..tools.aborts import ToolAborted, unless_aborted
from ..tools.ports import ApprovalRequest
from .approvals import Approvals
from .tool_guard import GuardedTool, Redactor

logger = logging.getLogger("tiller.mcp")

# The name the project file's approval goes by (no tool has it: MCP tools contain "__").
PROJECT_APPROVAL = "mcp"


@dataclass
class _Server:
    name: str
    source: McpServerSource
    transport: McpTransport
    config: McpServerConfig | None
    state: McpServerState = "starting"  # when there is no connection (pending, disabled, failed)
    message: str | None = None
    connection: McpConnection | None = None
    tools: list[McpTool] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    listed: list[Any] | None = None  # the connection's tool list the tools were made from
    unsubscribe: Callable[[], None] | None = None

    @classmethod
    def of(cls, item: ConfiguredServer) -> _Server:
        if isinstance(item, McpConfigProblem):
            return cls(item.name, item.source, item.transport, None, "failed", item.message)
        if item.disabled:
            return cls(item.name, item.source, item.transport, item, "disabled", "disabled in its configuration")
        return cls(item.name, item.source, item.transport, item)

    def current_state(self) -> tuple[McpServerState, str | None]:
        connection = self.connection
        if connection is None:
            return self.state, self.message
        if connection.state == "stopped":
            return "failed", "stopped"
        notes = f"tools not offered: {'; '.join(self.skipped)}" if self.skipped and connection.state == "ready" else None
        return connection.state, connection.message or notes


class SessionMcpServers:
    def __init__(self, pool: McpServerPool, agent: Agent, approvals: Approvals, emit: Callable[[AnyWireEvent], None],
                 project_approvals: ProjectApprovals, redactor: Redactor) -> None:
        self._pool = pool
        # Around each tool as around the built-in ones: keys in results redacted, aborts bounded.
        self._redactor = redactor
        self._offered: list[AgentTool] = []  # the agent's tools that are ours
        self._agent = agent
        self._approvals = approvals
        self._emit = emit
        self._project_approvals = project_approvals
        self._project: ProjectFile | None = None
        self._servers: dict[str, _Server] = {}
        self._sent: dict[str, McpServerInfo] = {}
        self._asking = False
        self._closed = False
        previous = agent.transform_context

        async def before_model_call(messages: list[Any], signal: AbortSignal | None = None) -> Any:
            await self.prepare(signal)
            return await resolve(previous(messages, signal)) if previous is not None else messages

        agent.transform_context = before_model_call

    # --- starting ----------------------------------------------------------------------

    def start(self, *, user: list[ConfiguredServer], project: ProjectFile | None,
              session: list[ConfiguredServer]) -> None:
        """Later sources win for one name: the user's config, then the project, then the session's."""
        servers: dict[str, _Server] = {item.name: _Server.of(item) for item in user}
        if project is not None:
            self._project = project
            decision = self._project_approvals.decision(project.path, project.content)
            for item in project.servers:
                server = _Server.of(item)
                if server.config is not None and server.state == "starting":
                    if decision == "reject":
                        server.state, server.message = "disabled", f"you rejected {project.path}"
                    elif decision is None:
                        server.state, server.message = "pending", f"waiting for your approval of {project.path}"
                servers[item.name] = server
        servers.update((item.name, _Server.of(item)) for item in session)
        self._servers = servers
        for server in servers.values():
            if server.state == "starting":
                self._connect(server)
        # Where each server stands now is for agent/listTools: the client does not know the
        # session yet, so only later changes become events.
        self._sent = {server.name: self._info(server) for server in servers.values()}

    def _connect(self, server: _Server) -> None:
        assert server.config is not None
        connection = self._pool.acquire(server.config)
        server.connection = connection
        server.unsubscribe = connection.subscribe(lambda: self._changed(server))
        if "*" in server.config.auto_approve:
            self._approvals.always_allowed_servers.add(server.name)
        self._changed(server)

    async def prepare(self, signal: AbortSignal | None) -> None:
        """Before a model call: ask about the project file if need be, then wait for the
        servers that are still starting. An abort ends the wait (the call then stops)."""
        cancel = signal or AbortSignal()
        try:
            if not self._asking and any(s.state == "pending" for s in self._servers.values()):
                await self._ask_about_project(cancel)
            starting = [s.connection for s in self._servers.values()
                        if s.connection is not None and s.connection.state == "starting"]
            if starting:
                await unless_aborted(asyncio.gather(*(c.settled() for c in starting)), cancel)
        except ToolAborted:
            return

    async def _ask_about_project(self, cancel: AbortSignal) -> None:
        project = self._project
        assert project is not None
        pending = [s for s in self._servers.values() if s.state == "pending"]
        lines = [f"{s.name}: {s.config.describe_in_full()}" for s in pending if s.config is not None]
        request = ApprovalRequest(
            tool_call_id=f"mcp-project-{project_key(project.path, project.content)[:12]}", tool_name=PROJECT_APPROVAL,
            kind="execute", title=f"Start the MCP servers of {project.path}", path=project.path,
            command="\n".join(lines),
        )
        self._asking = True
        try:
            await unless_aborted(resolve(self._approvals(request)), cancel)
            refusal = None
        except ToolAborted:
            return  # asked again before the next model call
        except Exception as error:
            refusal = str(error)
        finally:
            self._asking = False
            self._approvals.forget(request.tool_call_id)
        answer = next((e for e in reversed(self._approvals.resolved) if e.tool_call_id == request.tool_call_id), None)
        if answer is not None and answer.outcome == "cancelled":
            return
        if refusal is None:
            if answer is not None:  # the user said so, not only the mode: remember it for this file and these bytes
                self._project_approvals.remember(project.path, project.content, "allow")
            for server in pending:
                self._connect(server)
            return
        if answer is not None and answer.option_id == "reject_always":
            self._project_approvals.remember(project.path, project.content, "reject")
        for server in pending:
            server.state, server.message = "disabled", f"not approved: {refusal}"
            self._changed(server)

    # --- following the servers ----------------------------------------------------------

    def _changed(self, server: _Server) -> None:
        connection = server.connection
        if self._closed or (connection is not None and connection.state == "stopped"):
            return  # stopped: tiller is shutting down, no session is left to hear it
        if connection is not None and connection.state == "ready" and server.listed is not connection.tools:
            self._offer(server, connection)
        elif connection is not None and connection.state in ("failed", "stopped"):
            server.tools, server.listed = [], None
        self._sync_agent_tools()
        info = self._info(server)
        if server.name in self._sent and self._sent[server.name] != info:
            self._sent[server.name] = info
            self._emit(McpServerStateEvent(server=info))

    def _offer(self, server: _Server, connection: McpConnection) -> None:
        assert server.config is not None
        taken = {tool.name for other in self._servers.values() if other is not server for tool in other.tools}
        server.tools, server.skipped, server.listed = [], [], connection.tools
        for listed in connection.tools:
            problem = schema_problem(listed.input_schema)
            if problem is not None:
                server.skipped.append(f"{listed.name} ({problem})")
                continue
            name = model_name(server.name, listed.name, taken)
            taken.add(name)
            server.tools.append(McpTool(connection, server.name, listed, name, timeout=server.config.timeout,
                                        approve=self._approvals))
            if listed.name in server.config.auto_approve:
                self._approvals.always_allowed.add(name)
        if server.skipped:
            logger.warning("MCP server %s: tools not offered: %s", server.name, "; ".join(server.skipped))

    def _sync_agent_tools(self) -> None:
        tools = self._agent.state.tools
        ours = {id(tool) for tool in self._offered}
        self._offered = [GuardedTool(tool, self._redactor) for tool in self.tools()]
        # In place: a running loop holds this very list, and sees the change at its next call.
        tools[:] = [*(tool for tool in tools if id(tool) not in ours), *self._offered]

    def tools(self) -> list[McpTool]:
        return [tool for server in self._servers.values() for tool in server.tools]

    # --- reporting ----------------------------------------------------------------------

    def _info(self, server: _Server) -> McpServerInfo:
        state, message = server.current_state()
        tools = [McpToolInfo(name=t.name, tool=t.tool, title=t.title, description=t.description, read_only=t.read_only)
                 for t in server.tools]
        return McpServerInfo(name=server.name, source=server.source, transport=server.transport, state=state,
                             message=message, tools=tools)

    def server_of(self, tool_name: str) -> str | None:
        """The server whose tool the model knows as `tool_name`, if any."""
        return next((tool.server for tool in self.tools() if tool.name == tool_name), None)

    def servers(self) -> list[McpServerInfo]:
        return [self._info(server) for server in self._servers.values()]

    async def close(self) -> None:
        """The session ends: its servers are let go (and stopped if no other session uses them)."""
        self._closed = True
        for server in self._servers.values():
            if server.unsubscribe is not None:
                server.unsubscribe()
            server.tools = []
        self._sync_agent_tools()
        await asyncio.gather(*(self._pool.release(s.connection) for s in self._servers.values() if s.connection),
                             return_exceptions=True)
