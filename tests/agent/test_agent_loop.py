"""Parity with pi-agent-core's agent-loop tests, plus the loop rules the issue names."""

from __future__ import annotations

import anyio
import pytest

from tiller.agent import (
    SKIPPED_TEXT,
    AfterToolCallResult,
    AgentLoopConfig,
    AgentTool,
    BeforeToolCallResult,
    CustomMessage,
    agent_loop,
    agent_loop_continue,
    run_agent_loop,
)
from tiller.ai.providers.faux import FauxProvider, faux_message, faux_text, faux_tool_call
from tiller.ai.types import AssistantMessage, TextContent, ToolResultMessage

from .helpers import collect, context, echo_tool, loop_config, text_of, types_of, user


async def test_emits_events_with_agent_message_types():
    faux = FauxProvider()
    faux.set_responses([faux_message("Hi there!")])
    stream = agent_loop([user("Hello")], context(), loop_config(faux))
    events = await collect(stream)
    messages = await stream.result()

    assert [m.role for m in messages] == ["user", "assistant"]
    assert types_of(events)[:4] == ["agent_start", "turn_start", "message_start", "message_end"]
    assert types_of(events)[-3:] == ["message_end", "turn_end", "agent_end"]
    updates = [e for e in events if e.type == "message_update"]
    assert [u.assistant_message_event.type for u in updates] == ["text_start", "text_delta", "text_end"]
    assert text_of(messages[1]) == "Hi there!"


async def test_exact_event_order_for_text_reply():
    faux = FauxProvider(chunk_chars=4)
    faux.set_responses([faux_message("abcdefgh")])
    events = await collect(agent_loop([user("hi")], context(), loop_config(faux)))
    assert types_of(events) == [
        "agent_start", "turn_start",
        "message_start", "message_end",  # the prompt
        "message_start", "message_update", "message_update", "message_update", "message_update", "message_end",
        "turn_end", "agent_end",
    ]
    end = events[-1]
    assert [m.role for m in end.messages] == ["user", "assistant"]


async def test_custom_message_types_via_convert_to_llm():
    faux = FauxProvider()
    faux.set_responses([faux_message("ok")])
    seen: list[list[str]] = []

    def convert(messages):
        kept = [m for m in messages if m.role != "notification"]
        seen.append([m.role for m in kept])
        return kept

    notification = CustomMessage(role="notification", text="build finished", timestamp=1)
    cfg = loop_config(faux, convert_to_llm=convert)
    messages = await agent_loop([user("Hello")], context(notification), cfg).result()

    assert seen == [["user"]]
    assert [m.role for m in faux.contexts[0].messages] == ["user"]
    assert [m.role for m in messages] == ["user", "assistant"]


async def test_transform_context_runs_before_convert_to_llm():
    faux = FauxProvider()
    faux.set_responses([faux_message("ok")])
    order: list[str] = []
    received: list[int] = []

    def transform(messages, signal):
        order.append("transform")
        return messages[-2:]

    def convert(messages):
        order.append("convert")
        received.append(len(messages))
        return messages

    history = [user(f"m{i}") for i in range(4)]
    cfg = loop_config(faux, transform_context=transform, convert_to_llm=convert)
    await agent_loop([user("last")], context(*history), cfg).result()
    assert order == ["transform", "convert"]
    assert received == [2]


async def test_tool_calls_and_results():
    faux = FauxProvider()
    faux.set_responses([faux_message([faux_tool_call("echo", {"value": "hello"})]), faux_message("done")])
    calls: list[str] = []
    stream = agent_loop([user("echo hello")], context(tools=[echo_tool(calls)]), loop_config(faux))
    events = await collect(stream)
    messages = await stream.result()

    assert calls == ["hello"]
    start = next(e for e in events if e.type == "tool_execution_start")
    end = next(e for e in events if e.type == "tool_execution_end")
    assert start.tool_name == "echo" and start.args == {"value": "hello"}
    assert end.is_error is False and text_of(end.result) == "echoed: hello"
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    # The tool result reached the second LLM call.
    assert [m.role for m in faux.contexts[1].messages] == ["user", "assistant", "toolResult"]
    assert types_of(events).count("turn_start") == 2
    first_turn_end = next(e for e in events if e.type == "turn_end")
    assert [r.tool_call_id for r in first_turn_end.tool_results] == [start.tool_call_id]


