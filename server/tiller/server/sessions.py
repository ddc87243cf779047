"""Every session of one server process, and how a new one is put together."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from ..agent import Agent, AgentTool
from ..ai.models import ModelCatalog, ModelError
from ..ai.types import Model
from .protocol import MODEL_NOT_FOUND, NewSessionParams, SESSION_NOT_FOUND
from .session import Session

if TYPE_CHECKING:
    from .app import TillerServer

DEFAULT_SYSTEM_PROMPT = (
    "You are tiller, a coding agent working inside the user's code editor. Be concise and "
    "precise. Use the tools you are given to read and change files in the workspace."
)


class ProtocolError(Exception):
    """An error with a documented JSON-RPC code (see protocol.py / protocol.md)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class SessionManager:
    def __init__(self, server: "TillerServer") -> None:
        self.server = server
        self.sessions: dict[str, Session] = {}

    @property
    def catalog(self) -> ModelCatalog:
        return self.server.catalog

    def resolve_model(self, ref: str | None) -> Model:
        try:
            if ref:
                return self.catalog.resolve(ref)
            if self.server.options.default_model:
                return self.catalog.resolve(self.server.options.default_model)
            return self.catalog.default_model()
        except ModelError as error:
            raise ProtocolError(MODEL_NOT_FOUND, str(error)) from None

    def available_tools(self, cwd: str) -> dict[str, AgentTool]:
        """The built-in tools a session may enable (the coding tools arrive with issue 4)."""
        return {}

    def create(self, params: NewSessionParams) -> Session:
        cwd = os.path.realpath(params.cwd or self.server.workspace_root())
        if not os.path.isdir(cwd):
            raise ProtocolError(-32602, f"Invalid params: cwd: not a directory: {params.cwd}")
        model = self.resolve_model(params.model)
        tools = self.available_tools(cwd)
        names = list(tools) if params.tools is None else params.tools
        unknown = [name for name in names if name not in tools]
        if unknown:
            known = ", ".join(tools) or "none"
            raise ProtocolError(-32602, f"Invalid params: tools: unknown tool(s) {', '.join(unknown)}; available: {known}")

        agent = Agent(get_api_key=self.catalog.api_key)
        agent.set_model(model)
        agent.set_system_prompt(params.system_prompt or DEFAULT_SYSTEM_PROMPT)
        if params.thinking_level:
            agent.set_thinking_level(params.thinking_level)
        agent.set_tools([tools[name] for name in names])
        session = Session(cwd=cwd, agent=agent, notify=self.server.notify_event,
                          read_document=self.server.read_document)
        self.sessions[session.id] = session
        return session

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise ProtocolError(SESSION_NOT_FOUND, f"Unknown session: {session_id}")
        return session

    async def close(self, session_id: str) -> None:
        session = self.get(session_id)
        await session.abort()
        self.sessions.pop(session_id, None)

    async def close_all(self, timeout: float) -> None:
        """Abort every run; give them `timeout` seconds to wind down."""
        aborts: list[Any] = [s.abort() for s in self.sessions.values()]
        if aborts:
            try:
                await asyncio.wait_for(asyncio.gather(*aborts, return_exceptions=True), timeout)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                pass
