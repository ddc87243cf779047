"""Session state and settings: agent/getState, set*, listModels, listSessions, closeSession,
clearQueue."""

from __future__ import annotations

import json

import pytest
from pygls.exceptions import JsonRpcException

from .harness import FAUX, SECRET, SLOW, SLOW_CHUNKING, reply, text


def session_state(model: str = FAUX, thinking: str = "off", steering: str = "one_at_a_time",
                  follow_up: str = "one_at_a_time") -> dict:
    return {"type": "session_state", "model": model, "thinkingLevel": thinking,
            "steeringMode": steering, "followUpMode": follow_up, "approvalMode": "ask", "toolExecution": "parallel"}


async def test_get_state_and_the_settings_methods(start_tiller, workspace):
    client = await start_tiller([reply(text("Hi there."))])
    created = await client.request("agent/newSession", {"tools": []})
    session = created["sessionId"]
    assert created == {"sessionId": session, "model": FAUX, "tools": [], "cwd": str(workspace.resolve()),
                       "approvalMode": "ask", "messageCount": 0}
    await client.request("agent/prompt", {"sessionId": session, "text": "Hello"})

    state = await client.request("agent/getState", {"sessionId": session})
    events = client.session_events(session)
    assert {k: state[k] for k in ("sessionId", "cwd", "model", "thinkingLevel", "isStreaming", "queue", "seq")} == {
        "sessionId": session, "cwd": str(workspace.resolve()), "model": FAUX, "thinkingLevel": "off",
        "isStreaming": False, "queue": {"steering": [], "followUp": []}, "seq": events[-1]["seq"],
    }
    assert state["messages"] == events[-1]["event"]["messages"]  # agent_end's: the whole run
    assert "streamMessage" not in state and state["pendingToolCalls"] == []

    # Each setting answers with the new state and announces it as a session_state event.
    changes = [
        ("agent/setModel", {"model": "openai/gpt-4o-mini"}, session_state(model="openai/gpt-4o-mini")),
        ("agent/setThinkingLevel", {"level": "high"}, session_state(model="openai/gpt-4o-mini", thinking="high")),
        ("agent/setQueueModes", {"steeringMode": "all"},
         session_state(model="openai/gpt-4o-mini", thinking="high", steering="all")),
        ("agent/setQueueModes", {"followUpMode": "all"},
         session_state(model="openai/gpt-4o-mini", thinking="high", steering="all", follow_up="all")),
        ("agent/setModel", {"model": FAUX}, session_state(thinking="high", steering="all", follow_up="all")),
    ]
    for method, params, expected in changes:
        assert await client.request(method, {"sessionId": session, **params}) == expected
        last = client.session_events(session)[-1]
        assert last["event"] == expected and last["seq"] == events[-1]["seq"] + 1
        events = client.session_events(session)

    state = await client.request("agent/getState", {"sessionId": session})
    assert (state["model"], state["thinkingLevel"], state["steeringMode"], state["followUpMode"]) == (
        FAUX, "high", "all", "all")
    assert state["seq"] == events[-1]["seq"]
    with pytest.raises(JsonRpcException) as bad:
        await client.request("agent/setThinkingLevel", {"sessionId": session, "level": "extreme"})
    assert bad.value.code == -32602


