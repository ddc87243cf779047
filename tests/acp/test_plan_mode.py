"""Plan mode over ACP: a session mode and a config option; in it, changes are refused without a
permission request and read-only commands run."""

from __future__ import annotations

from pathlib import Path

from tests.server.harness import openai_env, openai_text, openai_tool_call, server_env
from tests.support.sse_server import Reply, SSEServer

from .harness import running_acp


async def test_plan_is_a_session_mode_and_refuses_changes_without_asking(tmp_path: Path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("old\n")
    with SSEServer() as llm:
        llm.reply(
            Reply(chunks=openai_tool_call("b1", "bash", {"command": "cat notes.txt | wc -l"})),
            Reply(chunks=openai_tool_call("w1", "write", {"path": "notes.txt", "content": "new\n"})),
            Reply(chunks=openai_text("Plan: rewrite notes.txt.")),
        )
        env = server_env(tmp_path, TILLER_MODEL="openai/test-model", **openai_env(llm))
        async with running_acp(env, workspace) as acp:
            await acp.start()
            created = await acp.connection.new_session(cwd=str(workspace), mcp_servers=[])
            session = created.session_id
            assert [m.id for m in created.modes.available_modes] == ["ask", "acceptEdits", "yolo", "plan"]
            mode_option = next(o for o in created.config_options if o.id == "mode")
            assert "plan" in [o.value for o in mode_option.options]

            await acp.connection.set_session_mode(session_id=session, mode_id="plan")
            answer = await acp.prompt(session, "Plan a rewrite of notes.txt")
            assert answer.stop_reason == "end_turn"
            assert acp.editor.permission_requests == []
            ends = [u for u in acp.editor.of_kind(session, "tool_call_update") if u.status in ("completed", "failed")]
            assert [u.status for u in ends] == ["completed", "failed"]
            assert "plan mode" in ends[1].content[0].content.text

            options = await acp.connection.set_config_option(config_id="mode", session_id=session, value="ask")
            mode_now = next(o for o in options.config_options if o.id == "mode")
            assert mode_now.current_value == "ask"
    assert (workspace / "notes.txt").read_text() == "old\n"
    system = llm.requests[0].json["messages"][0]
    assert "# Plan mode" in (system["content"] if isinstance(system["content"], str) else str(system["content"]))
