"""How each server speaking OpenAI's chat completions differs from OpenAI itself.

Detected from the provider name and the base URL (as pi-ai does), so that a models.toml
provider pointed at, say, api.deepseek.com gets DeepSeek's switches too; a model's
`compat` (models.toml) overrides any of them. Servers nobody recognises get the safe
subset every OpenAI copy accepts: `max_tokens`, a `system` prompt and no `store`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from typing import Literal
from urllib.parse import urlparse

from ..types import Model

OPENAI_HOST = "api.openai.com"


@dataclass(frozen=True)
class Compat:
    supports_store: bool = False
    supports_developer_role: bool = False
    supports_reasoning_effort: bool = True
    supports_usage_in_streaming: bool = True
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    requires_tool_result_name: bool = False
    requires_assistant_after_tool_result: bool = False
    requires_thinking_as_text: bool = False
    requires_mistral_tool_ids: bool = False
    thinking_format: Literal["openai", "openrouter", "zai", "qwen"] = "openai"


# OpenAI itself: `store: false`, the developer role for reasoning models, and
# max_completion_tokens (its reasoning models reject max_tokens).
OPENAI = Compat(supports_store=True, supports_developer_role=True, max_tokens_field="max_completion_tokens")
GENERIC = Compat()
# By provider name, a dotted domain the host ends with, or a word of the host.
KNOWN: dict[str, Compat] = {
    "openrouter": Compat(thinking_format="openrouter"),
    # Mistral rejects unknown roles and fields, wants the tool's name on its result, an
    # assistant turn between tool results and a user turn, and 9-character tool-call ids.
    "mistral": Compat(
        supports_reasoning_effort=False,
        requires_tool_result_name=True,
        requires_assistant_after_tool_result=True,
        requires_thinking_as_text=True,
        requires_mistral_tool_ids=True,
    ),
    # xAI's Grok 4 rejects reasoning_effort; DeepSeek ignores it.
    "xai": Compat(supports_reasoning_effort=False),
    "x.ai": Compat(supports_reasoning_effort=False),
    "deepseek": Compat(supports_reasoning_effort=False),
    "zai": Compat(thinking_format="zai"),
    "z.ai": Compat(thinking_format="zai"),
    "bigmodel.cn": Compat(thinking_format="zai"),
    "zhipuai": Compat(thinking_format="zai"),
    "dashscope": Compat(thinking_format="qwen"),
    "alibaba": Compat(thinking_format="qwen"),
    "cerebras": Compat(max_tokens_field="max_completion_tokens"),
}


def is_openai(model: Model) -> bool:
    return _host(model) == OPENAI_HOST


def compat_for(model: Model) -> Compat:
    host = _host(model)
    if host == OPENAI_HOST:
        detected = OPENAI
    else:
        words = set(re.split(r"[.-]", host))
        detected = KNOWN.get(model.provider) or next(
            (compat for key, compat in KNOWN.items() if _host_matches(host, words, key)), GENERIC
        )
    if model.compat is None:
        return detected
    chosen = {f.name: getattr(model.compat, f.name) for f in fields(Compat)}
    return replace(detected, **{name: value for name, value in chosen.items() if value is not None})


def _host_matches(host: str, words: set[str], key: str) -> bool:
    if "." in key:
        return host == key or host.endswith("." + key)
    return key in words


def _host(model: Model) -> str:
    # No base URL means OpenAI's default, as with the official SDK.
    return (urlparse(model.base_url).hostname or "") if model.base_url else OPENAI_HOST
