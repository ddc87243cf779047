"""The model catalogue: which models tiller knows, where they live, and which one to use.

A model is named `provider/id` (`openai/gpt-4.1`, `ollama/qwen2.5-coder:7b`,
`openrouter/anthropic/claude-sonnet-4.5`: everything after the first slash is the id).

Three layers, later ones winning:

1. Built-in providers and models (prices in dollars per million tokens).
2. A user TOML file: `$TILLER_CONFIG`, else `$XDG_CONFIG_HOME/tiller/models.toml`, else
   `~/.config/tiller/models.toml`. It may set the default model, change a built-in
   provider and add providers and models::

       default = "vllm/Qwen/Qwen2.5-Coder-32B-Instruct"

       [providers.vllm]                # a new provider...
       baseUrl = "http://10.0.0.5:8000/v1"
       api = "openai-completions"      # the default
       apiKeyEnv = "VLLM_API_KEY"      # optional: no key needed without it

       [[providers.vllm.models]]       # ...and its models (camelCase like the wire)
       id = "Qwen/Qwen2.5-Coder-32B-Instruct"
       contextWindow = 32768
       maxTokens = 8192
       cost = { input = 0.0, output = 0.0 }

3. Environment: `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` move those providers elsewhere,
   `TILLER_MODEL` picks the default model.

A provider whose address the user chose (a base-URL variable, `baseUrl` in the file, a
provider defined in the file) or that serves whatever is installed locally (Ollama)
accepts *any* model id: Ollama, vLLM and llama.cpp serve ids no catalogue can list, so
an unknown id becomes a generic `Model` with that id sent as-is.

API keys are read from the environment on demand (`api_key`) and never stored on a
`Model`, so nothing that is serialised or logged can carry one.
"""

from __future__ import annotations

import builtins
import ipaddress
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import ValidationError

from .types import Model, ModelCost

LOCAL_MODEL_REF = "local/smollm2-135m"

# What a model the catalogue has never heard of is assumed to offer. Deliberately modest:
# such ids are usually local servers, and these numbers only size requests and budgets.
GENERIC_CONTEXT_WINDOW = 32_768
GENERIC_MAX_TOKENS = 8_192


class ModelError(ValueError):
    """A model reference that cannot be resolved."""


class ModelConfigError(ValueError):
    """A models.toml that cannot be used; the message names the file and the entry."""


@dataclass
class Provider:
    """Where a family of models is served and how to authenticate there."""

    name: str
    api: str  # which stream function speaks to it (see registry.py)
    base_url: str = ""
    # Environment variables holding the key, first non-empty wins. Empty: no key needed.
    api_key_env: tuple[str, ...] = ()
    headers: dict[str, str] | None = None
    any_model: bool = False  # accept ids the catalogue does not list (see module doc)
    models: dict[str, Model] = field(default_factory=dict)

    def add(self, model: Model) -> None:
        self.models[model.id] = model

    def generic_model(self, model_id: str) -> Model:
        return Model(
            id=model_id,
            name=model_id,
            api=self.api,
            provider=self.name,
            base_url=self.base_url,
            context_window=GENERIC_CONTEXT_WINDOW,
            max_tokens=GENERIC_MAX_TOKENS,
            headers=self.headers,
        )


# --- built-ins ------------------------------------------------------------------------


def _model(
    provider: Provider,
    model_id: str,
    name: str,
    *,
    price: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0),
    context_window: int,
    max_tokens: int,
    reasoning: bool = False,
    images: bool = False,
) -> None:
    """Add one built-in model; `price` is (input, output, cache read, cache write) per Mtok."""
    cost_in, cost_out, cache_read, cache_write = price
    provider.add(
        Model(
            id=model_id,
            name=name,
            api=provider.api,
            provider=provider.name,
            base_url=provider.base_url,
            reasoning=reasoning,
            input=["text", "image"] if images else ["text"],
            cost=ModelCost(input=cost_in, output=cost_out, cache_read=cache_read, cache_write=cache_write),
            context_window=context_window,
            max_tokens=max_tokens,
        )
    )


