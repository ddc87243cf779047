"""Approvals: whether a tool's change may happen, asking the user when the mode says so.

edit, write and bash call `Approvals.__call__` (the tools' `Approve` port) with what they
would do. A change inside tiller's data directory is refused in every mode; one of a
protected path (protected_paths.py) asks in every mode but yolo. Otherwise, depending on
the session's mode the change is allowed at once, or the user is asked: an
`approval_request` event goes out and the tool waits until the front end brings
the answer back (`respond`). The pending approval lives here, in the session, not in a
transport's request, so a client that reconnects finds it in `agent/getState` and can still
answer it. Answered (and cancelled) approvals are remembered as their `approval_resolved`
events, so `agent/getState` can tell a client that rebuilds its view how each went.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from ..protocol.errors import ErrorCode
from ..protocol.events import AnyWireEvent, ApprovalOption, ApprovalRequestEvent, ApprovalResolvedEvent, DiffHunk
from ..protocol.modes import ApprovalMode, ApprovalOptionId
from ..telemetry.run_log import ApprovalWait
from ..tools.aborts import OPERATION_ABORTED
from ..tools.ports import ApprovalRequest, HunkSelection
from .command_policy import CommandPolicy, Decision
from .errors import HostError
from .protected_paths import PathRules


class Rejected(Exception):
    """The user (or the mode) said no; the message is the tool's error result."""


class ApprovalCancelled(Exception):
    """The run was aborted while the user decided."""


@dataclass(frozen=True)
class Answer:
    option_id: ApprovalOptionId
    message: str | None = None
    # Some of the request's hunks (never none, never all: respond() turns those into a plain
    # reject or allow), or None for the whole change.
    accepted_hunks: frozenset[str] | None = None


@dataclass
class Pending:
    request: ApprovalRequest
    event: ApprovalRequestEvent
    answer: asyncio.Future[Answer]


def approval_options(tool_name: str, server: str | None = None) -> list[ApprovalOption]:
    """The answers to an approval; an MCP tool call (`server`) may also allow its whole server."""
    every_tool = ([ApprovalOption(option_id="allow_server", name=f"Always allow every {server} tool in this session",
                                  kind="allow_always")] if server else [])
    return [
        ApprovalOption(option_id="allow_once", name="Allow once", kind="allow_once"),
        ApprovalOption(option_id="allow_always", name=f"Always allow {tool_name} in this session", kind="allow_always"),
        *every_tool,
        ApprovalOption(option_id="reject_once", name="Reject", kind="reject_once"),
        ApprovalOption(option_id="reject_always", name=f"Always reject {tool_name} in this session",
                       kind="reject_always"),
    ]


def rejection_text(request: ApprovalRequest, message: str | None = None) -> str:
    noun = {"execute": "command", "mcp": "tool call"}.get(request.kind, "edit")
    text = f"The user rejected this {noun}"
    return f"{text}: {message.strip()}" if message and message.strip() else f"{text}."


def _answer(request: ApprovalRequest, option_id: ApprovalOptionId, message: str | None,
            accepted_hunks: list[str] | None) -> Answer:
    """The user's answer, checked; a bad `acceptedHunks` is an error and the approval stays
    pending, so the client can answer again."""
    if option_id == "allow_server" and request.server is None:
        raise HostError(ErrorCode.INVALID_PARAMS, "allow_server answers only an MCP tool call's approval")
    if accepted_hunks is None:
        return Answer(option_id, message)
    ids = [hunk.id for hunk in request.hunks]
    if not ids:
        raise HostError(ErrorCode.INVALID_PARAMS, "acceptedHunks: this approval has no hunks (only edit and write do)")
    if not option_id.startswith("allow"):
        raise HostError(ErrorCode.INVALID_PARAMS, "acceptedHunks goes with allow_once or allow_always")
    unknown = sorted(set(accepted_hunks) - set(ids))
    if unknown:
        raise HostError(ErrorCode.INVALID_PARAMS, f"acceptedHunks: no hunk {', '.join(unknown)} (this approval has {', '.join(ids)})")
    accepted = frozenset(accepted_hunks)
    if not accepted:  # every hunk left out: the change is rejected
        return Answer("reject_once", message)
    if accepted == set(ids):
        return Answer(option_id, message)
    return Answer(option_id, message, accepted)


