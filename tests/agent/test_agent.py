"""Parity with pi-agent-core's Agent tests, plus abort and failure paths."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from tiller.agent import BUSY_CONTINUE, BUSY_PROMPT, DEFAULT_MODEL, Agent
from tiller.ai.providers.faux import FauxProvider, faux_message, faux_tool_call
from tiller.ai.types import AssistantMessage, ImageContent

from .helpers import echo_tool, text_of, user


def faux_agent(faux: FauxProvider, **options) -> Agent:
    agent = Agent(stream_fn=faux.stream, **options)
    agent.set_model(faux.model())
    return agent


async def wait_until(predicate, timeout: float = 5.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.001)


def test_default_state():
    agent = Agent()
    state = agent.state
    assert state.system_prompt == ""
    assert state.model == DEFAULT_MODEL
    assert state.thinking_level == "off"
    assert state.tools == [] and state.messages == []
    assert state.is_streaming is False and state.stream_message is None
    assert state.pending_tool_calls == frozenset()
    assert state.error is None


async def test_agent_runs_tools_in_parallel_by_default():
    assert Agent().tool_execution == "parallel"  # pi's Agent: toolExecution ?? "parallel"
    faux = FauxProvider()
    faux.set_responses([
        faux_message([faux_tool_call("echo", {"value": "waits"}, id="1"), faux_tool_call("echo", {"value": "opens"}, id="2")]),
        faux_message("done"),
    ])
    gate = anyio.Event()
    calls: list = []
    agent = faux_agent(faux)
    agent.set_tools([echo_tool(calls, gate=gate)])
    task = asyncio.create_task(agent.prompt("go"))
    await wait_until(lambda: calls == ["waits", "opens"])  # both running before either finished
    assert agent.state.pending_tool_calls == {"1", "2"}
    gate.set()
    await task
    assert [(m.role, text_of(m)) for m in agent.state.messages[2:4]] == [
        ("toolResult", "echoed: waits"), ("toolResult", "echoed: opens")]


def test_custom_initial_state():
    faux = FauxProvider()
    agent = Agent(initial_state={"system_prompt": "Be brief.", "model": faux.model(), "thinking_level": "low"})
    assert agent.state.system_prompt == "Be brief."
    assert agent.state.model.provider == "faux"
    assert agent.state.thinking_level == "low"


def test_subscribe_emits_nothing_for_mutators_and_unsubscribes():
    agent = Agent()
    events: list = []
    unsubscribe = agent.subscribe(events.append)
    assert events == []
    agent.set_system_prompt("x")
    agent.set_thinking_level("high")
    agent.set_tools([])
    agent.replace_messages([user("a")])
    agent.append_message(user("b"))
    agent.clear_messages()
    assert events == []
    unsubscribe()
    assert agent._listeners == []


def test_mutators():
    agent = Agent()
    tools = [echo_tool()]
    agent.set_tools(tools)
    assert agent.state.tools is tools
    messages = [user("a")]
    agent.replace_messages(messages)
    assert agent.state.messages == messages and agent.state.messages is not messages
    message = user("b")
    agent.append_message(message)
    assert agent.state.messages[-1] is message and len(agent.state.messages) == 2
    agent.clear_messages()
    assert agent.state.messages == []
    agent.set_thinking_level("medium")
    assert agent.state.thinking_level == "medium"


def test_steer_and_follow_up_do_not_touch_messages():
    agent = Agent()
    agent.steer(user("steer"))
    agent.follow_up("follow")
    assert agent.state.messages == []
    assert agent.has_queued_messages()
    assert text_of(agent.follow_up_queue[0]) == "follow"
    agent.clear_all_queues()
    assert not agent.has_queued_messages()


def test_abort_when_idle_does_not_raise():
    Agent().abort()


@pytest.mark.parametrize(
    ("second_call", "expected"),
    [(lambda agent: agent.prompt("second"), BUSY_PROMPT), (lambda agent: agent.continue_(), BUSY_CONTINUE)],
    ids=["prompt", "continue"],
)
async def test_prompt_or_continue_while_streaming_raises(second_call, expected):
    faux = FauxProvider(delay_ms=20)
    faux.set_responses([faux_message("a fairly long reply that takes several chunks to stream")])
    agent = faux_agent(faux)
    task = asyncio.create_task(agent.prompt("first"))
    await wait_until(lambda: agent.state.is_streaming)
    with pytest.raises(RuntimeError) as raised:
        await second_call(agent)
    assert str(raised.value) == expected
    agent.abort()
    await task


async def test_continue_processes_queued_follow_up_after_assistant_turn():
    faux = FauxProvider()
    faux.set_responses([faux_message("answer to follow-up")])
    agent = faux_agent(faux)
    agent.replace_messages([user("hi"), faux_message("hello")])
    agent.follow_up("and one more thing")
    await agent.continue_()
    roles = [m.role for m in agent.state.messages]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert text_of(agent.state.messages[2]) == "and one more thing"


async def test_continue_keeps_one_at_a_time_steering_from_assistant_tail():
    faux = FauxProvider()
    faux.set_responses([faux_message("first steer handled"), faux_message("second steer handled")])
    agent = faux_agent(faux)
    agent.replace_messages([user("hi"), faux_message("hello")])
    agent.steer("steer one")
    agent.steer("steer two")
    await agent.continue_()
    assert [m.role for m in agent.state.messages][-4:] == ["user", "assistant", "user", "assistant"]
    assert faux.call_count == 2
    assert [text_of(m) for m in agent.state.messages if m.role == "user"][-2:] == ["steer one", "steer two"]


async def test_continue_errors():
    agent = faux_agent(FauxProvider())
    with pytest.raises(RuntimeError, match=r"^No messages to continue from$"):
        await agent.continue_()
    agent.replace_messages([user("hi"), faux_message("hello")])
    with pytest.raises(RuntimeError, match=r"^Cannot continue from message role: assistant$"):
        await agent.continue_()


async def test_session_id_is_forwarded_to_the_provider():
    faux = FauxProvider()
    faux.set_responses([faux_message("one"), faux_message("two")])
    agent = faux_agent(faux, session_id="session-abc")
    await agent.prompt("hi")
    assert faux.options[0].session_id == "session-abc"
    agent.session_id = "session-def"
    await agent.prompt("again")
    assert faux.options[1].session_id == "session-def"


async def test_state_follows_events_and_listeners_see_updated_state():
    faux = FauxProvider(chunk_chars=3)
    faux.set_responses([faux_message([faux_tool_call("echo", {"value": "v"})]), faux_message("done")])
    agent = faux_agent(faux)
    agent.set_tools([echo_tool()])
    observed: list[tuple[str, int, bool]] = []
    pending_during_tool: list[frozenset] = []

    def listener(event):
        observed.append((event.type, len(agent.state.messages), agent.state.is_streaming))
        if event.type == "tool_execution_start":
            pending_during_tool.append(agent.state.pending_tool_calls)
        if event.type == "message_update":
            assert agent.state.stream_message is event.message

    agent.subscribe(listener)
    await agent.prompt("go")
    assert observed[0] == ("agent_start", 0, True)
    assert observed[-1] == ("agent_end", 4, False)
    assert len(pending_during_tool) == 1 and len(pending_during_tool[0]) == 1
    assert agent.state.pending_tool_calls == frozenset()
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult", "assistant"]


async def test_prompt_with_images_builds_content_array():
    faux = FauxProvider()
    faux.set_responses([faux_message("nice picture")])
    agent = faux_agent(faux)
    image = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
    await agent.prompt("what is this?", images=[image])
    first = agent.state.messages[0]
    assert [b.type for b in first.content] == ["text", "image"]


async def test_abort_mid_stream_keeps_partial_and_sets_error():
    faux = FauxProvider(chunk_chars=2, delay_ms=10)
    faux.set_responses([faux_message("this reply will be cut off long before it finishes streaming")])
    agent = faux_agent(faux)
    events: list = []
    agent.subscribe(events.append)
    task = asyncio.create_task(agent.prompt("talk"))
    await wait_until(lambda: any(e.type == "message_update" and e.assistant_message_event.type == "text_delta" for e in events))
    agent.abort()
    await task
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert last.stop_reason == "aborted" and last.error_message == "Request was aborted"
    assert agent.state.error == "Request was aborted"
    assert 0 < len(text_of(last)) < len("this reply will be cut off long before it finishes streaming")
    assert [e.type for e in events][-3:] == ["message_end", "turn_end", "agent_end"]
    assert agent.state.is_streaming is False


async def test_abort_while_tool_runs_ends_the_run():
    faux = FauxProvider()
    faux.set_responses([faux_message([faux_tool_call("wait", {})]), faux_message("never reached")])
    started = anyio.Event()

    async def wait_for_abort(tool_call_id, args, cancel, on_update):
        started.set()
        await cancel.wait()
        raise RuntimeError("Operation aborted")

    from tiller.agent import AgentTool

    agent = faux_agent(faux)
    agent.set_tools([AgentTool.from_function("wait", "", {"type": "object"}, wait_for_abort)])
    task = asyncio.create_task(agent.prompt("go"))
    with anyio.fail_after(5):
        await started.wait()
    agent.abort()
    await task
    roles = [m.role for m in agent.state.messages]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    assert agent.state.messages[2].is_error and text_of(agent.state.messages[2]) == "Operation aborted"
    assert agent.state.messages[-1].stop_reason == "aborted"
    assert faux.call_count == 2  # the second call fails at once with aborted


async def test_loop_failure_becomes_error_message_and_agent_end():
    faux = FauxProvider()
    faux.set_responses([faux_message("never")])

    def get_api_key(provider):
        raise RuntimeError(f"No API key for provider: {provider}")

    agent = faux_agent(faux, get_api_key=get_api_key)
    events: list = []
    agent.subscribe(events.append)
    await agent.prompt("hi")
    assert [e.type for e in events][-1] == "agent_end"
    assert [e.type for e in events].count("turn_end") == 0
    failure = events[-1].messages
    assert len(failure) == 1 and failure[0].stop_reason == "error"
    assert failure[0].error_message == "No API key for provider: faux"
    assert agent.state.error == "No API key for provider: faux"
    assert agent.state.is_streaming is False


async def test_steer_during_tool_run_skips_rest_and_follow_up_runs_last():
    faux = FauxProvider()
    faux.set_responses([
        faux_message([faux_tool_call("echo", {"value": "1"}), faux_tool_call("echo", {"value": "2"})]),
        faux_message("after steer"),
        faux_message("after follow-up"),
    ])
    gate = anyio.Event()
    calls: list = []
    agent = faux_agent(faux, tool_execution="sequential")  # steering skips the calls after the running one
    agent.set_tools([echo_tool(calls, gate=gate)])
    task = asyncio.create_task(agent.prompt("start"))
    await wait_until(lambda: calls == ["1"])
    agent.steer("change of plan")
    agent.follow_up("then summarise")
    gate.set()
    await task
    texts = [(m.role, text_of(m)) for m in agent.state.messages]
    assert calls == ["1"]
    assert texts[3] == ("toolResult", "Skipped due to queued user message.")
    assert texts[4] == ("user", "change of plan")
    assert texts[6] == ("user", "then summarise")
    assert texts[-1] == ("assistant", "after follow-up")


async def test_wait_for_idle_and_reset():
    faux = FauxProvider(delay_ms=5)
    faux.set_responses([faux_message("some streamed text")])
    agent = faux_agent(faux)
    task = asyncio.create_task(agent.prompt("go"))
    await wait_until(lambda: agent.state.is_streaming)
    await agent.wait_for_idle()
    assert agent.state.is_streaming is False
    await task
    agent.steer("x")
    agent.reset()
    assert agent.state.messages == [] and not agent.has_queued_messages()
