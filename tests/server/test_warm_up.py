"""The first prompt's one-time work is done after `initialize`, before any prompt arrives."""

from __future__ import annotations

import asyncio


async def test_warm_up_runs_to_its_end_without_a_prompt(start_tiller, tmp_path):
    client = await start_tiller()
    sessions_dir = tmp_path / "tiller-data" / "sessions"  # server_env's TILLER_DATA_DIR
    # Its last steps: the sessions directory, then the tool validator's imports.
    for _ in range(600):
        if sessions_dir.is_dir():
            break
        await asyncio.sleep(0.05)
    assert sessions_dir.is_dir(), "the warm-up did not get to preparing the sessions directory"
    assert list(sessions_dir.iterdir()) == []  # prepared, but no session file without a message
    # The server still answers as usual afterwards.
    session = await client.new_session(tools=[])
    assert (await client.request("agent/getState", {"sessionId": session}))["messages"] == []
