"""Building tool results: plain text, and the capped listings ls/find/grep return."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..agent.types import AgentToolResult
from ..ai.types import TextContent
from .truncate import DEFAULT_MAX_BYTES, UNLIMITED, append_notices, format_size, truncate_head


def text_result(text: str, details: Any = None) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=text)], details=details)


def capped_listing(
    lines: list[str], notices: list[str], details: dict[str, Any], later_notices: Sequence[str] = ()
) -> AgentToolResult:
    """Join result lines, cap them at 50 KB (the count limit was applied by the caller) and
    append pi's notices, the size notice between `notices` and `later_notices`; `details`
    is omitted when there is nothing to report."""
    truncation = truncate_head("\n".join(lines), max_lines=UNLIMITED)
    if truncation.truncated:
        notices = [*notices, f"{format_size(DEFAULT_MAX_BYTES)} limit reached"]
        details = {**details, "truncation": truncation.as_details()}
    return text_result(append_notices(truncation.content, [*notices, *later_notices]), details or None)


def limited_listing(items: list[str], limit: int, notice: str, details_key: str) -> AgentToolResult:
    """`items` cut to `limit` (the caller read one more to know whether there were more),
    with `notice` and `details[details_key] = limit` when something was left out."""
    if len(items) <= limit:
        return capped_listing(items, [], {})
    return capped_listing(items[:limit], [notice], {details_key: limit})


def positive_int(args: dict[str, Any], key: str, default: int) -> int:
    """A count argument (limit, context): absent means the default, anything below 1 is 1."""
    value = args.get(key)
    return default if value is None else max(1, int(value))
