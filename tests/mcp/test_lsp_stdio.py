"""MCP servers passed with `agent/newSession {mcpServers}` over LSP: a real MCP server (the
SDK's, tests/mcp/servers/toolbox.py) run over stdio, a model on a loopback OpenAI SSE server
that calls its tools, approvals through the editor."""

from __future__ import annotations

import json
import os

from tests.server.harness import (
    editor_capabilities,
    openai_env,
    openai_text,
    openai_tool_call,
    result_text,
    tool_results,
)
from tests.support.sse_server import Reply, SSEServer

from .conftest import toolbox

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

    await client.request("agent/closeSession", {"sessionId": session})
    assert not _alive(server_pid) or _reaped_soon(server_pid)


def _reaped_soon(pid: int) -> bool:
    import time

    for _ in range(100):
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False