async def test_parallel_execution_emits_results_in_source_order():
    faux = FauxProvider()
    faux.set_responses([
        faux_message([faux_tool_call("slow", {"value": "1"}, id="tool-1"), faux_tool_call("fast", {"value": "2"}, id="tool-2")]),
        faux_message("done"),
    ])
    gate = anyio.Event()
    fast_ran = anyio.Event()

    async def slow(tool_call_id, args, cancel, on_update):
        await gate.wait()  # only opens once the second tool has run: proves concurrency
        return {"content": [{"type": "text", "text": "slow"}]}

    async def fast(tool_call_id, args, cancel, on_update):
        fast_ran.set()
        gate.set()
        return {"content": [{"type": "text", "text": "fast"}]}

    schema = {"type": "object", "properties": {"value": {"type": "string"}}}
    tools = [AgentTool.from_function("slow", "", schema, slow), AgentTool.from_function("fast", "", schema, fast)]
    with anyio.fail_after(10):
        events = await collect(agent_loop([user("go")], context(tools=tools), loop_config(faux, tool_execution="parallel")))
    assert fast_ran.is_set()
    result_ends = [e.message.tool_call_id for e in events if e.type == "message_end" and e.message.role == "toolResult"]
    assert result_ends == ["tool-1", "tool-2"]
    starts = [e.tool_call_id for e in events if e.type == "tool_execution_start"]
    assert starts == ["tool-1", "tool-2"]


def gated_pair() -> tuple[list[AgentTool], list[str]]:
    """`slow` waits until `fast` has run: a batch of the two only finishes if they overlap."""
    gate = anyio.Event()
    finished: list[str] = []

    async def slow(tool_call_id, args, cancel, on_update):
        await gate.wait()
        finished.append("slow")
        return {"content": [{"type": "text", "text": "slow"}]}

    async def fast(tool_call_id, args, cancel, on_update):
        gate.set()
        finished.append("fast")
        return {"content": [{"type": "text", "text": "fast"}]}

    schema = {"type": "object", "properties": {}}
    return [AgentTool.from_function("slow", "", schema, slow), AgentTool.from_function("fast", "", schema, fast)], finished


async def test_tools_run_in_parallel_by_default():
    # pi-agent-core's loop treats anything but toolExecution "sequential" as parallel.
    assert AgentLoopConfig(model=FauxProvider().model()).tool_execution == "parallel"
    faux = FauxProvider()
    faux.set_responses([
        faux_message([faux_tool_call("slow", {}, id="tool-1"), faux_tool_call("fast", {}, id="tool-2")]),
        faux_message("done"),
    ])
    tools, finished = gated_pair()
    with anyio.fail_after(10):
        messages = await agent_loop([user("go")], context(tools=tools), loop_config(faux)).result()
    assert finished == ["fast", "slow"]
    assert [m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)] == ["tool-1", "tool-2"]


async def test_hooks_block_fail_and_replace_results():
    faux = FauxProvider()
    faux.set_responses([
        faux_message([
            faux_tool_call("echo", {"value": "blocked"}, id="b"),
            faux_tool_call("echo", {"value": "quiet"}, id="q"),
            faux_tool_call("echo", {"value": "raise"}, id="r"),
            faux_tool_call("echo", {"value": "keep"}, id="k"),
            faux_tool_call("echo", {"value": "swap"}, id="s"),
        ]),
        faux_message("done"),
    ])
    executed: list[str] = []

    def before(ctx, signal):
        if ctx.args["value"] == "blocked":
            return BeforeToolCallResult(block=True, reason="not in this folder")
        if ctx.args["value"] == "quiet":
            return BeforeToolCallResult(block=True)
        if ctx.args["value"] == "raise":
            raise RuntimeError("policy engine down")
        return None

    async def after(ctx, signal):
        if ctx.args["value"] == "swap":
            assert ctx.is_error is False and text_of(ctx.result) == "echoed: swap"
            return AfterToolCallResult(content=[TextContent(text="redacted")], is_error=True)
        return None

    cfg = loop_config(faux, before_tool_call=before, after_tool_call=after)
    messages = await agent_loop([user("go")], context(tools=[echo_tool(executed)]), cfg).result()
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}
    assert executed == ["keep", "swap"]
    assert [(text_of(results[i]), results[i].is_error) for i in "bqrks"] == [
        ("not in this folder", True),
        ("Tool execution was blocked", True),
        ("policy engine down", True),
        ("echoed: keep", False),
        ("redacted", True),
    ]
    # The replacement is wholesale per field: details were not given, so they stay.
    assert results["s"].details == {"value": "swap"} and results["b"].details == {}


