"""Which stream function serves which `model.api`, and the `stream`/`complete` entry points."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import AsyncIterator, Callable

from .call_log import LlmCall, observed
from .options import StreamOptions
from .types import AssistantMessage, AssistantMessageEvent, Context, DoneEvent, ErrorEvent, Model

StreamFn = Callable[[Model, Context, StreamOptions], AsyncIterator[AssistantMessageEvent]]

# Built-in apis are imported on first use so that, e.g., llama.cpp is only loaded when the
# local model is actually asked for.
_BUILTIN: dict[str, str] = {
    "openai-completions": "tiller.ai.providers.openai_completions",
    "openai-responses": "tiller.ai.providers.openai_responses",
    "anthropic-messages": "tiller.ai.providers.anthropic",
    "google-generative-ai": "tiller.ai.providers.google",
    "local": "tiller.ai.providers.local",
    "faux": "tiller.ai.providers.faux",
}
_registered: dict[str, StreamFn] = {}


def register_api(api: str, stream_fn: StreamFn) -> None:
    _registered[api] = stream_fn


def get_stream_fn(api: str) -> StreamFn:
    if api not in _registered and api in _BUILTIN:
        module = importlib.import_module(_BUILTIN[api])
        _registered[api] = module.stream
    try:
        return _registered[api]
    except KeyError:
        raise ValueError(f"No API provider registered for api: {api}") from None


def stream(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AsyncIterator[AssistantMessageEvent]:
    """Stream one assistant response. Failures end in an `error` event, never a raise.
    Every call is observed (call_log.py): by `options.observer`, else by a plain `LlmCall`
    that logs its record."""
    options = options or StreamOptions()
    observer = options.observer
    if observer is None:
        observer = LlmCall(model, session_id=options.session_id)
        options = dataclasses.replace(options, observer=observer)
    return observed(observer, get_stream_fn(model.api)(model, context, options))


async def complete(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessage:
    """Run `stream` to the end and return the final (possibly errored) message."""
    final: AssistantMessage | None = None
    async for event in stream(model, context, options):
        if isinstance(event, DoneEvent):
            final = event.message
        elif isinstance(event, ErrorEvent):
            final = event.error
    if final is None:
        raise RuntimeError(f"Provider for api {model.api} ended without done or error")
    return final
