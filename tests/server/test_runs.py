"""Agent runs as an editor sees them on the wire: event order, deltas, steering, follow-ups,
abort and cancellation, and two sessions at once."""

from __future__ import annotations

import asyncio
import json

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.sse_server import Reply, SSEServer

from .harness import (
    HOLD,
    SLOW,
    SLOW_CHUNKING,
    GatedSSEServer,
    assert_gap_free,
    openai_chunk,
    openai_env,
    openai_text,
    rebuild,
    reply,
    text,
    thinking,
    tool_call,
    types_of,
)

OPENAI = "openai/test-model"


def shape(notification: dict) -> str:
    """`message_start:user`, `message_update:text_delta`, `turn_end`, ..."""
    event = notification["event"]
    if event["type"] in ("message_start", "message_end"):
        return f"{event['type']}:{event['message']['role']}"
    if event["type"] == "message_update":
        return f"message_update:{event['assistantMessageEvent']['type']}"
    return event["type"]


def collapsed(shapes: list[str]) -> list[str]:
    """Consecutive deltas of one kind as one: the server may coalesce a burst of deltas
    (protocol.md 3.1), so how many arrive is not part of the contract; their text is."""
    return [s for i, s in enumerate(shapes) if not (s.endswith("_delta") and i and shapes[i - 1] == s)]


def streamed(*updates: str) -> list[str]:
    return ["message_start:assistant", *(f"message_update:{u}" for u in updates), "message_end:assistant"]


def user_texts(notifications: list[dict]) -> list[str]:
    """The text of each user message the session's events started, in order."""
    return [
        "".join(b.get("text", "") for b in n["event"]["message"]["content"])
        for n in notifications
        if n["event"]["type"] == "message_start" and n["event"]["message"]["role"] == "user"
    ]


@pytest.fixture
def openai_server():
    with GatedSSEServer() as server:
        yield server


async def start_held_run(start_tiller, server: GatedSSEServer, prompt: str, replies: list[tuple]):
    """A server whose OpenAI model streams `replies` in turn (pieces of text; HOLD waits for
    `server.release()`), and a session whose prompt is on its way and already streaming."""
    server.reply(*(Reply(chunks=openai_text(*pieces)) for pieces in replies))
    client = await start_tiller(env=openai_env(server))
    session = await client.new_session(model=OPENAI, tools=[])
    pending = client.send("agent/prompt", {"sessionId": session, "text": prompt})
    await client.wait_streaming(session)
    return client, session, pending


@pytest.mark.parametrize("capabilities", ["visual-studio-code", "neovim@v0.7"])
async def test_a_tool_calling_run_streams_every_event_in_order_before_the_answer(start_tiller, capabilities):
    client = await start_tiller(
        [reply(text("Let me look."), tool_call("read", {"path": "a.py"})), reply(text("Done"))],
        capabilities=capabilities,
    )
    # No tools enabled, so the call fails as "not found" whatever tools tiller grows.
    session = await client.new_session(tools=[])
    prompt = client.send("agent/prompt", {"sessionId": session, "text": "Read a.py"})
    answer = await prompt.result()

    events = client.session_events(session)
    assert collapsed([shape(n) for n in events]) == [
        "agent_start", "turn_start", "message_start:user", "message_end:user",
        *streamed("text_start", "text_delta", "text_end", "toolcall_start", "toolcall_delta", "toolcall_end"),
        "tool_execution_start", "tool_execution_end",
        "message_start:toolResult", "message_end:toolResult",
        "turn_end", "context_usage",
        "turn_start",
        *streamed("text_start", "text_delta", "text_end"),
        "turn_end", "context_usage",
        "agent_end",
    ]
    assert_gap_free(events)
    assert prompt.events_before == len(client.events)  # nothing after the answer

    by_type = {n["event"]["type"]: n["event"] for n in events}
    call_id = next(e["event"]["assistantMessageEvent"]["id"] for e in events
                   if e["event"].get("assistantMessageEvent", {}).get("type") == "toolcall_start")
    started = by_type["tool_execution_start"]
    assert (started["toolCallId"], started["toolName"], started["args"]) == (call_id, "read", {"path": "a.py"})
    ended = by_type["tool_execution_end"]
    assert ended["toolCallId"] == call_id and ended["isError"] is True
    assert ended["result"]["content"] == [{"type": "text", "text": "Tool read not found"}]
    result_message = next(n["event"]["message"] for n in events if shape(n) == "message_end:toolResult")
    assert result_message["toolCallId"] == call_id and result_message["isError"] is True
    first_turn_end = next(n["event"] for n in events if n["event"]["type"] == "turn_end")
    assert first_turn_end["toolResults"] == [result_message]

    agent_end = events[-1]["event"]
    assert answer["stopReason"] == "stop"
    assert answer["newMessages"] == agent_end["messages"]
    assert [m["role"] for m in answer["newMessages"]] == ["user", "assistant", "toolResult", "assistant"]
    assistants = [m for m in answer["newMessages"] if m["role"] == "assistant"]
    assert [m["stopReason"] for m in assistants] == ["toolUse", "stop"]
    for field in ("input", "output", "totalTokens"):
        assert answer["usage"][field] == sum(m["usage"][field] for m in assistants) > 0


