"""Running one provider stream in a test and reading what came out (shared by the
provider tests: openai-completions, openai-responses, anthropic-messages, google)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from tiller.ai.options import StreamOptions
from tiller.ai.types import AssistantMessage, Context, Model, UserMessage


def hello_context() -> Context:
    return Context(system_prompt="Be brief.", messages=[UserMessage(content="Hi")])


async def collect(stream: Callable[..., Any], model: Model, context: Context, opts: StreamOptions) -> list[Any]:
    """Every event of one call; a hung stream fails the test instead of the suite."""
    with anyio.fail_after(10):
        return [event async for event in stream(model, context, opts)]


def final(events: list[Any]) -> AssistantMessage:
    last = events[-1]
    return last.message if last.type == "done" else last.error


def types(events: list[Any]) -> list[str]:
    return [event.type for event in events]


class ProviderCalls:
    """One provider's stream function called with a test key: `options(...)` gives a tiny
    backoff so retry tests do not wait (the key lets tests check it never leaks), `run`
    collects one call's events."""

    def __init__(self, stream: Callable[..., Any], key: str) -> None:
        self.stream = stream
        self.key = key

    def options(self, **overrides: Any) -> StreamOptions:
        return StreamOptions(**{"api_key": self.key, "retry_base_delay_ms": 1, **overrides})

    async def run(self, model: Model, context: Context | None = None, opts: StreamOptions | None = None) -> list[Any]:
        return await collect(self.stream, model, context or hello_context(), opts or self.options())
