"""The host: every session of one front end's connection, and how each is put together."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from ..agent import Agent
from ..agent.types import ToolExecutionMode
from ..ai.models import ModelCatalog, ModelError
from ..ai.types import Model
from ..persistence.session_files import SavedSession, SessionStore, default_data_dir, session_title
from ..protocol.errors import ErrorCode
from ..protocol.events import ApprovalResolvedEvent
from ..protocol.methods import ListModelsParams, ListModelsResult, ModelInfo, NewSessionParams, SessionSummary
from ..protocol.modes import ApprovalMode
from ..telemetry.settings import observe_agent
from ..tools import DEFAULT_TOOLS, Workspace, create_coding_tools
from .approvals import Approvals
from .editor import Editor, EditorDocument
from .errors import HostError
from .event_channel import EventChannel
from .recorder import SessionRecorder, SessionSettings
from .session import Session
from .settings import HostSettings
from .system_prompt import system_prompt_for

logger = logging.getLogger("tiller.host")


class Host:
    def __init__(self, catalog: ModelCatalog, editor: Editor, settings: HostSettings | None = None) -> None:
        self.catalog = catalog
        self.editor = editor
        self.settings = settings or HostSettings()
        self.sessions: dict[str, Session] = {}
        self._store: SessionStore | None = None

    def configure(self, settings: HostSettings) -> None:
        """The user's choices, once the front end knows them (LSP: at `initialize`)."""
        self.settings = settings

    @property
    def store(self) -> SessionStore:
        # Created on first use: the data directory may come with the front end's settings.
        if self._store is None:
            self._store = SessionStore(default_data_dir(configured=self.settings.data_dir))
        return self._store

    # --- models --------------------------------------------------------------------------

    def resolve_model(self, ref: str | None) -> Model:
        try:
            if ref:
                return self.catalog.resolve(ref)
            if self.settings.default_model:
                return self.catalog.resolve(self.settings.default_model)
            return self.catalog.default_model()
        except ModelError as error:
            raise HostError(ErrorCode.MODEL_NOT_FOUND, str(error)) from None

    async def list_models(self, params: ListModelsParams) -> ListModelsResult:
        """Search and page the catalogue as a model picker does (see ModelCatalog.list_models)."""
        found = await self.catalog.list_models(
            params.query or "", offset=params.offset or 0, limit=params.limit, include_all=bool(params.all)
        )
        models = [self._model_info(listing.model, listing.ready) for listing in found.models]
        return ListModelsResult(models=models, default=self.resolve_model(None).ref, total=found.total)

    def _model_info(self, m: Model, ready: bool) -> ModelInfo:
        return ModelInfo(
            provider=m.provider, id=m.id, name=m.name, api=m.api, reasoning=m.reasoning, input=list(m.input),
            context_window=m.context_window, max_tokens=m.max_tokens, cost=m.cost,
            has_key=self.catalog.has_key(m.provider), ready=ready,
            setup_hint=None if ready else self.catalog.setup_hint(m.provider),
        )

    # --- sessions ------------------------------------------------------------------------

    def create(self, params: NewSessionParams, *, default_cwd: str, extra_roots: Iterable[str] = ()) -> Session:
        cwd = os.path.realpath(params.cwd or default_cwd)
        if not os.path.isdir(cwd):
            raise HostError(ErrorCode.INVALID_PARAMS, f"Invalid params: cwd: not a directory: {params.cwd}")
        names = list(DEFAULT_TOOLS) if params.tools is None else params.tools
        unknown = [name for name in names if name not in DEFAULT_TOOLS]
        if unknown:
            raise HostError(
                ErrorCode.INVALID_PARAMS,
                f"Invalid params: tools: unknown tool(s) {', '.join(unknown)}; available: {', '.join(DEFAULT_TOOLS)}",
            )
        session = self._assemble(
            session_id=uuid.uuid4().hex[:12], cwd=cwd, extra_roots=extra_roots,
            model=(model := self.resolve_model(params.model)), system_prompt=system_prompt_for(model, params.system_prompt),
            tool_names=names, approval_mode=params.approval_mode or self.settings.approval_mode,
            tool_execution=params.tool_execution or "parallel",
        )
        if params.thinking_level:
            session.agent.set_thinking_level(params.thinking_level)
        return session

    def load(self, session_id: str, *, extra_roots: Iterable[str] = ()) -> Session:
        """A saved session back in this host, to continue where it left off."""
        if session_id in self.sessions:
            return self.sessions[session_id]
        if not self.store.exists(session_id):
            raise HostError(ErrorCode.SESSION_NOT_FOUND, f"Unknown session: {session_id} (not loaded and not saved)")
        saved = self.store.load(session_id)
        if not os.path.isdir(saved.cwd):
            raise HostError(ErrorCode.INVALID_PARAMS, f"Session {session_id} worked in {saved.cwd}, which no longer exists")
        try:
            model = self.catalog.resolve(saved.model)
        except ModelError:
            model = self.resolve_model(None)  # the saved model is gone: carry on with the default
        # The saved tool set, system prompt and approval mode come back as they were: a
        # reload must never give the model more than the session had.
        tools = [name for name in saved.tools if name in DEFAULT_TOOLS] if saved.tools is not None else DEFAULT_TOOLS
        session = self._assemble(
            session_id=session_id, cwd=saved.cwd, extra_roots=extra_roots, model=model,
            system_prompt=system_prompt_for(model, saved.system_prompt), tool_names=list(tools),
            approval_mode=_saved_mode(saved.approval_mode),
            tool_execution="sequential" if saved.tool_execution == "sequential" else "parallel", saved=saved,
        )
        session.agent.replace_messages(saved.messages)
        if saved.thinking_level:
            session.agent.set_thinking_level(saved.thinking_level)  # type: ignore[arg-type]
        return session

    def _assemble(
        self,
        *,
        session_id: str,
        cwd: str,
        extra_roots: Iterable[str],
        model: Model,
        system_prompt: str,
        tool_names: list[str],
        approval_mode: ApprovalMode,
        tool_execution: ToolExecutionMode,
        saved: SavedSession | None = None,
    ) -> Session:
        editor = self.editor
        # Tools run in parallel as in pi's coding agent; edit and write of one file still
        # take turns in call order (the tools' per-file locks), and each change that needs
        # approval asks on its own, so several approvals may be pending at once.
        agent = Agent(get_api_key=self.catalog.api_key, get_stream_options=self.catalog.stream_options,
                      tool_execution=tool_execution)
        agent.set_model(model)
        agent.set_system_prompt(system_prompt)
        events = EventChannel(session_id, editor.send_event)

        def settings() -> SessionSettings:
            state = agent.state
            return SessionSettings(model=state.model.ref, thinking_level=state.thinking_level,
                                   approval_mode=approvals.mode, tool_execution=agent.tool_execution,
                                   tools=[t.name for t in state.tools],
                                   system_prompt=state.system_prompt)

        recorder = SessionRecorder(self.store, session_id, cwd, settings, events.emit,
                                   file=self.store.open(session_id) if saved is not None else None)
        approvals = Approvals(events.emit, approval_mode, editor.capabilities.shows_approvals,
                              on_resolved=recorder.save_approval,
                              resolved=_saved_outcomes(saved.resolved_approvals) if saved is not None else None)
        session = Session(session_id=session_id, cwd=cwd, agent=agent, events=events, approvals=approvals,
                          recorder=recorder, document_at=editor.document_at)
        observe_agent(agent, session_id, dump_dir=self.settings.dump_payloads, approval_wait=approvals.take_wait)
        tools = create_coding_tools(
            Workspace(cwd, extra_roots),
            open_document=_DocumentReader(editor, session_id, self.settings.editor_timeout),
            writer=_EditorWriter(editor, session_id, self.settings.editor_timeout),
            approve=approvals,
        )
        agent.set_tools([tools[name] for name in tool_names])
        self.sessions[session_id] = session
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

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise HostError(ErrorCode.SESSION_NOT_FOUND, f"Unknown session: {session_id}")
        return session

    async def delete(self, session_id: str) -> None:
        if session_id not in self.sessions and not self.store.exists(session_id):
            raise HostError(ErrorCode.SESSION_NOT_FOUND, f"Unknown session: {session_id}")
        if session_id in self.sessions:
            await self.close(session_id)
        self.store.delete(session_id)

    async def close(self, session_id: str) -> None:
        """Stop hosting the session (its file stays: `load` brings it back)."""
        session = self.get(session_id)
        await session.abort()
        self.sessions.pop(session_id, None)

    async def close_all(self, timeout: float) -> None:
        """Abort every run; give them `timeout` seconds to wind down. Then close the pooled
        provider connections (the front end is shutting down)."""
        aborts: list[Any] = [s.abort() for s in self.sessions.values()]
        if aborts:
            try:
                await asyncio.wait_for(asyncio.gather(*aborts, return_exceptions=True), timeout)
            except (TimeoutError, asyncio.CancelledError):
                pass
        from ..ai.connections import close_clients  # here: httpx stays out of the start-up path

        await close_clients()


