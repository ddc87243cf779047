"""Host events as ACP `session/update`s (acp.md has the full table).

One `UpdateTranslator` per session turns the host's events, in order, into the updates an
ACP client shows: text and thinking as message and thought chunks, each tool call as a
`tool_call` followed by `tool_call_update`s (with the diff of a change, the output of a
command), usage after each turn. Approval requests are not updates: the front end asks
them with `session/request_permission` (permissions.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ContentToolCallContent,
    Cost,
    FileEditToolCallContent,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolKind,
    UsageUpdate,
    UserMessageChunk,
)

from ..agent.types import (
    AgentToolResult,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from ..ai.types import AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall, ToolResultMessage
from ..protocol.context import ContextUsageEvent
from ..protocol.events import AnyWireEvent, MessageUpdateDelta
from ..tools.ports import ApprovalRequest

ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent
SessionUpdate = (
    AgentMessageChunk | AgentThoughtChunk | UserMessageChunk | ToolCallStart | ToolCallProgress | UsageUpdate
)

TOOL_KINDS: dict[str, ToolKind] = {
    "read": "read", "edit": "edit", "write": "edit", "bash": "execute", "grep": "search", "find": "search",
    "ls": "search",
}


@dataclass(frozen=True)
class ToolCallView:
    """What ACP shows of one tool call before it runs."""

    title: str
    kind: ToolKind
    locations: list[ToolCallLocation] | None


def describe_tool_call(name: str, args: dict[str, Any], cwd: str) -> ToolCallView:
    path = args.get("path")
    kind = TOOL_KINDS.get(name, "other")
    server, separator, tool = name.partition("__")
    if separator:  # an MCP server's tool: `<server>__<tool>`
        return ToolCallView(f"{server}: {tool}", kind, None)
    if name == "bash":
        command = str(args.get("command", "")).strip().splitlines()
        return ToolCallView(f"Run {command[0][:80]}" if command else "Run a command", kind, None)
    if isinstance(path, str) and path:
        absolute = path if path.startswith("/") else f"{cwd.rstrip('/')}/{path}"
        line = args.get("offset") if name == "read" and isinstance(args.get("offset"), int) else None
        what = {"read": "Read", "edit": "Edit", "write": "Write", "ls": "List"}.get(name, name)
        if name in ("grep", "find"):
            return ToolCallView(f"{name} {args.get('pattern', '')} in {path}", kind, [ToolCallLocation(path=absolute)])
        return ToolCallView(f"{what} {path}", kind, [ToolCallLocation(path=absolute, line=line)])
    if name in ("grep", "find"):
        return ToolCallView(f"{name} {args.get('pattern', '')}", kind, None)
    return ToolCallView(name, kind, None)


def text_content(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


def change_content(request: ApprovalRequest | None) -> list[ToolContent]:
    """The diff an ACP client shows for a file change (whole-file old and new text)."""
    if request is None or request.path is None or request.new_text is None:
        return []
    return [FileEditToolCallContent(type="diff", path=str(request.path), old_text=request.old_text,
                                    new_text=request.new_text)]


def result_content(result: AgentToolResult) -> list[ToolContent]:
    text = "".join(block.text for block in result.content if isinstance(block, TextContent))
    return [text_content(text)] if text else []


class UpdateTranslator:
    def __init__(self, cwd: str, proposal: Callable[[str], ApprovalRequest | None]) -> None:
        self._cwd = cwd
        self._proposal = proposal  # the change a running tool call proposed (host approvals)

    def updates(self, event: AnyWireEvent) -> list[SessionUpdate]:
        if isinstance(event, MessageUpdateDelta):
            delta = event.assistant_message_event
            if delta.type == "text_delta" and delta.delta:
                return [AgentMessageChunk(session_update="agent_message_chunk",
                                          content=TextContentBlock(type="text", text=delta.delta))]
            if delta.type == "thinking_delta" and delta.delta:
                return [AgentThoughtChunk(session_update="agent_thought_chunk",
                                          content=TextContentBlock(type="text", text=delta.delta))]
            return []
        if isinstance(event, ToolExecutionStartEvent):
            view = describe_tool_call(event.tool_name, event.args, self._cwd)
            return [ToolCallStart(session_update="tool_call", tool_call_id=event.tool_call_id, title=view.title,
                                  kind=view.kind, status="in_progress", locations=view.locations,
                                  raw_input=event.args)]
        if isinstance(event, ToolExecutionUpdateEvent):
            return [ToolCallProgress(session_update="tool_call_update", tool_call_id=event.tool_call_id,
                                     content=result_content(event.partial_result))]
        if isinstance(event, ToolExecutionEndEvent):
            # A change that went through is shown as its diff; a refused one only says why.
            change = [] if event.is_error else change_content(self._proposal(event.tool_call_id))
            content: list[ToolContent] = [*change, *result_content(event.result)]
            return [ToolCallProgress(session_update="tool_call_update", tool_call_id=event.tool_call_id,
                                     status="failed" if event.is_error else "completed", content=content or None,
                                     raw_output=event.result.dump())]
        return []


def usage_update(event: ContextUsageEvent) -> UsageUpdate:
    """The host's context meter (after each turn, and after a compaction or its undo): the
    tokens the next request will carry against the model's window, and what the session cost."""
    return UsageUpdate(session_update="usage_update", used=event.tokens, size=event.context_window,
                       cost=Cost(amount=event.usage.cost.total, currency="USD"))


def history_updates(messages: list[Any], cwd: str) -> list[SessionUpdate]:
    """A saved conversation replayed as updates (`session/load`)."""
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}
    updates: list[SessionUpdate] = []
    for message in messages:
        role = getattr(message, "role", None)
        if role == "user":
            blocks = [message.content] if isinstance(message.content, str) else message.content
            for block in blocks:
                text = block if isinstance(block, str) else getattr(block, "text", None)
                if text:
                    updates.append(UserMessageChunk(session_update="user_message_chunk",
                                                    content=TextContentBlock(type="text", text=text)))
                elif isinstance(block, ImageContent):
                    updates.append(UserMessageChunk(session_update="user_message_chunk",
                                                    content=TextContentBlock(type="text", text="[image]")))
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextContent) and block.text:
                    updates.append(AgentMessageChunk(session_update="agent_message_chunk",
                                                     content=TextContentBlock(type="text", text=block.text)))
                elif isinstance(block, ThinkingContent) and block.thinking and not block.redacted:
                    updates.append(AgentThoughtChunk(session_update="agent_thought_chunk",
                                                     content=TextContentBlock(type="text", text=block.thinking)))
                elif isinstance(block, ToolCall):
                    updates.append(_replayed_tool_call(block, results.get(block.id), cwd))
    return updates


def _replayed_tool_call(call: ToolCall, result: ToolResultMessage | None, cwd: str) -> ToolCallStart:
    view = describe_tool_call(call.name, call.arguments, cwd)
    status: ToolCallStatus = "failed" if result is None or result.is_error else "completed"
    text = "".join(b.text for b in result.content if isinstance(b, TextContent)) if result is not None else ""
    return ToolCallStart(session_update="tool_call", tool_call_id=call.id, title=view.title, kind=view.kind,
                         status=status, locations=view.locations, raw_input=call.arguments,
                         content=[text_content(text)] if text else None)