async def test_message_update_carries_only_deltas_and_rebuilds_the_final_message(start_tiller):
    client = await start_tiller([
        reply(thinking("The user wants a file; read it first."),
              text("Reading it now — ünïcödé ✓, \"quotes\" and\nnewlines."),
              tool_call("read", {"path": "src/ä.py", "limit": 20, "flags": [True, None]})),
        reply(text("ok")),
    ], chunk_chars=3)
    session = await client.new_session(tools=[])
    await client.request("agent/prompt", {"sessionId": session, "text": "go"})

    events = [n["event"] for n in client.session_events(session)]
    updates = [e for e in events if e["type"] == "message_update"]
    assert updates and all(set(e) == {"type", "assistantMessageEvent"} for e in updates)
    assert all("partial" not in e["assistantMessageEvent"] for e in updates)

    finals = []
    for i, event in enumerate(events):
        if event["type"] != "message_start" or event["message"]["role"] != "assistant":
            continue
        end = next(j for j in range(i, len(events)) if events[j]["type"] == "message_end")
        start, final = event["message"], events[end]["message"]
        mine = rebuild(start, events[i + 1 : end])
        assert mine["content"] == final["content"]
        # Identity comes from message_start; usage and stopReason from message_end.
        for key in ("role", "api", "provider", "model", "timestamp"):
            assert mine[key] == final[key]
        finals.append(final)
    assert len(finals) == 2
    assert [b["type"] for b in finals[0]["content"]] == ["thinking", "text", "toolCall"]
    assert finals[0]["content"][2]["arguments"] == {"path": "src/ä.py", "limit": 20, "flags": [True, None]}


async def test_steering_mid_run_lands_in_the_next_turn(start_tiller, openai_server):
    client, session, prompt = await start_held_run(
        start_tiller, openai_server, "Format the file",
        [("Working", HOLD, " on it."), ("Using tabs.",), ("And spaces.",)],
    )

    steered = await client.request("agent/steer", {"sessionId": session, "text": "Use tabs"})
    assert steered == {"steering": ["Use tabs"], "followUp": []}
    queued = await client.request(
        "agent/prompt", {"sessionId": session, "text": "And spaces", "streamingBehavior": "steer"}
    )
    assert queued["stopReason"] == "queued" and queued["newMessages"] == []
    openai_server.release()
    answer = await prompt.result()

    events = client.session_events(session)
    assert_gap_free(events)
    queue_updates = [(n["event"]["steering"], n["event"]["followUp"]) for n in events
                     if n["event"]["type"] == "queue_update"]
    assert queue_updates == [(["Use tabs"], []), (["Use tabs", "And spaces"], []), (["And spaces"], []), ([], [])]
    # one_at_a_time: each steering message opens a turn of its own, as a user message.
    assert user_texts(events) == ["Format the file", "Use tabs", "And spaces"]
    assert types_of(events).count("agent_end") == 1
    assert [m["role"] for m in answer["newMessages"]] == ["user", "assistant"] * 3
    assert answer["newMessages"][1]["stopReason"] == "stop"  # the held reply finished normally
    assert answer["newMessages"][1]["content"] == [{"type": "text", "text": "Working on it."}]
    # The steering reached the model: the second call ends with it.
    second_call = openai_server.requests[1].json["messages"]
    assert "Use tabs" in json.dumps(second_call[-1])
    assert "Working on it." in json.dumps(second_call)


async def test_follow_ups_run_after_the_reply_within_the_same_run(start_tiller, openai_server):
    client, session, prompt = await start_held_run(
        start_tiller, openai_server, "one", [("First", HOLD, " answer."), ("Second answer.",), ("Third answer.",)]
    )

    assert await client.request("agent/followUp", {"sessionId": session, "text": "two"}) == {
        "steering": [], "followUp": ["two"]}
    queued = await client.request(
        "agent/prompt", {"sessionId": session, "text": "three", "streamingBehavior": "followUp"}
    )
    assert queued["stopReason"] == "queued"
    openai_server.release()
    answer = await prompt.result()

    events = client.session_events(session)
    assert_gap_free(events)
    assert types_of(events).count("agent_start") == 1 and types_of(events).count("agent_end") == 1
    assert user_texts(events) == ["one", "two", "three"]
    # The follow-up starts only after the first reply's turn ended.
    first_turn_end = types_of(events).index("turn_end")
    assert user_texts(events[first_turn_end:]) == ["two", "three"]
    assert [m["role"] for m in answer["newMessages"]] == ["user", "assistant"] * 3
    assert [m["content"][0]["text"] for m in answer["newMessages"][1::2]] == [
        "First answer.", "Second answer.", "Third answer."]


