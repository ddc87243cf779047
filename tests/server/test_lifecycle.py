"""The LSP lifecycle of `tiller serve`: initialize, shutdown + exit, and stdin EOF."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from .harness import SLOW, SLOW_CHUNKING, reply, text


@pytest.mark.parametrize("capabilities", ["visual-studio-code", "neovim@v0.7"])
async def test_initialize_advertises_the_agent_protocol(start_tiller, capabilities):
    client = await start_tiller(capabilities=capabilities)

    answer = next(m for m in client.received if "serverInfo" in m.get("result", {}))
    result = answer["result"]
    assert result["serverInfo"]["name"] == "tiller"
    tiller = result["capabilities"]["experimental"]["tiller"]
    assert tiller["protocolVersion"] == 1
    assert {"sessions", "steering", "followUp", "abort", "editorContext", "deltaStreaming"} <= set(tiller["features"])
    sync = result["capabilities"]["textDocumentSync"]
    assert sync["openClose"] is True
    assert sync["change"] == types.TextDocumentSyncKind.Incremental.value
    # The typed view an lsprotocol client gets agrees.
    assert client.initialize_result.server_info.name == "tiller"


async def test_initialization_options_set_the_default_model_and_bad_ones_are_ignored(start_tiller):
    client = await start_tiller(initialization_options={"defaultModel": "openai/gpt-4o-mini", "approvalMode": "bogus"})
    assert (await client.request("agent/newSession", {"tools": []}))["model"] == "openai/gpt-4o-mini"
    assert (await client.request("agent/listModels"))["default"] == "openai/gpt-4o-mini"


async def test_shutdown_aborts_a_running_run_and_exit_ends_the_process(start_tiller):
    client = await start_tiller([SLOW], **SLOW_CHUNKING)
    session = await client.new_session(tools=[])
    prompt = client.send("agent/prompt", {"sessionId": session, "text": "write a novel"})
    await client.wait_streaming(session)

    assert await asyncio.wait_for(client.shutdown_async(None), 15) is None

    # The run ended cleanly before shutdown answered: agent_end was sent, and the prompt got
    # an answer (the aborted result) or, at worst, a clean cancellation error.
    assert client.session_events(session)[-1]["event"]["type"] == "agent_end"
    try:
        answer = await prompt.result()
    except JsonRpcException as error:
        assert error.code == -32800
    else:
        assert answer["stopReason"] == "aborted"
    assert prompt.events_before == len(client.events)

    client.exit(None)
    assert await asyncio.wait_for(client.process.wait(), 15) == 0


async def test_stdin_eof_ends_the_process_even_mid_run(start_tiller):
    client = await start_tiller([reply(text("warm-up")), SLOW], **SLOW_CHUNKING)
    session = await client.new_session(tools=[])
    await client.request("agent/prompt", {"sessionId": session, "text": "hi"})
    client.send("agent/prompt", {"sessionId": session, "text": "go on"})
    await client.wait_streaming(session, run=2)

    client.process.stdin.close()  # the editor went away without a word

    # A liveness bound, not a timing assertion: the run is aborted and the process exits.
    assert await asyncio.wait_for(client.process.wait(), 5) == 0
