"""`tiller acp` end to end: the real agent process, the ACP SDK's own client, and a loopback
OpenAI-compatible server streaming real SSE."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block

from tests.server.harness import (
    HOLD,
    GatedSSEServer,
    openai_env,
    openai_text,
    openai_tool_call,
    running_tiller,
    server_env,
)
from tests.support.sse_server import Reply

from .harness import EditorClient, running_acp

MODEL = "openai/test-model"


@pytest.fixture
def llm() -> Iterator[GatedSSEServer]:
    with GatedSSEServer() as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


def acp_env(tmp_path: Path, llm: GatedSSEServer) -> dict[str, str]:
    return server_env(tmp_path, TILLER_MODEL=MODEL, **openai_env(llm))


def said(message: dict) -> str:
    """The text of an OpenAI chat message as tiller sent it (a string or text parts)."""
    content = message["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


async def test_initialize_says_what_tiller_offers(tmp_path, llm, workspace):
    async with running_acp(acp_env(tmp_path, llm), workspace) as acp:
        answer = await acp.start()
    assert answer.protocol_version == 1
    assert answer.agent_info.name == "tiller"
    capabilities = answer.agent_capabilities
    assert capabilities.load_session is True
    assert capabilities.prompt_capabilities.image and capabilities.prompt_capabilities.embedded_context
    assert capabilities.mcp_capabilities.http and capabilities.mcp_capabilities.sse
    assert capabilities.session_capabilities.list is not None
    assert answer.auth_methods == []
    assert answer.field_meta == {"steering": {"supported": True}}


async def test_a_reply_streams_as_message_chunks_and_ends_the_turn(tmp_path, llm, workspace):
    llm.reply(Reply(chunks=openai_text("Hello", ", ", "world", "!")))
    async with running_acp(acp_env(tmp_path, llm), workspace) as acp:
        await acp.start()
        session = await acp.new_session(workspace)
        answer = await acp.prompt(session, "Say hello")
        assert answer.stop_reason == "end_turn"
        assert answer.usage.input_tokens == 10 and answer.usage.output_tokens == 3
        assert acp.editor.text(session) == "Hello, world!"
        kinds = acp.editor.kinds(session)
        assert kinds[-1] == "usage_update"  # every update of the turn came before the answer
        usage = acp.editor.of_kind(session, "usage_update")[-1]
        assert usage.used == 13 and usage.size > 0
    last = llm.requests[0].json["messages"][-1]
    assert (last["role"], said(last)) == ("user", "Say hello")


async def test_a_rejected_write_writes_nothing_and_tells_the_model(tmp_path, llm, workspace):
    (workspace / "notes.txt").write_text("old\n")
    llm.reply(Reply(chunks=openai_tool_call("call_1", "write", {"path": "notes.txt", "content": "new\n"})),
              Reply(chunks=openai_text("Understood.")))
    editor = EditorClient(answer=lambda tool_call: "reject_once")
    async with running_acp(acp_env(tmp_path, llm), workspace, editor) as acp:
        await acp.start()
        session = await acp.new_session(workspace)
        answer = await acp.prompt(session, "Rewrite notes.txt")
    assert answer.stop_reason == "end_turn"
    assert (workspace / "notes.txt").read_text() == "old\n"
    (request,) = editor.permission_requests
    diff = request["tool_call"].content[0]
    assert (diff.type, diff.path, diff.old_text, diff.new_text) == ("diff", str(workspace / "notes.txt"), "old\n", "new\n")
    assert {o.kind for o in request["options"]} == {"allow_once", "allow_always", "reject_once", "reject_always"}
    start = editor.of_kind(session, "tool_call")[0]
    assert (start.tool_call_id, start.kind, start.title) == ("call_1", "edit", "Write notes.txt")
    assert start.locations[0].path == str(workspace / "notes.txt")
    end = editor.of_kind(session, "tool_call_update")[-1]
    assert end.status == "failed" and "rejected" in end.content[0].content.text
    told = llm.requests[1].json["messages"][-1]
    assert told["role"] == "tool" and "The user rejected this edit" in said(told)


async def test_an_allowed_write_lands_on_disk_with_its_diff(tmp_path, llm, workspace):
    llm.reply(Reply(chunks=openai_tool_call("call_1", "write", {"path": "new.txt", "content": "hello\n"})),
              Reply(chunks=openai_text("Written.")))
    async with running_acp(acp_env(tmp_path, llm), workspace) as acp:
        await acp.start()
        session = await acp.new_session(workspace)
        answer = await acp.prompt(session, "Create new.txt")
        assert answer.stop_reason == "end_turn"
        statuses = [u.status for u in acp.editor.of_kind(session, "tool_call_update") if u.status]
        assert statuses == ["in_progress", "completed"]
        done = acp.editor.of_kind(session, "tool_call_update")[-1]
        assert done.content[0].type == "diff" and done.content[0].old_text is None
        assert done.content[0].new_text == "hello\n"
    assert (workspace / "new.txt").read_text() == "hello\n"
    assert acp.editor.permission_requests[0]["tool_call"].content[0].old_text is None  # a new file


async def test_with_client_fs_reads_see_unsaved_buffers_and_writes_go_to_the_editor(tmp_path, llm, workspace):
    path = workspace / "app.py"
    path.write_text("print('on disk')\n")
    llm.reply(Reply(chunks=openai_tool_call("call_1", "read", {"path": "app.py"})),
              Reply(chunks=openai_tool_call("call_2", "edit", {"path": "app.py", "oldText": "unsaved",
                                                                 "newText": "edited"})),
              Reply(chunks=openai_text("Done.")))
    editor = EditorClient(buffers={str(path): "print('unsaved')\n"})
    async with running_acp(acp_env(tmp_path, llm), workspace, editor) as acp:
        await acp.start(fs=True)
        session = await acp.new_session(workspace)
        await acp.prompt(session, "Fix app.py")
    assert "print('unsaved')" in said(llm.requests[1].json["messages"][-1])  # the buffer, not the disk
    assert editor.written == [(str(path), "print('edited')\n")]
    assert path.read_text() == "print('on disk')\n"  # the editor owns saving


async def test_cancel_mid_stream_answers_cancelled_and_keeps_the_conversation(tmp_path, llm, workspace):
    llm.reply(Reply(chunks=openai_text("First answer.")), Reply(chunks=openai_text("Partial", HOLD, " never")))
    env = acp_env(tmp_path, llm)
    async with running_acp(env, workspace) as acp:
        await acp.start()
        session = await acp.new_session(workspace)
        await acp.prompt(session, "one")
        turn = asyncio.ensure_future(acp.prompt(session, "two"))
        await acp.wait_update(session, lambda u: getattr(getattr(u, "content", None), "text", "") == "Partial")
        await acp.connection.cancel(session_id=session)
        answer = await turn
        assert answer.stop_reason == "cancelled"
    saved = (tmp_path / "tiller-data" / "sessions" / f"{session}.jsonl").read_text().splitlines()
    roles = [json.loads(line)["message"]["role"] for line in saved if json.loads(line)["type"] == "message"]
    assert roles == ["user", "assistant", "user", "assistant"]  # nothing completed was lost


async def test_a_pending_permission_is_resolved_by_cancel(tmp_path, llm, workspace):
    llm.reply(Reply(chunks=openai_tool_call("call_1", "bash", {"command": "echo hi > out.txt"})))
    editor = EditorClient(hold_permissions=True)
    async with running_acp(acp_env(tmp_path, llm), workspace, editor) as acp:
        await acp.start()
        session = await acp.new_session(workspace)
        turn = asyncio.ensure_future(acp.prompt(session, "Run it"))
        await acp.wait_incoming(lambda m: m.get("method") == "session/request_permission")
        await acp.connection.cancel(session_id=session)
        answer = await turn
        editor.held_permissions[0].set_result(None)  # as a client must: cancelled
        assert answer.stop_reason == "cancelled"
    assert not (workspace / "out.txt").exists()


async def test_a_saved_session_loads_with_its_history_replayed(tmp_path, llm, workspace):
    llm.reply(Reply(chunks=openai_text("Noted: 42.")), Reply(chunks=openai_text("It was 42.")))
    env = acp_env(tmp_path, llm)
    async with running_acp(env, workspace) as acp:
        await acp.start()
        session = await acp.new_session(workspace)
        await acp.prompt(session, "Remember 42")
    async with running_acp(env, workspace) as acp:
        await acp.start()
        listed = await acp.connection.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [session]
        assert listed.sessions[0].title == "Remember 42"
        loaded = await acp.connection.load_session(cwd=str(workspace), session_id=session, mcp_servers=[])
        assert loaded.modes.current_mode_id == "ask"
        assert acp.editor.text(session, "user_message_chunk") == "Remember 42"
        assert acp.editor.text(session) == "Noted: 42."
        await acp.prompt(session, "What was it?")
    assert [said(m) for m in llm.requests[1].json["messages"][1:]] == ["Remember 42", "Noted: 42.", "What was it?"]


async def test_a_session_started_over_lsp_loads_over_acp(tmp_path, llm, workspace):
    llm.reply(Reply(chunks=openai_text("From the LSP side.")))
    env = acp_env(tmp_path, llm)
    async with running_tiller(env, workspace, "visual-studio-code") as lsp:
        session = await lsp.new_session()
        await lsp.prompt(session, "Hello from VS Code").result()
    async with running_acp(env, workspace) as acp:
        await acp.start()
        await acp.connection.load_session(cwd=str(workspace), session_id=session, mcp_servers=[])
        assert acp.editor.text(session) == "From the LSP side."


async def test_modes_and_config_options_drive_approvals_and_models(tmp_path, llm, workspace):
    llm.reply(Reply(chunks=openai_tool_call("call_1", "bash", {"command": "echo ran > out.txt"})),
              Reply(chunks=openai_text("Ran it.")))
    editor = EditorClient(answer=lambda tool_call: None)  # would cancel: it must not be asked
    async with running_acp(acp_env(tmp_path, llm), workspace, editor) as acp:
        await acp.start()
        created = await acp.connection.new_session(cwd=str(workspace), mcp_servers=[])
        options = {o.id: o for o in created.config_options}
        assert options["model"].current_value == MODEL and options["mode"].current_value == "ask"
        assert [m.id for m in created.modes.available_modes] == ["ask", "acceptEdits", "yolo", "plan"]
        await acp.connection.set_session_mode(session_id=created.session_id, mode_id="yolo")
        changed = await acp.connection.set_config_option(config_id="thought_level", session_id=created.session_id,
                                                         value="high")
        assert {o.id: o.current_value for o in changed.config_options}["thought_level"] == "high"
        await acp.prompt(created.session_id, "Run it")
        with pytest.raises(RequestError) as refused:
            await acp.connection.set_config_option(config_id="model", session_id=created.session_id,
                                                   value="nowhere/none")
        assert refused.value.code == -32602 and "nowhere/none" in str(refused.value)
    assert editor.permission_requests == []
    assert (workspace / "out.txt").read_text() == "ran\n"


async def test_steering_reaches_the_running_turn(tmp_path, llm, workspace):
    llm.reply(Reply(chunks=openai_text("Working", HOLD, " on it.")), Reply(chunks=openai_text("Steered.")))
    async with running_acp(acp_env(tmp_path, llm), workspace) as acp:
        await acp.start()
        session = await acp.new_session(workspace)
        idle = await acp.connection.ext_method("session/steering", {"sessionId": session, "prompt": [
            {"type": "text", "text": "too early"}]})
        assert idle["outcome"] == "failed"
        turn = asyncio.ensure_future(acp.prompt(session, "Start"))
        await acp.wait_update(session, lambda u: getattr(getattr(u, "content", None), "text", "") == "Working")
        steered = await acp.connection.ext_method("session/steering", {"sessionId": session, "prompt": [
            {"type": "text", "text": "Use tabs"}]})
        assert steered == {"outcome": "injected"}
        llm.release()
        assert (await turn).stop_reason == "end_turn"
    last = llm.requests[1].json["messages"][-1]
    assert (last["role"], said(last)) == ("user", "Use tabs")


async def test_bad_input_gets_json_rpc_errors_and_the_agent_keeps_serving(tmp_path, llm, workspace):
    llm.reply(Reply(chunks=openai_text("Still here.")))
    async with running_acp(acp_env(tmp_path, llm), workspace) as acp:
        await acp.start()
        acp.write_raw(b"{not json\n")
        acp.write_raw(b"[1, 2, 3]\n")
        acp.write_raw(b'{"jsonrpc": "1.0", "id": 77, "method": "session/new"}\n')
        acp.write_raw(b'{"jsonrpc": "2.0", "id": 78, "method": 5}\n')
        errors = [await acp.wait_incoming(lambda m, n=n: len([x for x in acp.incoming() if "error" in x]) >= n)
                  for n in range(1, 5)]
        codes = sorted(m["error"]["code"] for m in acp.incoming() if "error" in m)
        assert codes == [-32700, -32600, -32600, -32600], errors
        assert {m.get("id") for m in acp.incoming() if "error" in m} == {None, 77, 78}
        with pytest.raises(RequestError) as unknown:
            await acp.connection.ext_method("nothing/here", {})
        assert unknown.value.code == -32601
        with pytest.raises(RequestError) as missing:
            await acp.connection.prompt(session_id="nope", prompt=[text_block("hi")])
        assert missing.value.code == -32002
        with pytest.raises(RequestError) as relative:
            await acp.connection.new_session(cwd="relative/dir", mcp_servers=[])
        assert relative.value.code == -32602
        session = await acp.new_session(workspace)
        assert (await acp.prompt(session, "hi")).stop_reason == "end_turn"
        assert acp.editor.text(session) == "Still here."


async def test_a_provider_failure_ends_the_turn_with_the_reason(tmp_path, llm, workspace):
    llm.reply(Reply.json(400, {"error": {"message": "model overloaded, try later"}}))
    async with running_acp(acp_env(tmp_path, llm), workspace) as acp:
        await acp.start()
        session = await acp.new_session(workspace)
        answer = await acp.prompt(session, "hi")
        assert answer.stop_reason == "end_turn"
        assert "model overloaded, try later" in acp.editor.text(session)


async def test_payload_dumps_asked_by_the_environment_are_named_by_the_session(tmp_path, llm, workspace):
    dumps = tmp_path / "dumps"
    llm.reply(Reply(chunks=openai_text("Dumped.")))
    async with running_acp(server_env(tmp_path, TILLER_MODEL=MODEL, TILLER_DUMP_PAYLOADS=str(dumps),
                                      **openai_env(llm)), workspace) as acp:
        await acp.start()
        session = await acp.new_session(workspace)
        assert (await acp.prompt(session, "hi")).stop_reason == "end_turn"
    request = json.loads((dumps / f"{session}-001.request.json").read_text())
    assert request["body"] == llm.requests[0].json and request["headers"]["authorization"] == "[redacted]"
    assert "Dumped." in (dumps / f"{session}-001.response.sse").read_text()


class HungEditor(EditorClient):
    """A client that advertises fs/* and then never answers them."""

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> Any:
        await asyncio.Event().wait()

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        self.written.append((path, content))
        await asyncio.Event().wait()


async def test_a_client_that_never_answers_fs_requests_fails_the_write_and_reads_fall_back_to_disk(
        tmp_path, llm, workspace):
    path = workspace / "app.py"
    path.write_text("print('on disk')\n")
    llm.reply(Reply(chunks=openai_tool_call("call_1", "read", {"path": "app.py"})),
              Reply(chunks=openai_tool_call("call_2", "edit", {"path": "app.py", "oldText": "disk",
                                                                 "newText": "edited"})),
              Reply(chunks=openai_text("Done.")))
    editor = HungEditor()
    async with running_acp({**acp_env(tmp_path, llm), "TILLER_EDITOR_TIMEOUT_MS": "300"}, workspace, editor) as acp:
        await acp.start(fs=True)
        session = await acp.new_session(workspace)
        answer = await acp.prompt(session, "Fix app.py")
        assert answer.stop_reason == "end_turn"
        failed = [u for u in editor.of_kind(session, "tool_call_update") if u.status == "failed"]
    assert "print('on disk')" in said(llm.requests[1].json["messages"][-1])  # read from the disk instead
    assert editor.written == [(str(path), "print('on edited')\n")]  # asked, never answered
    assert path.read_text() == "print('on disk')\n"
    (edit,) = failed
    assert "The editor did not answer within 0.3 s while writing" in edit.content[0].content.text
    assert "Read the file again" in said(llm.requests[2].json["messages"][-1])
