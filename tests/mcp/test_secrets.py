"""An MCP server's output is redacted like a built-in tool's: a provider key it returns (in a
result or in an error) is replaced by `[redacted NAME]` before it becomes an event, enters
the model's context or is saved; what it writes to its stderr is redacted before tiller logs it."""

from __future__ import annotations

import json

from tests.server.harness import SECRET, openai_env, openai_text, openai_tool_call, result_text, tool_results
from tests.support.sse_server import Reply, SSEServer

from .conftest import toolbox


async def test_a_provider_key_an_mcp_server_returns_is_redacted_everywhere(start_tiller, workspace, tmp_path):
    # The user handed the server a key (here the provider key tiller itself holds).
    server = toolbox(tmp_path / "toolbox")
    server["env"]["SERVICE_TOKEN"] = SECRET
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "toolbox__getenv", {"name": "SERVICE_TOKEN"})),
                    Reply(chunks=openai_tool_call("c2", "toolbox__getenv", {"name": "SERVICE_TOKEN",
                                                                            "as_error": True})),
                    Reply(chunks=openai_text("Done.")))
        log = tmp_path / "tiller.log"
        client = await start_tiller(env=openai_env(model), args=["--log-file", str(log), "--log-level", "INFO"])
        session = await client.new_session(model="openai/test-model", approvalMode="yolo", mcpServers=[server, {
            # A server that dies at start: the last lines of its stderr go into its state.
            "name": "login", "command": "sh", "args": ["-c", 'echo "cannot log in with $SERVICE_TOKEN" >&2; exit 1'],
            "env": {"SERVICE_TOKEN": SECRET}}])
        answer = await client.prompt(session, "show the token").result()
        listed = await client.request("agent/listTools", {"sessionId": session})
        state = json.dumps(await client.request("agent/getState", {"sessionId": session}))
    results = tool_results(answer)
    assert result_text(results["c1"]) == "SERVICE_TOKEN=[redacted OPENAI_API_KEY]"
    assert results["c2"]["isError"] is True
    assert "SERVICE_TOKEN=[redacted OPENAI_API_KEY]" in result_text(results["c2"])
    saved = (tmp_path / "tiller-data" / "sessions" / f"{session}.jsonl").read_text()
    assert "[redacted OPENAI_API_KEY]" in saved
    context = json.dumps([request.json["messages"] for request in model.requests])
    login = next(server for server in listed["mcpServers"] if server["name"] == "login")
    assert login["state"] == "failed" and "cannot log in with [redacted OPENAI_API_KEY]" in login["message"]
    logged = log.read_text()
    assert "Tool 'getenv' failed" in logged  # the SDK's server logs the error to its stderr
    for text in (saved, state, json.dumps(client.received), context, logged):
        assert SECRET not in text
