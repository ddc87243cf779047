"""Plan mode over LSP: read-only tools and commands run, changes are refused with a message for
the model, the system prompt says so, and the prompt after leaving plan mode says so too. The
model is a loopback OpenAI-compatible server, so the test sees exactly what the model was sent."""

from __future__ import annotations

import json

from tests.support.sse_server import Reply, SSEServer

from .harness import editor_capabilities, openai_env, openai_text, openai_tool_call, result_text, tool_results

APPROVALS = editor_capabilities(approvals=True)
MODEL = "openai/test-model"


def system_prompt(request) -> str:
    first = request.json["messages"][0]
    assert first["role"] in ("system", "developer")
    return first["content"] if isinstance(first["content"], str) else "".join(p["text"] for p in first["content"])


def user_texts(request) -> list[str]:
    last = [m for m in request.json["messages"] if m["role"] == "user"][-1]
    content = last["content"]
    return [content] if isinstance(content, str) else [part["text"] for part in content if part["type"] == "text"]


async def test_plan_mode_explores_refuses_changes_and_hands_over_when_the_user_leaves_it(start_tiller, workspace):
    (workspace / "app.py").write_text("print('hi')\n")
    with SSEServer() as llm:
        llm.reply(
            Reply(chunks=openai_tool_call("r1", "read", {"path": "app.py"})),
            Reply(chunks=openai_tool_call("b1", "bash", {"command": "ls -la && git log --oneline -3 2>/dev/null | head"})),
            Reply(chunks=openai_tool_call("e1", "edit", {"path": "app.py", "oldText": "hi", "newText": "bye"})),
            Reply(chunks=openai_tool_call("w1", "write", {"path": "new.py", "content": "x = 1\n"})),
            Reply(chunks=openai_tool_call("b2", "bash", {"command": "touch made.txt"})),
            Reply(chunks=openai_tool_call("b3", "bash", {"command": "echo x > made.txt"})),
            Reply(chunks=openai_text("Plan: change hi to bye in app.py.")),
            Reply(chunks=openai_tool_call("e2", "edit", {"path": "app.py", "oldText": "hi", "newText": "bye"})),
            Reply(chunks=openai_text("Done.")),
        )
        client = await start_tiller(env=openai_env(llm), capabilities=APPROVALS)
        opened = await client.request("agent/newSession", {"model": MODEL, "approvalMode": "plan"})
        session = opened["sessionId"]
        assert opened["approvalMode"] == "plan"
        answer = await client.prompt(session, "Plan the change").result()

        results = tool_results(answer)
        assert [results[c]["isError"] for c in ("r1", "b1", "e1", "w1", "b2", "b3")] == [
            False, False, True, True, True, True]
        assert "app.py" in result_text(results["b1"])
        assert result_text(results["e1"]).startswith("Not done: the session is in plan mode")
        assert result_text(results["w1"]).startswith("Not done: the session is in plan mode")
        assert "`touch made.txt` is not on the read-only list" in result_text(results["b2"])
        assert "it writes to made.txt" in result_text(results["b3"])
        assert client.events_of(session, "approval_request") == []  # plan mode never asks
        assert (workspace / "app.py").read_text() == "print('hi')\n"
        assert not (workspace / "new.py").exists() and not (workspace / "made.txt").exists()
        assert "# Plan mode" in system_prompt(llm.requests[0])
        assert user_texts(llm.requests[0]) == ["Plan the change"]

        state = await client.request("agent/setApprovalMode", {"sessionId": session, "mode": "acceptEdits"})
        assert state["approvalMode"] == "acceptEdits"
        answer = await client.prompt(session, "Go ahead").result()
        assert tool_results(answer)["e2"]["isError"] is False
        assert (workspace / "app.py").read_text() == "print('bye')\n"
        told = llm.requests[7]
        assert "# Plan mode" not in system_prompt(told)
        assert user_texts(told) == [
            "Go ahead",
            "[tiller] The user switched the session from plan mode to acceptEdits mode: you may now carry out "
            "the plan. File changes and commands follow the approval mode again.",
        ]


async def test_plan_mode_survives_a_reload_and_never_enters_the_saved_system_prompt(start_tiller, workspace, tmp_path):
    with SSEServer() as llm:
        llm.reply(Reply(chunks=openai_text("Looking.")), Reply(chunks=openai_text("Still planning.")))
        client = await start_tiller(env=openai_env(llm), capabilities=APPROVALS)
        session = await client.new_session(model=MODEL, approvalMode="plan")
        await client.prompt(session, "Plan").result()
        await client.request("agent/closeSession", {"sessionId": session})
        loaded = await client.request("agent/loadSession", {"sessionId": session})
        assert loaded["approvalMode"] == "plan"
        await client.prompt(session, "More").result()
        assert system_prompt(llm.requests[1]).count("# Plan mode") == 1
    header = json.loads((tmp_path / "tiller-data" / "sessions" / f"{session}.jsonl").read_text().splitlines()[0])
    assert header["type"] == "session" and "Plan mode" not in header["systemPrompt"]
