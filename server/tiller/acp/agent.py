"""`tiller acp`: the host's sessions behind the Agent Client Protocol (v1).

Each ACP method becomes a call on the same `Host` the LSP front end uses, so sessions,
approvals, saving and security rules are the same; acp.md maps tiller's events to ACP.

Turns: `session/prompt` answers when its turn ends, after every update of the turn. A
prompt for a session that is already running waits for that turn to end and then runs as
its own turn (in arrival order); `session/cancel` stops the running turn and every waiting
one, each answering `cancelled`. Mid-turn steering is the `_session/steering` extension.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AudioContentBlock,
    AuthenticateResponse,
    ClientCapabilities,
    CloseSessionResponse,
    EmbeddedResourceContentBlock,
    ForkSessionResponse,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    TextContentBlock,
    TextResourceContents,
    Usage,
)

from .. import __version__
from ..ai.models import ModelCatalog
from ..ai.types import ImageContent, TextContent, UserMessage
from ..host import Host, Session
from ..host.warm_up import warm_up
from ..protocol.methods import EditorContext, NewSessionParams, PromptResult
from . import session_options
from .editor import AcpEditor
from .errors import host_errors_as_acp, invalid_params
from .mcp_servers import mcp_specs
from .session_stream import SessionStream
from .updates import history_updates

logger = logging.getLogger("tiller.acp")

# How tiller's stop reasons end an ACP turn ("error" ends the turn after a message saying why).
STOP_REASONS = {"stop": "end_turn", "toolUse": "end_turn", "length": "max_tokens", "aborted": "cancelled",
                "error": "end_turn"}
SESSIONS_PER_PAGE = 100

PromptBlock = TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock


class TillerAgent:
    def __init__(self, catalog: ModelCatalog | None = None) -> None:
        self.editor = AcpEditor()
        self.host = Host(catalog or ModelCatalog.load(), self.editor)
        self._turns: dict[str, asyncio.Lock] = {}
        self._cancelled: dict[str, int] = {}  # session -> cancel count, to stop waiting prompts

    def on_connect(self, conn: Client) -> None:
        self.editor.client = conn

    # --- connection ------------------------------------------------------------------------

    async def initialize(self, protocol_version: int, client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None, **kwargs: Any) -> InitializeResponse:
        self.editor.client_capabilities = client_capabilities or ClientCapabilities()
        warm_up(self.host)  # the first prompt's one-time work, off the event loop
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                # Servers passed in session/new: stdio always; streamable HTTP and SSE too.
                mcp_capabilities=McpCapabilities(http=True, sse=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities(),
                                                         resume=SessionResumeCapabilities(),
                                                         close=SessionCloseCapabilities()),
            ),
            auth_methods=[],
            agent_info=Implementation(name="tiller", title="tiller", version=__version__),
            field_meta={"steering": {"supported": True}},
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        return AuthenticateResponse()  # keys come from the environment; nothing to log into

    # --- sessions --------------------------------------------------------------------------

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: list[Any] | None = None, **kwargs: Any) -> NewSessionResponse:
        with host_errors_as_acp():
            session = await self.host.create(NewSessionParams(cwd=_absolute(cwd), mcp_servers=mcp_specs(mcp_servers)),
                                       default_cwd=cwd, extra_roots=additional_directories or [])
        self._attach(session)
        return NewSessionResponse(session_id=session.id, modes=session_options.modes(session),
                                  config_options=session_options.config_options(self.host, session))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           additional_directories: list[str] | None = None, **kwargs: Any) -> LoadSessionResponse:
        session = await self._open(session_id, additional_directories, mcp_servers)
        # The spec: replay the whole conversation as updates before answering.
        client = self._client()
        for update in history_updates(session.agent.state.messages, session.cwd):
            await client.session_update(session_id=session.id, update=update)
        return LoadSessionResponse(modes=session_options.modes(session),
                                   config_options=session_options.config_options(self.host, session))

    async def resume_session(self, session_id: str, cwd: str, additional_directories: list[str] | None = None,
                             mcp_servers: list[Any] | None = None, **kwargs: Any) -> ResumeSessionResponse:
        session = await self._open(session_id, additional_directories, mcp_servers)
        return ResumeSessionResponse(modes=session_options.modes(session),
                                     config_options=session_options.config_options(self.host, session))

    async def fork_session(self, session_id: str, cwd: str, additional_directories: list[str] | None = None,
                           mcp_servers: list[Any] | None = None, **kwargs: Any) -> ForkSessionResponse:
        raise RequestError.method_not_found("session/fork")  # not offered (no capability advertised)

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> ListSessionsResponse:
        start = int(cursor) if cursor and cursor.isdigit() else 0
        with host_errors_as_acp():
            summaries = await self.host.summaries(cwd)
        page = summaries[start : start + SESSIONS_PER_PAGE]
        more = start + SESSIONS_PER_PAGE < len(summaries)
        return ListSessionsResponse(
            sessions=[SessionInfo(session_id=s.session_id, cwd=s.cwd, title=s.title,
                                  updated_at=_iso(s.updated_at) if s.updated_at else None) for s in page],
            next_cursor=str(start + SESSIONS_PER_PAGE) if more else None,
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        await self.cancel(session_id)
        with host_errors_as_acp():
            await self.host.close(session_id)
        stream = self.editor.streams.pop(session_id, None)
        if stream is not None:
            await stream.close()
        return CloseSessionResponse()

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        session_options.set_mode(self._session(session_id), mode_id)
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **kwargs: Any) -> SetSessionConfigOptionResponse:
        session = self._session(session_id)
        with host_errors_as_acp():
            session_options.set_option(self.host, session, config_id, value)
        return SetSessionConfigOptionResponse(config_options=session_options.config_options(self.host, session))

    # --- turns -----------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[PromptBlock], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        text, images, context = _prompt_parts(prompt)
        cancels = self._cancelled.get(session_id, 0)
        async with self._turns.setdefault(session_id, asyncio.Lock()):
            if self._cancelled.get(session_id, 0) != cancels:
                return PromptResponse(stop_reason="cancelled")  # cancelled while it waited
            with host_errors_as_acp():
                result = await session.prompt(text, images, context)
            if result.stop_reason == "error":
                await self._explain(session, result)
            await self.editor.streams[session_id].drained()
        return PromptResponse(stop_reason=_stop_reason(result), usage=_usage(result))  # type: ignore[arg-type]

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.host.sessions.get(session_id)
        if session is None:
            return  # a notification: nothing to answer
        self._cancelled[session_id] = self._cancelled.get(session_id, 0) + 1
        await session.abort()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method != "session/steering":
            raise RequestError.method_not_found(f"_{method}")
        session = self._session(str(params.get("sessionId", "")))
        blocks = params.get("prompt")
        if not isinstance(blocks, list) or not blocks:
            raise invalid_params("prompt must be a non-empty list of content blocks")
        text = "\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        if not text.strip():
            raise invalid_params("prompt holds no text block")
        if not session.is_running:
            # Nothing to steer: the client sends session/prompt for a new turn.
            return {"outcome": "failed", "message": "The session is idle; send session/prompt to start a turn."}
        session.steer(UserMessage(content=[TextContent(text=text)]))
        return {"outcome": "injected"}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        logger.debug("Ignoring the extension notification _%s", method)

    # --- helpers ---------------------------------------------------------------------------

    def _client(self) -> Client:
        if self.editor.client is None:
            raise RequestError.internal_error({"message": "no client connected"})
        return self.editor.client

    def _attach(self, session: Session) -> None:
        if session.id not in self.editor.streams:
            self.editor.streams[session.id] = SessionStream(self._client(), session)

    async def _open(self, session_id: str, additional_directories: list[str] | None,
                    mcp_servers: list[Any] | None) -> Session:
        with host_errors_as_acp():
            session = await self.host.load(session_id, extra_roots=additional_directories or [],
                                           mcp_servers=mcp_specs(mcp_servers))
        self._attach(session)
        return session

    def _session(self, session_id: str) -> Session:
        with host_errors_as_acp():
            return self.host.get(session_id)

    async def _explain(self, session: Session, result: PromptResult) -> None:
        """ACP has no error stop reason: say what went wrong in the conversation itself."""
        await self.editor.streams[session.id].drained()
        text = f"\n\n**Error:** {result.error_message or 'the turn failed'}"
        await self._client().session_update(
            session_id=session.id,
            update=AgentMessageChunk(session_update="agent_message_chunk",
                                     content=TextContentBlock(type="text", text=text)),
        )


def _absolute(cwd: str) -> str:
    if not cwd.startswith("/"):
        raise invalid_params(f"cwd must be an absolute path, got {cwd!r}")
    return cwd


def _prompt_parts(blocks: list[PromptBlock]) -> tuple[str, list[ImageContent], list[EditorContext]]:
    texts: list[str] = []
    images: list[ImageContent] = []
    context: list[EditorContext] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, ImageContentBlock):
            images.append(ImageContent(data=block.data, mime_type=block.mime_type))
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                context.append(EditorContext(uri=resource.uri, text=resource.text))
            else:
                texts.append(f"[an attached binary resource: {resource.uri}]")
        elif isinstance(block, ResourceContentBlock):
            context.append(EditorContext(uri=block.uri))
        else:
            raise invalid_params("audio prompts are not supported")
    return "\n".join(texts), images, context


def _stop_reason(result: PromptResult) -> str:
    if result.stop_reason == "error" and "(max_turns)" in (result.error_message or ""):
        return "max_turn_requests"
    return STOP_REASONS.get(result.stop_reason, "end_turn")


def _usage(result: PromptResult) -> Usage:
    usage = result.usage
    return Usage(total_tokens=usage.total_tokens, input_tokens=usage.input, output_tokens=usage.output,
                 cached_read_tokens=usage.cache_read or None, cached_write_tokens=usage.cache_write or None)


def _iso(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
