"""The delta form of message_update: valid against the declared type, and sufficient to
rebuild the message exactly as protocol.md describes."""

from __future__ import annotations

import json

from tiller.agent import agent_loop
from tiller.ai.providers.faux import FauxProvider, faux_message, faux_thinking, faux_tool_call
from tiller.ai.types import TextContent
from tiller.protocol.events import MessageUpdateDelta
from tiller.protocol.wire_events import wire_event

from .agent.helpers import context, loop_config, user
from .support.rebuild import rebuild


async def test_deltas_rebuild_the_final_message_and_match_the_schema():
    faux = FauxProvider(chunk_chars=3)
    faux.set_responses([
        faux_message([
            faux_thinking("Let me think about ünïcode…"),
            TextContent(text="Here is the plan: read the file, then edit it."),
            faux_tool_call("read", {"path": "src/main.py", "limit": 20}, id="call_7"),
        ]),
    ])
    wire = []
    stream = agent_loop([user("go")], context(), loop_config(faux, max_turns=1))
    async for event in stream:
        wire.append(json.loads(json.dumps(wire_event(event).dump())))

    start = next(e for e in wire if e["type"] == "message_start" and e["message"]["role"] == "assistant")
    end = next(e for e in wire if e["type"] == "message_end" and e["message"]["role"] == "assistant")
    updates = [e for e in wire if e["type"] == "message_update"]
    assert updates and all("message" not in e for e in updates)
    for update in updates:
        MessageUpdateDelta.model_validate(update)
    assert rebuild(start["message"], updates)["content"] == end["message"]["content"]
