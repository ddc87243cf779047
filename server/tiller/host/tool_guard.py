"""What the host puts around every tool of a session.

- Secrets never leave in a result: any provider key found in a tool's output (a command that
  prints `env`, a `.env` file read) is replaced by `[redacted NAME]` in its streamed updates,
  its result and its error message, before any of them becomes an event, enters the model's
  context or is saved.
- An abort always ends the call: a tool gets `ABORT_GRACE` seconds to end itself (bash kills
  its process group and reports the output so far); one that does not is cancelled and the
  call fails with `Operation aborted`, so a run never hangs on a tool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from ..agent.types import AgentTool, AgentToolResult, OnUpdate
from ..ai.abort import AbortSignal
from ..ai.types import TextContent
from ..tools.aborts import ToolAborted, done_or_aborted

ABORT_GRACE = 3.0  # bash needs up to 2 s between SIGTERM and SIGKILL
MIN_SECRET_CHARS = 8  # shorter values would redact ordinary words


class ToolFailed(Exception):
    """A tool's failure, its message redacted."""


class Redactor:
    def __init__(self, secrets: Mapping[str, str]) -> None:
        # Longest first, so a key that contains another is replaced whole.
        self._pairs = sorted(
            ((value, f"[redacted {name}]") for name, value in secrets.items() if len(value) >= MIN_SECRET_CHARS),
            key=lambda pair: -len(pair[0]),
        )

    def text(self, text: str) -> str:
        for value, replacement in self._pairs:
            if value in text:
                text = text.replace(value, replacement)
        return text

    def value(self, value: Any) -> Any:
        if not self._pairs:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        return value

    def result(self, result: AgentToolResult) -> AgentToolResult:
        if not self._pairs:
            return result
        content = [
            block.model_copy(update={"text": self.text(block.text)}) if isinstance(block, TextContent) else block
            for block in result.content
        ]
        return result.model_copy(update={"content": content, "details": self.value(result.details)})


class GuardedTool(AgentTool):
    def __init__(self, tool: AgentTool, redactor: Redactor) -> None:
        self.tool = tool
        self.name, self.label, self.description = tool.name, tool.label, tool.description
        self.parameters = tool.parameters
        self.read_only = tool.read_only  # agent/listTools and plan mode read it
        self._redactor = redactor

    async def execute(
        self, tool_call_id: str, args: dict[str, Any], cancel: AbortSignal, on_update: OnUpdate
    ) -> AgentToolResult:
        redactor = self._redactor

        def redacted_update(partial: AgentToolResult) -> Any:
            return on_update(redactor.result(_as_result(partial)))

        work = asyncio.ensure_future(self.tool.execute(tool_call_id, args, cancel, redacted_update))
        try:
            result = await _until_aborted(work, cancel)
        except (ToolAborted, asyncio.CancelledError):
            raise
        except Exception as error:
            raise ToolFailed(redactor.text(str(error) or type(error).__name__)) from None
        finally:
            if not work.done():
                work.cancel()
        return redactor.result(_as_result(result))


async def _until_aborted(work: asyncio.Future[Any], cancel: AbortSignal) -> Any:
    await done_or_aborted(work, cancel)
    if not work.done():
        # Aborted: let the tool end itself, as most do, then stop waiting for it.
        await asyncio.wait({work}, timeout=ABORT_GRACE)
    if not work.done():
        work.cancel()
        await asyncio.wait({work}, timeout=0.5)  # a tool blocked in a thread may never end
        raise ToolAborted()
    return work.result()


def _as_result(value: Any) -> AgentToolResult:
    return value if isinstance(value, AgentToolResult) else AgentToolResult.model_validate(value)
