"""Oversize tool results cut before the model sees them.

A tool result whose text passes the session's `toolResultMaxTokens` is cut in what the
model is sent, with a notice at the cut saying what was left out and how to get it. The
session file and the client's events keep the full output. Most tools keep the start of
their output; `bash` keeps its start and its end, where errors and summaries usually are.
"""

from __future__ import annotations

from typing import Any

from ..ai.types import TextContent, ToolResultMessage
from .token_estimate import CHARS_PER_TOKEN, text_tokens

# bash: the share of the budget given to the end of the output.
_TAIL_SHARE = {"bash": 0.5}


def limit_tool_result(message: ToolResultMessage, max_tokens: int, args: dict[str, Any] | None) -> ToolResultMessage:
    """`message` if it fits in `max_tokens`, else a copy whose text is cut with a notice."""
    texts = [block.text for block in message.content if isinstance(block, TextContent)]
    full = "".join(texts)
    if text_tokens(full) <= max_tokens:
        return message
    budget = max_tokens * CHARS_PER_TOKEN
    tail_budget = int(budget * _TAIL_SHARE.get(message.tool_name, 0.0))
    head = _whole_lines(full[: budget - tail_budget], keep="start")
    tail = _whole_lines(full[len(full) - tail_budget :], keep="end") if tail_budget else ""
    total_lines = full.count("\n") + 1
    head_lines = head.count("\n")
    omitted = full[len(head) : len(full) - len(tail)]
    notice = (
        f"[{len(omitted):,} characters ({omitted.count(chr(10)) + 1:,} of {total_lines:,} lines) of this output were "
        f"cut here to fit the model's context (limit about {max_tokens:,} tokens). The full output is kept in the "
        f"session file. To see the rest, {_hint(message.tool_name, args, head_lines)}.]"
    )
    head = head.rstrip("\n")
    cut = f"{head}\n\n{notice}\n\n{tail}" if tail else f"{head}\n\n{notice}"
    others = [block for block in message.content if not isinstance(block, TextContent)]
    return message.model_copy(update={"content": [TextContent(text=cut), *others]})


def _whole_lines(text: str, *, keep: str) -> str:
    """`text` without the partial line at its cut edge, unless that would drop most of it."""
    if keep == "start":
        end = text.rfind("\n")
        return text[: end + 1] if end >= len(text) // 2 else text
    start = text.find("\n")
    return text[start + 1 :] if 0 <= start < len(text) // 2 else text


def _hint(tool_name: str, args: dict[str, Any] | None, lines_shown: int) -> str:
    if tool_name == "read":
        offset = args.get("offset") if args else None
        first = offset if isinstance(offset, int) and offset > 0 else 1
        return f"read the file again with offset={first + lines_shown} (and a smaller limit)"
    if tool_name == "bash":
        return ("run the command again with its output narrowed (grep, head, tail, sed -n 'A,Bp'), "
                "or redirect it to a file and read that in parts")
    if tool_name in ("grep", "find", "ls"):
        return "narrow the pattern or the path, or lower the limit"
    return "ask the tool for a smaller part of it"
