"""The `faux` provider: deterministic scripted responses for tests and demos.

A `FauxProvider` holds a queue of responses. Each LLM call takes the next one and streams
it like a real provider would: `start`, then for each block `*_start`, the text (or the
tool call's JSON arguments) in chunks of `chunk_chars` characters, `*_end`, and finally
`done` (or `error` for a scripted error/aborted stop reason). Abort is checked before
every chunk. An empty queue is an error, never a hang.

Other processes (the server under test, editor tests) load a script from a JSON file:

    {"chunkChars": 8, "delayMs": 5, "responses": [
       {"content": [{"type": "text", "text": "Hello"}]},
       {"content": [{"type": "toolCall", "name": "read", "arguments": {"path": "a.py"}}]},
       {"content": [], "stopReason": "error", "errorMessage": "boom"}]}

The script named by `$TILLER_FAUX_SCRIPT` is loaded into the default `faux` provider.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from ..message_builder import ABORTED_TEXT, AssistantMessageBuilder
from ..options import StreamOptions
from ..transform import transform_messages
from ..types import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
)

EMPTY_QUEUE_TEXT = "No more faux responses queued"

# A step is a message, or a function of the call that builds one (to echo the context).
Step = Union[AssistantMessage, Callable[[Context, StreamOptions, "FauxProvider", Model], AssistantMessage]]


def faux_text(text: str) -> TextContent:
    return TextContent(text=text)


def faux_thinking(thinking: str) -> ThinkingContent:
    return ThinkingContent(thinking=thinking)


def faux_tool_call(name: str, arguments: dict[str, Any], id: str | None = None) -> ToolCall:
    return ToolCall(id=id or "", name=name, arguments=arguments)


def faux_message(
    content: str | list[Any], *, stop_reason: StopReason | None = None, error_message: str | None = None
) -> AssistantMessage:
    blocks = [TextContent(text=content)] if isinstance(content, str) else list(content)
    if stop_reason is None:
        stop_reason = "toolUse" if any(isinstance(b, ToolCall) for b in blocks) else "stop"
    return AssistantMessage(
        content=blocks, api="faux", provider="faux", model="faux-1",
        stop_reason=stop_reason, error_message=error_message,
    )


@dataclass
class FauxProvider:
    provider: str = "faux"
    chunk_chars: int = 16
    delay_ms: float = 0.0
    responses: list[Step] = field(default_factory=list)
    call_count: int = 0
    # What each call received, so tests can assert on the context the model saw.
    contexts: list[Context] = field(default_factory=list)
    options: list[StreamOptions] = field(default_factory=list)
    _next_id: int = 0

    def model(self, id: str = "faux-1") -> Model:
        return Model(id=id, name=f"Faux ({id})", api="faux", provider=self.provider,
                     context_window=128_000, max_tokens=16_384)

    def set_responses(self, steps: list[Step]) -> None:
        self.responses = list(steps)

    def append_responses(self, steps: list[Step]) -> None:
        self.responses.extend(steps)

    @property
    def pending_response_count(self) -> int:
        return len(self.responses)

    def load_script(self, path: str | os.PathLike[str]) -> None:
        script = json.loads(Path(path).read_text(encoding="utf-8"))
        self.chunk_chars = int(script.get("chunkChars", self.chunk_chars))
        self.delay_ms = float(script.get("delayMs", self.delay_ms))
        self.append_responses([faux_message_from_json(r) for r in script.get("responses", [])])

    def _tool_call_id(self) -> str:
        self._next_id += 1
        return f"faux_call_{self._next_id}"

    async def stream(self, model: Model, context: Context, options: StreamOptions) -> AsyncIterator[AssistantMessageEvent]:
        self.call_count += 1
        # Record what a real provider would send: the history after its clean-up.
        context = context.model_copy(update={"messages": transform_messages(context.messages, model)})
        self.contexts.append(context)
        self.options.append(options)
        builder = AssistantMessageBuilder(model)
        signal = options.signal
        if not self.responses:
            yield builder.fail(EMPTY_QUEUE_TEXT, aborted=False)
            return
        step = self.responses.pop(0)
        script = step(context, options, self, model) if callable(step) else step

        builder.message.usage.input = _estimate_tokens(context)
        yield builder.start()
        for block in script.content:
            event: AssistantMessageEvent
            append: Callable[[int, str], AssistantMessageEvent]
            if isinstance(block, TextContent):
                index, event = builder.open_text()
                chunks, append = _chunks(block.text, self.chunk_chars), builder.append_text
            elif isinstance(block, ThinkingContent):
                index, event = builder.open_thinking(block.thinking_signature)
                chunks, append = _chunks(block.thinking, self.chunk_chars), builder.append_thinking
            else:
                index, event = builder.open_tool_call(block.id or self._tool_call_id(), block.name)
                arguments = json.dumps(block.arguments, ensure_ascii=False)
                chunks, append = _chunks(arguments, self.chunk_chars), builder.append_tool_arguments
            yield event
            for chunk in chunks:
                # Yield to the event loop between chunks even at full speed, as a network
                # read would: other requests (an abort) get served while a reply streams.
                await asyncio.sleep(self.delay_ms / 1000 if self.delay_ms else 0)
                if signal is not None and signal.aborted:
                    yield builder.fail(ABORTED_TEXT, aborted=True)
                    return
                builder.message.usage.output += max(1, len(chunk) // 4)
                yield append(index, chunk)
            end = builder.close(index)
            if end is not None:
                yield end

        usage = builder.message.usage
        usage.total_tokens = usage.input + usage.output
        if script.stop_reason in ("error", "aborted"):
            yield builder.fail(script.error_message or "", aborted=script.stop_reason == "aborted")
            return
        builder.message.stop_reason = script.stop_reason
        yield builder.done()


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _estimate_tokens(context: Context) -> int:
    chars = len(context.system_prompt or "")
    for message in context.messages:
        if isinstance(message, UserMessage) and isinstance(message.content, str):
            chars += len(message.content)
        else:
            chars += len(json.dumps(message.dump().get("content", "")))
    return max(1, chars // 4)


def faux_message_from_json(data: dict[str, Any]) -> AssistantMessage:
    """A scripted response in its JSON form; `stopReason` follows the content when absent."""
    data = {"api": "faux", "provider": "faux", "model": "faux-1", **data}
    if "stopReason" not in data:
        has_calls = any(b.get("type") == "toolCall" for b in data.get("content", []))
        data["stopReason"] = "toolUse" if has_calls else "stop"
    for block in data.get("content", []):
        if block.get("type") == "toolCall":
            block.setdefault("id", "")
    return AssistantMessage.model_validate(data)


# --- the registry's entry point: named faux providers ----------------------------------------

_providers: dict[str, FauxProvider] = {}


def register_faux_provider(provider: str = "faux", **settings: Any) -> FauxProvider:
    """Create (or replace) the scripted provider that serves models of `provider`."""
    faux = FauxProvider(provider=provider, **settings)
    _providers[provider] = faux
    return faux


def get_faux_provider(provider: str = "faux") -> FauxProvider:
    if provider not in _providers:
        faux = register_faux_provider(provider)
        script = os.environ.get("TILLER_FAUX_SCRIPT")
        if script and provider == "faux":
            faux.load_script(script)
    return _providers[provider]


def stream(model: Model, context: Context, options: StreamOptions) -> AsyncIterator[AssistantMessageEvent]:
    return get_faux_provider(model.provider).stream(model, context, options)
