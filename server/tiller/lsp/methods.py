"""The `agent/*` method table of the LSP front end: each method's params are validated with
its protocol class, the host does the work, and the answer is dumped from the result class
(protocol/methods.py). Host refusals become the documented JSON-RPC errors. Every request
gets an answer."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ..ai.types import WireModel
from ..host import HostError, Session
from ..host.rewind import rewind as rewind_session
from ..protocol.context import CompactionInfo, CompactionSettings
from ..protocol.errors import ErrorCode
from ..protocol.events import SessionStateEvent
from ..protocol.jsonrpc import clip_message
from ..protocol.mcp import ListToolsResult
from ..protocol.methods import (
    METHODS,
    CompactParams,
    Empty,
    ListCheckpointsResult,
    ListModelsParams,
    ListModelsResult,
    ListSessionsParams,
    ListSessionsResult,
    LoadSessionParams,
    NewSessionParams,
    NewSessionResult,
    PromptParams,
    PromptResult,
    QueueParams,
    QueueState,
    RespondApprovalParams,
    RewindParams,
    RewindResult,
    RulesResult,
    SessionRef,
    SessionState,
    SetApprovalModeParams,
    SetCompactionParams,
    SetModelParams,
    SetQueueModesParams,
    SetRulesParams,
    SetThinkingLevelParams,
    SetToolExecutionParams,
    UndoCompactionResult,
)
from ..protocol.params import InvalidParams, parse_params
from .server import TillerLanguageServer

logger = logging.getLogger("tiller.lsp")

Handler = Callable[[TillerLanguageServer, Any], Awaitable[WireModel]]


def register(server: TillerLanguageServer) -> None:
    """Wire every method of the protocol's table to its handler here."""
    missing = set(METHODS) - set(HANDLERS)
    assert not missing, f"protocol methods without a handler: {sorted(missing)}"
    for method, handler in HANDLERS.items():
        server.feature(method)(_endpoint(server, method, handler))

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(ls: TillerLanguageServer, params: Any) -> None:
        await ls.host.close_all(timeout=5.0)


def _endpoint(server: TillerLanguageServer, method: str, handler: Handler) -> Callable[[Any], Awaitable[Any]]:
    spec = METHODS[method]

    # No functools.wraps: pygls inspects the signature and would inject the server.
    async def run(params: Any) -> Any:
        parsed = _parse(spec.params, params)
        try:
            result = await handler(server, parsed)
        except HostError as error:
            raise JsonRpcException(clip_message(error.message), code=error.code) from None
        assert isinstance(result, spec.result), f"{method} answered {type(result).__name__}"
        return result.dump()

    run.__name__ = method.replace("/", "_")
    return run


def _parse(params_type: type[WireModel] | None, params: Any) -> Any:
    if params_type is None:
        return None
    try:
        return parse_params(params_type, params)
    except InvalidParams as error:
        raise JsonRpcException(str(error), code=ErrorCode.INVALID_PARAMS) from None


# --- handlers ------------------------------------------------------------------------------


def _opened(session: Session) -> NewSessionResult:
    state = session.agent.state
    return NewSessionResult(
        session_id=session.id, model=state.model.ref, tools=[t.name for t in state.tools], cwd=session.cwd,
        approval_mode=session.approvals.mode, message_count=len(state.messages),
    )


async def new_session(ls: TillerLanguageServer, params: NewSessionParams) -> NewSessionResult:
    session = await ls.host.create(params, default_cwd=ls.workspace_root(), extra_roots=ls.workspace_folders())
    return _opened(session)


async def load_session(ls: TillerLanguageServer, params: LoadSessionParams) -> NewSessionResult:
    return _opened(await ls.host.load(params.session_id, extra_roots=ls.workspace_folders(),
                                      mcp_servers=params.mcp_servers or []))


async def list_tools(ls: TillerLanguageServer, params: SessionRef) -> ListToolsResult:
    return ls.host.list_tools(params.session_id)


async def prompt(ls: TillerLanguageServer, params: PromptParams) -> PromptResult:
    session = ls.host.get(params.session_id)
    return await session.prompt(params.text, params.images, params.context, params.streaming_behavior)


async def steer(ls: TillerLanguageServer, params: QueueParams) -> QueueState:
    return ls.host.get(params.session_id).steer(params.text)


async def follow_up(ls: TillerLanguageServer, params: QueueParams) -> QueueState:
    return ls.host.get(params.session_id).follow_up(params.text)


async def abort(ls: TillerLanguageServer, params: SessionRef) -> Empty:
    await ls.host.get(params.session_id).abort()
    return Empty()


async def clear_queue(ls: TillerLanguageServer, params: SessionRef) -> QueueState:
    return ls.host.get(params.session_id).clear_queue()


async def get_state(ls: TillerLanguageServer, params: SessionRef) -> SessionState:
    return ls.host.get(params.session_id).state()


