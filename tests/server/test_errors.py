"""Protocol errors get the documented codes, and nothing a client or the server's own code
writes can break the stream."""

from __future__ import annotations

import textwrap

import pytest
from pygls.exceptions import JsonRpcException

from .harness import SLOW, SLOW_CHUNKING, assert_gap_free, reply, text


async def error_of(client, method: str, params=None) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as raised:
        await client.request(method, params)
    return raised.value


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def test_bad_requests_get_the_documented_error_codes(start_tiller):
    client = await start_tiller([SLOW], **SLOW_CHUNKING)
    session = await client.new_session(tools=[])

    # -32602 names every bad field, by its wire name.
    error = await error_of(client, "agent/prompt", {"sessionId": session, "streamingBehavior": "later"})
    assert error.code == -32602
    assert "text: Field required" in error.message and "streamingBehavior: Input should be" in error.message
    error = await error_of(client, "agent/newSession", {"thinkingLevel": "extreme"})
    assert error.code == -32602 and "thinkingLevel: Input should be" in error.message
    error = await error_of(client, "agent/getState", {})
    assert error.code == -32602 and "sessionId: Field required" in error.message
    assert (await error_of(client, "agent/getState", [session])).code == -32602
    error = await error_of(client, "agent/newSession", {"tools": ["no_such_tool"]})
    assert error.code == -32602 and "no_such_tool" in error.message

    error = await error_of(client, "agent/noSuchMethod", {})
    assert error.code == -32601 and "agent/noSuchMethod" in error.message

    for method in ("agent/prompt", "agent/getState", "agent/abort", "agent/closeSession"):
        error = await error_of(client, method, {"sessionId": "nope", "text": "hi"})
        assert (error.code, error.message) == (-32001, "Unknown session: nope")

    # gpt-9 would do: any id goes under a provider whose key is set (OPENAI_API_KEY is).
    for bad_model in ("anthropic/claude-9", "nope/gpt-9", "no-slash"):
        error = await error_of(client, "agent/newSession", {"model": bad_model})
        assert error.code == -32003 and bad_model in error.message
    assert (await error_of(client, "agent/setModel", {"sessionId": session, "model": "faux/nope"})).code == -32003

    prompt = client.send("agent/prompt", {"sessionId": session, "text": "long job"})
    await client.wait_streaming(session)
    error = await error_of(client, "agent/prompt", {"sessionId": session, "text": "me too"})
    assert error.code == -32002 and "streamingBehavior" in error.message
    await client.request("agent/abort", {"sessionId": session})
    assert (await prompt.result())["stopReason"] == "aborted"
    # None of it was fatal.
    assert (await client.request("agent/listSessions"))["sessions"][0]["sessionId"] == session


async def test_an_empty_array_is_no_params_where_every_param_is_optional(start_tiller, workspace):
    # Neovim's Lua encodes an empty table as `[]`.
    client = await start_tiller()
    opened = await client.request("agent/newSession", [])
    assert opened["cwd"] == str(workspace) and opened["approvalMode"] == "ask"
    assert (await client.request("agent/listSessions", []))["sessions"][0]["sessionId"] == opened["sessionId"]
    assert (await client.request("agent/listModels", []))["default"] == "faux/faux-1"
    # Not where a param is required, and not a non-empty array.
    error = await error_of(client, "agent/getState", [])
    assert error.code == -32602 and "expected an object, got an array" in error.message
    assert (await error_of(client, "agent/newSession", ["openai/gpt-4.1"])).code == -32602


async def test_garbage_and_malformed_frames_do_not_kill_the_server(start_tiller):
    client = await start_tiller()

    def answer_to(msg_id):
        return client.wait_message(lambda m: m.get("id") == msg_id and "method" not in m)

    def is_parse_error(message):
        return message.get("id") is None and message.get("error", {}).get("code") == -32700

    client.write_raw(b"garbage that is not a header\r\n\xff\xfe\r\n")
    client.write_raw(frame(b'{"jsonrpc": "2.0", "id": 90, "method": "agent/listSessions"'))  # cut short
    parse_error = await client.wait_message(is_parse_error)
    assert parse_error["error"]["message"].startswith("Parse error")
    client.write_raw(frame(b'{"jsonrpc": "2.0", "id": 91, "method": "agent/\xc3\x28"}'))  # not UTF-8
    # Not JSON-RPC requests at all: logged and skipped.
    for body in (b"[1, 2, 3]", b'"just a string"', b"{}", b'{"jsonrpc": "2.0", "id": 92}'):
        client.write_raw(frame(body))
    # JSON-RPC lets a request omit params, as vscode-jsonrpc and Neovim do for agent/listModels.
    client.write_raw(frame(b'{"jsonrpc": "2.0", "id": "no-params", "method": "agent/listSessions"}'))
    assert (await answer_to("no-params"))["result"] == {"sessions": []}
    # Unknown members of a request are ignored.
    client.write_raw(frame(b'{"jsonrpc": "2.0", "id": 93, "method": "agent/listModels", "params": {}, "x": 1}'))
    assert (await answer_to(93))["result"]["default"] == "faux/faux-1"

    assert len([m for m in client.received if is_parse_error(m)]) == 2
    assert await client.request("agent/listSessions") == {"sessions": []}
    assert await client.new_session(tools=[])


SITECUSTOMIZE = textwrap.dedent('''
    """Make the server's own code print while it serves (test_errors.py)."""
    import os
    import subprocess
    import sys

    import tiller.host.event_channel as channel
    import tiller.host.session as session

    _deliver = channel.EventChannel._deliver

    def deliver(self, event):
        with open(os.environ["HOOK_LOG"], "a") as log:  # proof that the hook ran
            log.write(event.type + "\\n")
        print("stray print() before", event.type)
        sys.stdout.write("stray sys.stdout.write\\n")
        sys.stdout.flush()
        _deliver(self, event)
        print("stray print() after", end="", flush=True)

    channel.EventChannel._deliver = deliver

    _new_session = session.Session.__init__

    def init(self, *args, **kwargs):
        _new_session(self, *args, **kwargs)
        # What a native library or a child process a tool starts would do: write to fd 1.
        os.write(1, b"stray write to file descriptor 1\\n")
        subprocess.run(["echo", "stray output of a child process"], check=True)
        # A child that reads its stdin must not swallow the client's messages.
        subprocess.run(["cat"], stdout=subprocess.DEVNULL, timeout=10, check=True)

    session.Session.__init__ = init
''')


async def test_prints_and_child_output_in_the_server_do_not_corrupt_the_stream(start_tiller, tmp_path):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
    hook_log = tmp_path / "hook.log"
    client = await start_tiller([reply(text("Still parseable."))],
                                env={"PYTHONPATH": str(hooks), "HOOK_LOG": str(hook_log)})

    session = await client.new_session(tools=[])
    answer = await client.request("agent/prompt", {"sessionId": session, "text": "hi"})
    assert answer["newMessages"][-1]["content"] == [{"type": "text", "text": "Still parseable."}]
    events = client.session_events(session)
    assert_gap_free(events)
    assert events[-1]["event"]["type"] == "agent_end"
    assert hook_log.read_text().split() == [n["event"]["type"] for n in events]  # it printed each time
    assert client.wire.stray == []  # no byte fell outside an LSP frame
