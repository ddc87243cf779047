"""Every session of one server process, and how a new one is put together."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any, get_args

from ..agent import Agent
from ..ai.models import ModelCatalog, ModelError
from ..ai.types import Model
from ..tools import DEFAULT_TOOLS, Workspace, create_coding_tools
from .approvals import ApprovalMode
from .editor_edits import EditorDocuments, EditorWriter
from .protocol import INVALID_PARAMS, MODEL_NOT_FOUND, SESSION_NOT_FOUND, NewSessionParams, SessionSummary
from .session import Session, session_title
from .store import SessionStore, default_data_dir

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
    def __init__(self, server: TillerServer) -> None:
        self.server = server
        self.sessions: dict[str, Session] = {}
        self._store: SessionStore | None = None

    @property
    def store(self) -> SessionStore:
        # Created on first use: the data directory may come from initializationOptions.
        if self._store is None:
            self._store = SessionStore(default_data_dir(configured=self.server.options.data_dir))
        return self._store

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

    def create(self, params: NewSessionParams) -> Session:
        cwd = os.path.realpath(params.cwd or self.server.workspace_root())
        if not os.path.isdir(cwd):
            raise ProtocolError(INVALID_PARAMS, f"Invalid params: cwd: not a directory: {params.cwd}")
        names = list(DEFAULT_TOOLS) if params.tools is None else params.tools
        unknown = [name for name in names if name not in DEFAULT_TOOLS]
        if unknown:
            raise ProtocolError(
                INVALID_PARAMS,
                f"Invalid params: tools: unknown tool(s) {', '.join(unknown)}; available: {', '.join(DEFAULT_TOOLS)}",
            )
        session = self._build(
            cwd=cwd,
            model=self.resolve_model(params.model),
            system_prompt=params.system_prompt,
            tool_names=names,
            approval_mode=params.approval_mode,
        )
        if params.thinking_level:
            session.agent.set_thinking_level(params.thinking_level)
        return session

    def load(self, session_id: str) -> Session:
        """A saved session back in this server, to continue where it left off."""
        if session_id in self.sessions:
            return self.sessions[session_id]
        if not self.store.exists(session_id):
            raise ProtocolError(SESSION_NOT_FOUND, f"Unknown session: {session_id} (not loaded and not saved)")
        saved = self.store.load(session_id)
        if not os.path.isdir(saved.cwd):
            raise ProtocolError(INVALID_PARAMS, f"Session {session_id} worked in {saved.cwd}, which no longer exists")
        try:
            model = self.catalog.resolve(saved.model)
        except ModelError:
            model = self.resolve_model(None)  # the saved model is gone: carry on with the default
        # The saved tool set, system prompt and approval mode come back as they were: a
        # reload must never give the model more than the session had.
        tools = [name for name in saved.tools if name in DEFAULT_TOOLS] if saved.tools is not None else DEFAULT_TOOLS
        session = self._build(cwd=saved.cwd, model=model, system_prompt=saved.system_prompt,
                              tool_names=list(tools), approval_mode=_saved_mode(saved.approval_mode),
                              session_id=session_id, file=self.store.open(session_id))
        session.agent.replace_messages(saved.messages)
        if saved.thinking_level:
            session.agent.set_thinking_level(saved.thinking_level)  # type: ignore[arg-type]
        return session

    def _build(
        self,
        *,
        cwd: str,
        model: Model,
        system_prompt: str | None,
        tool_names: list[str],
        approval_mode: ApprovalMode | None,
        session_id: str | None = None,
        file=None,
    ) -> Session:
        # Sessions keep sequential tools until the host serialises same-file calls and clients
        # show several approvals at once (issue 16, host part); the library default is parallel.
        agent = Agent(get_api_key=self.catalog.api_key, tool_execution="sequential")
        agent.set_model(model)
        agent.set_system_prompt(system_prompt or DEFAULT_SYSTEM_PROMPT)
        server = self.server
        store = self.store

        def create_file():
            # Created when the first message ends: the header records the model, tools and
            # system prompt; a settings line the thinking level and approval mode chosen
            # before then, which agent/loadSession restores.
            state = agent.state
            created = store.create(session.id, cwd, state.model.ref, tools=[t.name for t in state.tools],
                                   system_prompt=state.system_prompt)
            created.append_settings(state.model.ref, state.thinking_level, session.approvals.mode)
            return created

        session = Session(
            cwd=cwd,
            agent=agent,
            notify=server.notify_event,
            read_document=server.read_document,
            session_id=session_id,
            approval_mode=approval_mode or server.options.approval_mode,
            client_shows_approvals=server.client_features.approvals,
            file=file or create_file,
        )
        documents = EditorDocuments(server)
        tools = create_coding_tools(
            Workspace(cwd, server.workspace_folders()), open_document=documents,
            writer=EditorWriter(server, documents), approve=session.approvals
        )
        agent.set_tools([tools[name] for name in tool_names])
        self.sessions[session.id] = session
        return session

    def summaries(self, cwd: str | None = None) -> list[SessionSummary]:
        """Loaded sessions, then saved ones not loaded, most recently updated first."""
        wanted = os.path.realpath(cwd) if cwd else None
        loaded = [s.summary() for s in self.sessions.values() if wanted is None or s.cwd == wanted]
        saved = [
            SessionSummary(session_id=entry.id, cwd=entry.cwd, model=entry.model, is_streaming=False,
                           message_count=len(entry.messages), title=session_title(entry.messages),
                           updated_at=entry.updated_at, loaded=False)
            for entry in self.store.list(cwd=wanted)
            if entry.id not in self.sessions
        ]
        return sorted(loaded + saved, key=lambda summary: summary.updated_at, reverse=True)

    async def delete(self, session_id: str) -> None:
        known = session_id in self.sessions or self.store.exists(session_id)
        if not known:
            raise ProtocolError(SESSION_NOT_FOUND, f"Unknown session: {session_id}")
        if session_id in self.sessions:
            await self.close(session_id)
        self.store.delete(session_id)

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise ProtocolError(SESSION_NOT_FOUND, f"Unknown session: {session_id}")
        return session

    async def close(self, session_id: str) -> None:
        """Stop hosting the session (its file stays: agent/loadSession brings it back)."""
        session = self.get(session_id)
        await session.abort()
        self.sessions.pop(session_id, None)

    async def close_all(self, timeout: float) -> None:
        """Abort every run; give them `timeout` seconds to wind down."""
        aborts: list[Any] = [s.abort() for s in self.sessions.values()]
        if aborts:
            try:
                await asyncio.wait_for(asyncio.gather(*aborts, return_exceptions=True), timeout)
            except (TimeoutError, asyncio.CancelledError):
                pass


def _saved_mode(value: str | None) -> ApprovalMode:
    """The approval mode a session file records; an unreadable one falls back to the
    strictest mode, never to a wider default."""
    for mode in get_args(ApprovalMode):
        if value == mode:
            return mode
    return "ask"