async def test_abort_ends_the_run_and_keeps_every_completed_message(start_tiller):
    client = await start_tiller([reply(text("ok")), SLOW], **SLOW_CHUNKING)
    session = await client.new_session(tools=[])
    await client.request("agent/prompt", {"sessionId": session, "text": "first"})
    prompt = client.send("agent/prompt", {"sessionId": session, "text": "second"})
    await client.wait_streaming(session, run=2)

    abort = client.send("agent/abort", {"sessionId": session})
    assert await abort.result() == {}
    events = client.session_events(session)
    # agent/abort answers once the run has ended: its agent_end came first.
    assert client.events[abort.events_before - 1]["event"]["type"] == "agent_end"
    answer = await prompt.result()
    assert answer["stopReason"] == "aborted"
    partial = answer["newMessages"][-1]
    assert partial["stopReason"] == "aborted" and partial["content"][0]["text"].startswith("s")

    state = await client.request("agent/getState", {"sessionId": session})
    assert state["isStreaming"] is False
    completed = [n["event"]["message"] for n in events if n["event"]["type"] == "message_end"]
    assert state["messages"] == completed
    assert [(m["role"], m.get("stopReason")) for m in state["messages"]] == [
        ("user", None), ("assistant", "stop"), ("user", None), ("assistant", "aborted")]
    assert state["seq"] == events[-1]["seq"]


async def test_cancel_request_on_a_prompt_aborts_its_run_and_the_session_goes_on(start_tiller):
    with SSEServer() as server:
        server.reply(
            # Stalls after one delta until the client hangs up.
            Reply(chunks=[openai_chunk({"role": "assistant", "content": ""}), openai_chunk({"content": "Thin"})],
                  stall=True),
            Reply(chunks=openai_text("Still here.")),
        )
        client = await start_tiller(env=openai_env(server))
        session = await client.new_session(model=OPENAI, tools=[])
        prompt = client.send("agent/prompt", {"sessionId": session, "text": "think hard"})
        await client.wait_streaming(session)

        client.cancel(prompt)
        with pytest.raises(JsonRpcException) as cancelled:
            await prompt.result()
        assert cancelled.value.code == -32800
        # The run wound down before the error answer: agent_end first, the partial kept.
        events = client.session_events(session, upto=prompt.events_before)
        assert events[-1]["event"]["type"] == "agent_end"
        assert events[-1]["event"]["messages"][-1]["stopReason"] == "aborted"
        assert events[-1]["event"]["messages"][-1]["content"] == [{"type": "text", "text": "Thin"}]
        # The HTTP stream to the model was closed, not left running.
        assert await asyncio.to_thread(server.requests[0].disconnected.wait, 10)

        again = await client.request("agent/prompt", {"sessionId": session, "text": "still there?"})
        assert again["stopReason"] == "stop"
        assert again["newMessages"][-1]["content"] == [{"type": "text", "text": "Still here."}]
        state = await client.request("agent/getState", {"sessionId": session})
        assert [m["role"] for m in state["messages"]] == ["user", "assistant"] * 2


async def test_two_sessions_stream_at_once_without_blocking_each_other(start_tiller, openai_server):
    # Session A's model stream is held mid-reply while session B runs from start to end.
    openai_server.reply(Reply(chunks=openai_text("A is", HOLD, " slow.")))
    client = await start_tiller([reply(text("B is quick."))], env=openai_env(openai_server))
    session_a = await client.new_session(model=OPENAI, tools=[])
    session_b = await client.new_session(tools=[])

    prompt_a = client.send("agent/prompt", {"sessionId": session_a, "text": "slow one"})
    await client.wait_streaming(session_a)
    answer_b = await client.request("agent/prompt", {"sessionId": session_b, "text": "quick one"})
    assert answer_b["stopReason"] == "stop"
    state_a = await client.request("agent/getState", {"sessionId": session_a})
    assert state_a["isStreaming"] is True  # B finished while A was still streaming
    assert state_a["streamMessage"]["content"] == [{"type": "text", "text": "A is"}]

    openai_server.release()
    answer_a = await prompt_a.result()
    assert answer_a["newMessages"][-1]["content"] == [{"type": "text", "text": "A is slow."}]

    order = [n["sessionId"] for n in client.events]
    b_first, b_last = order.index(session_b), len(order) - 1 - order[::-1].index(session_b)
    assert session_a in order[:b_first] and session_a in order[b_last:]  # interleaved
    assert all(s == session_b for s in order[b_first : b_last + 1])  # A was quiet while held
    for session in (session_a, session_b):
        events = client.session_events(session)
        assert_gap_free(events)
        assert types_of(events)[0] == "agent_start" and types_of(events)[-1] == "agent_end"
