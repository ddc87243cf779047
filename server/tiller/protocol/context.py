"""The protocol's words for a long session: how full the context is, the compactions that
keep it under the model's window, and the project instructions a session follows.

The events go out with the others (`WireEvent` in events.py); the method params and results
are in methods.py's table.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..ai.types import CompactAt, Usage, WireModel

# threshold: the next request would pass the session's `compactAt`; overflow: the provider
# refused a request as too long; manual: `agent/compact`.
CompactionReason = Literal["threshold", "overflow", "manual"]


class ContextUsage(WireModel):
    """How many tokens the next request will carry, against the model's context window."""

    tokens: int
    context_window: int
    percent: float
    # The session compacts automatically when `tokens` would pass this (if `auto`).
    compact_at: int
    # "provider": the provider's reported input of the last call plus an estimate of what
    # was added since; "estimate": no usable report yet (new session, just compacted).
    source: Literal["provider", "estimate"]


class ContextUsageEvent(ContextUsage):
    """After each turn, and after a compaction or its undo."""

    type: Literal["context_usage"] = "context_usage"
    # What the session has been billed so far (every call, compaction summaries included).
    usage: Usage


class CompactionInfo(WireModel):
    """One compaction: `messages[:firstKeptIndex]` of the session are replaced, in what the
    model sees, by `summary`; the session file (and `agent/getState`) keep every message."""

    id: str
    reason: CompactionReason
    summary: str
    first_kept_index: int
    tokens_before: int
    tokens_after: int
    timestamp: int
    instructions: str | None = None
    # What writing the summary cost.
    usage: Usage = Field(default_factory=Usage)


class CompactionStartEvent(WireModel):
    type: Literal["compaction_start"] = "compaction_start"
    reason: CompactionReason
    tokens_before: int


class CompactionEndEvent(WireModel):
    """The compaction is done (`compaction` set), failed (`errorMessage`) or was aborted;
    when it did not complete nothing changed."""

    type: Literal["compaction_end"] = "compaction_end"
    reason: CompactionReason
    tokens_before: int
    tokens_after: int | None = None
    summary: str | None = None
    compaction: CompactionInfo | None = None
    aborted: bool = False
    error_message: str | None = None
    # overflow: the request the provider refused is sent again, compacted.
    will_retry: bool = False


class CompactionUndoneEvent(WireModel):
    type: Literal["compaction_undone"] = "compaction_undone"
    compaction_id: str


class CompactionSettings(WireModel):
    """A session's compaction settings, as they apply to its current model."""

    auto: bool
    # The threshold in tokens, and what it was derived from: the session's own setting,
    # the model's `compactAt` in models.toml, or the default (window - max output - margin).
    compact_at: int
    compact_at_source: Literal["session", "model", "default"]
    # Recent turns kept verbatim by a compaction, in tokens.
    keep_recent_tokens: int
    # A tool result longer than this is cut (with a notice) in what the model sees.
    tool_result_max_tokens: int


class InstructionFile(WireModel):
    path: str
    # user: tiller's config directory; project: from the workspace root down to the cwd.
    scope: Literal["user", "project"]


class InstructionsEvent(WireModel):
    """The instruction files the session's system prompt holds: at session start, and at
    the prompt after one changed, appeared or went away."""

    type: Literal["instructions_loaded"] = "instructions_loaded"
    files: list[InstructionFile]


CompactAtSetting = CompactAt | Literal["default"]
