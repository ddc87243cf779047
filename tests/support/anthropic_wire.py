"""Anthropic Messages streams as its API sends them: every event named twice (the `event:`
line and `type` in the JSON), content blocks numbered by Anthropic's own `index`."""

from __future__ import annotations

import json
from typing import Any


def event(name: str, data: dict[str, Any]) -> bytes:
    """One Anthropic SSE event: the `event:` line, then the JSON (whose type repeats it)."""
    return f"event: {name}\ndata: {json.dumps({'type': name, **data}, ensure_ascii=False)}\n\n".encode()


def message_start(input_tokens: int = 10) -> bytes:
    return event("message_start", {"message": {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }})


def block_start(index: int, block: dict[str, Any]) -> bytes:
    return event("content_block_start", {"index": index, "content_block": block})


def delta(index: int, body: dict[str, Any]) -> bytes:
    return event("content_block_delta", {"index": index, "delta": body})


def block_stop(index: int) -> bytes:
    return event("content_block_stop", {"index": index})


def message_end(stop_reason: str, output_tokens: int = 5) -> bytes:
    return event("message_delta", {"delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                   "usage": {"output_tokens": output_tokens}}) + event("message_stop", {})


def text_block(index: int, text: str) -> list[bytes]:
    return [block_start(index, {"type": "text", "text": ""}), delta(index, {"type": "text_delta", "text": text}),
            block_stop(index)]
