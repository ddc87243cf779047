"""How many tokens the next request will carry.

The provider's own count is the best there is: the last successful call reported how many
input tokens it was sent (input + cache read + cache write) and how many it wrote, and the
reply is now part of the context. Only what was added after it (tool results, a new prompt)
is estimated (token_estimate.py). A report is trusted only if the request it counted had the
shape the next one will have: not if a compaction, an undo or a change of the tool-result
limit came in between (`trusted_from`). Without such a report everything is estimated:
system prompt, tool definitions and messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from ..ai.types import AssistantMessage
from .token_estimate import messages_tokens, text_tokens, tools_tokens

Source = Literal["provider", "estimate"]


def count_request(
    view: Sequence[Any], *, system_prompt: str, tools: Sequence[Any], trusted_from: int
) -> tuple[int, Source]:
    """Tokens of a request made of `view` (the messages as the model will see them); the
    provider's reports are read only from `view[trusted_from:]`."""
    for index in range(len(view) - 1, max(trusted_from, 0) - 1, -1):
        message = view[index]
        if isinstance(message, AssistantMessage) and message.stop_reason not in ("error", "aborted"):
            usage = message.usage
            sent = usage.input + usage.cache_read + usage.cache_write
            if sent > 0:
                return sent + usage.output + messages_tokens(view[index + 1 :]), "provider"
    return estimate_request(view, system_prompt=system_prompt, tools=tools), "estimate"


def estimate_request(view: Sequence[Any], *, system_prompt: str, tools: Sequence[Any]) -> int:
    return text_tokens(system_prompt) + tools_tokens(tools) + messages_tokens(view)
