"""Small builders shared by the agent tests (real faux provider, real tools)."""

from __future__ import annotations

from typing import Any

import anyio

from tiller.agent import AgentContext, AgentLoopConfig, AgentTool, AgentToolResult
from tiller.ai.providers.faux import FauxProvider
from tiller.ai.types import TextContent, UserMessage


def user(text: str) -> UserMessage:
    return UserMessage(content=text)


def text_of(message: Any) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(getattr(b, "text", "") for b in content)


def echo_tool(calls: list[Any] | None = None, *, gate: anyio.Event | None = None, name: str = "echo") -> AgentTool:
    """A tool that echoes `value`; records its calls; may wait on `gate` first."""

    async def execute(tool_call_id, args, cancel, on_update):
        if calls is not None:
            calls.append(args["value"])
        if gate is not None:
            await gate.wait()
        return AgentToolResult(content=[TextContent(text=f"echoed: {args['value']}")], details={"value": args["value"]})

    return AgentTool.from_function(
        name,
        "Echo a value back",
        {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]},
        execute,
    )


def loop_config(faux: FauxProvider, **overrides: Any) -> AgentLoopConfig:
    return AgentLoopConfig(model=faux.model(), stream_fn=faux.stream, **overrides)


def context(*messages: Any, tools: list[AgentTool] | None = None, system_prompt: str = "You are helpful.") -> AgentContext:
    return AgentContext(system_prompt=system_prompt, messages=list(messages), tools=tools or [])


async def collect(stream: Any) -> list[Any]:
    return [event async for event in stream]


def types_of(events: list[Any]) -> list[str]:
    return [e.type for e in events]