def _builtin_providers() -> dict[str, Provider]:
    """A fresh copy of the built-in table (callers mutate it while applying overrides)."""
    openai = Provider("openai", "openai-completions", "https://api.openai.com/v1", ("OPENAI_API_KEY",))
    _model(openai, "gpt-4o-mini", "GPT-4o mini", price=(0.15, 0.60, 0.075, 0.0),
           context_window=128_000, max_tokens=16_384, images=True)
    _model(openai, "gpt-4o", "GPT-4o", price=(2.50, 10.0, 1.25, 0.0),
           context_window=128_000, max_tokens=16_384, images=True)
    _model(openai, "gpt-4.1", "GPT-4.1", price=(2.0, 8.0, 0.50, 0.0),
           context_window=1_047_576, max_tokens=32_768, images=True)
    _model(openai, "gpt-4.1-mini", "GPT-4.1 mini", price=(0.40, 1.60, 0.10, 0.0),
           context_window=1_047_576, max_tokens=32_768, images=True)
    _model(openai, "o4-mini", "o4-mini", price=(1.10, 4.40, 0.275, 0.0),
           context_window=200_000, max_tokens=100_000, reasoning=True, images=True)

    # The anthropic provider appends `/v1/messages` to this, as the official SDK does.
    anthropic = Provider("anthropic", "anthropic-messages", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",))
    _model(anthropic, "claude-sonnet-4-5", "Claude Sonnet 4.5", price=(3.0, 15.0, 0.30, 3.75),
           context_window=200_000, max_tokens=64_000, reasoning=True, images=True)
    _model(anthropic, "claude-haiku-4-5", "Claude Haiku 4.5", price=(1.0, 5.0, 0.10, 1.25),
           context_window=200_000, max_tokens=64_000, reasoning=True, images=True)
    _model(anthropic, "claude-opus-4-1", "Claude Opus 4.1", price=(15.0, 75.0, 1.50, 18.75),
           context_window=200_000, max_tokens=32_000, reasoning=True, images=True)

    openrouter = Provider("openrouter", "openai-completions", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",))
    _model(openrouter, "anthropic/claude-sonnet-4.5", "Claude Sonnet 4.5 (OpenRouter)",
           price=(3.0, 15.0, 0.30, 3.75), context_window=1_000_000, max_tokens=64_000,
           reasoning=True, images=True)
    _model(openrouter, "openai/gpt-4o-mini", "GPT-4o mini (OpenRouter)", price=(0.15, 0.60, 0.075, 0.0),
           context_window=128_000, max_tokens=16_384, images=True)

    # Ollama serves whatever the user pulled; these two are listed for discoverability.
    ollama = Provider("ollama", "openai-completions", "http://127.0.0.1:11434/v1", any_model=True)
    _model(ollama, "qwen2.5-coder:7b", "Qwen2.5 Coder 7B (Ollama)", context_window=32_768, max_tokens=8_192)
    _model(ollama, "llama3.2", "Llama 3.2 3B (Ollama)", context_window=131_072, max_tokens=8_192)

    # In-process, offline, free: the default when no provider is configured. The context
    # window is the one providers/local.py allocates, not the model's 8k maximum.
    local = Provider("local", "local")
    _model(local, "smollm2-135m", "SmolLM2 135M Instruct (offline)", context_window=2_048, max_tokens=512)

    # Scripted responses for tests.
    faux = Provider("faux", "faux")
    _model(faux, "faux-1", "Faux 1", context_window=128_000, max_tokens=16_384)

    return {p.name: p for p in (openai, anthropic, openrouter, ollama, local, faux)}


def builtin_model(ref: str) -> Model:
    """A built-in model as shipped, unaffected by config files and the environment."""
    provider, _, model_id = ref.partition("/")
    return _builtin_providers()[provider].models[model_id]


# Environment variables that relocate a built-in provider.
_BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}


# --- the catalogue --------------------------------------------------------------------


class ModelCatalog:
    """Every known model, the default choice, and where each provider's key comes from."""

    def __init__(
        self,
        providers: dict[str, Provider],
        *,
        default: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._providers = providers
        self._default = default
        # Read for keys and the default choice; never printed (see __repr__).
        self._env: Mapping[str, str] = dict(os.environ if env is None else env)

    def __repr__(self) -> str:
        return f"ModelCatalog(providers={sorted(self._providers)}, default={self._default!r})"

    # --- loading -----------------------------------------------------------------------

    @classmethod
    def load(
        cls, env: Mapping[str, str] | None = None, config_path: str | os.PathLike[str] | None = None
    ) -> ModelCatalog:
        """Built-ins, then the config file, then the environment (see the module doc).

        Raises `ModelConfigError` if the config file is unreadable or malformed, or was
        named explicitly (argument or `$TILLER_CONFIG`) and does not exist.
        """
        env = dict(os.environ if env is None else env)
        providers = _builtin_providers()
        default: str | None = None

        path, explicit = _config_path(env, config_path)
        if path.exists() or explicit:
            default = _apply_config(providers, path)

        for name, var in _BASE_URL_ENV.items():
            if url := env.get(var, "").strip():
                _relocate(providers[name], url.rstrip("/"))

        default = env.get("TILLER_MODEL", "").strip() or default
        return cls(providers, default=default, env=env)

    # --- lookup ------------------------------------------------------------------------

    def resolve(self, ref: str) -> Model:
        """The model named `provider/id`. Raises `ModelError` for unknown or malformed refs."""
        provider_name, _, model_id = ref.partition("/")
        if not provider_name or not model_id:
            raise ModelError(f'Model reference must be "provider/modelId", got "{ref}"')
        provider = self._providers.get(provider_name)
        if provider is not None:
            if model_id in provider.models:
                return provider.models[model_id]
            if provider.any_model:
                return provider.generic_model(model_id)
        known = ", ".join(model.ref for model in self.list())
        raise ModelError(f"Unknown model: {ref}. Known: {known}")

    def list(self) -> builtins.list[Model]:
        """Every listed model, built-ins first, in definition order."""
        return [model for provider in self._providers.values() for model in provider.models.values()]

    def providers(self) -> builtins.list[str]:
        return list(self._providers)

    def default_model(self) -> Model:
        """`TILLER_MODEL`, else the config's `default`, else the first usable of anthropic,
        openai and the offline local model."""
        if self._default:
            return self.resolve(self._default)
        if self._env.get("ANTHROPIC_API_KEY"):
            return self.resolve("anthropic/claude-sonnet-4-5")
        if self._env.get("OPENAI_API_KEY") or self._env.get("OPENAI_BASE_URL"):
            return self.resolve("openai/gpt-4.1-mini")
        return self.resolve(LOCAL_MODEL_REF)

    # --- keys --------------------------------------------------------------------------

    def api_key(self, provider: str) -> str | None:
        """The provider's key from the environment, or None. Never log the result."""
        entry = self._providers.get(provider)
        if entry is None:
            return None
        for var in entry.api_key_env:
            if value := self._env.get(var, "").strip():
                return value
        return None

    def has_key(self, provider: str) -> bool:
        """Whether the provider can be called: it has a key, needs none, or is on this machine."""
        entry = self._providers.get(provider)
        if entry is None:
            return False
        if not entry.api_key_env or _is_loopback(entry.base_url):
            return True
        return self.api_key(provider) is not None


# --- config file ----------------------------------------------------------------------

_PROVIDER_KEYS = {"baseUrl", "api", "apiKeyEnv", "headers", "models"}
# Model fields a config entry may set; api, provider and baseUrl come from the provider.
_MODEL_KEYS = {"id", "name", "reasoning", "input", "cost", "contextWindow", "maxTokens", "headers"}


def _config_path(env: Mapping[str, str], override: str | os.PathLike[str] | None) -> tuple[Path, bool]:
    """The config file to read and whether the user named it (so it must exist)."""
    if override is not None:
        return Path(override), True
    if named := env.get("TILLER_CONFIG", "").strip():
        return Path(named).expanduser(), True
    config_home = env.get("XDG_CONFIG_HOME", "").strip()
    if config_home:
        base = Path(config_home)
    else:
        home = env.get("HOME", "").strip()
        base = (Path(home) if home else Path.home()) / ".config"
    return base / "tiller" / "models.toml", False


def _apply_config(providers: dict[str, Provider], path: Path) -> str | None:
    """Merge the file at `path` into `providers`; return its `default` model, if any."""
    try:
        with path.open("rb") as file:
            data = tomllib.load(file)
    except OSError as exc:
        raise ModelConfigError(f"Cannot read model config {path}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ModelConfigError(f"Invalid TOML in model config {path}: {exc}") from exc

    def fail(message: str) -> ModelConfigError:
        return ModelConfigError(f"{path}: {message}")

    # Other top-level keys are left alone: the file may hold settings for other parts.
    default = data.get("default")
    if default is not None and not isinstance(default, str):
        raise fail('"default" must be a string "provider/modelId"')

    sections = data.get("providers", {})
    if not isinstance(sections, dict):
        raise fail('"providers" must be a table: [providers.NAME]')
    for name, section in sections.items():
        if not isinstance(section, dict):
            raise fail(f"[providers.{name}] must be a table")
        if unknown := set(section) - _PROVIDER_KEYS:
            raise fail(f"[providers.{name}]: unknown keys {sorted(unknown)}; allowed: {sorted(_PROVIDER_KEYS)}")
        _merge_provider(providers, name, section, fail)
    return default


def _merge_provider(
    providers: dict[str, Provider],
    name: str,
    section: dict[str, Any],
    fail: Callable[[str], ModelConfigError],
) -> None:
    provider = providers.get(name)
    if provider is None:
        base_url = section.get("baseUrl")
        if not base_url:
            raise fail(f"[providers.{name}] is a new provider and needs a baseUrl")
        # A provider the user defined points at a server they run: any id is fair game.
        provider = providers[name] = Provider(name, section.get("api", "openai-completions"), any_model=True)
    elif "api" in section:
        provider.api = section["api"]
    if not isinstance(provider.api, str) or not provider.api:
        raise fail(f"[providers.{name}] api must be a name such as \"openai-completions\"")

    key_env = section.get("apiKeyEnv")
    if key_env is not None:
        names = [key_env] if isinstance(key_env, str) else key_env
        if not isinstance(names, list) or not all(isinstance(v, str) for v in names):
            raise fail(f"[providers.{name}] apiKeyEnv must be a variable name or a list of them")
        provider.api_key_env = tuple(names)
    if "headers" in section:
        provider.headers = {**(provider.headers or {}), **section["headers"]}

    for index, entry in enumerate(section.get("models", [])):
        where = f"[[providers.{name}.models]] #{index + 1}"
        if not isinstance(entry, dict) or "id" not in entry:
            raise fail(f"{where} must be a table with an id")
        if unknown := set(entry) - _MODEL_KEYS:
            raise fail(f"{where} ({entry['id']}): unknown keys {sorted(unknown)}; allowed: {sorted(_MODEL_KEYS)}")
        try:
            model = Model.model_validate(
                {"name": entry["id"], **entry, "api": provider.api, "provider": name}
            )
        except ValidationError as exc:
            raise fail(f"{where} ({entry['id']}): {exc}") from exc
        provider.add(model)

    # Done last so that the models above pick up the provider's address, api and headers.
    base_url = section.get("baseUrl")
    if base_url is not None and not isinstance(base_url, str):
        raise fail(f"[providers.{name}] baseUrl must be a string")
    _relocate(provider, base_url.rstrip("/") if base_url else None)


def _relocate(provider: Provider, base_url: str | None) -> None:
    """Point the provider (and every model it lists) at `base_url`, re-applying its api and
    headers. Moving a provider means the user runs or proxies the server: any id goes."""
    if base_url:
        provider.base_url = base_url
        provider.any_model = True
    for model_id, model in provider.models.items():
        headers = {**(provider.headers or {}), **(model.headers or {})} or None
        provider.models[model_id] = model.model_copy(
            update={"base_url": provider.base_url, "api": provider.api, "headers": headers}
        )


def _is_loopback(base_url: str) -> bool:
    host = urlparse(base_url).hostname
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
