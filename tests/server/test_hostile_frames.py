"""No frame kills the server, and every request gets the answer JSON-RPC and LSP prescribe.

Each test speaks raw bytes to the real `tiller serve` (tests/support/raw_lsp.py): frames with
lying or absurd headers, messages that are not requests, requests before `initialize` and
after `shutdown`, params with hostile strings.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.raw_lsp import RawServer, frame

from .harness import server_env

StartRaw = Callable[..., Awaitable[RawServer]]


@pytest.fixture
async def start_raw(tmp_path: Path, workspace: Path) -> AsyncIterator[StartRaw]:
    servers: list[RawServer] = []

    async def start(*args: str, initialize: bool = True, **env: str) -> RawServer:
        server = await RawServer.start(server_env(tmp_path, **env), workspace, *args)
        servers.append(server)
        if initialize:
            assert "result" in await server.initialize(workspace)
        return server

    yield start
    for server in servers:
        await server.close()


def request(msg_id: Any, method: str = "agent/listModels", params: Any = None) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


async def still_serving(server: RawServer) -> None:
    answer = await server.request("agent/listSessions")
    assert isinstance(answer["result"]["sessions"], list)


def error_of(answer: dict[str, Any]) -> tuple[int, str]:
    return answer["error"]["code"], answer["error"]["message"]


# --- frames --------------------------------------------------------------------------------


async def test_an_absurd_content_length_is_answered_and_the_next_frame_read(start_raw):
    server = await start_raw()
    for length in (b"1000000000000", b"99999999999999999999"):  # 10^12, 20 digits
        await server.write(b"Content-Length: " + length + b"\r\n\r\n" + json.dumps(request(7)).encode())
        code, message = error_of(await server.answer(7))
        assert code == -32600 and "over the limit of 67108864" in message
        server.received.clear()
        await still_serving(server)
    assert server.process.returncode is None


async def test_a_frame_over_the_configured_limit_is_refused_to_its_id_and_skipped(start_raw):
    server = await start_raw("--max-frame-bytes", "2000")
    big = request("big", "agent/newSession", {"systemPrompt": "x" * 5000})
    # The frame really is that long; a request right behind it must still be read.
    await server.write(frame(big) + frame(request("after")))
    code, message = error_of(await server.answer("big"))
    assert code == -32600 and "over the limit of 2000" in message and len(message) < 300
    assert "result" in await server.answer("after")
    await still_serving(server)


@pytest.mark.parametrize("bad_header", [
    b"Content-Length: abc\r\n\r\n",
    b"Content-Length: -5\r\n\r\n",
    b"Content-Length:\r\n\r\n",
    b"Content-Length: 5\r\nContent-Length: 7\r\n\r\n",
    b"Content-Length: 12\r\nthis is no header\r\n\r\n",
    b"Content-Length: 12\r\nX-Pad: " + b"y" * 9000 + b"\r\n\r\n",  # a header block that never ends
])
async def test_a_malformed_header_does_not_swallow_the_next_frame(start_raw, bad_header):
    server = await start_raw()
    await server.write(bad_header + json.dumps(request("lost")).encode() + frame(request("next")))
    assert "result" in await server.answer("next")
    await still_serving(server)
    assert all(m.get("id") != "lost" for m in server.received)


async def test_a_length_that_lies_short_or_long_costs_only_its_own_frame(start_raw):
    server = await start_raw()
    body = json.dumps(request("liar")).encode()
    # Claims fewer bytes than it has: the rest is junk before the next header.
    await server.write(b"Content-Length: 10\r\n\r\n" + body + frame(request("second")))
    assert "result" in await server.answer("second")
    # Claims more than it has: the next header shows where it really ended, so both are read,
    # and the server does not wait for bytes that will never come.
    body = json.dumps(request("long liar")).encode()
    await server.write(b"Content-Length: %d\r\n\r\n" % (len(body) + 30000) + body + frame(request("third")))
    assert "result" in await server.answer("third")
    assert "result" in await server.answer("long liar")
    # Only a little more: the next frame's header starts inside the claimed body and ends
    # past it; it is found all the same.
    for extra in (1, 7, 19):
        body = json.dumps(request(f"short by {extra}")).encode()
        await server.write(b"Content-Length: %d\r\n\r\n" % (len(body) + extra) + body + frame(request(f"after {extra}")))
        assert "result" in await server.answer(f"after {extra}")
        assert "result" in await server.answer(f"short by {extra}")
    parse_errors = [m for m in server.answers() if m.get("error", {}).get("code") == -32700]
    assert len(parse_errors) == 1 and parse_errors[0]["id"] is None
    await still_serving(server)


async def test_junk_between_frames_and_other_headers_are_tolerated(start_raw):
    server = await start_raw()
    await server.write(b"\r\n\r\nnot a header at all\r\n\x00\xff\r\n")
    await server.write(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
                       + frame(request("typed")))
    await server.write(b"content-length: %d\r\n\r\n" % len(json.dumps(request("lower"))) + json.dumps(request("lower")).encode())
    assert "result" in await server.answer("typed")
    assert "result" in await server.answer("lower")


# --- messages that are not valid requests ----------------------------------------------------


async def test_invalid_requests_get_minus_32600(start_raw):
    server = await start_raw()
    cases: list[tuple[bytes, Any]] = [  # (body, the id the answer must carry)
        (b"[1, 2, 3]", None),
        (json.dumps([request(1), request(2)]).encode(), None),
        (b"[]", None),
        (b"123", None),
        (b'"a string"', None),
        (b"null", None),
        (b"{}", None),
        (json.dumps({"id": "no-version", "method": "agent/listModels"}).encode(), "no-version"),
        (json.dumps({"jsonrpc": "1.0", "id": "old", "method": "agent/listModels"}).encode(), "old"),
        (json.dumps({"jsonrpc": 2.0, "id": "num", "method": "agent/listModels"}).encode(), "num"),
        (json.dumps({"jsonrpc": "2.0", "id": "m5", "method": 5}).encode(), "m5"),
        (json.dumps({"jsonrpc": "2.0", "id": "mnull", "method": None}).encode(), "mnull"),
        (json.dumps({"jsonrpc": "2.0", "id": "p", "method": "agent/listModels", "params": "x"}).encode(), "p"),
        (json.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "agent/listModels"}).encode(), None),
        (json.dumps({"jsonrpc": "2.0", "id": 1.5, "method": "agent/listModels"}).encode(), None),
        (json.dumps({"jsonrpc": "2.0", "id": True, "method": "agent/listModels"}).encode(), None),
        (json.dumps({"jsonrpc": "2.0", "id": 2**60, "method": "agent/listModels"}).encode(), None),
        (json.dumps({"jsonrpc": "2.0", "id": "x" * 5000, "method": "agent/listModels"}).encode(), None),
        (json.dumps({"jsonrpc": "2.0", "id": "no-method"}).encode(), "no-method"),
        (json.dumps(request("deep", "agent/newSession", {"a": json.loads("[" * 200 + "]" * 200)})).encode(), "deep"),
    ]
    for body, _ in cases:
        await server.write(frame(body))
    await still_serving(server)
    errors = [m for m in server.answers() if "error" in m]
    assert [(m["error"]["code"], m["id"]) for m in errors] == [(-32600, expected) for _, expected in cases]
    assert all(len(m["error"]["message"]) < 300 for m in errors)


async def test_responses_that_do_not_read_are_dropped_never_answered(start_raw):
    server = await start_raw()
    for body in ({"jsonrpc": "2.0", "id": 5, "error": "oops"}, {"jsonrpc": "2.0", "id": 6, "error": {"code": "x"}},
                 {"jsonrpc": "2.0", "id": 7, "result": None, "error": {"code": 1, "message": "both"}}):
        await server.write(frame(json.dumps(body).encode()))
    await still_serving(server)
    assert [m for m in server.answers() if m.get("id") in (5, 6, 7)] == []


async def test_unparseable_bodies_get_minus_32700(start_raw):
    server = await start_raw()
    bodies = [
        b'{"jsonrpc": "2.0", "id": 1, "method": "agent/listModels"',  # cut short
        b'{"jsonrpc": "2.0", "id": 1, "method": "agent/\xc3\x28"}',  # not UTF-8
        b"[" * 100_000 + b"]" * 100_000,  # deeper than any parser's stack
        b'{"jsonrpc": "2.0", "id": 1, "method": "agent/listModels", "params": {"n": ' + b"9" * 5000 + b"}}",
        b'{"jsonrpc": "2.0", "id": 1, "method": "agent/listModels", "params": {"n": NaN}}',
        b"",
    ]
    for body in bodies:
        await server.write(frame(body))
    await still_serving(server)
    errors = [m for m in server.answers() if "error" in m]
    assert [(m["error"]["code"], m["id"]) for m in errors] == [(-32700, None)] * len(bodies)
    assert all(len(m["error"]["message"]) < 300 for m in errors)


async def test_standard_lsp_requests_tiller_does_not_serve_get_minus_32601(start_raw, workspace):
    server = await start_raw()
    where = {"textDocument": {"uri": (workspace / "a.py").as_uri()}, "position": {"line": 0, "character": 0}}
    for method, params in [
        ("textDocument/hover", where),
        ("textDocument/completion", {}),  # params pygls could not even read
        ("textDocument/definition", "not even an object"),
        ("workspace/executeCommand", {"command": "tiller.nothing", "arguments": []}),
        ("workspace/symbol", {"query": ""}),
        ("$/somethingPrivate", {}),
        ("textDocument/didOpen", {}),  # a notification's name, sent as a request
        ("agent/noSuchMethod", {}),
    ]:
        answer = await server.request(method, params)
        if method == "textDocument/definition":
            assert answer["error"]["code"] == -32600  # params that are no object or array
            continue
        assert error_of(answer) == (-32601, f"Method not found: {method}"), method
    answer = await server.request("x" * 100_000)
    assert answer["error"]["code"] == -32600 and len(answer["error"]["message"]) < 300
    await still_serving(server)


# --- lifecycle -------------------------------------------------------------------------------


async def test_requests_before_initialize_get_server_not_initialized(start_raw, tmp_path, workspace):
    server = await start_raw(initialize=False)
    answer = await server.request("agent/listSessions")
    assert answer["error"] == {"code": -32002, "message": "Server not initialized: send initialize first",
                               "data": {"lspError": "ServerNotInitialized"}}
    answer = await server.request("agent/newSession", {})
    assert answer["error"]["code"] == -32002
    # Refusing them left the data directory unfixed: initialize's dataDir still counts.
    data_dir = tmp_path / "chosen-at-initialize"
    await server.initialize(workspace, dataDir=str(data_dir))
    created = await server.request("agent/newSession", {"tools": []})
    session = created["result"]["sessionId"]
    assert (await server.request("agent/prompt", {"sessionId": session, "text": "hi"}))["result"]
    assert (data_dir / "sessions" / f"{session}.jsonl").is_file()
    assert error_of(await server.request("initialize", {"capabilities": {}}))[0] == -32600
    assert await server.shutdown() == 0


async def test_initialize_with_params_pygls_cannot_read_is_minus_32602_and_changes_nothing(start_raw, workspace):
    server = await start_raw(initialize=False)
    answer = await server.request("initialize", {"capabilities": 5, "processId": "nope"})
    assert answer["error"]["code"] == -32602
    assert (await server.request("agent/listSessions"))["error"]["code"] == -32002
    assert "result" in await server.initialize(workspace)
    await still_serving(server)


async def test_after_shutdown_requests_get_minus_32600_and_exit_still_exits(start_raw):
    server = await start_raw()
    assert (await server.request("shutdown"))["result"] is None
    code, message = error_of(await server.request("agent/listSessions"))
    assert code == -32600 and "shutting down" in message
    await server.send({"jsonrpc": "2.0", "method": "exit"})
    assert await server.process.wait() == 0


# --- params --------------------------------------------------------------------------------


async def test_hostile_strings_in_params_are_minus_32602_and_never_echoed(start_raw, workspace):
    server = await start_raw()
    session = (await server.request("agent/newSession", {"tools": []}))["result"]["sessionId"]
    megabyte = "m" * 1_000_000
    cases: list[tuple[str, Any]] = [
        ("agent/getState", {"sessionId": "abc\x00def"}),
        ("agent/getState", {"sessionId": "s" * 20_000}),
        ("agent/getState", {"sessionId": ""}),
        ("agent/getState", {"sessionId": "../../etc/passwd"}),
        ("agent/prompt", {"sessionId": session, "text": "\ud800 lone surrogate"}),
        ("agent/prompt", {"sessionId": session, "text": "hi", "context": [{"uri": "file:///a\udfff"}]}),
        ("agent/prompt", {"sessionId": session, "text": "hi", "context": [{"uri": "file:///a", "range": {
            "start": {"line": -1, "character": 0}, "end": {"line": 10**30, "character": 0}}}]}),
        ("agent/steer", {"sessionId": session, "text": 5}),
        ("agent/newSession", {"model": megabyte}),
        ("agent/newSession", {"model": "openai/\x00gpt"}),
        ("agent/newSession", {"cwd": "relative/dir"}),
        ("agent/newSession", {"cwd": "."}),
        ("agent/newSession", {"cwd": str(workspace) + "\x00/x"}),
        ("agent/newSession", {"cwd": str(workspace / "does-not-exist")}),
        ("agent/newSession", {"cwd": megabyte}),
        ("agent/newSession", {"tools": [megabyte]}),
        ("agent/newSession", {"tools": ["read"] * 1000}),
        ("agent/newSession", {"systemPrompt": {"nested": True}}),
        ("agent/listSessions", {"cwd": "relative"}),
        ("agent/respondApproval", {"sessionId": session, "approvalId": megabyte, "optionId": "allow_once"}),
        ("agent/setModel", {"sessionId": session, "model": ["openai/gpt-4o"]}),
        ("agent/loadSession", {"sessionId": "x\ud83dy"}),
    ]
    for method, params in cases:
        # Written with json.dumps so lone surrogates go out as \\udXXX escapes, as a buggy
        # client would send them.
        answer = await server.request(method, params)
        code, message = error_of(answer)
        assert code == -32602, (method, message[:200])
        assert len(message) < 2100 and "mmmmmmmmmm" not in message, (method, message[:200])
    await still_serving(server)
