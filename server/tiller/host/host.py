"""The host: every session of one front end's connection, and how each is put together."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..agent import Agent
from ..agent.types import ToolExecutionMode
from ..ai.models import ModelCatalog, ModelError, config_file
from ..ai.types import Model
from ..environment import looks_like_a_credential, mark_provider_keys, withheld
from ..mcp.config import project_file, resolve_specs, user_servers
from ..mcp.trust import ProjectApprovals
from ..persistence.long_lived import long_lived_objects
from ..persistence.session_files import (
    SavedSession,
    SessionStore,
    UnreadableSession,
    default_data_dir,
)
from ..persistence.session_index import SessionIndex
from ..protocol.errors import ErrorCode
from ..protocol.events import ApprovalResolvedEvent
from ..protocol.jsonrpc import clip
from ..protocol.mcp import ListToolsResult, McpServerSpec, ToolInfo
from ..protocol.methods import ListModelsParams, ListModelsResult, ModelInfo, NewSessionParams, SessionSummary
from ..protocol.modes import APPROVAL_MODES, APPROVAL_WIDTH, ApprovalMode
from ..telemetry.settings import observe_agent
from ..tools import DEFAULT_TOOLS, Workspace, create_coding_tools
from .approvals import Approvals
from .checkpoints import SessionCheckpoints, forget_saved_session
from .command_policy import CommandPolicy
from .context_window import ContextWindow
from .editor import Editor, EditorDocument
from .errors import HostError
from .event_channel import EventChannel
from .instructions import ProjectInstructions
from .protected_paths import PathRules
from .recorder import SessionRecorder, SessionSettings
from .session import Session
from .settings import HostSettings
from .shadow_git import GitError, ShadowRepo

if TYPE_CHECKING:  # the MCP SDK takes seconds to import: only sessions with servers load it
    from ..mcp.manager import McpServerPool
    from .mcp_servers import SessionMcpServers
from .system_prompt import system_prompt_for
from .tool_guard import GuardedTool, Redactor

logger = logging.getLogger("tiller.host")


class Host:
    def __init__(self, catalog: ModelCatalog, editor: Editor, settings: HostSettings | None = None) -> None:
        self.catalog = catalog
        self.editor = editor
        self.settings = settings or HostSettings()
        self.sessions: dict[str, Session] = {}
        self._store: SessionStore | None = None
        self._redactor: Redactor | None = None
        self._shadow_repos: dict[str, ShadowRepo] = {}  # by workspace: its checkpoints
        # MCP servers run once per process, shared by the sessions that use them.
        self._mcp_pool: McpServerPool | None = None
        self._mcp: dict[str, SessionMcpServers] = {}

    def configure(self, settings: HostSettings) -> None:
        """The user's choices, once the front end knows them (LSP: at `initialize`)."""
        self.settings = settings

    @property
    def store(self) -> SessionStore:
        # Created on first use: the data directory may come with the front end's settings.
        if self._store is None:
            self._store = SessionStore(default_data_dir(configured=self.settings.data_dir))
        return self._store

    @property
    def data_dir(self) -> Path:
        """The real path of the data directory (sessions live in its `sessions/`)."""
        return Path(os.path.realpath(self.store.dir.parent))

    def shadow_repo(self, cwd: str) -> ShadowRepo:
        if cwd not in self._shadow_repos:
            self._shadow_repos[cwd] = ShadowRepo(default_data_dir(configured=self.settings.data_dir), cwd)
        return self._shadow_repos[cwd]

    @property
    def index(self) -> SessionIndex:
        return SessionIndex(self.store.dir)

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

    async def create(self, params: NewSessionParams, *, default_cwd: str, extra_roots: Iterable[str] = ()) -> Session:
        cwd = _working_directory(params.cwd or default_cwd)
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
            tool_execution=params.tool_execution or self.settings.tool_execution,
        )
        if params.thinking_level:
            session.agent.set_thinking_level(params.thinking_level)
        await self._start_mcp(session, params.mcp_servers or [])
        return session

    async def load(self, session_id: str, *, extra_roots: Iterable[str] = (),
                   mcp_servers: Sequence[McpServerSpec] = ()) -> Session:
        """A saved session back in this host, to continue where it left off. The file is
        read in a worker thread: other sessions stream on meanwhile. MCP servers the client
        passed are not saved (their env and headers may hold tokens): it passes them again."""
        if session_id in self.sessions:
            return self.sessions[session_id]
        if not self.store.exists(session_id):
            raise HostError(ErrorCode.SESSION_NOT_FOUND, f"Unknown session: {session_id} (not loaded and not saved)")
        try:
            saved = await asyncio.to_thread(self._read_saved, session_id)
        except (UnreadableSession, OSError) as error:
            raise HostError(ErrorCode.SESSION_UNREADABLE, f"Session {session_id} cannot be loaded: {error}") from None
        if session_id in self.sessions:  # loaded by another request meanwhile
            return self.sessions[session_id]
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
            approval_mode=_saved_mode(saved),
            tool_execution="sequential" if saved.tool_execution == "sequential" else "parallel", saved=saved,
        )
        session.agent.replace_messages(saved.messages)
        session.recorder.adopt(saved.messages, saved.conversation, len(saved.records))
        if saved.thinking_level:
            session.agent.set_thinking_level(saved.thinking_level)  # type: ignore[arg-type]
        await self._start_mcp(session, mcp_servers)
        return session

    def _read_saved(self, session_id: str) -> SavedSession:
        with long_lived_objects():  # no full garbage collection pausing every session meanwhile
            return self.store.load(session_id)

    async def _start_mcp(self, session: Session, specs: Sequence[McpServerSpec]) -> None:
        """The session's MCP servers: the user's, the workspace's .mcp.json, the client's.
        The files are read in a worker thread: the workspace's could be anything."""
        user, project = await asyncio.to_thread(lambda: (user_servers(session.cwd), project_file(session.cwd)))
        if not (user or project or specs):
            return
        from ..mcp.manager import McpServerPool
        from .mcp_servers import SessionMcpServers

        if self._mcp_pool is None:
            self._mcp_pool = McpServerPool(redact=self._tool_redactor().text)
        servers = SessionMcpServers(self._mcp_pool, session.agent, session.approvals, session.events.emit,
                                    ProjectApprovals(default_data_dir(configured=self.settings.data_dir)),
                                    self._tool_redactor())
        servers.start(user=user, project=project, session=resolve_specs(list(specs), "session", session.cwd))
        self._mcp[session.id] = servers

    def list_tools(self, session_id: str) -> ListToolsResult:
        """The tools the model may call now, and the state of each of the session's MCP servers."""
        session = self.get(session_id)
        servers = self._mcp.get(session_id)
        tools = [ToolInfo(name=tool.name, description=tool.description, read_only=tool.read_only,
                          server=servers.server_of(tool.name) if servers is not None else None)
                 for tool in session.agent.state.tools]
        return ListToolsResult(tools=tools, mcp_servers=servers.servers() if servers is not None else [])

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
        roots = list(extra_roots)
        # Tools run in parallel as in pi's coding agent; edit and write of one file still
        # take turns in call order (the tools' per-file locks), and each change that needs
        # approval asks on its own, so several approvals may be pending at once.
        agent = Agent(get_api_key=self.catalog.api_key, get_stream_options=self.catalog.stream_options,
                      tool_execution=tool_execution)
        agent.set_model(model)
        events = EventChannel(session_id, editor.send_event)
        workspace = Workspace(cwd, roots)
        rules = PathRules(workspace.roots, data_dir=self.data_dir, config_file=Path(os.path.realpath(config_file())))
        policy = CommandPolicy(cwd, events.emit)
        checkpoints = SessionCheckpoints(self.shadow_repo(cwd), session_id, events.emit)
        instructions = ProjectInstructions(cwd, roots, system_prompt)

        def settings() -> SessionSettings:
            state = agent.state
            return SessionSettings(model=state.model.ref, thinking_level=state.thinking_level,
                                   approval_mode=approvals.mode, tool_execution=agent.tool_execution,
                                   tools=[t.name for t in state.tools],
                                   system_prompt=instructions.base_prompt)

        recorder = SessionRecorder(self.store, session_id, cwd, settings, events.emit,
                                   file=self.store.open(session_id) if saved is not None else None)
        approvals = Approvals(events.emit, approval_mode, editor.capabilities.shows_approvals,
                              on_resolved=recorder.save_approval,
                              resolved=_saved_outcomes(saved.resolved_approvals) if saved is not None else None,
                              rules=rules, policy=policy, before_change=checkpoints.before_change)
        context = ContextWindow(agent, events.emit, recorder.save_record)
        if saved is not None:
            context.restore(saved.other_records)
        session = Session(session_id=session_id, cwd=cwd, agent=agent, events=events, approvals=approvals,
                          recorder=recorder, editor=editor, policy=policy, checkpoints=checkpoints,
                          context=context, instructions=instructions)
        instructions.start(agent, events.emit)
        agent.set_system_prompt(session.full_system_prompt())  # plan mode's part, if it starts planning
        observe_agent(agent, session_id, dump_dir=self.settings.dump_payloads, approval_wait=approvals.take_wait)
        tools = create_coding_tools(
            workspace,
            open_document=_DocumentReader(editor, session_id, self.settings.editor_timeout),
            writer=_EditorWriter(editor, session_id, self.settings.editor_timeout),
            approve=approvals,
        )
        redactor = self._tool_redactor()
        agent.set_tools([GuardedTool(tools[name], redactor) for name in tool_names])
        self.sessions[session_id] = session
        return session

    def _tool_redactor(self) -> Redactor:
        """Built with the first session: the catalogue's key names need its dataset, read on
        first use, and no tool runs before a session exists."""
        if self._redactor is None:
            mark_provider_keys(self.catalog.secret_env_names())
            # Any credential taken out of tiller's environment too: the user's config may pass
            # a GITHUB_TOKEN to an MCP server, which may echo it back.
            self._redactor = Redactor({**withheld_credentials(), **provider_keys(self.catalog)})
        return self._redactor

    async def summaries(self, cwd: str | None = None) -> list[SessionSummary]:
        """Loaded sessions, then saved ones not loaded, most recently updated first. Saved
        ones come from the index (persistence/session_index.py), read in a worker thread."""
        wanted = os.path.realpath(cwd) if cwd else None
        loaded = [s.summary() for s in self.sessions.values() if wanted is None or s.cwd == wanted]
        indexed = await asyncio.to_thread(self.index.list, wanted)
        saved = [
            SessionSummary(session_id=entry.id, cwd=entry.cwd, model=entry.model, is_streaming=False,
                           message_count=entry.message_count, title=entry.title,
                           updated_at=entry.updated_at, loaded=False)
            for entry in indexed
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
        session = self.sessions.get(session_id)
        if session is not None:
            await session.checkpoints.idle()
            await self.close(session_id)
            await session.checkpoints.forget()
        else:
            try:
                cwd = await asyncio.to_thread(self.store.cwd_of, session_id)
                if cwd is not None:
                    await forget_saved_session(self.shadow_repo(cwd), session_id)
            except (OSError, GitError) as error:  # the file goes all the same
                logger.warning("Could not remove the checkpoints of session %s: %s", session_id, error)
        self.store.delete(session_id)

    async def close(self, session_id: str) -> None:
        """Stop hosting the session (its file stays: `load` brings it back)."""
        session = self.get(session_id)
        await session.abort()
        self.sessions.pop(session_id, None)
        servers = self._mcp.pop(session_id, None)
        if servers is not None:
            await servers.close()

    async def close_all(self, timeout: float) -> None:
        """Abort every run; give them `timeout` seconds to wind down. Then close the pooled
        provider connections (the front end is shutting down)."""
        aborts: list[Any] = [s.abort() for s in self.sessions.values()]
        if aborts:
            try:
                await asyncio.wait_for(asyncio.gather(*aborts, return_exceptions=True), timeout)
            except (TimeoutError, asyncio.CancelledError):
                pass
        if self._mcp_pool is not None:
            await self._mcp_pool.stop_all()  # with tiller, its MCP servers stop
        from ..ai.connections import close_clients  # here: httpx stays out of the start-up path

        await close_clients()


def provider_keys(catalog: ModelCatalog) -> dict[str, str]:
    """The provider keys this process holds (name -> value), wherever they are now. Only
    names that hold credentials count: the catalogue also names companions such as
    AWS_REGION, whose values are no secret and would redact ordinary words; a name the
    user gave as `apiKeyEnv` counts whatever it looks like."""
    names = {name for name in catalog.secret_env_names() if looks_like_a_credential(name)}
    names |= catalog.configured_key_names()
    held = {name: value for name, value in os.environ.items() if name in names}
    held.update((name, value) for name, value in withheld().items() if name in names)
    return held


def withheld_credentials() -> dict[str, str]:
    """The credential-looking variables taken out of this process's environment at start."""
    return {name: value for name, value in withheld().items() if looks_like_a_credential(name)}


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


def _working_directory(path: str) -> str:
    """The real path of a session's `cwd`: it must be absolute (a relative one would depend
    on where the server happened to start) and an existing directory."""
    if not os.path.isabs(path):
        raise HostError(ErrorCode.INVALID_PARAMS, "Invalid params: cwd: must be an absolute path")
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        raise HostError(ErrorCode.INVALID_PARAMS, f"Invalid params: cwd: not an existing directory: {clip(path)}")
    return real


def _saved_mode(saved: SavedSession) -> ApprovalMode:
    """The approval mode a reloaded session gets: the last one its file records, but never
    wider than the mode its header recorded when tiller created the file (a session that
    could write to its own file must not widen its permissions by reloading). Anything
    unreadable counts as the strictest mode."""
    ceiling = _mode(saved.header_approval_mode)
    last = _mode(saved.approval_mode) if saved.approval_mode is not None else ceiling
    return min(last, ceiling, key=APPROVAL_WIDTH.__getitem__)


def _mode(value: str | None) -> ApprovalMode:
    for mode in APPROVAL_MODES:
        if value == mode:
            return mode
    return "ask"
