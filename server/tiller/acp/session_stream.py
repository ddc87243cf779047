"""One session's way to an ACP client: its events become updates, sent in order.

The host hands events over synchronously (`push`); a task sends them one by one, since each
`session/update` is an awaited write. An approval request becomes a
`session/request_permission`, asked in its own task once the updates before it (the tool
call it is about) have gone out, so that waiting for the user never holds up the stream; the
answer goes back to the host's approvals. `drained()` lets a prompt answer only after every
update of its turn was sent, as ACP requires.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from acp import RequestError
from acp.interfaces import Client
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    ToolCallProgress,
    ToolCallUpdate,
)

from ..agent.types import ToolExecutionEndEvent
from ..host import HostError, Session
from ..protocol.context import ContextUsageEvent
from ..protocol.events import AnyWireEvent, ApprovalRequestEvent
from ..protocol.modes import ApprovalOptionId
from ..tools.ports import ApprovalRequest
from .updates import ToolContent, UpdateTranslator, change_content, describe_tool_call, text_content, usage_update

logger = logging.getLogger("tiller.acp")


class SessionStream:
    def __init__(self, client: Client, session: Session) -> None:
        self._client = client
        self._session = session
        # The change each tool call proposed, taken when its events are pushed: the host
        # forgets it once the call has ended, before this stream gets to send the end.
        self._proposals: dict[str, ApprovalRequest | None] = {}
        self._translator = UpdateTranslator(session.cwd, self._take_proposal)
        self._queue: asyncio.Queue[AnyWireEvent] = asyncio.Queue()
        self._pushed = 0
        self._sent = 0
        self._progress = asyncio.Condition()
        self._asking: set[asyncio.Task[None]] = set()
        self._pump = asyncio.get_running_loop().create_task(self._send_all())

    def push(self, event: AnyWireEvent) -> None:
        if isinstance(event, (ApprovalRequestEvent, ToolExecutionEndEvent)):
            self._proposals[event.tool_call_id] = self._session.approvals.proposal(event.tool_call_id)
        self._pushed += 1
        self._queue.put_nowait(event)

    def _take_proposal(self, tool_call_id: str) -> ApprovalRequest | None:
        return self._proposals.pop(tool_call_id, None)

    async def drained(self) -> None:
        """Return once every event pushed before this call has been sent."""
        target = self._pushed
        async with self._progress:
            await self._progress.wait_for(lambda: self._sent >= target)

    async def close(self) -> None:
        self._pump.cancel()
        for task in list(self._asking):
            task.cancel()

    # --- sending ---------------------------------------------------------------------------

    async def _send_all(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                await self._send(event)
            except Exception:
                logger.exception("Could not send an update of session %s", self._session.id)
            async with self._progress:
                self._sent += 1
                self._progress.notify_all()

    async def _send(self, event: AnyWireEvent) -> None:
        session_id = self._session.id
        if isinstance(event, ApprovalRequestEvent):
            task = asyncio.get_running_loop().create_task(self._ask(event))
            self._asking.add(task)
            task.add_done_callback(self._asking.discard)
            return
        for update in self._translator.updates(event):
            await self._client.session_update(session_id=session_id, update=update)
        if isinstance(event, ContextUsageEvent):
            await self._client.session_update(session_id=session_id, update=usage_update(event))

    # --- permissions -----------------------------------------------------------------------

    async def _ask(self, asked: ApprovalRequestEvent) -> None:
        """`session/request_permission` for one approval; the answer goes to the host."""
        session = self._session
        request = self._proposals.get(asked.tool_call_id)
        content: list[ToolContent] = (
            [text_content(f"$ {asked.command}")] if asked.kind == "execute"
            else [text_content(json.dumps(asked.arguments or {}, ensure_ascii=False, indent=2))] if asked.kind == "mcp"
            else change_content(request)
        )
        view = describe_tool_call(asked.tool_name, _args_of(asked), session.cwd)
        tool_call = ToolCallUpdate(tool_call_id=asked.tool_call_id, title=asked.title, kind=view.kind,
                                   status="pending", content=content or None, locations=view.locations)
        options = [PermissionOption(option_id=o.option_id, name=o.name, kind=o.kind) for o in asked.options]
        try:
            answer = await self._client.request_permission(session_id=session.id, tool_call=tool_call,
                                                           options=options)
        except (RequestError, ConnectionError) as error:
            # A client that cannot ask has not allowed anything.
            self._respond(asked, "reject_once", f"the editor could not ask the user ({error})")
            return
        outcome = answer.outcome
        if not isinstance(outcome, AllowedOutcome):
            return  # cancelled: the turn is being cancelled, which resolves the approval
        option = next((o.option_id for o in asked.options if o.option_id == outcome.option_id), None)
        if option is None:
            self._respond(asked, "reject_once", f"the editor answered with an unknown option {outcome.option_id!r}")
            return
        self._respond(asked, option, None)
        if option.startswith("allow"):
            await self._client.session_update(
                session_id=session.id,
                update=ToolCallProgress(session_update="tool_call_update", tool_call_id=asked.tool_call_id,
                                        status="in_progress"),
            )

    def _respond(self, asked: ApprovalRequestEvent, option: ApprovalOptionId, message: str | None) -> None:
        try:
            self._session.approvals.respond(asked.approval_id, option, message)
        except HostError:
            pass  # already resolved (the turn was cancelled meanwhile)


def _args_of(asked: ApprovalRequestEvent) -> dict[str, Any]:
    """The tool arguments an approval is about, as far as the view of a tool call needs them."""
    if asked.kind == "mcp":
        return asked.arguments or {}
    return {"path": asked.path} if asked.path else {"command": asked.command or ""}

