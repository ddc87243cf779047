"""MCP servers passed with `agent/newSession {mcpServers}` over LSP: a real MCP server (the
SDK's, tests/mcp/servers/toolbox.py) run over stdio, a model on a loopback OpenAI SSE server
that calls its tools, approvals through the editor."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from tests.server.harness import (
    editor_capabilities,
    openai_env,
    openai_text,
    openai_tool_call,
    result_text,
    tool_results,
)
from tests.support.sse_server import Reply, SSEServer

from .conftest import SERVERS, toolbox

APPROVALS = editor_capabilities(approvals=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_servers_tool_is_offered_approved_called_and_the_server_stops_with_the_session(
        start_tiller, workspace, tmp_path):
    work = tmp_path / "toolbox"
    with SSEServer() as model:
        model.reply(
            Reply(chunks=openai_tool_call("call_1", "toolbox__echo", {"text": "hello"})),
            Reply(chunks=openai_tool_call("call_2", "toolbox__pid", {})),
            Reply(chunks=openai_text("Done.")),
        )
        client = await start_tiller(env=openai_env(model), capabilities=APPROVALS)
        session = await client.new_session(model="openai/test-model", mcpServers=[toolbox(work)])
        prompt = client.prompt(session, "echo hello")
        approval = await client.wait_approval(session)
        assert approval["kind"] == "mcp" and approval["server"] == "toolbox"
        assert approval["toolName"] == "toolbox__echo" and approval["arguments"] == {"text": "hello"}
        assert "allow_server" in [option["optionId"] for option in approval["options"]]
        await client.respond(session, approval["approvalId"], "allow_server")
        answer = await prompt.result()

        listed = await client.request("agent/listTools", {"sessionId": session})

    # The model saw the server's tool, named so it cannot collide, with the server's schema.
    offered = {tool["function"]["name"]: tool["function"] for tool in model.requests[0].json["tools"]}
    assert {"read", "bash", "edit", "toolbox__echo", "toolbox__crash"} <= set(offered)
    assert offered["toolbox__echo"]["parameters"]["properties"]["text"]["type"] == "string"
    results = tool_results(answer)
    assert result_text(results["call_1"]) == "echo: hello" and results["call_1"]["isError"] is False
    # allow_server: the second tool of the same server ran without asking again.
    assert len(client.events_of(session, "approval_request")) == 1
    server_pid = int(result_text(results["call_2"]))
    assert _alive(server_pid)
    assert "echo: hello" in json.dumps(model.requests[1].json["messages"][-1])

    [server] = listed["mcpServers"]
    assert server["name"] == "toolbox" and server["state"] == "ready" and server["source"] == "session"
    assert {"echo", "count", "hang"} <= {tool["tool"] for tool in server["tools"]}
    echo = next(tool for tool in listed["tools"] if tool["name"] == "toolbox__echo")
    assert echo["server"] == "toolbox" and echo["readOnly"] is True
    assert "server" not in next(tool for tool in listed["tools"] if tool["name"] == "read")
    built_in = {tool["name"]: tool["readOnly"] for tool in listed["tools"] if "server" not in tool}
    assert built_in == {"read": True, "grep": True, "find": True, "ls": True,
                        "bash": False, "edit": False, "write": False}

    await client.request("agent/closeSession", {"sessionId": session})
    assert not _alive(server_pid) or _reaped_soon(server_pid)


def _reaped_soon(pid: int) -> bool:
    import time

    for _ in range(100):
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _server_state(name: str, state: str):
    def match(params) -> bool:
        event = params["event"]
        return event["type"] == "mcp_server_state" and event["server"]["name"] == name \
            and event["server"]["state"] == state
    return match


async def test_a_rejected_call_never_reaches_the_server_and_the_model_hears_why(start_tiller, workspace, tmp_path):
    work = tmp_path / "toolbox"
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("call_1", "toolbox__note", {"name": "n.txt", "text": "x"})),
                    Reply(chunks=openai_text("OK.")))
        client = await start_tiller(env=openai_env(model), capabilities=APPROVALS)
        session = await client.new_session(model="openai/test-model", mcpServers=[toolbox(work)])
        prompt = client.prompt(session, "write a note")
        approval = await client.wait_approval(session)
        await client.respond(session, approval["approvalId"], "reject_once", "not now")
        answer = await prompt.result()
    result = tool_results(answer)["call_1"]
    assert result["isError"] is True and result_text(result) == "The user rejected this tool call: not now"
    assert not (work / "n.txt").exists()


async def test_plan_mode_runs_only_tools_the_server_marks_read_only_and_never_asks(start_tiller, workspace, tmp_path):
    work = tmp_path / "toolbox"
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "toolbox__echo", {"text": "look"})),
                    Reply(chunks=openai_tool_call("c2", "toolbox__note", {"name": "n.txt", "text": "x"})),
                    Reply(chunks=openai_tool_call("c3", "toolbox__fail", {"reason": "unmarked"})),
                    Reply(chunks=openai_text("Planned.")))
        client = await start_tiller(env=openai_env(model), capabilities=APPROVALS)
        session = await client.new_session(model="openai/test-model", approvalMode="plan",
                                           mcpServers=[toolbox(work)])
        answer = await client.prompt(session, "plan a note").result()
    results = tool_results(answer)
    # readOnlyHint: true runs without asking.
    assert result_text(results["c1"]) == "echo: look" and results["c1"]["isError"] is False
    # readOnlyHint: false, and no annotation at all, are refused and never reach the server.
    for call in ("c2", "c3"):
        assert results[call]["isError"] is True
        assert "the session is in plan mode" in result_text(results[call])
        assert "not marked read-only" in result_text(results[call])
    assert "toolbox__note" in result_text(results["c2"])
    assert not (work / "n.txt").exists()
    assert client.events_of(session, "approval_request") == []


async def test_plan_mode_does_not_run_a_read_only_tool_the_user_always_rejected(start_tiller, workspace, tmp_path):
    work = tmp_path / "toolbox"
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "toolbox__pid", {})),
                    Reply(chunks=openai_text("Asked.")),
                    Reply(chunks=openai_tool_call("c2", "toolbox__pid", {})),
                    Reply(chunks=openai_text("Planned.")))
        client = await start_tiller(env=openai_env(model), capabilities=APPROVALS)
        session = await client.new_session(model="openai/test-model", mcpServers=[toolbox(work)])
        prompt = client.prompt(session, "which pid?")
        approval = await client.wait_approval(session)
        await client.respond(session, approval["approvalId"], "reject_always")
        await prompt.result()
        await client.request("agent/setApprovalMode", {"sessionId": session, "mode": "plan"})
        answer = await client.prompt(session, "plan it").result()
    result = tool_results(answer)["c2"]
    # toolbox__pid is marked read-only, which plan mode lets through: the user's "always
    # reject" still wins.
    assert result["isError"] is True and "always rejected" in result_text(result)
    assert len(client.events_of(session, "approval_request")) == 1


async def test_progress_streams_as_tool_updates_and_content_maps_into_the_result(start_tiller, workspace, tmp_path):
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "toolbox__count", {"to": 3})),
                    Reply(chunks=openai_tool_call("c2", "toolbox__picture", {})),
                    Reply(chunks=openai_tool_call("c3", "toolbox__document", {})),
                    Reply(chunks=openai_tool_call("c4", "toolbox__fail", {"reason": "no disk"})),
                    Reply(chunks=openai_text("Done.")))
        client = await start_tiller(env=openai_env(model))
        session = await client.new_session(model="openai/test-model", approvalMode="yolo",
                                           mcpServers=[toolbox(tmp_path / "toolbox")])
        answer = await client.prompt(session, "count").result()
    updates = [result_text(e["partialResult"]) for e in client.events_of(session, "tool_execution_update")
               if e["toolCallId"] == "c1"]
    assert updates == ["step 1 (1/3)", "step 2 (2/3)", "step 3 (3/3)"]
    results = tool_results(answer)
    assert result_text(results["c1"]) == "counted to 3"
    assert [block["type"] for block in results["c2"]["content"]] == ["text", "image"]
    assert results["c2"]["content"][1]["mimeType"] == "image/png"
    assert "[resource <memo://one>]\nthe memo's text" in result_text(results["c3"])
    assert "https://example.com/manual" in result_text(results["c3"])
    assert results["c4"]["isError"] is True and "cannot do it: no disk" in result_text(results["c4"])


async def test_a_server_that_cannot_start_leaves_the_session_working(start_tiller, workspace, tmp_path):
    broken = {"name": "broken", "command": sys.executable, "args": [str(SERVERS / "broken.py")]}
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "broken__garbage", {})), Reply(chunks=openai_text("Hi.")))
        client = await start_tiller(env=openai_env(model))
        session = await client.new_session(model="openai/test-model", approvalMode="yolo", mcpServers=[
            {"name": "nope", "command": str(tmp_path / "no-such-server")}, broken])
        answer = await client.prompt(session, "hello").result()
        listed = await client.request("agent/listTools", {"sessionId": session})
    servers = {server["name"]: server for server in listed["mcpServers"]}
    assert servers["nope"]["state"] == "failed" and "command not found" in servers["nope"]["message"]
    # A tool whose schema is invalid is left out and said so; the others are offered.
    assert servers["broken"]["state"] == "ready" and "bad_schema" in servers["broken"]["message"]
    offered = {tool["function"]["name"] for tool in model.requests[0].json["tools"]}
    assert {"read", "bash", "broken__ping", "broken__garbage"} <= offered and "broken__bad_schema" not in offered
    garbage = tool_results(answer)["c1"]
    # The SDK checks a result against the tool's output schema: the model hears what was wrong.
    assert garbage["isError"] is True and "Invalid structured content returned by tool garbage" in result_text(garbage)
    assert answer["stopReason"] == "stop"


async def test_a_crash_mid_call_fails_the_call_and_the_server_is_started_again(start_tiller, workspace, tmp_path):
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "toolbox__crash", {})), Reply(chunks=openai_text("Hm.")))
        client = await start_tiller(env=openai_env(model))
        session = await client.new_session(model="openai/test-model", approvalMode="yolo",
                                           mcpServers=[toolbox(tmp_path / "toolbox")])
        answer = await client.prompt(session, "crash").result()
        restarting = await client.wait_event(_server_state("toolbox", "restarting"))
        ready = _server_state("toolbox", "ready")
        await client.wait_event(lambda p: p["seq"] > restarting["seq"] and ready(p))
    crash = tool_results(answer)["c1"]
    assert crash["isError"] is True and "stopped while running crash" in result_text(crash)
    assert len(list((tmp_path / "toolbox").glob("started-*"))) == 2


async def test_a_server_that_closes_its_stderr_is_not_taken_for_dead(start_tiller, workspace, tmp_path):
    work = tmp_path / "toolbox"
    work.mkdir()
    # A wrapper that throws the server's stderr away: only its stdout tells whether it lives.
    quiet = {"name": "quiet", "command": "sh", "env": {"TOOLBOX_DIR": str(work)},
             "args": ["-c", f"exec {sys.executable} {SERVERS / 'toolbox.py'} stdio 2>/dev/null"]}
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "quiet__pid", {})), Reply(chunks=openai_text("One.")),
                    Reply(chunks=openai_tool_call("c2", "quiet__pid", {})), Reply(chunks=openai_text("Two.")))
        client = await start_tiller(env=openai_env(model))
        session = await client.new_session(model="openai/test-model", approvalMode="yolo", mcpServers=[quiet])
        first = tool_results(await client.prompt(session, "pid").result())["c1"]
        await asyncio.sleep(1.5)  # a server taken for dead would be restarted after 1 s
        second = tool_results(await client.prompt(session, "pid again").result())["c2"]
        listed = await client.request("agent/listTools", {"sessionId": session})
    assert first["isError"] is False and result_text(first) == result_text(second)
    assert len(list(work.glob("started-*"))) == 1
    assert [s["state"] for s in listed["mcpServers"]] == ["ready"]
    assert not [e for e in client.events_of(session, "mcp_server_state") if e["server"]["state"] != "ready"]


async def test_garbage_on_a_servers_stdout_is_summarised_in_the_log_not_logged_per_line(
        start_tiller, workspace, tmp_path):
    work = tmp_path / "toolbox"
    work.mkdir()
    noisy = {"name": "noisy", "command": "sh", "env": {"TOOLBOX_DIR": str(work)},
             "args": ["-c", f"seq 1 3000 | sed 's/^/not json /'; exec {sys.executable} {SERVERS / 'toolbox.py'} stdio"]}
    log = tmp_path / "tiller.log"
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "noisy__echo", {"text": "hi"})), Reply(chunks=openai_text("Ok.")))
        client = await start_tiller(env=openai_env(model), args=["--log-file", str(log), "--log-level", "INFO"])
        session = await client.new_session(model="openai/test-model", approvalMode="yolo", mcpServers=[noisy])
        echo = tool_results(await client.prompt(session, "echo").result())["c1"]
        await client.request("agent/closeSession", {"sessionId": session})
    assert result_text(echo) == "echo: hi"
    logged = log.read_text()
    assert "Traceback" not in logged
    garbage = [line for line in logged.splitlines() if "not JSON-RPC" in line]
    assert 3 <= len(garbage) <= 5, "\n".join(garbage[:10])
    assert "(3000 in all)" in garbage[-1]


async def test_agent_abort_cancels_a_hung_call_on_the_server(start_tiller, workspace, tmp_path):
    work = tmp_path / "toolbox"
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "toolbox__hang", {})))
        client = await start_tiller(env=openai_env(model))
        session = await client.new_session(model="openai/test-model", approvalMode="yolo", mcpServers=[toolbox(work)])
        prompt = client.prompt(session, "hang")
        await client.wait_event(lambda p: p["event"]["type"] == "tool_execution_start")
        while not (work / "hanging").exists():
            await asyncio.sleep(0.05)
        assert await client.request("agent/abort", {"sessionId": session}) == {}
        answer = await prompt.result()
        for _ in range(100):
            if (work / "cancelled").exists():
                break
            await asyncio.sleep(0.05)
    assert answer["stopReason"] == "aborted"
    assert (work / "cancelled").exists(), "the server was not told the call was cancelled"


async def test_a_call_silent_past_the_servers_timeout_fails_and_is_cancelled(start_tiller, workspace, tmp_path):
    work = tmp_path / "toolbox"
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "toolbox__hang", {})), Reply(chunks=openai_text("Hm.")))
        client = await start_tiller(env=openai_env(model))
        session = await client.new_session(model="openai/test-model", approvalMode="yolo",
                                           mcpServers=[toolbox(work, timeoutMs=700)])
        answer = await client.prompt(session, "hang").result()
        for _ in range(100):
            if (work / "cancelled").exists():
                break
            await asyncio.sleep(0.05)
    result = tool_results(answer)["c1"]
    assert result["isError"] is True and "did not answer hang within 0.7 s" in result_text(result)
    assert (work / "cancelled").exists()
    assert answer["stopReason"] == "stop"


async def test_a_loaded_session_gets_the_servers_the_client_passes_again(start_tiller, workspace, tmp_path):
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_text("One.")), Reply(chunks=openai_text("Two.")))
        client = await start_tiller(env=openai_env(model))
        session = await client.new_session(model="openai/test-model")
        await client.prompt(session, "one").result()
        await client.request("agent/closeSession", {"sessionId": session})
        await client.request("agent/loadSession", {"sessionId": session,
                                                    "mcpServers": [toolbox(tmp_path / "toolbox")]})
        await client.prompt(session, "two").result()
    assert not any("__" in tool["function"]["name"] for tool in model.requests[0].json["tools"])
    assert "toolbox__echo" in {tool["function"]["name"] for tool in model.requests[1].json["tools"]}


async def test_command_rules_name_mcp_tools_by_their_model_visible_name(start_tiller, workspace, tmp_path):
    work = tmp_path / "toolbox"
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "toolbox__echo", {"text": "hi"})),
                    Reply(chunks=openai_tool_call("c2", "toolbox__note", {"name": "n.txt", "text": "x"})),
                    Reply(chunks=openai_tool_call("c3", "toolbox__pid", {})),
                    Reply(chunks=openai_text("Done.")),
                    Reply(chunks=openai_tool_call("c4", "toolbox__note", {"name": "y.txt", "text": "y"})),
                    Reply(chunks=openai_text("Refused again.")))
        client = await start_tiller(env=openai_env(model), capabilities=APPROVALS)
        session = await client.new_session(model="openai/test-model", mcpServers=[toolbox(work)])
        await client.request("agent/setRules", {"sessionId": session, "scope": "session", "rules": {
            "allow": ["toolbox__echo"], "ask": ["toolbox__p*"], "deny": ["toolbox__note"], "readOnly": []}})
        prompt = client.prompt(session, "use the toolbox")
        asked = await client.wait_approval(session)
        # An ask rule asks, and offers no "always allow" it would override anyway.
        assert asked["toolCallId"] == "c3" and "asks about it" in asked["reason"]
        assert [o["kind"] for o in asked["options"]] == ["allow_once", "reject_once", "reject_always"]
        await client.respond(session, asked["approvalId"], "allow_once")
        answer = await prompt.result()
        # Deny rules hold in yolo too.
        await client.request("agent/setApprovalMode", {"sessionId": session, "mode": "yolo"})
        again = await client.prompt(session, "note it").result()
    results = tool_results(answer)
    assert result_text(results["c1"]) == "echo: hi"  # allowed by its rule: not asked
    assert results["c3"]["isError"] is False
    for denied in (results["c2"], tool_results(again)["c4"]):
        assert denied["isError"] is True and "denies it" in result_text(denied)
        assert "`toolbox__note`" in result_text(denied)
    assert not (work / "n.txt").exists() and not (work / "y.txt").exists()
    assert len(client.events_of(session, "approval_request")) == 1
