"""The client-side rebuild of a streaming assistant message (protocol.md 3.1), shared by
the tests that check the delta wire form."""

from __future__ import annotations

import json
from typing import Any


def rebuild(start: dict[str, Any], updates: list[dict[str, Any]]) -> dict[str, Any]:
    """A client's rebuild of a streaming assistant message (protocol.md 3.1)."""
    message = json.loads(json.dumps(start))
    content: list[Any] = message["content"]
    tool_json: dict[int, str] = {}
    for update in updates:
        delta = update["assistantMessageEvent"]
        kind, i = delta["type"], delta["contentIndex"]
        while len(content) <= i:
            content.append(None)
        if kind == "text_start":
            content[i] = {"type": "text", "text": ""}
        elif kind == "text_delta":
            content[i]["text"] += delta["delta"]
        elif kind == "thinking_start":
            content[i] = {"type": "thinking", "thinking": ""}
        elif kind == "thinking_delta":
            content[i]["thinking"] += delta["delta"]
        elif kind == "toolcall_start":
            content[i] = {"type": "toolCall", "id": delta["id"], "name": delta["toolName"], "arguments": {}}
            tool_json[i] = ""
        elif kind == "toolcall_delta":
            tool_json[i] += delta["delta"]
        elif kind == "toolcall_end":
            # Arguments from the deltas alone (not toolcall_end's copy): proof that none was lost.
            content[i]["arguments"] = json.loads(tool_json[i])
        # text_end / thinking_end repeat the block's text: a rebuild must not need them.
    return message
