"""The hardening of `tiller serve` holds for `tiller acp` too: the same message checks
(protocol/jsonrpc.py), bounded error messages, keys kept out of the environment block the
agent's commands can read."""

from __future__ import annotations

import json

import pytest
from acp import RequestError

from tests.server.harness import SECRET, openai_text, openai_tool_call
from tests.support.sse_server import Reply

from .harness import running_acp
from .test_acp import acp_env, llm, workspace  # noqa: F401  (fixtures)


async def test_malformed_lines_and_hostile_params_get_documented_errors(tmp_path, llm, workspace):  # noqa: F811
    async with running_acp(acp_env(tmp_path, llm), workspace) as acp:
        await acp.start()
        lines = [
            (b"[" + json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/new"}).encode() + b"]", -32600, None),
            (b'{"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {"n": ' + b"9" * 5000 + b"}}", -32700,
             None),
            (b'{"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {"n": NaN}}', -32700, None),
            (b"[" * 100_000 + b"]" * 100_000, -32700, None),
            (json.dumps({"jsonrpc": "2.0", "id": 4, "method": "session/list",
                         "params": {"a": json.loads("[" * 100 + "]" * 100)}}).encode(), -32600, 4),
            (json.dumps({"jsonrpc": "2.0", "id": 5, "method": "session/prompt",
                         "params": {"sessionId": "x", "prompt": [{"type": "text", "text": "\ud800"}]}}).encode(),
             -32602, 5),
            (json.dumps({"jsonrpc": "2.0", "id": 2**60, "method": "session/list"}).encode(), -32600, None),
        ]
        for line, _, _ in lines:
            acp.write_raw(line + b"\n")
        expected = sorted((code, str(msg_id)) for _, code, msg_id in lines)
        await acp.wait_incoming(lambda m: len([x for x in acp.incoming() if "error" in x]) >= len(lines))
        errors = [m for m in acp.incoming() if "error" in m]
        assert sorted((m["error"]["code"], str(m["id"])) for m in errors) == expected
        assert all(len(m["error"]["message"]) < 300 for m in errors)

        for cwd in ("relative", "/tmp/\x00nul", "/" + "d" * 5000):
            with pytest.raises(RequestError) as refused:
                await acp.connection.new_session(cwd=cwd, mcp_servers=[])
            assert refused.value.code == -32602 and len(str(refused.value)) < 2200
        with pytest.raises(RequestError) as unknown:
            await acp.connection.load_session(session_id="s" * 20_000, cwd=str(workspace), mcp_servers=[])
        assert len(str(unknown.value)) < 2200
        llm.reply(Reply(chunks=openai_text("Still here.")))
        session = await acp.new_session(workspace)
        assert (await acp.prompt(session, "hi")).stop_reason == "end_turn"


async def test_bash_under_acp_cannot_read_keys_from_its_parent(tmp_path, llm, workspace):  # noqa: F811
    command = "tr '\\0' '\\n' < /proc/$PPID/environ | grep -v '^$' | rev > parent-env.txt"
    llm.reply(Reply(chunks=openai_tool_call("call_1", "bash", {"command": command})),
              Reply(chunks=openai_text("Done.")))
    async with running_acp(acp_env(tmp_path, llm), workspace) as acp:
        await acp.start()
        session = await acp.new_session(workspace)
        assert (await acp.prompt(session, "look")).stop_reason == "end_turn"
    leaked = (workspace / "parent-env.txt").read_text()
    assert "=HTAP" in leaked  # it did read the block (PATH=, backwards)
    assert SECRET[::-1] not in leaked
