"""Other ways to reach a server: streamable HTTP (the toolbox served by the SDK on
127.0.0.1, with a request header) and a third-party server from PyPI (mcp-server-time) run
offline over stdio."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.server.harness import openai_env, openai_text, openai_tool_call, result_text, tool_results
from tests.support.sse_server import Reply, SSEServer

from .conftest import SERVERS


@pytest.fixture
async def http_toolbox(tmp_path: Path) -> AsyncIterator[str]:
    """The toolbox over streamable HTTP: its URL."""
    port_file = tmp_path / "port"
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SERVERS / "toolbox.py"), "http", str(port_file),
        env={**os.environ, "TOOLBOX_DIR": str(tmp_path)}, stderr=asyncio.subprocess.DEVNULL)
    try:
        for _ in range(400):
            if port_file.exists():
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # the port is bound before uvicorn serves it: give it a moment
        yield f"http://127.0.0.1:{port_file.read_text()}/mcp"
    finally:
        process.kill()
        await process.wait()


async def test_a_streamable_http_server_gets_its_headers_and_serves_calls(start_tiller, workspace, http_toolbox):
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "web__header", {"name": "X-Team"})),
                    Reply(chunks=openai_text("Done.")))
        client = await start_tiller(env=openai_env(model))
        session = await client.new_session(model="openai/test-model", approvalMode="yolo", mcpServers=[
            {"name": "web", "url": http_toolbox, "headers": {"X-Team": "tiller-tests"}}])
        answer = await client.prompt(session, "which team?").result()
        listed = await client.request("agent/listTools", {"sessionId": session})
    assert result_text(tool_results(answer)["c1"]) == "tiller-tests"
    [server] = listed["mcpServers"]
    assert server["transport"] == "http" and server["state"] == "ready"


async def test_a_third_party_server_from_pypi_runs_offline(start_tiller, workspace):
    with SSEServer() as model:
        model.reply(Reply(chunks=openai_tool_call("c1", "time__get_current_time", {"timezone": "UTC"})),
                    Reply(chunks=openai_text("Done.")))
        client = await start_tiller(env=openai_env(model))
        session = await client.new_session(model="openai/test-model", approvalMode="yolo", mcpServers=[
            {"name": "time", "command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}])
        answer = await client.prompt(session, "what time is it?").result()
    result = tool_results(answer)["c1"]
    assert result["isError"] is False and '"timezone": "UTC"' in result_text(result)
