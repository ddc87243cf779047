"""An MCP server's tool as one of the session's tools.

The model calls it `<server>__<tool>` (characters model APIs refuse in a tool name become
`_`) with the server's JSON Schema for its arguments, which the agent validates and coerces
like a built-in tool's. Every call goes through the session's approvals, as bash does, with
the server and the arguments in the request; `read_only` is the server's `readOnlyHint`
(a hint: what a plan mode may let through). Progress notifications stream as tool
updates; a result with `isError` fails the call with the server's text.
"""

from __future__ import annotations

import re
from typing import Any

from mcp import types as mcp_types

from ..agent.types import AgentTool, AgentToolResult, OnUpdate, resolve
from ..ai.abort import AbortSignal
from ..ai.types import TextContent
from ..tools.aborts import raise_if_aborted, unless_aborted
from ..tools.ports import ApprovalRequest, Approve
from .connection import McpConnection
from .results import result_text, tool_result

MAX_NAME = 64  # what the model APIs accept as a tool name
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class McpToolError(Exception):
    """The server's tool reported an error (`isError`); the message is its text."""


class McpTool(AgentTool):
    def __init__(self, connection: McpConnection, server: str, tool: mcp_types.Tool, name: str, *, timeout: float,
                 approve: Approve | None) -> None:
        self.connection = connection
        self.server = server
        self.tool = tool.name
        self.title = tool.title or (tool.annotations.title if tool.annotations else None)
        self.name = name
        self.label = f"{server}: {self.title or tool.name}"
        self.description = tool.description or self.title or f"The {tool.name} tool of the MCP server {server}."
        self.parameters = tool.input_schema
        self.read_only = bool(tool.annotations and tool.annotations.read_only_hint)
        self.timeout = timeout
        self.approve = approve

    async def execute(self, tool_call_id: str, args: dict[str, Any], cancel: AbortSignal,
                      on_update: OnUpdate) -> AgentToolResult:
        raise_if_aborted(cancel)
        if self.approve is not None:
            request = ApprovalRequest(tool_call_id=tool_call_id, tool_name=self.name, kind="mcp", title=self.label,
                                      server=self.server, arguments=args, read_only=self.read_only)
            await unless_aborted(resolve(self.approve(request)), cancel)
            raise_if_aborted(cancel)

        def progress(value: float, total: float | None, message: str | None) -> None:
            on_update(AgentToolResult(content=[TextContent(text=_progress_text(value, total, message))],
                                      details={"progress": value, "total": total, "message": message}))

        result = await self.connection.call(self.tool, args, timeout=self.timeout, cancel=cancel, on_progress=progress)
        mapped = tool_result(result, self.server, self.tool)
        if result.is_error:
            raise McpToolError(result_text(mapped) or f"{self.tool} failed (the server gave no reason).")
        return mapped


def model_name(server: str, tool: str, taken: set[str]) -> str:
    """`<server>__<tool>`, made acceptable to model APIs and unique among `taken`."""
    base = f"{server}__{_UNSAFE.sub('_', tool)}"[:MAX_NAME]
    name, number = base, 2
    while name in taken:
        suffix = f"_{number}"
        name, number = base[: MAX_NAME - len(suffix)] + suffix, number + 1
    return name


def schema_problem(schema: Any) -> str | None:
    """Why a tool's input schema cannot be used, or None."""
    from jsonschema import SchemaError, validators

    if not isinstance(schema, dict) or schema.get("type") != "object":
        return 'its input schema is not a JSON Schema of "type": "object"'
    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as error:
        return f"its input schema is invalid: {error.message}"
    return None


def _progress_text(value: float, total: float | None, message: str | None) -> str:
    amount = f"{value:g}/{total:g}" if total else f"{value:g}"
    return f"{message} ({amount})" if message else f"Progress: {amount}"
