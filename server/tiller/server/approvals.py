"""Approvals routed to the editor: the session side of `approval_request` /
`agent/respondApproval`.

A tool that would change something (edit, write, bash) calls `Approvals.__call__` with what
it would do. Depending on the session's mode the change is allowed at once, or the client
is asked with an `approval_request` event and the tool waits for `agent/respondApproval`.
The approval lives in the session (not in a server->client request), so a client that
reconnects finds it again in `agent/getState` and can still answer it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..tools.aborts import OPERATION_ABORTED
from ..tools.approval import ApprovalRequest

ApprovalMode = Literal["ask", "acceptEdits", "yolo"]
OptionId = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
OPTION_IDS: tuple[str, ...] = ("allow_once", "allow_always", "reject_once", "reject_always")


class ApprovalNotFound(Exception):
    pass


class Rejected(Exception):
    """The user (or the mode) said no; the message is the tool's error result."""


class ApprovalCancelled(Exception):
    """The session went away while the user decided."""


@dataclass
class Pending:
    event: dict[str, Any]
    answer: asyncio.Future[tuple[str, str | None]]


def _options(tool_name: str) -> list[dict[str, str]]:
    return [
        {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "allow_always", "name": f"Always allow {tool_name} in this session", "kind": "allow_always"},
        {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
        {"optionId": "reject_always", "name": f"Always reject {tool_name} in this session", "kind": "reject_always"},
    ]


def rejection_text(request: ApprovalRequest, message: str | None = None) -> str:
    noun = "command" if request.kind == "execute" else "edit"
    text = f"The user rejected this {noun}"
    return f"{text}: {message.strip()}" if message and message.strip() else f"{text}."


class Approvals:
    def __init__(self, emit: Callable[[dict[str, Any]], None], mode: ApprovalMode, client_shows_approvals: bool):
        self._emit = emit
        self.mode: ApprovalMode = mode
        self.client_shows_approvals = client_shows_approvals
        self.always_allowed: set[str] = set()
        self.always_rejected: set[str] = set()
        self.pending: dict[str, Pending] = {}

    # --- the tools' hook ----------------------------------------------------------------

    async def __call__(self, request: ApprovalRequest) -> None:
        if self._allowed_without_asking(request):
            return
        if request.tool_name in self.always_rejected:
            raise Rejected(rejection_text(request, f"{request.tool_name} is always rejected in this session"))
        if not self.client_shows_approvals:
            raise Rejected(
                f"Not done: this {'command' if request.kind == 'execute' else 'change'} needs the user's approval, "
                "but the editor does not show approval requests (it did not declare "
                "capabilities.experimental.tiller.approvals). The user can allow changes by setting the "
                'approval mode to "acceptEdits" or "yolo".'
            )
        await self._ask(request)

    def _allowed_without_asking(self, request: ApprovalRequest) -> bool:
        if self.mode == "yolo" or request.tool_name in self.always_allowed:
            return True
        return self.mode == "acceptEdits" and request.kind in ("edit", "write")

    async def _ask(self, request: ApprovalRequest) -> None:
        approval_id = uuid.uuid4().hex[:12]
        event: dict[str, Any] = {
            "type": "approval_request",
            "approvalId": approval_id,
            "toolCallId": request.tool_call_id,
            "toolName": request.tool_name,
            "kind": request.kind,
            "title": request.title,
            "options": _options(request.tool_name),
        }
        if request.path is not None:
            event["path"] = str(request.path)
        if request.diff is not None:
            event["diff"] = request.diff
        if request.new_text is not None:
            event["newText"] = request.new_text
        if request.command is not None:
            event["command"] = request.command
        answer: asyncio.Future[tuple[str, str | None]] = asyncio.get_running_loop().create_future()
        self.pending[approval_id] = Pending(event, answer)
        self._emit(event)
        try:
            option_id, message = await answer
        except (asyncio.CancelledError, ApprovalCancelled):  # aborted while the user decided
            self._resolved(approval_id, request, outcome="cancelled")
            raise
        finally:
            self.pending.pop(approval_id, None)
        self._resolved(approval_id, request, outcome="selected", option_id=option_id)
        if option_id == "allow_always":
            self.always_allowed.add(request.tool_name)
        elif option_id == "reject_always":
            self.always_rejected.add(request.tool_name)
        if option_id.startswith("reject"):
            raise Rejected(rejection_text(request, message))

    def _resolved(self, approval_id: str, request: ApprovalRequest, *, outcome: str, option_id: str | None = None) -> None:
        event = {"type": "approval_resolved", "approvalId": approval_id, "toolCallId": request.tool_call_id,
                 "outcome": outcome}
        if option_id is not None:
            event["optionId"] = option_id
        self._emit(event)

    # --- the client's answer ------------------------------------------------------------

    def respond(self, approval_id: str, option_id: str, message: str | None = None) -> None:
        pending = self.pending.get(approval_id)
        if pending is None or pending.answer.done():
            raise ApprovalNotFound(f"Unknown approval: {approval_id} (already answered, cancelled, or never asked)")
        pending.answer.set_result((option_id, message))

    def cancel_all(self) -> None:
        for pending in list(self.pending.values()):
            if not pending.answer.done():
                pending.answer.set_exception(ApprovalCancelled(OPERATION_ABORTED))

    def pending_events(self) -> list[dict[str, Any]]:
        return [pending.event for pending in self.pending.values()]