async def set_model(ls: TillerLanguageServer, params: SetModelParams) -> SessionStateEvent:
    session = ls.host.get(params.session_id)
    session.set_model(ls.host.resolve_model(params.model))
    return session.settings_changed()


async def set_thinking_level(ls: TillerLanguageServer, params: SetThinkingLevelParams) -> SessionStateEvent:
    session = ls.host.get(params.session_id)
    session.agent.set_thinking_level(params.level)
    return session.settings_changed()


async def set_queue_modes(ls: TillerLanguageServer, params: SetQueueModesParams) -> SessionStateEvent:
    session = ls.host.get(params.session_id)
    if params.steering_mode:
        session.agent.steering_mode = params.steering_mode
    if params.follow_up_mode:
        session.agent.follow_up_mode = params.follow_up_mode
    return session.settings_changed()


async def set_approval_mode(ls: TillerLanguageServer, params: SetApprovalModeParams) -> SessionStateEvent:
    session = ls.host.get(params.session_id)
    session.set_approval_mode(params.mode)
    return session.settings_changed()


async def set_tool_execution(ls: TillerLanguageServer, params: SetToolExecutionParams) -> SessionStateEvent:
    session = ls.host.get(params.session_id)
    session.agent.tool_execution = params.mode  # from the next run on
    return session.settings_changed()


async def list_models(ls: TillerLanguageServer, params: ListModelsParams) -> ListModelsResult:
    return await ls.host.list_models(params)


async def list_sessions(ls: TillerLanguageServer, params: ListSessionsParams) -> ListSessionsResult:
    return ListSessionsResult(sessions=await ls.host.summaries(params.cwd))


async def close_session(ls: TillerLanguageServer, params: SessionRef) -> Empty:
    await ls.host.close(params.session_id)
    return Empty()


async def delete_session(ls: TillerLanguageServer, params: SessionRef) -> Empty:
    await ls.host.delete(params.session_id)
    return Empty()


async def respond_approval(ls: TillerLanguageServer, params: RespondApprovalParams) -> Empty:
    ls.host.get(params.session_id).approvals.respond(params.approval_id, params.option_id, params.message,
                                                     params.accepted_hunks)
    return Empty()


async def get_rules(ls: TillerLanguageServer, params: SessionRef) -> RulesResult:
    return ls.host.get(params.session_id).rules()


async def set_rules(ls: TillerLanguageServer, params: SetRulesParams) -> RulesResult:
    return ls.host.get(params.session_id).set_rules(params.scope, params.rules, params.trust)


async def list_checkpoints(ls: TillerLanguageServer, params: SessionRef) -> ListCheckpointsResult:
    session = ls.host.get(params.session_id)
    return await session.checkpoints.listing(session.conversation_records())


async def rewind(ls: TillerLanguageServer, params: RewindParams) -> RewindResult:
    session = ls.host.get(params.session_id)
    async with session.exclusive("rewinding"):
        return await rewind_session(session, ls.host.editor, params)


async def compact(ls: TillerLanguageServer, params: CompactParams) -> CompactionInfo:
    return await ls.host.get(params.session_id).compact(params.instructions)


async def undo_compaction(ls: TillerLanguageServer, params: SessionRef) -> UndoCompactionResult:
    session = ls.host.get(params.session_id)
    undone = session.undo_compaction()
    return UndoCompactionResult(undone=undone, context_usage=session.context.usage())


async def set_compaction(ls: TillerLanguageServer, params: SetCompactionParams) -> CompactionSettings:
    return ls.host.get(params.session_id).context.configure(
        auto=params.auto, compact_at=params.compact_at, keep_recent_tokens=params.keep_recent_tokens,
        tool_result_max_tokens=params.tool_result_max_tokens,
    )


HANDLERS: dict[str, Handler] = {
    "agent/newSession": new_session,
    "agent/prompt": prompt,
    "agent/steer": steer,
    "agent/followUp": follow_up,
    "agent/abort": abort,
    "agent/clearQueue": clear_queue,
    "agent/getState": get_state,
    "agent/setModel": set_model,
    "agent/setThinkingLevel": set_thinking_level,
    "agent/setQueueModes": set_queue_modes,
    "agent/listModels": list_models,
    "agent/listSessions": list_sessions,
    "agent/loadSession": load_session,
    "agent/closeSession": close_session,
    "agent/deleteSession": delete_session,
    "agent/respondApproval": respond_approval,
    "agent/setApprovalMode": set_approval_mode,
    "agent/setToolExecution": set_tool_execution,
    "agent/getRules": get_rules,
    "agent/setRules": set_rules,
    "agent/listCheckpoints": list_checkpoints,
    "agent/rewind": rewind,
    "agent/compact": compact,
    "agent/undoCompaction": undo_compaction,
    "agent/setCompaction": set_compaction,
    "agent/listTools": list_tools,
}
