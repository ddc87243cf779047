"""The user's models.toml: read and checked when the catalogue loads, applied to the
providers when they are first needed (so that a malformed file is reported at start-up
while the dataset is still only read on demand).

    default = "lab/qwen2.5-coder"

    [providers.lab]                  # a provider of its own...
    baseUrl = "http://gpu-box.local:8000/v1"
    api = "openai-completions"       # the default
    apiKeyEnv = "LAB_API_KEY"        # optional: no key needed without it
    headers = { "X-Team" = "editor" }
    timeoutMs = 120000               # connect and wait for the response headers
    idleTimeoutMs = 300000           # longest silence between two chunks
    maxRetries = 5
    retryBaseDelayMs = 500
    maxRetryDelayMs = 30000          # a longer Retry-After fails at once
    compat = { maxTokensField = "max_tokens" }

    [[providers.lab.models]]         # ...and its models (camelCase like the wire)
    id = "qwen2.5-coder"
    contextWindow = 32768
    maxTokens = 8192
    cost = { input = 0.0, output = 0.0 }
    compactAt = "80%"                # when sessions compact: tokens, or a share of the window

A section for a provider the catalogue has changes only what it names; a model entry for
a listed model changes only the fields it gives. The request settings (`timeoutMs` ...)
may be set on a provider and on a model.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..types import Model, OpenAICompat
from .errors import ModelConfigError
from .provider import Provider, RequestSettings

# models.toml name -> RequestSettings attribute.
SETTING_KEYS = {
    "maxRetries": "max_retries",
    "retryBaseDelayMs": "retry_base_delay_ms",
    "maxRetryDelayMs": "max_retry_delay_ms",
    "timeoutMs": "timeout_ms",
    "idleTimeoutMs": "idle_timeout_ms",
}
TIMEOUT_KEYS = {"timeoutMs", "idleTimeoutMs"}
PROVIDER_KEYS = {"baseUrl", "api", "apiKeyEnv", "headers", "compat", "models", *SETTING_KEYS}
# Model fields an entry may set; api, provider and baseUrl come from the provider.
MODEL_FIELDS = {"id", "name", "reasoning", "input", "cost", "contextWindow", "maxTokens", "headers", "compat",
                "compactAt"}
MODEL_KEYS = MODEL_FIELDS | set(SETTING_KEYS)
COMPAT_KEYS = {info.alias or name for name, info in OpenAICompat.model_fields.items()}


@dataclass
class ModelEntry:
    id: str
    fields: dict[str, Any]  # the Model fields given, wire-named
    settings: RequestSettings


@dataclass
class ProviderEntry:
    name: str
    base_url: str | None = None
    api: str | None = None
    api_key_env: tuple[str, ...] | None = None
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None
    settings: RequestSettings = field(default_factory=RequestSettings)
    models: list[ModelEntry] = field(default_factory=list)


@dataclass
class UserConfig:
    path: Path | None = None
    default: str | None = None
    providers: list[ProviderEntry] = field(default_factory=list)


def read_config(path: Path) -> UserConfig:
    """Parse and check the file; `ModelConfigError` names the file and the entry."""
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
    entries = [_provider_entry(name, section, fail) for name, section in sections.items()]
    return UserConfig(path, default, entries)


def _provider_entry(name: str, section: Any, fail: Callable[[str], ModelConfigError]) -> ProviderEntry:
    where = f"[providers.{name}]"
    if not isinstance(section, dict):
        raise fail(f"{where} must be a table")
    if unknown := set(section) - PROVIDER_KEYS:
        raise fail(f"{where}: unknown keys {sorted(unknown)}; allowed: {sorted(PROVIDER_KEYS)}")
    entry = ProviderEntry(name, settings=_settings(section, where, fail))
    base_url = section.get("baseUrl")
    if base_url is not None and (not isinstance(base_url, str) or not base_url.strip()):
        raise fail(f"{where} baseUrl must be a URL")
    entry.base_url = base_url.strip().rstrip("/") if base_url else None
    api = section.get("api")
    if api is not None and (not isinstance(api, str) or not api):
        raise fail(f'{where} api must be a name such as "openai-completions"')
    entry.api = api
    key_env = section.get("apiKeyEnv")
    if key_env is not None:
        names = [key_env] if isinstance(key_env, str) else key_env
        if not isinstance(names, list) or not all(isinstance(v, str) and v for v in names):
            raise fail(f"{where} apiKeyEnv must be a variable name or a list of them")
        entry.api_key_env = tuple(names)
    entry.headers = _headers(section.get("headers"), where, fail)
    entry.compat = _compat(section.get("compat"), where, fail)

    models = section.get("models", [])
    if not isinstance(models, list):
        raise fail(f"{where} models must be an array of tables: [[providers.{name}.models]]")
    for index, item in enumerate(models):
        entry.models.append(_model_entry(name, index, item, fail))
    return entry


def _model_entry(provider: str, index: int, item: Any, fail: Callable[[str], ModelConfigError]) -> ModelEntry:
    where = f"[[providers.{provider}.models]] #{index + 1}"
    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
        raise fail(f"{where} must be a table with an id")
    where = f"{where} ({item['id']})"
    if unknown := set(item) - MODEL_KEYS:
        raise fail(f"{where}: unknown keys {sorted(unknown)}; allowed: {sorted(MODEL_KEYS)}")
    fields = {key: value for key, value in item.items() if key in MODEL_FIELDS}
    _headers(fields.get("headers"), where, fail)
    _compat(fields.get("compat"), where, fail)
    try:  # checked now; the real api and provider are filled in when applied
        Model.model_validate({"name": item["id"], **fields, "api": "-", "provider": provider})
    except ValidationError as exc:
        raise fail(f"{where}: {exc}") from exc
    return ModelEntry(item["id"], fields, _settings(item, where, fail))


def _settings(table: dict[str, Any], where: str, fail: Callable[[str], ModelConfigError]) -> RequestSettings:
    values: dict[str, int] = {}
    for key, attribute in SETTING_KEYS.items():
        if key not in table:
            continue
        value = table[key]
        least = 1 if key in TIMEOUT_KEYS else 0  # no retries is a choice; no time to answer is not
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise fail(f"{where} {key} must be a whole number ≥ {least}")
        values[attribute] = value
    return RequestSettings(**values)


def _headers(value: Any, where: str, fail: Callable[[str], ModelConfigError]) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise fail(f'{where} headers must be a table of strings, e.g. {{ "X-Team" = "editor" }}')
    return value


def _compat(value: Any, where: str, fail: Callable[[str], ModelConfigError]) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail(f"{where} compat must be a table")
    if unknown := set(value) - COMPAT_KEYS:
        raise fail(f"{where} compat: unknown keys {sorted(unknown)}; allowed: {sorted(COMPAT_KEYS)}")
    try:
        OpenAICompat.model_validate(value)
    except ValidationError as exc:
        raise fail(f"{where} compat: {exc}") from exc
    return value


# --- applying ---------------------------------------------------------------------------


def apply_config(providers: dict[str, Provider], config: UserConfig) -> None:
    """Merge the file's entries into `providers` (the dataset's and tiller's own)."""
    for entry in config.providers:
        provider = providers.get(entry.name)
        if provider is None:
            if not entry.base_url:
                raise ModelConfigError(f"{config.path}: [providers.{entry.name}] is a new provider and needs a baseUrl")
            # A provider the user defined points at a server they run: any id is fair game,
            # and it needs a key only if they named a variable for one.
            provider = providers[entry.name] = Provider(
                entry.name, entry.api or "openai-completions", any_model=True, key_required=bool(entry.api_key_env),
                display_name=entry.name,
            )
        _apply_provider(provider, entry)


