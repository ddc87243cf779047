"""The protocol client and the renderer, in process (no server)."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from tiller.chat.client import FrameDecoder, FramingError, JsonRpcConnection, RpcError, encode_frame
from tiller.chat.render import JsonRenderer, TerminalRenderer


def frames(*messages: dict) -> bytes:
    return b"".join(encode_frame(m) for m in messages)


def test_decoder_handles_any_chunking():
    messages = [{"n": i, "text": "é" * i} for i in range(20)]
    data = frames(*messages)
    for size in (1, 2, 3, 7, 64, len(data)):
        decoder = FrameDecoder()
        bodies = []
        for start in range(0, len(data), size):
            bodies += decoder.feed(data[start : start + size])
        assert [json.loads(b) for b in bodies] == messages
        assert decoder.pending == 0


def test_decoder_reads_lsp_headers_case_insensitively():
    body = b'{"ok":true}'
    data = b"content-length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n%s" % (
        len(body), body)
    assert FrameDecoder().feed(data) == [body]
    with pytest.raises(FramingError):
        FrameDecoder().feed(b"X-Nothing: 1\r\n\r\n{}")


class _Sink:
    """Enough of an asyncio.StreamWriter for the connection."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data

    def is_closing(self) -> bool:
        return False

    async def drain(self) -> None:
        pass


async def test_connection_matches_answers_routes_notifications_and_refuses_server_requests():
    reader = asyncio.StreamReader()
    sink = _Sink()
    seen: list[tuple[str, object]] = []
    connection = JsonRpcConnection(reader, sink, lambda method, params: seen.append((method, params)))  # type: ignore[arg-type]
    connection.start()

    ok = asyncio.ensure_future(connection.request("agent/getState", {"sessionId": "s"}))
    bad = asyncio.ensure_future(connection.request("agent/prompt", {}))
    await asyncio.sleep(0)
    reader.feed_data(frames(
        {"jsonrpc": "2.0", "method": "agent/event", "params": {"seq": 1}},
        {"jsonrpc": "2.0", "id": "srv-1", "method": "workspace/applyEdit", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32002, "message": "busy"}},
        {"jsonrpc": "2.0", "id": 1, "result": {"seq": 1}},
    ))
    assert await ok == {"seq": 1}
    with pytest.raises(RpcError) as error:
        await bad
    assert error.value.code == -32002 and str(error.value) == "busy"
    assert seen == [("agent/event", {"seq": 1})]

    await asyncio.sleep(0)  # the answer to the server's request is written by a task
    written = [json.loads(b) for b in FrameDecoder().feed(bytes(sink.data))]
    assert [m.get("method") for m in written[:2]] == ["agent/getState", "agent/prompt"]
    assert written[2] == {"jsonrpc": "2.0", "id": "srv-1",
                          "error": {"code": -32601, "message": "Method Not Found: workspace/applyEdit"}}

    pending = asyncio.ensure_future(connection.request("agent/abort", {"sessionId": "s"}))
    await asyncio.sleep(0)
    reader.feed_eof()
    with pytest.raises(ConnectionError):
        await pending
    assert connection.closed


def _event(event: dict) -> dict:
    return {"sessionId": "s", "seq": 1, "event": event}


def test_renderer_shows_a_successful_tool_result_by_its_first_line():
    out, err = io.StringIO(), io.StringIO()
    ui = TerminalRenderer(out, err)
    ui.event(_event({"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "delta": "Reading"}}))
    ui.event(_event({"type": "tool_execution_start", "toolCallId": "c1", "toolName": "read", "args": {"path": "ü.py"}}))
    ui.event(_event({"type": "tool_execution_end", "toolCallId": "c1", "toolName": "read", "isError": False,
                     "result": {"content": [{"type": "text", "text": "line one\nline two"}]}}))
    ui.event(_event({"type": "tool_execution_start", "toolCallId": "c2", "toolName": "bash",
                     "args": {"command": "x" * 500}}))
    ui.run_ended({"stopReason": "stop", "usage": {"input": 3, "output": 4, "cost": {"total": 0.0125}},
                  "newMessages": [{"role": "assistant", "provider": "p", "model": "m"}]}, "fallback/model")
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["Reading", '→ read {"path": "ü.py"}', "✓ line one"]
    assert lines[3].startswith("→ bash {") and lines[3].endswith("…") and len(lines[3]) == 160
    assert err.getvalue() == "[p/m: 3 in, 4 out, $0.0125]\n"


def test_json_renderer_prints_params_only():
    out, err = io.StringIO(), io.StringIO()
    ui = JsonRenderer(out, err)
    params = _event({"type": "agent_start"})
    ui.event(params)
    ui.run_ended({"stopReason": "stop", "usage": {}}, "m")
    assert out.getvalue() == json.dumps(params) + "\n" and err.getvalue() == ""