async def test_after_tool_call_sees_parallel_calls_in_source_order():
    # pi finalises parallel calls in source order: the hook for the call that finished last
    # but comes first in the message runs first.
    faux = FauxProvider()
    faux.set_responses([
        faux_message([faux_tool_call("slow", {}, id="tool-1"), faux_tool_call("fast", {}, id="tool-2")]),
        faux_message("done"),
    ])
    tools, finished = gated_pair()
    hooked: list[str] = []

    def after(ctx, signal):
        hooked.append(ctx.tool_call.id)

    with anyio.fail_after(10):
        await agent_loop([user("go")], context(tools=tools), loop_config(faux, tool_execution="parallel", after_tool_call=after)).result()
    assert finished == ["fast", "slow"]
    assert hooked == ["tool-1", "tool-2"]


async def test_message_events_keep_the_message_as_it_was_when_sent():
    faux = FauxProvider(chunk_chars=4)
    faux.set_responses([
        faux_message([faux_text("look"), faux_tool_call("echo", {"value": "x"}, id="c")]),
        faux_message("half an answ", stop_reason="error", error_message="connection reset"),
    ])
    events: list = []
    await run_agent_loop([user("go")], context(tools=[echo_tool()]), loop_config(faux), events.append)
    assistant_ends = [e.message for e in events if e.type == "message_end" and e.message.role == "assistant"]
    tool_use, failed = assistant_ends
    assert (tool_use.stop_reason, failed.stop_reason, failed.error_message) == ("toolUse", "error", "connection reset")

    for final in assistant_ends:
        sent = [e.message for e in events if e.type in ("message_start", "message_update") and e.message.role == "assistant"
                and e.message.content is final.content]
        assert len(sent) > 3
        # Each is a shallow copy: stop reason and error as they were while streaming...
        assert all(m is not final and m.stop_reason == "stop" and m.error_message is None for m in sent)
        # ...and the content list is the live one (shared, as in pi), so streaming stays O(n).
        assert all(m.content is final.content for m in sent)


async def test_parallel_immediate_outcomes_come_first():
    faux = FauxProvider()
    faux.set_responses([
        faux_message([
            faux_tool_call("echo", {"value": "a"}, id="A"),
            faux_tool_call("echo", {}, id="B"),  # invalid: missing value
            faux_tool_call("echo", {"value": "c"}, id="C"),
        ]),
        faux_message("done"),
    ])
    messages = await agent_loop([user("go")], context(tools=[echo_tool()]), loop_config(faux, tool_execution="parallel")).result()
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["B", "A", "C"]
    assert [r.is_error for r in results] == [True, False, False]


async def test_steering_skips_remaining_tool_calls():
    faux = FauxProvider()
    faux.set_responses([
        faux_message([faux_tool_call("echo", {"value": "first"}), faux_tool_call("echo", {"value": "second"})]),
        faux_message("handled the interrupt"),
    ])
    executed: list[str] = []
    queued: list = []

    async def execute(tool_call_id, args, cancel, on_update):
        executed.append(args["value"])
        if args["value"] == "first":
            queued.append(user("interrupt"))
        return {"content": [{"type": "text", "text": "ok"}]}

    def steering():
        taken = list(queued)
        queued.clear()
        return taken

    tool = AgentTool.from_function("echo", "", {"type": "object", "properties": {"value": {"type": "string"}}}, execute)
    cfg = loop_config(faux, tool_execution="sequential", get_steering_messages=steering)
    events = await collect(agent_loop([user("start")], context(tools=[tool]), cfg))

    assert executed == ["first"]
    ends = [e for e in events if e.type == "tool_execution_end"]
    assert ends[1].is_error is True and SKIPPED_TEXT in text_of(ends[1].result)
    assert text_of(ends[1].result) == "Skipped due to queued user message."
    interrupt_start = [e for e in events if e.type == "message_start" and e.message.role == "user" and text_of(e.message) == "interrupt"]
    assert len(interrupt_start) == 1
    # The steering message opened the next turn and reached the second LLM call.
    second_call = faux.contexts[1].messages
    assert text_of(second_call[-1]) == "interrupt"
    sequence = types_of(events)
    turn_end = sequence.index("turn_end")
    assert sequence[turn_end + 1 : turn_end + 4] == ["turn_start", "message_start", "message_end"]