def _apply_provider(provider: Provider, entry: ProviderEntry) -> None:
    old_api = provider.api
    if entry.api:
        provider.api = entry.api
    if entry.api_key_env is not None:
        provider.api_key_env = entry.api_key_env
    if entry.headers:
        provider.headers = {**(provider.headers or {}), **entry.headers}
    if entry.compat:
        provider.compat = _merge_compat(provider.compat, entry.compat)
    provider.settings = entry.settings.over(provider.settings)
    for item in entry.models:
        known = provider.models.get(item.id)
        base = known.dump() if known else {"name": item.id}
        fields = {**base, **item.fields, "api": provider.api, "provider": provider.name}
        provider.add(Model.model_validate(fields))
        if item.settings != RequestSettings():
            provider.model_settings[item.id] = item.settings
    # Last, so that the models above pick up the provider's address, api and headers.
    relocate(provider, entry.base_url, old_api=old_api, api_chosen=entry.api is not None)


def relocate(provider: Provider, base_url: str | None, *, old_api: str, api_chosen: bool) -> None:
    """Point the provider (and every model it lists) at `base_url`, re-applying its api,
    headers and compat. Moving a provider means the user runs or proxies the server: any
    id goes. OpenAI moved elsewhere speaks chat completions (what every OpenAI-compatible
    server serves) unless the user chose the api."""
    if base_url:
        provider.base_url = base_url
        provider.any_model = True
        if provider.api == "openai-responses" and not api_chosen:
            provider.api = "openai-completions"
    for model_id, model in provider.models.items():
        headers = {**(provider.headers or {}), **(model.headers or {})} or None
        compat = _merge_compat(provider.compat, model.compat.dump()) if model.compat else provider.compat
        api = provider.api if model.api in (old_api, provider.api) else model.api
        provider.models[model_id] = model.model_copy(
            update={"base_url": provider.base_url, "api": api, "headers": headers, "compat": compat}
        )


def _merge_compat(base: OpenAICompat | None, extra: dict[str, Any]) -> OpenAICompat:
    return OpenAICompat.model_validate({**(base.dump() if base else {}), **extra})
