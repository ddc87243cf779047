"""Sessions run a reply's tool calls in parallel (as pi's coding agent does), with changes
of one file taking turns in call order, several approvals pending at once, and a session
setting for one-by-one execution."""

from __future__ import annotations

from .harness import (
    editor_capabilities,
    reply,
    result_text,
    text,
    tool_call,
    tool_results,
)

APPROVALS = editor_capabilities(approvals=True)


async def test_edits_of_one_file_in_one_reply_apply_in_call_order(start_tiller, workspace):
    (workspace / "a.txt").write_text("one\n")
    client = await start_tiller([
        reply(
            tool_call("edit", {"path": "a.txt", "oldText": "one", "newText": "two"}, id="first"),
            tool_call("edit", {"path": "a.txt", "oldText": "two", "newText": "three"}, id="second"),
            tool_call("edit", {"path": "a.txt", "oldText": "three", "newText": "four"}, id="third"),
        ),
        reply(text("Done.")),
    ])
    session = await client.new_session(approvalMode="yolo")
    state = await client.request("agent/getState", {"sessionId": session})
    assert state["toolExecution"] == "parallel"
    answer = await client.prompt(session, "count up").result()
    results = tool_results(answer)
    # Each edit started from the one before it: none raced the others.
    assert [results[i]["isError"] for i in ("first", "second", "third")] == [False, False, False]
    assert (workspace / "a.txt").read_text() == "four\n"


async def test_changes_in_one_reply_ask_for_approval_at_once(start_tiller, workspace):
    client = await start_tiller([
        reply(tool_call("write", {"path": "a.txt", "content": "A"}, id="wa"),
              tool_call("write", {"path": "b.txt", "content": "B"}, id="wb")),
        reply(text("Done.")),
    ], capabilities=APPROVALS)
    session = await client.new_session()
    prompt = client.prompt(session, "write both")
    # Both are asked before either is answered; running in parallel, they may arrive in either order.
    asked = [await client.wait_approval(session, 1), await client.wait_approval(session, 2)]
    by_call = {a["toolCallId"]: a for a in asked}
    state = await client.request("agent/getState", {"sessionId": session})
    assert sorted(a["toolCallId"] for a in state["pendingApprovals"]) == sorted(by_call) == ["wa", "wb"]
    await client.respond(session, by_call["wb"]["approvalId"], "allow_once")
    await client.respond(session, by_call["wa"]["approvalId"], "reject_once", "not this one")
    answer = await prompt.result()
    results = tool_results(answer)
    assert results["wb"]["isError"] is False and results["wa"]["isError"] is True
    assert "not this one" in result_text(results["wa"])
    assert (workspace / "b.txt").read_text() == "B" and not (workspace / "a.txt").exists()


async def test_a_new_session_can_start_sequential(start_tiller):
    client = await start_tiller([])
    session = await client.new_session(toolExecution="sequential")
    state = await client.request("agent/getState", {"sessionId": session})
    assert state["toolExecution"] == "sequential"


async def test_sequential_execution_is_a_session_setting_that_survives_a_reload(start_tiller, workspace):
    responses = [
        reply(tool_call("write", {"path": "a.txt", "content": "A"}, id="wa"),
              tool_call("write", {"path": "b.txt", "content": "B"}, id="wb")),
        reply(text("Done.")),
    ]
    client = await start_tiller(responses, capabilities=APPROVALS)
    session = await client.new_session()
    changed = await client.request("agent/setToolExecution", {"sessionId": session, "mode": "sequential"})
    assert changed["toolExecution"] == "sequential"
    prompt = client.prompt(session, "write both")
    first = await client.wait_approval(session, 1)
    state = await client.request("agent/getState", {"sessionId": session})
    assert [a["toolCallId"] for a in state["pendingApprovals"]] == ["wa"]  # one at a time
    await client.respond(session, first["approvalId"], "allow_once")
    second = await client.wait_approval(session, 2)
    assert second["toolCallId"] == "wb"
    await client.respond(session, second["approvalId"], "allow_once")
    await prompt.result()
    await client.request("agent/closeSession", {"sessionId": session})
    loaded = await client.request("agent/loadSession", {"sessionId": session})
    assert loaded["sessionId"] == session
    state = await client.request("agent/getState", {"sessionId": session})
    assert state["toolExecution"] == "sequential"


async def test_the_client_can_make_sequential_the_default_of_its_sessions(start_tiller):
    client = await start_tiller(initialization_options={"toolExecution": "sequential"})
    session = await client.new_session()
    state = await client.request("agent/getState", {"sessionId": session})
    assert state["toolExecution"] == "sequential"
    # A session can still ask for the other mode.
    other = await client.new_session(toolExecution="parallel")
    state = await client.request("agent/getState", {"sessionId": other})
    assert state["toolExecution"] == "parallel"
