"""When a session compacts, and how much it keeps: the defaults and their overrides.

The threshold (`compactAt`) comes from, first to last: the session's own setting
(`agent/setCompaction`), the model's `compactAt` in models.toml, else the default

    context window - the model's max output tokens (at most 32,000, what a request asks
    for) - a margin of 5% of the window,

so that the request, the reply it asks room for and the estimate's error all fit. The
default never goes below half the window (a model configured with max output = window
would otherwise compact on every call). A setting is a token count or a share of the
window ("80%").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from ..ai.types import CompactAt, Model
from ..protocol.context import CompactAtSetting, CompactionSettings

# What a request reserves for the reply (the openai-completions default of max_tokens).
MAX_OUTPUT_RESERVE = 32_000
MARGIN_SHARE = 0.05
# Recent turns kept verbatim, and the largest tool result the model sees, unless set:
# these, or a quarter of the threshold for small windows.
DEFAULT_KEEP_RECENT_TOKENS = 20_000
DEFAULT_TOOL_RESULT_MAX_TOKENS = 12_000
# The longest summary asked for.
SUMMARY_MAX_TOKENS = 8_192


def output_reserve(model: Model) -> int:
    return min(model.max_tokens, MAX_OUTPUT_RESERVE)


def default_threshold(model: Model) -> int:
    window = model.context_window
    margin = int(window * MARGIN_SHARE)
    return max(window - output_reserve(model) - margin, window // 2)


def tokens_of(setting: CompactAt, model: Model) -> int:
    if isinstance(setting, int):
        return setting
    return int(model.context_window * float(setting.rstrip("%")) / 100)


@dataclass(frozen=True)
class CompactionPolicy:
    """A session's choices; None means "the model's or the default"."""

    auto: bool = True
    compact_at: CompactAt | None = None
    keep_recent_tokens: int | None = None
    tool_result_max_tokens: int | None = None

    def resolve(self, model: Model) -> CompactionSettings:
        source: Literal["session", "model", "default"]
        if self.compact_at is not None:
            threshold, source = tokens_of(self.compact_at, model), "session"
        elif model.compact_at is not None:
            threshold, source = tokens_of(model.compact_at, model), "model"
        else:
            threshold, source = default_threshold(model), "default"
        quarter = max(threshold // 4, 1)
        return CompactionSettings(
            auto=self.auto,
            compact_at=threshold,
            compact_at_source=source,
            keep_recent_tokens=self.keep_recent_tokens or min(DEFAULT_KEEP_RECENT_TOKENS, quarter),
            tool_result_max_tokens=self.tool_result_max_tokens or min(DEFAULT_TOOL_RESULT_MAX_TOKENS, quarter),
        )

    def changed(
        self,
        *,
        auto: bool | None,
        compact_at: CompactAtSetting | None,
        keep_recent_tokens: int | None,
        tool_result_max_tokens: int | None,
    ) -> CompactionPolicy:
        """This policy with the given fields changed (None: unchanged; "default": unset)."""
        policy = self
        if auto is not None:
            policy = replace(policy, auto=auto)
        if compact_at is not None:
            policy = replace(policy, compact_at=None if compact_at == "default" else compact_at)
        if keep_recent_tokens is not None:
            policy = replace(policy, keep_recent_tokens=keep_recent_tokens)
        if tool_result_max_tokens is not None:
            policy = replace(policy, tool_result_max_tokens=tool_result_max_tokens)
        return policy

    def record(self) -> dict[str, object]:
        """As saved in the session file."""
        return {"auto": self.auto, "compactAt": self.compact_at, "keepRecentTokens": self.keep_recent_tokens,
                "toolResultMaxTokens": self.tool_result_max_tokens}

    @classmethod
    def from_record(cls, record: dict[str, object]) -> CompactionPolicy:
        """A saved policy; a value that does not read back is left at its default."""
        def positive(value: object) -> int | None:
            return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

        compact_at = record.get("compactAt")
        if isinstance(compact_at, str):
            compact_at = compact_at if _is_percent(compact_at) else None
        else:
            compact_at = positive(compact_at)
        auto = record.get("auto")
        return cls(auto=auto if isinstance(auto, bool) else True, compact_at=compact_at,
                   keep_recent_tokens=positive(record.get("keepRecentTokens")),
                   tool_result_max_tokens=positive(record.get("toolResultMaxTokens")))


def _is_percent(value: str) -> bool:
    try:
        return value.endswith("%") and 0 < float(value[:-1]) <= 100
    except ValueError:
        return False