async def test_list_models_searches_the_ready_providers_and_never_sends_a_key(start_tiller, tmp_path):
    # Local servers moved to a dead port, so that what runs on this machine cannot matter.
    config = tmp_path / "models.toml"
    config.write_text("".join(f'[providers.{name}]\nbaseUrl = "http://127.0.0.1:9/v1"\n'
                              for name in ("ollama", "lmstudio", "vllm", "llamacpp")))
    client = await start_tiller(env={"TILLER_CONFIG": str(config)})  # OPENAI_API_KEY=sk-test-SECRET is set
    result = await client.request("agent/listModels")

    assert result["default"] == FAUX
    by_ref = {f"{m['provider']}/{m['id']}": m for m in result["models"]}
    assert result["total"] == len(result["models"])
    # Ready providers only: OpenAI (its key), the scripted model (its script), the offline one.
    assert {ref.partition("/")[0] for ref in by_ref} == {"openai", "faux", "local"}
    assert by_ref[FAUX]["hasKey"] is True and by_ref[FAUX]["ready"] is True
    gpt5 = by_ref["openai/gpt-5"]
    assert set(gpt5) == {"provider", "id", "name", "api", "reasoning", "input", "contextWindow", "maxTokens",
                         "cost", "hasKey", "ready"}
    assert (gpt5["api"], gpt5["contextWindow"], gpt5["cost"]["input"], gpt5["ready"]) == (
        "openai-responses", 400_000, 1.25, True)

    found = await client.request("agent/listModels", {"query": "gpt-5", "limit": 3})
    assert found["models"][0]["id"] == "gpt-5" and len(found["models"]) == 3
    assert found["total"] > 3
    rest = await client.request("agent/listModels", {"query": "gpt-5", "offset": 3})
    assert len(rest["models"]) == found["total"] - 3

    every = await client.request("agent/listModels", {"query": "claude sonnet 4.5", "all": True})
    sonnet = next(m for m in every["models"] if (m["provider"], m["id"]) == ("anthropic", "claude-sonnet-4-5"))
    assert (sonnet["hasKey"], sonnet["ready"], sonnet["setupHint"]) == (False, False, "set ANTHROPIC_API_KEY")

    with pytest.raises(JsonRpcException) as bad:
        await client.request("agent/listModels", {"offset": -1})
    assert bad.value.code == -32602

    session = await client.new_session(model="openai/gpt-5", tools=[])
    await client.request("agent/getState", {"sessionId": session})
    await client.request("agent/listSessions")
    # The harness checks every message on the way out too; this says it where it matters.
    assert SECRET not in json.dumps(client.received)


async def test_list_close_and_clear_queue(start_tiller):
    client = await start_tiller([reply(text("Done.")), SLOW], **SLOW_CHUNKING)
    idle = await client.new_session(tools=[])
    busy = await client.new_session(tools=[])
    await client.request("agent/prompt", {"sessionId": idle, "text": "Tidy the imports\nplease"})
    prompt = client.send("agent/prompt", {"sessionId": busy, "text": "Rewrite everything"})
    await client.wait_streaming(busy)

    await client.request("agent/steer", {"sessionId": busy, "text": "steer me"})
    await client.request("agent/followUp", {"sessionId": busy, "text": "then this"})
    clearing = client.send("agent/clearQueue", {"sessionId": busy})
    cleared = await clearing.result()
    assert cleared == {"steering": ["steer me"], "followUp": ["then this"]}  # what was dropped
    # The last event before the answer (the reply keeps streaming after it).
    last = client.session_events(busy, upto=clearing.events_before)[-1]["event"]
    assert last == {"type": "queue_update", "steering": [], "followUp": []}
    assert (await client.request("agent/getState", {"sessionId": busy}))["queue"] == {"steering": [], "followUp": []}

    listed = {s["sessionId"]: s for s in (await client.request("agent/listSessions"))["sessions"]}
    assert listed[idle]["title"] == "Tidy the imports" and listed[idle]["messageCount"] == 2
    assert listed[idle]["isStreaming"] is False and listed[idle]["model"] == FAUX
    assert listed[busy]["isStreaming"] is True and listed[busy]["title"] == "Rewrite everything"

    # Closing a running session aborts its run first: the prompt is answered, agent_end sent.
    assert await client.request("agent/closeSession", {"sessionId": busy}) == {}
    assert (await prompt.result())["stopReason"] == "aborted"
    assert client.session_events(busy)[-1]["event"]["type"] == "agent_end"
    # A closed session is no longer hosted, but its file stays: listed as not loaded.
    listed = {s["sessionId"]: s["loaded"] for s in (await client.request("agent/listSessions"))["sessions"]}
    assert listed == {idle: True, busy: False}
    with pytest.raises(JsonRpcException) as gone:
        await client.request("agent/getState", {"sessionId": busy})
    assert gone.value.code == -32001
