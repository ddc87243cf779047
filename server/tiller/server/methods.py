"""The `agent/*` method table: params validated with the protocol types, errors mapped to
the codes documented in protocol.md. Every request gets an answer."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from lsprotocol import types
from pydantic import BaseModel, ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from .app import TillerServer
from .approvals import ApprovalNotFound
from .protocol import (
    APPROVAL_NOT_FOUND,
    INVALID_PARAMS,
    SESSION_BUSY,
    ListModelsResult,
    ListSessionsParams,
    ListSessionsResult,
    ModelInfo,
    NewSessionParams,
    NewSessionResult,
    PromptParams,
    QueueParams,
    RespondApprovalParams,
    SessionRef,
    SetApprovalModeParams,
    SetModelParams,
    SetQueueModesParams,
    SetThinkingLevelParams,
)
from .session import SessionBusyError
from .sessions import ProtocolError

logger = logging.getLogger("tiller.server")

Handler = Callable[[TillerServer, Any], Awaitable[Any]]


def register(server: TillerServer) -> None:
    for method, (params_type, handler) in METHODS.items():
        server.feature(method)(_wrap(server, method, params_type, handler))

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(ls: TillerServer, params: Any) -> None:
        await ls.sessions.close_all(timeout=5.0)


def _wrap(server: TillerServer, method: str, params_type: type[BaseModel] | None, handler: Handler) -> Any:
    # No functools.wraps: pygls inspects the signature and would inject the server.
    async def run(params: Any) -> Any:
        parsed = _parse(params_type, params)
        try:
            result = await handler(server, parsed)
        except ProtocolError as error:
            raise JsonRpcException(error.message, code=error.code) from None
        except SessionBusyError as error:
            raise JsonRpcException(str(error), code=SESSION_BUSY) from None
        except ApprovalNotFound as error:
            raise JsonRpcException(str(error), code=APPROVAL_NOT_FOUND) from None
        if isinstance(result, BaseModel):
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return result

    run.__name__ = method.replace("/", "_")
    return run


def _parse(params_type: type[BaseModel] | None, params: Any) -> Any:
    if params_type is None:
        return None
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise JsonRpcInvalidParams(f"Invalid params: expected an object, got {type(params).__name__}")
    try:
        return params_type.model_validate(params)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in issue['loc']) or 'params'}: {issue['msg']}" for issue in error.errors()
        )
        raise JsonRpcException(f"Invalid params: {problems}", code=INVALID_PARAMS) from None


# --- handlers ------------------------------------------------------------------------------


async def new_session(server: TillerServer, params: NewSessionParams) -> NewSessionResult:
    session = server.sessions.create(params)
    return _opened(session)


def _opened(session) -> NewSessionResult:
    state = session.agent.state
    return NewSessionResult(
        session_id=session.id, model=state.model.ref, tools=[t.name for t in state.tools], cwd=session.cwd,
        approval_mode=session.approvals.mode, message_count=len(state.messages),
    )


async def prompt(server: TillerServer, params: PromptParams) -> Any:
    session = server.sessions.get(params.session_id)
    return await session.prompt(params.text, params.images, params.context, params.streaming_behavior)


async def steer(server: TillerServer, params: QueueParams) -> Any:
    return server.sessions.get(params.session_id).steer(params.text)


async def follow_up(server: TillerServer, params: QueueParams) -> Any:
    return server.sessions.get(params.session_id).follow_up(params.text)


async def abort(server: TillerServer, params: SessionRef) -> dict[str, Any]:
    await server.sessions.get(params.session_id).abort()
    return {}


async def clear_queue(server: TillerServer, params: SessionRef) -> Any:
    return server.sessions.get(params.session_id).clear_queue()


async def get_state(server: TillerServer, params: SessionRef) -> Any:
    return server.sessions.get(params.session_id).state()


async def set_model(server: TillerServer, params: SetModelParams) -> Any:
    session = server.sessions.get(params.session_id)
    session.set_model(server.sessions.resolve_model(params.model))
    return session.emit_session_state()


async def set_thinking_level(server: TillerServer, params: SetThinkingLevelParams) -> Any:
    session = server.sessions.get(params.session_id)
    session.agent.set_thinking_level(params.level)
    return session.emit_session_state()


async def set_queue_modes(server: TillerServer, params: SetQueueModesParams) -> Any:
    session = server.sessions.get(params.session_id)
    if params.steering_mode:
        session.agent.steering_mode = params.steering_mode
    if params.follow_up_mode:
        session.agent.follow_up_mode = params.follow_up_mode
    return session.emit_session_state()


async def list_models(server: TillerServer, params: None) -> ListModelsResult:
    catalog = server.catalog
    models = [
        ModelInfo(
            provider=m.provider, id=m.id, name=m.name, api=m.api, reasoning=m.reasoning, input=list(m.input),
            context_window=m.context_window, max_tokens=m.max_tokens, has_key=catalog.has_key(m.provider),
        )
        for m in catalog.list()
    ]
    return ListModelsResult(models=models, default=server.sessions.resolve_model(None).ref)


async def list_sessions(server: TillerServer, params: ListSessionsParams) -> ListSessionsResult:
    return ListSessionsResult(sessions=server.sessions.summaries(params.cwd))


async def load_session(server: TillerServer, params: SessionRef) -> NewSessionResult:
    return _opened(server.sessions.load(params.session_id))


async def delete_session(server: TillerServer, params: SessionRef) -> dict[str, Any]:
    await server.sessions.delete(params.session_id)
    return {}


async def respond_approval(server: TillerServer, params: RespondApprovalParams) -> dict[str, Any]:
    session = server.sessions.get(params.session_id)
    session.approvals.respond(params.approval_id, params.option_id, params.message)
    return {}


async def set_approval_mode(server: TillerServer, params: SetApprovalModeParams) -> Any:
    session = server.sessions.get(params.session_id)
    session.approvals.mode = params.mode
    return session.emit_session_state()


async def close_session(server: TillerServer, params: SessionRef) -> dict[str, Any]:
    await server.sessions.close(params.session_id)
    return {}


METHODS: dict[str, tuple[type[BaseModel] | None, Handler]] = {
    "agent/newSession": (NewSessionParams, new_session),
    "agent/prompt": (PromptParams, prompt),
    "agent/steer": (QueueParams, steer),
    "agent/followUp": (QueueParams, follow_up),
    "agent/abort": (SessionRef, abort),
    "agent/clearQueue": (SessionRef, clear_queue),
    "agent/getState": (SessionRef, get_state),
    "agent/setModel": (SetModelParams, set_model),
    "agent/setThinkingLevel": (SetThinkingLevelParams, set_thinking_level),
    "agent/setQueueModes": (SetQueueModesParams, set_queue_modes),
    "agent/listModels": (None, list_models),
    "agent/listSessions": (ListSessionsParams, list_sessions),
    "agent/loadSession": (SessionRef, load_session),
    "agent/closeSession": (SessionRef, close_session),
    "agent/deleteSession": (SessionRef, delete_session),
    "agent/respondApproval": (RespondApprovalParams, respond_approval),
    "agent/setApprovalMode": (SetApprovalModeParams, set_approval_mode),
}