class EditorTimeout(Exception):
    pass


class _DocumentReader:
    """The tools' `OpenDocument` port for one session: the editor's text of an open file.
    An editor that does not answer in time is not asked: the tool reads the disk."""

    def __init__(self, editor: Editor, session_id: str, timeout: float) -> None:
        self._editor = editor
        self._session_id = session_id
        self._timeout = timeout

    async def __call__(self, path: Path) -> str | None:
        try:
            async with asyncio.timeout(self._timeout):
                document: EditorDocument | None = await self._editor.read_document(self._session_id, path)
        except TimeoutError:
            logger.warning("The editor did not answer a read of %s within %g s; reading the disk", path, self._timeout)
            return None
        return document.text if document is not None else None


class _EditorWriter:
    """The tools' `FileWriter` port for one session: changes go through the editor, which
    must answer in time (else the tool fails, saying so, and the run goes on)."""

    def __init__(self, editor: Editor, session_id: str, timeout: float) -> None:
        self._editor = editor
        self._session_id = session_id
        self._timeout = timeout

    async def write(self, path: Path, text: str) -> None:
        try:
            async with asyncio.timeout(self._timeout):
                await self._editor.write_document(self._session_id, path, text)
        except TimeoutError:
            message = (f"The editor did not answer within {self._timeout:g} s while writing {path}; the change may "
                       "or may not have been applied. Read the file again before changing it.")
            logger.warning("%s", message)
            raise EditorTimeout(message) from None


def _saved_outcomes(records: list[dict[str, Any]]) -> list[ApprovalResolvedEvent]:
    """The approval outcomes a session file records; one that does not validate is skipped
    (it only decorates the transcript)."""
    outcomes = []
    for record in records:
        try:
            outcomes.append(ApprovalResolvedEvent.model_validate(record))
        except ValidationError:
            continue
    return outcomes


def _saved_mode(value: str | None) -> ApprovalMode:
    """The approval mode a session file records; an unreadable one falls back to the
    strictest mode, never to a wider default."""
    for mode in get_args(ApprovalMode):
        if value == mode:
            return mode
    return "ask"