async def test_steering_after_tools_policy_runs_the_whole_batch():
    faux = FauxProvider()
    faux.set_responses([
        faux_message([faux_tool_call("echo", {"value": "first"}), faux_tool_call("echo", {"value": "second"})]),
        faux_message("ok"),
    ])
    executed: list[str] = []
    queued: list = []

    async def execute(tool_call_id, args, cancel, on_update):
        executed.append(args["value"])
        queued.append(user("interrupt"))
        return {"content": [{"type": "text", "text": "ok"}]}

    def steering():
        taken = list(queued[:1])
        queued.clear()
        return taken

    tool = AgentTool.from_function("echo", "", {"type": "object", "properties": {"value": {"type": "string"}}}, execute)
    cfg = loop_config(faux, get_steering_messages=steering, steering_policy="after_tools")
    messages = await agent_loop([user("start")], context(tools=[tool]), cfg).result()
    assert executed == ["first", "second"]
    assert not any(m.is_error for m in messages if isinstance(m, ToolResultMessage))
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "toolResult", "user", "assistant"]


async def test_parallel_steering_in_preflight_runs_nothing():
    faux = FauxProvider()
    faux.set_responses([
        faux_message([faux_tool_call("echo", {"value": "a"}, id="A"), faux_tool_call("echo", {"value": "b"}, id="B")]),
        faux_message("ok"),
    ])
    executed: list[str] = []
    polls = iter([[], [user("stop")]])  # initial poll, then after preflight of A
    cfg = loop_config(faux, tool_execution="parallel", get_steering_messages=lambda: next(polls, []))
    events = await collect(agent_loop([user("go")], context(tools=[echo_tool(executed)]), cfg))
    assert executed == []
    starts = [e.tool_call_id for e in events if e.type == "tool_execution_start"]
    assert starts == ["A", "B"]  # A is not started twice
    ends = [e for e in events if e.type == "tool_execution_end"]
    assert [e.tool_call_id for e in ends] == ["A", "B"]
    assert all(e.is_error and text_of(e.result) == SKIPPED_TEXT for e in ends)


async def test_follow_up_continues_the_same_run():
    faux = FauxProvider()
    faux.set_responses([faux_message("first"), faux_message("second")])
    follow_ups = [[user("and then?")]]
    cfg = loop_config(faux, get_follow_up_messages=lambda: follow_ups.pop() if follow_ups else [])
    events = await collect(agent_loop([user("start")], context(), cfg))
    sequence = types_of(events)
    assert sequence.count("agent_start") == 1 and sequence.count("agent_end") == 1
    assert sequence.count("turn_start") == 2
    first_turn_end = sequence.index("turn_end")
    assert sequence[first_turn_end + 1 : first_turn_end + 4] == ["turn_start", "message_start", "message_end"]
    assert [m.role for m in events[-1].messages] == ["user", "assistant", "user", "assistant"]


