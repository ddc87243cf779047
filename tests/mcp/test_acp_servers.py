"""MCP servers passed over ACP (`session/new` mcpServers): the real `tiller acp`, the ACP
SDK's client, the SDK-built toolbox server over stdio, a loopback OpenAI model."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from acp.schema import EnvVariable, McpServerStdio

from tests.acp.harness import running_acp
from tests.server.harness import openai_env, openai_text, openai_tool_call, server_env
from tests.support.sse_server import Reply, SSEServer

from .conftest import SERVERS


async def test_session_new_mcp_servers_are_offered_and_their_calls_ask_permission(tmp_path: Path):
    workspace, work = tmp_path / "workspace", tmp_path / "toolbox"
    workspace.mkdir()
    work.mkdir()
    server = McpServerStdio(name="Tool Box", command=sys.executable, args=[str(SERVERS / "toolbox.py"), "stdio"],
                            env=[EnvVariable(name="TOOLBOX_DIR", value=str(work))])
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "Tool-Box__add", {"a": 2, "b": "3"})),
                    Reply(chunks=openai_text("It is 5.")))
        env = server_env(tmp_path, TILLER_MODEL="openai/test-model", **openai_env(model))
        async with running_acp(env, workspace) as acp:
            await acp.start()
            created = await asyncio.wait_for(acp.connection.new_session(cwd=str(workspace), mcp_servers=[server]), 30)
            session = str(created.session_id)
            answer = await acp.prompt(session, "add 2 and 3")
            [asked] = acp.editor.permission_requests
            calls = acp.editor.of_kind(session, "tool_call_update")

    assert answer.stop_reason == "end_turn"
    offered = {tool["function"]["name"] for tool in model.requests[0].json["tools"]}
    assert "Tool-Box__add" in offered
    assert asked["tool_call"].title == "Tool-Box: add"
    assert "allow_server" in [option.option_id for option in asked["options"]]
    # The argument the model sent as a string was coerced to the schema's integer.
    tool_message = model.requests[1].json["messages"][-1]
    assert tool_message["role"] == "tool" and "5" in str(tool_message["content"])
    assert any(call.status == "completed" for call in calls)
