"""A rewind holds its session: a prompt, a compaction or another rewind sent while it runs
is refused as busy (a run started mid-rewind would have its conversation replaced under it)."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException

from .harness import one_call_per_turn, reply, text, tool_call

SESSION_BUSY = -32002


async def test_a_prompt_sent_during_a_rewind_is_refused_and_the_rewind_completes(start_tiller, workspace):
    (workspace / "a.txt").write_text("one\n")
    client = await start_tiller([
        *one_call_per_turn(tool_call("bash", {"command": "echo two > a.txt"}, id="b1")),
        reply(text("After the rewind.")),
    ])
    session = await client.new_session(approvalMode="yolo")
    await client.prompt(session, "change it").result()
    (checkpoint,) = (await client.request("agent/listCheckpoints", {"sessionId": session}))["checkpoints"]

    # Sent together: the rewind is taken first and holds the session from its first step.
    rewinding = client.send("agent/rewind", {"sessionId": session, "checkpointId": checkpoint["checkpointId"],
                                             "restore": "both"})
    too_soon = client.prompt(session, "now")
    compacting = client.send("agent/compact", {"sessionId": session})
    for refused in (too_soon, compacting):
        with pytest.raises(JsonRpcException) as busy:
            await refused.result()
        assert busy.value.code == SESSION_BUSY and "busy rewinding" in str(busy.value)
    done = await rewinding.result()
    assert done["messageCount"] == 0 and (workspace / "a.txt").read_text() == "one\n"

    answer = await client.prompt(session, "again").result()  # free again
    assert answer["stopReason"] == "stop"
    state = await client.request("agent/getState", {"sessionId": session})
    assert [m["role"] for m in state["messages"]] == ["user", "assistant"]