async def test_unknown_tool_and_validation_and_raising_tool():
    faux = FauxProvider()
    faux.set_responses([
        faux_message([
            faux_tool_call("nope", {}, id="u"),
            faux_tool_call("echo", {"value": 5, "extra": "x"}, id="coerced"),
            faux_tool_call("echo", {"value": {"no": 1}}, id="invalid"),
            faux_tool_call("boom", {}, id="raised"),
        ]),
        faux_message("done"),
    ])
    seen: list = []

    async def boom(tool_call_id, args, cancel, on_update):
        raise RuntimeError("disk on fire")

    tools = [echo_tool(seen), AgentTool.from_function("boom", "", {"type": "object"}, boom)]
    messages = await agent_loop([user("go")], context(tools=tools), loop_config(faux)).result()
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}

    assert results["u"].is_error and text_of(results["u"]) == "Tool nope not found"
    assert seen == ["5"]  # coerced like AJV's coerceTypes: number -> string
    assert results["coerced"].is_error is False
    assert text_of(results["invalid"]) == (
        'Validation failed for tool "echo":\n'
        "  - value: must be string\n\n"
        "Received arguments:\n"
        '{\n  "value": {\n    "no": 1\n  }\n}'
    )
    assert results["raised"].is_error and text_of(results["raised"]) == "disk on fire"
    assert results["raised"].details == {}
    assert results["coerced"].details == {"value": "5"}


async def test_validation_missing_required_property_text():
    faux = FauxProvider()
    faux.set_responses([faux_message([faux_tool_call("echo", {}, id="m")]), faux_message("done")])
    messages = await agent_loop([user("go")], context(tools=[echo_tool()]), loop_config(faux)).result()
    result = next(m for m in messages if isinstance(m, ToolResultMessage))
    assert text_of(result) == (
        'Validation failed for tool "echo":\n  - value: must have required property \'value\'\n\n'
        "Received arguments:\n{}"
    )


async def test_tool_updates_stream_before_the_end():
    faux = FauxProvider()
    faux.set_responses([faux_message([faux_tool_call("progress", {})]), faux_message("done")])

    async def progress(tool_call_id, args, cancel, on_update):
        on_update({"content": [{"type": "text", "text": "50%"}]})
        await on_update({"content": [{"type": "text", "text": "100%"}]})
        return {"content": [{"type": "text", "text": "finished"}]}

    tool = AgentTool.from_function("progress", "", {"type": "object"}, progress)
    events = await collect(agent_loop([user("go")], context(tools=[tool]), loop_config(faux)))
    tool_events = [e for e in events if e.type.startswith("tool_execution")]
    assert [e.type for e in tool_events] == [
        "tool_execution_start", "tool_execution_update", "tool_execution_update", "tool_execution_end",
    ]
    assert [text_of(e.partial_result) for e in tool_events[1:3]] == ["50%", "100%"]


async def test_error_stop_reason_ends_the_run_and_is_not_sent_back():
    faux = FauxProvider()
    faux.set_responses([faux_message("partial", stop_reason="error", error_message="upstream exploded"), faux_message("ok")])
    stream = agent_loop([user("go")], context(), loop_config(faux))
    events = await collect(stream)
    assert types_of(events)[-2:] == ["turn_end", "agent_end"]
    turn_end = events[-2]
    assert turn_end.tool_results == [] and turn_end.message.error_message == "upstream exploded"
    assert faux.call_count == 1

    # Continuing later: the errored message stays in history but is not sent to the model.
    history = [user("go"), turn_end.message, user("try again")]
    await agent_loop_continue(context(*history), loop_config(faux)).result()
    assert [m.role for m in faux.contexts[1].messages] == ["user", "user"]


async def test_orphaned_tool_call_gets_no_result_provided():
    faux = FauxProvider()
    faux.set_responses([faux_message("ok")])
    dangling = faux_message([faux_tool_call("echo", {"value": "x"}, id="orphan")])
    await agent_loop([user("next")], context(user("first"), dangling), loop_config(faux)).result()
    converted = faux.contexts[0].messages
    orphan = next(m for m in converted if isinstance(m, ToolResultMessage))
    assert orphan.tool_call_id == "orphan" and orphan.is_error and text_of(orphan) == "No result provided"
    assert [m.role for m in converted] == ["user", "assistant", "toolResult", "user"]


async def test_max_turns_stops_the_run_with_a_clear_error():
    faux = FauxProvider()
    faux.set_responses([faux_message([faux_tool_call("echo", {"value": str(i)})]) for i in range(5)])
    stream = agent_loop([user("loop forever")], context(tools=[echo_tool()]), loop_config(faux, max_turns=2))
    events = await collect(stream)
    assert faux.call_count == 2
    last = events[-2].message
    assert isinstance(last, AssistantMessage) and last.stop_reason == "error"
    assert "2 turns" in last.error_message and "max_turns" in last.error_message
    assert types_of(events)[-1] == "agent_end"


