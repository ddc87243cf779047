"""The issue's done criterion: a 300-turn session against a model with an 8k context window
keeps working without the user doing anything, the user sees when and why it compacted, and
every message is on disk."""

from __future__ import annotations

import json

from tests.support.sse_server import SSEServer

from .windowed_model import WindowedModel, windowed_config

TURNS = 300


async def test_300_turns_in_an_8k_window_go_on_by_themselves(start_tiller, tmp_path, workspace):
    model = WindowedModel(window=8192)
    (workspace / "plan.txt").write_text("".join(f"step {i}: do the thing\n" for i in range(60)))
    with SSEServer(responder=model) as server:
        ref = windowed_config(tmp_path / "xdg-config", server.url, window=8192, max_tokens=1024)
        client = await start_tiller(env={"TILLER_MODEL": ref})
        session = await client.new_session(approvalMode="yolo")
        for turn in range(1, TURNS + 1):
            text = f"Turn {turn}: what is next in the plan?" + (" Please read plan.txt" if turn % 10 == 0 else "")
            answer = await client.prompt(session, text).result()
            assert answer["stopReason"] == "stop", f"turn {turn}: {answer.get('errorMessage')}"
        state = await client.request("agent/getState", {"sessionId": session})

    # The model never had to refuse a request: compaction kept each one inside the window.
    assert [call.tokens for call in model.calls if call.refused] == []
    assert max(call.tokens for call in model.conversation_calls) <= 8192 - 1024

    # The user saw each compaction happen, and why: the threshold, with the figures.
    starts = client.events_of(session, "compaction_start")
    ends = client.events_of(session, "compaction_end")
    assert len(starts) == len(ends) >= 10
    compact_at = state["compaction"]["compactAt"]
    for start, end in zip(starts, ends, strict=True):
        assert start["reason"] == end["reason"] == "threshold"
        assert start["tokensBefore"] > compact_at
        assert end["summary"].startswith("## Goal") and end["tokensAfter"] < end["tokensBefore"]
    # The meter after every turn, and the latest figures in getState.
    assert len(client.events_of(session, "context_usage")) >= len(client.events_of(session, "turn_end"))
    usage = state["contextUsage"]
    assert usage["contextWindow"] == 8192 and usage["compactAt"] == compact_at and usage["tokens"] <= compact_at
    assert state["usage"]["input"] == sum(call.tokens for call in model.calls)
    assert [c["id"] for c in state["compactions"]] == [e["compaction"]["id"] for e in ends]

    # Nothing was lost from disk: every message the client saw end is in the session file, in
    # order, next to one record per compaction.
    lines = [json.loads(line) for line in (tmp_path / "tiller-data" / "sessions" / f"{session}.jsonl").open()]
    saved = [line["message"] for line in lines if line["type"] == "message"]
    assert saved == [event["message"] for event in client.events_of(session, "message_end")]
    assert saved == state["messages"]
    prompts = [m["content"][0]["text"] for m in saved if m["role"] == "user"]
    assert [p.split(":")[0] for p in prompts] == [f"Turn {n}" for n in range(1, TURNS + 1)]
    assert [line["id"] for line in lines if line["type"] == "compaction"] == [c["id"] for c in state["compactions"]]