class Approvals:
    def __init__(
        self,
        emit: Callable[[AnyWireEvent], None],
        mode: ApprovalMode,
        client_shows_approvals: bool,
        on_resolved: Callable[[ApprovalResolvedEvent], None] = lambda event: None,
        resolved: list[ApprovalResolvedEvent] | None = None,
        rules: PathRules | None = None,
        policy: CommandPolicy | None = None,
        before_change: Callable[[], Awaitable[None]] | None = None,
    ):
        self._emit = emit
        self._on_resolved = on_resolved
        self.rules = rules
        self.mode: ApprovalMode = mode
        self.client_shows_approvals = client_shows_approvals
        # Command rules and plan mode decide first (command_policy.py); then the mode.
        self.policy = policy
        # Awaited before any change may happen (the turn's checkpoint must be taken first).
        self.before_change = before_change
        self.always_allowed: set[str] = set()
        self.always_allowed_servers: set[str] = set()  # MCP servers whose every tool may run
        self.always_rejected: set[str] = set()
        self.pending: dict[str, Pending] = {}
        # What each running tool call proposed to do (its diff, its command), asked or not,
        # for front ends that show the change with the call's events; forgotten at its end.
        self._proposals: dict[str, ApprovalRequest] = {}
        # Every approval_resolved event of the session, oldest first (a loaded session's too).
        self.resolved: list[ApprovalResolvedEvent] = list(resolved or [])
        # How each asked call was answered and how long the user took (for its log record).
        self._waits: dict[str, ApprovalWait] = {}

    def proposal(self, tool_call_id: str) -> ApprovalRequest | None:
        return self._proposals.get(tool_call_id)

    def forget(self, tool_call_id: str) -> None:
        self._proposals.pop(tool_call_id, None)

    def take_wait(self, tool_call_id: str) -> ApprovalWait | None:
        return self._waits.pop(tool_call_id, None)

    # --- the tools' port ----------------------------------------------------------------

    async def __call__(self, request: ApprovalRequest) -> HunkSelection | None:
        self._proposals[request.tool_call_id] = request
        if request.path is not None and self.rules is not None:
            if (why := self.rules.forbidden(request.path)) is not None:
                raise Rejected(f"Not done: {request.display_path or request.path} is {why}.")
        if self.before_change is not None:
            await self.before_change()
        decision = self.policy.decide(request, self.mode) if self.policy is not None else None
        if decision is not None and decision.outcome == "refuse":
            raise Rejected(decision.message or rejection_text(request))
        if request.tool_name in self.always_rejected:
            # The user's "always reject" outranks every allowance below (plan mode's
            # read-only MCP tools, a command rule, the mode).
            raise Rejected(rejection_text(request, f"{request.tool_name} is always rejected in this session"))
        if request.path is not None and self.rules is not None and self.mode != "yolo":
            if (why := self.rules.protected(request.path)) is not None:
                # Always asked, whatever the mode, a command rule or an earlier "always allow".
                return await self._ask_unless_rejected(replace(request, title=f"{request.title} ({why})"), decision)
        if decision is not None and decision.writes and self.rules is not None:
            if (why := self._redirect_needs_asking(decision.writes)) is not None:
                asking = Decision("ask", why)  # no "always allow": it would not cover this write
                return await self._ask_unless_rejected(replace(request, title=f"{request.title} ({why})"), asking)
        if decision is not None and decision.outcome == "allow":
            return None
        if decision is None and self._allowed_without_asking(request):
            return None
        return await self._ask_unless_rejected(request, decision)

    def _redirect_needs_asking(self, targets: list[Path | None]) -> str | None:
        """A bash line's redirections are writes, checked like a write tool's path: tiller's data
        directory is refused; a protected path, a file outside the workspace or one only known
        when the line runs asks in every mode but yolo, whatever rule or "always allow" said."""
        assert self.rules is not None
        for target in targets:
            if target is not None and (why := self.rules.forbidden(target)) is not None:
                raise Rejected(f"Not run: it writes to {target}, {why}.")
        if self.mode == "yolo":
            return None
        for target in targets:
            if target is None:
                return "it writes to a file only known when the line runs"
            if (why := self.rules.protected(target)) is not None:
                return f"it writes to {target}: {why}"
            if not self.rules.in_workspace(target):
                return f"it writes to {target}, outside the workspace"
        return None

    async def _ask_unless_rejected(self, request: ApprovalRequest, decision: Decision | None) -> HunkSelection | None:
        if request.tool_name in self.always_rejected:
            raise Rejected(rejection_text(request, f"{request.tool_name} is always rejected in this session"))
        if not self.client_shows_approvals:
            raise Rejected(
                f"Not done: this {'command' if request.kind == 'execute' else 'change'} needs the user's approval, "
                "but the editor does not show approval requests (it did not declare "
                "capabilities.experimental.tiller.approvals). The user can allow changes by setting the "
                'approval mode to "acceptEdits" or "yolo".'
            )
        return await self._ask(request, decision)

    def _allowed_without_asking(self, request: ApprovalRequest) -> bool:
        if self.mode == "yolo" or request.tool_name in self.always_allowed:
            return True
        if request.server is not None and request.server in self.always_allowed_servers:
            return True
        return self.mode == "acceptEdits" and request.kind in ("edit", "write")

    async def _ask(self, request: ApprovalRequest, decision: Decision | None) -> HunkSelection | None:
        options = approval_options(request.tool_name, request.server)
        if decision is not None and self.policy is not None:
            if request.kind == "execute":
                options = self.policy.approval_options(decision)
            else:  # a rule asks about this MCP tool: an "always allow" would not hold
                options = [option for option in options if option.kind != "allow_always"]
        event = ApprovalRequestEvent(
            approval_id=uuid.uuid4().hex[:12],
            tool_call_id=request.tool_call_id,
            tool_name=request.tool_name,
            kind=request.kind,
            title=request.title,
            path=str(request.path) if request.path is not None else None,
            diff=request.diff,
            hunks=[DiffHunk(id=h.id, header=h.header, old_start=h.old_start, old_lines=h.old_lines,
                            new_start=h.new_start, new_lines=h.new_lines) for h in request.hunks] or None,
            new_text=request.new_text,
            command=request.command,
            reason=decision.message if decision is not None else None,
            server=request.server,
            arguments=request.arguments,
            options=options,
        )
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self.pending[event.approval_id] = Pending(request, event, future)
        self._emit(event)
        asked = time.monotonic()
        try:
            answer = await future
        except (asyncio.CancelledError, ApprovalCancelled):  # aborted while the user decided
            self._waited(request, None, asked)
            self._resolved(event, outcome="cancelled")
            raise
        finally:
            self.pending.pop(event.approval_id, None)
        option_id = answer.option_id
        self._waited(request, option_id, asked)
        accepted = sorted(answer.accepted_hunks) if answer.accepted_hunks is not None else None
        self._resolved(event, outcome="selected", option_id=option_id, accepted_hunks=accepted)
        chosen = next(option for option in event.options if option.option_id == option_id)
        if chosen.rule is not None and self.policy is not None:
            self.policy.save(chosen.rule)
        elif option_id == "allow_always":
            self.always_allowed.add(request.tool_name)
        elif option_id == "allow_server" and request.server is not None:
            self.always_allowed_servers.add(request.server)
        elif option_id == "reject_always":
            self.always_rejected.add(request.tool_name)
        if option_id.startswith("reject"):
            raise Rejected(rejection_text(request, answer.message))
        if answer.accepted_hunks is not None:
            return HunkSelection(answer.accepted_hunks, answer.message)
        return None

    def _waited(self, request: ApprovalRequest, option_id: ApprovalOptionId | None, since: float) -> None:
        self._waits[request.tool_call_id] = ApprovalWait(option_id, round((time.monotonic() - since) * 1000, 1))

    def _resolved(self, asked: ApprovalRequestEvent, *, outcome: Literal["selected", "cancelled"],
                  option_id: ApprovalOptionId | None = None, accepted_hunks: list[str] | None = None) -> None:
        event = ApprovalResolvedEvent(approval_id=asked.approval_id, tool_call_id=asked.tool_call_id,
                                      outcome=outcome, option_id=option_id, accepted_hunks=accepted_hunks)
        self.resolved.append(event)
        self._on_resolved(event)
        self._emit(event)

    # --- the user's answer --------------------------------------------------------------

    def respond(self, approval_id: str, option_id: ApprovalOptionId, message: str | None = None,
                accepted_hunks: list[str] | None = None) -> None:
        pending = self.pending.get(approval_id)
        if pending is None or pending.answer.done():
            raise HostError(ErrorCode.APPROVAL_NOT_FOUND,
                            f"Unknown approval: {approval_id} (already answered, cancelled, or never asked)")
        offered = [option.option_id for option in pending.event.options]
        if option_id not in offered:
            raise HostError(ErrorCode.INVALID_PARAMS,
                            f"Invalid params: optionId: {option_id} is not an option of this approval ({', '.join(offered)})")
        pending.answer.set_result(_answer(pending.request, option_id, message, accepted_hunks))

    def cancel_all(self) -> None:
        for pending in list(self.pending.values()):
            if not pending.answer.done():
                pending.answer.set_exception(ApprovalCancelled(OPERATION_ABORTED))

    def pending_events(self) -> list[ApprovalRequestEvent]:
        return [pending.event for pending in self.pending.values()]
