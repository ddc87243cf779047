"""Approvals routed to the editor: `approval_request` / `agent/respondApproval` /
`approval_resolved`, the approval modes, and a client that cannot show approvals."""

from __future__ import annotations

import json

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.sse_server import Reply, SSEServer

from .harness import (
    editor_capabilities,
    one_call_per_turn,
    openai_env,
    openai_text,
    openai_tool_call,
    reply,
    result_text,
    text,
    tool_call,
    tool_results,
)

APPROVALS = editor_capabilities(approvals=True)


def options(tool: str) -> list[dict]:
    return [
        {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "allow_always", "name": f"Always allow {tool} in this session", "kind": "allow_always"},
        {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
        {"optionId": "reject_always", "name": f"Always reject {tool} in this session", "kind": "reject_always"},
    ]


def asked(client, session: str) -> list[str]:
    """The toolCallIds the session asked about, in order."""
    return [e["toolCallId"] for e in client.events_of(session, "approval_request")]


async def error_code(request) -> int:
    with pytest.raises(JsonRpcException) as raised:
        await request
    return raised.value.code


async def test_allow_once_shows_what_each_tool_would_do_then_does_it(start_tiller, workspace):
    (workspace / "a.txt").write_text("one\ntwo\n")
    client = await start_tiller(one_call_per_turn(
        tool_call("edit", {"path": "a.txt", "oldText": "two", "newText": "TWO"}, id="e1"),
        tool_call("write", {"path": "b.txt", "content": "new\n"}, id="w1"),
        tool_call("bash", {"command": "echo hi > c.txt"}, id="b1"),
    ), capabilities=APPROVALS)
    session = await client.new_session()
    prompt = client.prompt(session, "change things")

    edit = await client.wait_approval(session)
    assert edit == {
        "type": "approval_request", "approvalId": edit["approvalId"], "toolCallId": "e1", "toolName": "edit",
        "kind": "edit", "title": "Edit a.txt", "path": str(workspace.resolve() / "a.txt"),
        "diff": "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n", "newText": "one\nTWO\n",
        "hunks": [{"id": "h1", "header": "@@ -1,2 +1,2 @@", "oldStart": 1, "oldLines": 2, "newStart": 1, "newLines": 2}],
        "options": options("edit"),
    }
    # While the user decides, nothing is written and a reconnecting client can find it.
    state = await client.request("agent/getState", {"sessionId": session})
    assert state["pendingApprovals"] == [edit] and state["isStreaming"] is True
    assert (workspace / "a.txt").read_text() == "one\ntwo\n"
    assert await error_code(client.respond(session, "no-such-approval", "allow_once")) == -32004

    assert await client.respond(session, edit["approvalId"], "allow_once") == {}
    assert await error_code(client.respond(session, edit["approvalId"], "allow_once")) == -32004  # answered

    write = await client.wait_approval(session, 2)
    assert {k: write[k] for k in ("toolCallId", "toolName", "kind", "title", "path", "diff", "newText")} == {
        "toolCallId": "w1", "toolName": "write", "kind": "write", "title": "Create b.txt",
        "path": str(workspace.resolve() / "b.txt"), "diff": "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+new\n", "newText": "new\n",
    }
    assert write["options"] == options("write")
    await client.respond(session, write["approvalId"], "allow_once")

    bash = await client.wait_approval(session, 3)
    assert {k: bash[k] for k in ("toolCallId", "toolName", "kind", "title", "command")} == {
        "toolCallId": "b1", "toolName": "bash", "kind": "execute", "title": "Run echo hi > c.txt",
        "command": "echo hi > c.txt",
    }
    assert "diff" not in bash and "path" not in bash
    # A command's "always allow" saves a rule for it (see test_command_rules_e2e.py), not all of bash.
    assert [(o["optionId"], o.get("rule", {}).get("patterns")) for o in bash["options"]] == [
        ("allow_once", None), ("allow_always", ["echo *"]), ("allow_always_project", ["echo *"]),
        ("allow_always_user", ["echo *"]), ("reject_once", None), ("reject_always", None)]
    await client.respond(session, bash["approvalId"], "allow_once")
    answer = await prompt.result()

    assert answer["stopReason"] == "stop"
    assert all(not r["isError"] for r in tool_results(answer).values())
    assert (workspace / "a.txt").read_text() == "one\nTWO\n"
    assert (workspace / "b.txt").read_text() == "new\n"
    assert (workspace / "c.txt").read_text() == "hi\n"
    # Each approval is resolved before its tool ends.
    events = client.events_of(session, "approval_request", "approval_resolved", "tool_execution_end")
    assert [(e["type"], e["toolCallId"]) for e in events] == [
        (kind, call) for call in ("e1", "w1", "b1")
        for kind in ("approval_request", "approval_resolved", "tool_execution_end")
    ]
    resolved = client.events_of(session, "approval_resolved")[0]
    assert resolved == {"type": "approval_resolved", "approvalId": edit["approvalId"], "toolCallId": "e1",
                        "outcome": "selected", "optionId": "allow_once"}
    assert (await client.request("agent/getState", {"sessionId": session}))["pendingApprovals"] == []


async def test_always_answers_hold_for_the_rest_of_the_session_only(start_tiller, workspace):
    client = await start_tiller([
        *one_call_per_turn(
            tool_call("write", {"path": "x1.txt", "content": "1"}, id="w1"),
            tool_call("write", {"path": "x2.txt", "content": "2"}, id="w2"),
            tool_call("bash", {"command": "touch ran1"}, id="b1"),
            tool_call("bash", {"command": "touch ran2"}, id="b2"),
        ),
        *one_call_per_turn(tool_call("write", {"path": "x3.txt", "content": "3"}, id="other")),
    ], capabilities=APPROVALS)
    session = await client.new_session()
    prompt = client.prompt(session, "go")
    await client.respond(session, (await client.wait_approval(session, 1))["approvalId"], "allow_always")
    bash = await client.wait_approval(session, 2)
    assert bash["toolCallId"] == "b1"  # the second write was not asked about
    await client.respond(session, bash["approvalId"], "reject_always")
    answer = await prompt.result()

    assert asked(client, session) == ["w1", "b1"]
    results = tool_results(answer)
    assert [results[c]["isError"] for c in ("w1", "w2", "b1", "b2")] == [False, False, True, True]
    assert result_text(results["b1"]) == "The user rejected this command."
    assert result_text(results["b2"]) == "The user rejected this command: bash is always rejected in this session"
    assert (workspace / "x1.txt").read_text() == "1" and (workspace / "x2.txt").read_text() == "2"
    assert not (workspace / "ran1").exists() and not (workspace / "ran2").exists()

    # Another session starts from scratch: its write is asked about again.
    other = await client.new_session()
    prompt = client.prompt(other, "go")
    await client.respond(other, (await client.wait_approval(other))["approvalId"], "reject_once")
    assert tool_results(await prompt.result())["other"]["isError"] is True
    assert asked(client, other) == ["other"] and not (workspace / "x3.txt").exists()


async def test_a_rejection_and_the_users_reason_reach_the_model(start_tiller, workspace):
    (workspace / "names.py").write_text("old_name = 1\n")
    with SSEServer() as model:
        model.reply(
            Reply(chunks=openai_tool_call("call_1", "edit", {"path": "names.py", "oldText": "old_name",
                                                             "newText": "new_name"})),
            Reply(chunks=openai_text("Understood, keeping it.")),
        )
        client = await start_tiller(env=openai_env(model), capabilities=APPROVALS)
        session = await client.new_session(model="openai/test-model")
        prompt = client.prompt(session, "rename it")
        approval = await client.wait_approval(session)
        await client.respond(session, approval["approvalId"], "reject_once", "Keep the old name, it is public API")
        answer = await prompt.result()

    result = tool_results(answer)["call_1"]
    assert result["isError"] is True
    assert result_text(result) == "The user rejected this edit: Keep the old name, it is public API"
    assert (workspace / "names.py").read_text() == "old_name = 1\n"
    assert client.events_of(session, "approval_resolved")[0]["optionId"] == "reject_once"
    # The model's next request carries the rejection as the tool's result.
    tool_message = model.requests[1].json["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    assert "The user rejected this edit: Keep the old name, it is public API" in json.dumps(tool_message)
    assert answer["stopReason"] == "stop"


async def test_abort_or_close_cancels_a_pending_approval_and_writes_nothing(start_tiller, workspace):
    client = await start_tiller([
        reply(tool_call("write", {"path": "never.txt", "content": "x"}, id="w1")),
        reply(text("not reached: the run was aborted")),
        reply(tool_call("bash", {"command": "touch never-ran"}, id="b1")),
    ], capabilities=APPROVALS)
    session = await client.new_session()
    prompt = client.prompt(session, "write it")
    approval = await client.wait_approval(session)

    assert await client.request("agent/abort", {"sessionId": session}) == {}
    answer = await prompt.result()

    resolved = client.events_of(session, "approval_resolved")
    assert resolved == [{"type": "approval_resolved", "approvalId": approval["approvalId"], "toolCallId": "w1",
                         "outcome": "cancelled"}]
    assert answer["stopReason"] == "aborted"
    aborted = tool_results(answer)["w1"]
    assert aborted["isError"] is True and result_text(aborted) == "Operation aborted"
    assert not (workspace / "never.txt").exists()
    assert (await client.request("agent/getState", {"sessionId": session}))["pendingApprovals"] == []
    assert await error_code(client.respond(session, approval["approvalId"], "allow_once")) == -32004
    assert not (workspace / "never.txt").exists()

    # Closing a session with a pending approval cancels it the same way.
    other = await client.new_session()
    prompt = client.prompt(other, "touch it")
    approval = await client.wait_approval(other)
    assert await client.request("agent/closeSession", {"sessionId": other}) == {}
    assert client.events_of(other, "approval_resolved") == [
        {"type": "approval_resolved", "approvalId": approval["approvalId"], "toolCallId": "b1", "outcome": "cancelled"}]
    assert result_text(tool_results(await prompt.result())["b1"]) == "Operation aborted"
    assert not (workspace / "never-ran").exists()


async def test_approval_modes_decide_what_is_asked(start_tiller, workspace):
    (workspace / "a.txt").write_text("a\n")
    client = await start_tiller([
        # session 1, acceptEdits (the initialization option): only bash is asked
        *one_call_per_turn(
            tool_call("edit", {"path": "a.txt", "oldText": "a", "newText": "A"}, id="e1"),
            tool_call("write", {"path": "w1.txt", "content": "1"}, id="w1"),
            tool_call("bash", {"command": "touch b1"}, id="b1"),
        ),
        # session 2, yolo (newSession): nothing is asked
        reply(tool_call("write", {"path": "w2.txt", "content": "2"}, id="w2"),
              tool_call("bash", {"command": "touch b2"}, id="b2")),
        reply(text("ok")),
        # session 1 again, switched to ask: the write is asked
        *one_call_per_turn(tool_call("write", {"path": "w3.txt", "content": "3"}, id="w3")),
    ], capabilities=APPROVALS, initialization_options={"approvalMode": "acceptEdits"})

    first = await client.request("agent/newSession", {})
    session = first["sessionId"]
    assert first["approvalMode"] == "acceptEdits"
    prompt = client.prompt(session, "go")
    await client.respond(session, (await client.wait_approval(session))["approvalId"], "allow_once")
    answer = await prompt.result()
    assert asked(client, session) == ["b1"]
    assert not any(r["isError"] for r in tool_results(answer).values())
    assert (workspace / "a.txt").read_text() == "A\n" and (workspace / "w1.txt").exists()
    assert (workspace / "b1").exists()

    second = await client.request("agent/newSession", {"approvalMode": "yolo"})
    assert second["approvalMode"] == "yolo"
    answer = await client.prompt(second["sessionId"], "go").result()
    assert asked(client, second["sessionId"]) == []
    assert (workspace / "w2.txt").exists() and (workspace / "b2").exists()

    changed = await client.request("agent/setApprovalMode", {"sessionId": session, "mode": "ask"})
    assert changed["approvalMode"] == "ask" and changed["type"] == "session_state"
    assert client.session_events(session)[-1]["event"] == changed
    assert (await client.request("agent/getState", {"sessionId": session}))["approvalMode"] == "ask"
    prompt = client.prompt(session, "and this")
    await client.respond(session, (await client.wait_approval(session, 2))["approvalId"], "allow_once")
    await prompt.result()
    assert asked(client, session) == ["b1", "w3"]
    with pytest.raises(JsonRpcException) as bad:
        await client.request("agent/setApprovalMode", {"sessionId": session, "mode": "sometimes"})
    assert bad.value.code == -32602


async def test_a_client_without_approval_ui_gets_an_explanation_and_nothing_changes(start_tiller, workspace):
    client = await start_tiller([
        reply(tool_call("write", {"path": "w.txt", "content": "x"}, id="w1"),
              tool_call("bash", {"command": "touch ran"}, id="b1")),
        reply(text("I could not.")),
    ])  # VS Code's capabilities, without experimental.tiller.approvals
    session = await client.new_session()  # ask mode (the default)
    answer = await client.prompt(session, "go").result()

    results = tool_results(answer)
    assert all(r["isError"] for r in results.values())
    for call, noun in (("w1", "change"), ("b1", "command")):
        message = result_text(results[call])
        assert message.startswith(f"Not done: this {noun} needs the user's approval")
        assert "capabilities.experimental.tiller.approvals" in message and '"acceptEdits"' in message
    assert client.events_of(session, "approval_request") == []
    assert not (workspace / "w.txt").exists() and not (workspace / "ran").exists()


async def test_get_state_tells_how_each_approval_went_also_in_a_new_server(start_tiller, workspace):
    first = await start_tiller([
        *one_call_per_turn(
            tool_call("write", {"path": "yes.txt", "content": "y\n"}, id="w1"),
            tool_call("write", {"path": "no.txt", "content": "n\n"}, id="w2"),
        ),
        reply(tool_call("bash", {"command": "touch never"}, id="b1")),
    ], capabilities=APPROVALS)
    session = await first.new_session()
    prompt = first.prompt(session, "write both")
    await first.respond(session, (await first.wait_approval(session))["approvalId"], "allow_once")
    await first.respond(session, (await first.wait_approval(session, 2))["approvalId"], "reject_once", "Not that one")
    await prompt.result()
    prompt = first.prompt(session, "then run it")
    await first.wait_approval(session, 3)
    await first.request("agent/abort", {"sessionId": session})
    await prompt.result()

    # Exactly the approval_resolved events the session sent, oldest first.
    sent = first.events_of(session, "approval_resolved")
    assert [(e["toolCallId"], e["outcome"], e.get("optionId")) for e in sent] == [
        ("w1", "selected", "allow_once"), ("w2", "selected", "reject_once"), ("b1", "cancelled", None)]
    assert (await first.request("agent/getState", {"sessionId": session}))["resolvedApprovals"] == sent
    assert not (workspace / "no.txt").exists()

    # They are saved with the session: a new server (a reloaded editor window) has them too.
    second = await start_tiller([], capabilities=APPROVALS)
    await second.request("agent/loadSession", {"sessionId": session})
    assert (await second.request("agent/getState", {"sessionId": session}))["resolvedApprovals"] == sent
    fresh = await second.new_session()
    assert (await second.request("agent/getState", {"sessionId": fresh}))["resolvedApprovals"] == []


async def test_review_per_hunk_applies_only_the_accepted_hunks_and_tells_the_model(start_tiller, workspace):
    original = "".join(f"line {i}\n" for i in range(1, 31))
    (workspace / "f.txt").write_text(original)
    edits = [{"oldText": "line 2\n", "newText": "LINE 2\n"}, {"oldText": "line 25\n", "newText": "LINE 25\n"}]
    client = await start_tiller([
        *one_call_per_turn(tool_call("edit", {"path": "f.txt", "edits": edits}, id="e1"),
                           tool_call("bash", {"command": "touch ran"}, id="b1")),
        *one_call_per_turn(tool_call("write", {"path": "g.txt", "content": "g\n"}, id="w1"), end="Fine."),
    ], capabilities=APPROVALS)
    session = await client.new_session()
    prompt = client.prompt(session, "shout two lines")
    approval = await client.wait_approval(session)
    assert approval["hunks"] == [
        {"id": "h1", "header": "@@ -1,6 +1,6 @@", "oldStart": 1, "oldLines": 6, "newStart": 1, "newLines": 6},
        {"id": "h2", "header": "@@ -21,9 +21,9 @@", "oldStart": 21, "oldLines": 9, "newStart": 21, "newLines": 9},
    ]
    assert [line for line in approval["diff"].splitlines() if line.startswith("@@")] == ["@@ -1,6 +1,6 @@", "@@ -21,9 +21,9 @@"]

    # A wrong answer is an error and the approval still waits.
    async def invalid(option: str, hunks: list[str]) -> int:
        return await error_code(client.request("agent/respondApproval", {
            "sessionId": session, "approvalId": approval["approvalId"], "optionId": option, "acceptedHunks": hunks}))

    assert await invalid("allow_once", ["h3"]) == -32602
    assert await invalid("reject_once", ["h1"]) == -32602
    assert (await client.request("agent/getState", {"sessionId": session}))["pendingApprovals"] == [approval]

    assert await client.request("agent/respondApproval", {
        "sessionId": session, "approvalId": approval["approvalId"], "optionId": "allow_once",
        "acceptedHunks": ["h2"], "message": "line 2 stays as it is"}) == {}
    bash = await client.wait_approval(session, 2)
    assert "hunks" not in bash
    assert await error_code(client.request("agent/respondApproval", {
        "sessionId": session, "approvalId": bash["approvalId"], "optionId": "allow_once", "acceptedHunks": []})) == -32602
    await client.respond(session, bash["approvalId"], "reject_once")
    answer = await prompt.result()

    assert (workspace / "f.txt").read_text() == original.replace("line 25\n", "LINE 25\n")
    result = tool_results(answer)["e1"]
    assert result["isError"] is False
    assert result_text(result) == (
        "The user applied 1 of the 2 hunks of this change to f.txt: h2 (@@ -21,9 +21,9 @@). "
        "The user rejected h1 (@@ -1,6 +1,6 @@): line 2 stays as it is. "
        "The file now has only the applied hunks; read it again before changing it further."
    )
    resolved = client.events_of(session, "approval_resolved")[0]
    assert resolved == {"type": "approval_resolved", "approvalId": approval["approvalId"], "toolCallId": "e1",
                        "outcome": "selected", "optionId": "allow_once", "acceptedHunks": ["h2"]}

    # No hunk accepted is a rejection; the model reads the user's reason.
    prompt = client.prompt(session, "and a new file")
    write = await client.wait_approval(session, 3)
    assert [h["header"] for h in write["hunks"]] == ["@@ -0,0 +1 @@"]
    await client.request("agent/respondApproval", {"sessionId": session, "approvalId": write["approvalId"],
                                                   "optionId": "allow_once", "acceptedHunks": [], "message": "not now"})
    rejected = tool_results(await prompt.result())["w1"]
    assert rejected["isError"] is True and result_text(rejected) == "The user rejected this edit: not now"
    assert not (workspace / "g.txt").exists()
