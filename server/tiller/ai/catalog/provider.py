"""One provider in the catalogue: where its models are served, how to authenticate there,
which request settings apply, and the models it lists."""

from __future__ import annotations

import dataclasses
import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlparse

from ..options import LOCAL_TIMEOUT_MS, StreamOptions
from ..types import Model, OpenAICompat

# What a model the catalogue has never heard of is assumed to offer (a model released
# yesterday still works today). These numbers only size requests and the context meter.
GENERIC_CONTEXT_WINDOW = 128_000
GENERIC_MAX_TOKENS = 16_384
# Servers on this machine usually run small context windows.
LOCAL_CONTEXT_WINDOW = 32_768
LOCAL_MAX_TOKENS = 8_192


@dataclass
class RequestSettings:
    """Per-provider or per-model request settings from models.toml; None leaves the
    `StreamOptions` default."""

    max_retries: int | None = None
    retry_base_delay_ms: int | None = None
    max_retry_delay_ms: int | None = None
    timeout_ms: int | None = None
    idle_timeout_ms: int | None = None

    def over(self, base: RequestSettings) -> RequestSettings:
        """These settings where set, `base` elsewhere."""
        mine = dataclasses.asdict(self)
        return RequestSettings(**{k: v if v is not None else getattr(base, k) for k, v in mine.items()})

    def options(self) -> StreamOptions:
        return StreamOptions(**{k: v for k, v in dataclasses.asdict(self).items() if v is not None})


@dataclass
class Provider:
    """Where a family of models is served and how to authenticate there."""

    name: str
    api: str  # which stream function speaks to it (see registry.py)
    base_url: str = ""
    # Environment variables holding the key, first non-empty wins.
    api_key_env: tuple[str, ...] = ()
    # False for servers that need no key (local servers, keyless user entries); a key that
    # is set is still sent.
    key_required: bool = True
    # A server on this machine (Ollama, LM Studio, vLLM, llama.cpp): ready only while it
    # answers a probe, which also tells which models it serves.
    local: bool = False
    display_name: str = ""
    headers: dict[str, str] | None = None
    compat: OpenAICompat | None = None
    # Accept ids the catalogue does not list even without a key: the user pointed this
    # provider at a server of their choosing.
    any_model: bool = False
    # Serves exactly the models it lists, key or not (tiller's offline and scripted models).
    closed: bool = False
    settings: RequestSettings = field(default_factory=RequestSettings)
    model_settings: dict[str, RequestSettings] = field(default_factory=dict)
    models: dict[str, Model] = field(default_factory=dict)

    def add(self, model: Model) -> None:
        self.models[model.id] = model

    def generic_model(self, model_id: str) -> Model:
        """A model the catalogue does not list, with the documented defaults."""
        local = self.local or is_loopback(self.base_url)
        return Model(
            id=model_id,
            name=model_id,
            api=self.api,
            provider=self.name,
            base_url=self.base_url,
            context_window=LOCAL_CONTEXT_WINDOW if local else GENERIC_CONTEXT_WINDOW,
            max_tokens=LOCAL_MAX_TOKENS if local else GENERIC_MAX_TOKENS,
            headers=self.headers,
            compat=self.compat,
        )

    def stream_options(self, model_id: str) -> StreamOptions:
        specific = self.model_settings.get(model_id, RequestSettings())
        settings = specific.over(self.settings)
        if self.local or is_loopback(self.base_url):
            settings = settings.over(RequestSettings(timeout_ms=LOCAL_TIMEOUT_MS))
        return settings.options()


def is_loopback(base_url: str) -> bool:
    host = urlparse(base_url).hostname
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