async def test_get_api_key_is_asked_before_every_call():
    faux = FauxProvider()
    faux.set_responses([faux_message([faux_tool_call("echo", {"value": "x"})]), faux_message("done")])
    asked: list[str] = []

    async def get_api_key(provider):
        asked.append(provider)
        return f"key-{len(asked)}"

    await agent_loop([user("go")], context(tools=[echo_tool()]), loop_config(faux, get_api_key=get_api_key)).result()
    assert asked == ["faux", "faux"]
    assert [o.api_key for o in faux.options] == ["key-1", "key-2"]


async def test_stream_fn_overrides_the_registry():
    # The model's api is unknown to the registry; only stream_fn can serve it.
    faux = FauxProvider()
    faux.set_responses([faux_message("from stream_fn")])
    model = faux.model().model_copy(update={"api": "no-such-api"})
    messages = await agent_loop([user("go")], context(), AgentLoopConfig(model=model, stream_fn=faux.stream)).result()
    assert text_of(messages[-1]) == "from stream_fn"

    with pytest.raises(ValueError, match=r"No API provider registered for api: no-such-api"):
        await agent_loop([user("go")], context(), AgentLoopConfig(model=model)).result()


def test_continue_throws_when_context_has_no_messages():
    faux = FauxProvider()
    with pytest.raises(ValueError, match=r"^Cannot continue: no messages in context$"):
        agent_loop_continue(context(), loop_config(faux))


def test_continue_throws_from_assistant_tail():
    faux = FauxProvider()
    with pytest.raises(ValueError, match=r"^Cannot continue from message role: assistant$"):
        agent_loop_continue(context(user("hi"), faux_message("hello")), loop_config(faux))


async def test_continue_from_existing_context_emits_no_user_events():
    faux = FauxProvider()
    faux.set_responses([faux_message("continued")])
    stream = agent_loop_continue(context(user("hello")), loop_config(faux))
    events = await collect(stream)
    assert [m.role for m in await stream.result()] == ["assistant"]
    assert types_of(events).count("message_end") == 1
    assert types_of(events)[:3] == ["agent_start", "turn_start", "message_start"]


async def test_continue_accepts_custom_message_as_last():
    faux = FauxProvider()
    faux.set_responses([faux_message("ok")])
    custom = CustomMessage(role="custom", text="hook output", timestamp=1)

    def convert(messages):
        return [user(m.text) if m.role == "custom" else m for m in messages]

    messages = await agent_loop_continue(context(custom), loop_config(faux, convert_to_llm=convert)).result()
    assert [m.role for m in messages] == ["assistant"]
    assert text_of(faux.contexts[0].messages[0]) == "hook output"


async def test_awaitable_form_emits_to_a_callback():
    faux = FauxProvider()
    faux.set_responses([faux_message("hi")])
    seen: list[str] = []

    async def emit(event):
        seen.append(event.type)

    messages = await run_agent_loop([user("go")], context(), loop_config(faux), emit)
    assert [m.role for m in messages] == ["user", "assistant"]
    assert seen[0] == "agent_start" and seen[-1] == "agent_end"


async def test_failure_before_start_yields_only_start_and_end():
    faux = FauxProvider()  # empty queue: the provider fails before streaming anything
    events = await collect(agent_loop([user("go")], context(), loop_config(faux)))
    assistant_events = [e.type for e in events if getattr(e, "message", None) is not None and e.message.role == "assistant"]
    assert assistant_events == ["message_start", "message_end", "turn_end"]
    assert events[-2].message.error_message == "No more faux responses queued"


async def test_exception_in_get_api_key_propagates_after_earlier_events():
    faux = FauxProvider()
    faux.set_responses([faux_message("never")])

    def get_api_key(provider):
        raise RuntimeError("No API key for provider: faux")

    stream = agent_loop([user("go")], context(), loop_config(faux, get_api_key=get_api_key))
    seen = []
    with pytest.raises(RuntimeError, match=r"No API key for provider: faux"):
        async for event in stream:
            seen.append(event.type)
    assert seen == ["agent_start", "turn_start", "message_start", "message_end"]
