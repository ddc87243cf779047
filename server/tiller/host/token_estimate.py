"""Counting tokens without the model's tokenizer.

No tokenizer for the models tiller talks to ships in an installed package, so text is
counted with the usual heuristic: one token per 4 characters, rounded up. Each message adds
4 tokens for its role and framing, an image 1,200 (what providers bill a typical
screenshot), a tool call its name and its arguments as JSON, a tool definition its name,
description and JSON Schema. English prose runs close to 4 characters a token; code and
JSON run nearer 3, so this undercounts them by up to a quarter. That is why the meter
(`context_meter.py`) anchors on the provider's own count of the last request and estimates
only what was added since, and why the compaction threshold keeps a margin.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
IMAGE_TOKENS = 1_200


def text_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def message_tokens(message: Any) -> int:
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return MESSAGE_OVERHEAD + text_tokens(content)
    total = MESSAGE_OVERHEAD
    for block in content or ():
        kind = getattr(block, "type", None)
        if kind == "text":
            total += text_tokens(block.text)
        elif kind == "thinking":
            total += text_tokens(block.thinking)
        elif kind == "toolCall":
            total += text_tokens(block.name) + text_tokens(json.dumps(block.arguments, ensure_ascii=False))
        elif kind == "image":
            total += IMAGE_TOKENS
    return total


def messages_tokens(messages: Iterable[Any]) -> int:
    return sum(message_tokens(message) for message in messages)


def tools_tokens(tools: Iterable[Any]) -> int:
    return sum(
        text_tokens(tool.name) + text_tokens(tool.description) + text_tokens(json.dumps(tool.parameters))
        for tool in tools
    )
