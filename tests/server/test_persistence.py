"""Sessions survive the server: `kill -9` mid-run loses no completed message, a new server
lists and loads the session and the conversation goes on, a torn last line is ignored,
`agent/deleteSession` removes it, and nothing is written outside TILLER_DATA_DIR."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.sse_server import Reply, SSEServer

from .harness import FAUX, openai_env, openai_text, reply, text, tool_call

ESSAY = reply(text("slow " * 20_000))  # streams far longer than the test needs to kill the server
TORN = '{"type":"message","message":{"role":"user","content":[{"type":"text","text":"cut sh'


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def completed(client, session: str) -> list[dict]:
    """Every message the server reported as ended (message_end), in order."""
    return [e["message"] for e in client.events_of(session, "message_end")]


def texts(messages: list[dict]) -> list[tuple[str, str]]:
    """(role, text) of each message, as an OpenAI request or a tiller transcript has it."""
    result = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(b.get("text", "") for b in content if b.get("type") == "text")
        result.append((message["role"], content or ""))
    return result


async def test_a_session_survives_kill_9_and_goes_on_in_a_new_server(start_tiller, workspace, tmp_path):
    data_dir = tmp_path / "tiller-data"  # what the harness sets as TILLER_DATA_DIR
    elsewhere = tmp_path / "elsewhere"  # home, XDG dirs and TMPDIR: nothing may land there
    for name in ("home", "xdg-data", "xdg-state", "xdg-cache", "tmp"):
        (elsewhere / name).mkdir(parents=True)
    env = {"HOME": str(elsewhere / "home"), "XDG_DATA_HOME": str(elsewhere / "xdg-data"),
           "XDG_STATE_HOME": str(elsewhere / "xdg-state"), "XDG_CACHE_HOME": str(elsewhere / "xdg-cache"),
           "TMPDIR": str(elsewhere / "tmp")}

    # --- the first server: two turns, then SIGKILL while the third reply streams ----------
    first = await start_tiller([
        reply(text("Noted: 42.")),
        reply(tool_call("write", {"path": "number.txt", "content": "42\n"}, id="w1")),
        reply(text("Written down.")),
        ESSAY,
    ], chunk_chars=8, delay_ms=10, env=env)
    session = await first.new_session(approvalMode="yolo", thinkingLevel="high")
    await first.prompt(session, "Remember the number 42\nplease").result()
    await first.prompt(session, "Write it down").result()
    dying = first.prompt(session, "Now write an essay about it")
    await first.wait_streaming(session, run=3)
    first.process.kill()
    await first.process.wait()
    with pytest.raises(Exception):  # noqa: B017 - the request dies with its server, by whatever error its pipe gives
        await dying.result()

    saved = completed(first, session)
    assert texts(saved) == [
        ("user", "Remember the number 42\nplease"), ("assistant", "Noted: 42."),
        ("user", "Write it down"), ("assistant", ""), ("toolResult", "Successfully wrote 3 bytes to number.txt"),
        ("assistant", "Written down."), ("user", "Now write an essay about it"),
    ]
    session_file = data_dir / "sessions" / f"{session}.jsonl"
    # (the workspace's checkpoints live beside the sessions, in checkpoints/)
    assert {p for p in tree(data_dir) if not p.startswith("checkpoints")} == {"sessions", f"sessions/{session}.jsonl"}
    # A crash mid-write leaves a torn last line; it must not cost the session.
    with session_file.open("a") as handle:
        handle.write(TORN)

    # --- the second server: list, load, continue ------------------------------------------
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_text("It was 42.")))
        second = await start_tiller(env={**env, **openai_env(model)})

        listed = (await second.request("agent/listSessions"))["sessions"]
        assert [{k: s[k] for k in ("sessionId", "cwd", "model", "isStreaming", "messageCount", "title", "loaded")}
                for s in listed] == [{
            "sessionId": session, "cwd": str(workspace.resolve()), "model": FAUX, "isStreaming": False,
            "messageCount": 7, "title": "Remember the number 42", "loaded": False,
        }]
        assert listed[0]["updatedAt"] >= saved[-1]["timestamp"]
        assert (await second.request("agent/listSessions", {"cwd": str(tmp_path)}))["sessions"] == []

        loaded = await second.request("agent/loadSession", {"sessionId": session})
        assert {k: loaded[k] for k in ("sessionId", "model", "cwd", "messageCount")} == {
            "sessionId": session, "model": FAUX, "cwd": str(workspace.resolve()), "messageCount": 7}
        assert set(loaded["tools"]) == {"read", "bash", "edit", "write", "grep", "find", "ls"}
        assert loaded["approvalMode"] == "yolo"  # as the session had it, not the server default
        state = await second.request("agent/getState", {"sessionId": session})
        assert state["messages"] == saved  # every completed message, exactly as first sent
        assert state["thinkingLevel"] == "high"  # chosen at newSession, before any message
        assert [s["loaded"] for s in (await second.request("agent/listSessions"))["sessions"]] == [True]

        await second.request("agent/setModel", {"sessionId": session, "model": "openai/test-model"})
        answer = await second.prompt(session, "What was the number?").result()
        assert answer["stopReason"] == "stop"

    # The model was sent the whole conversation from the first server, then the new prompt.
    sent = model.requests[0].json["messages"]
    assert texts(sent) == [
        ("system", sent[0]["content"]),
        ("user", "Remember the number 42\nplease"), ("assistant", "Noted: 42."),
        ("user", "Write it down"), ("assistant", ""), ("tool", "Successfully wrote 3 bytes to number.txt"),
        ("assistant", "Written down."), ("user", "Now write an essay about it"), ("user", "What was the number?"),
    ]
    assert sent[4]["tool_calls"][0]["function"]["name"] == "write"
    assert json.loads(sent[4]["tool_calls"][0]["function"]["arguments"]) == {"path": "number.txt", "content": "42\n"}

    # What the second server appended after the torn line is read back too.
    assert await second.request("agent/closeSession", {"sessionId": session}) == {}
    listed = (await second.request("agent/listSessions"))["sessions"]
    assert [(s["messageCount"], s["model"], s["loaded"]) for s in listed] == [(9, "openai/test-model", False)]
    await second.request("agent/loadSession", {"sessionId": session})
    state = await second.request("agent/getState", {"sessionId": session})
    assert state["messages"] == saved + answer["newMessages"]

    # --- delete ---------------------------------------------------------------------------
    assert await second.request("agent/deleteSession", {"sessionId": session}) == {}
    assert not session_file.exists()
    assert (await second.request("agent/listSessions"))["sessions"] == []
    for method in ("agent/loadSession", "agent/deleteSession", "agent/getState"):
        with pytest.raises(JsonRpcException) as gone:
            await second.request(method, {"sessionId": session})
        assert gone.value.code == -32001

    assert tree(workspace) == {"number.txt"}
    assert tree(elsewhere) == {"home", "xdg-data", "xdg-state", "xdg-cache", "tmp"}
    # The workspace's shadow repository stays (other sessions may share it); the session's
    # checkpoints in it are gone. Of the saved sessions only their (now empty) index is left.
    index = {"sessions/index.sqlite3", "sessions/index.sqlite3-wal", "sessions/index.sqlite3-shm"}
    assert {p for p in tree(data_dir) if not p.startswith("checkpoints")} - index == {"sessions"}
    assert not [p for p in tree(data_dir) if p.endswith(f"/{session}")]


async def test_a_reloaded_session_keeps_its_tools_and_system_prompt(start_tiller):
    first = await start_tiller([reply(text("Looked."))])
    session = await first.new_session(tools=["read", "ls"], systemPrompt="Only ever read files.")
    await first.prompt(session, "Look around").result()
    await first.request("agent/closeSession", {"sessionId": session})

    second = await start_tiller([reply(text("Still only reading."))])
    loaded = await second.request("agent/loadSession", {"sessionId": session})
    # A reload must never give the model more than the session had.
    assert loaded["tools"] == ["read", "ls"] and loaded["approvalMode"] == "ask"
