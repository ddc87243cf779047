"""The model catalogue: built-ins, the TOML config, environment overrides, keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiller.ai.models import (
    GENERIC_CONTEXT_WINDOW,
    LOCAL_MODEL_REF,
    ModelCatalog,
    ModelConfigError,
    ModelError,
)

SECRET = "sk-test-0123456789-do-not-leak"


def load(tmp_path: Path, env: dict[str, str] | None = None, config: str | None = None) -> ModelCatalog:
    """A catalogue isolated from the real machine: HOME points into tmp_path."""
    full_env = {"HOME": str(tmp_path / "home"), **(env or {})}
    if config is None:
        return ModelCatalog.load(env=full_env)
    path = tmp_path / "models.toml"
    path.write_text(config)
    return ModelCatalog.load(env=full_env, config_path=path)


# --- built-ins ------------------------------------------------------------------------


def test_builtins_are_listed_with_prices_and_limits(tmp_path: Path) -> None:
    catalog = load(tmp_path)
    refs = {model.ref for model in catalog.list()}
    for ref in [
        "openai/gpt-4o-mini", "openai/gpt-4o", "openai/gpt-4.1", "openai/gpt-4.1-mini", "openai/o4-mini",
        "anthropic/claude-sonnet-4-5", "anthropic/claude-haiku-4-5", "anthropic/claude-opus-4-1",
        "openrouter/anthropic/claude-sonnet-4.5", "openrouter/openai/gpt-4o-mini",
        "local/smollm2-135m", "faux/faux-1",
    ]:
        assert ref in refs

    mini = catalog.resolve("openai/gpt-4o-mini")
    assert (mini.api, mini.base_url) == ("openai-completions", "https://api.openai.com/v1")
    assert (mini.cost.input, mini.cost.output) == (0.15, 0.60)
    assert mini.input == ["text", "image"] and not mini.reasoning

    assert catalog.resolve("openai/o4-mini").reasoning
    sonnet = catalog.resolve("anthropic/claude-sonnet-4-5")
    assert sonnet.api == "anthropic-messages" and sonnet.cost.cache_write == 3.75
    assert sonnet.context_window == 200_000


def test_openrouter_ids_keep_their_slash(tmp_path: Path) -> None:
    model = load(tmp_path).resolve("openrouter/anthropic/claude-sonnet-4.5")
    assert model.id == "anthropic/claude-sonnet-4.5"
    assert model.provider == "openrouter"
    assert model.base_url == "https://openrouter.ai/api/v1"
    assert model.api == "openai-completions"


def test_local_and_faux_are_free(tmp_path: Path) -> None:
    catalog = load(tmp_path)
    local = catalog.resolve(LOCAL_MODEL_REF)
    faux = catalog.resolve("faux/faux-1")
    assert (local.api, faux.api) == ("local", "faux")
    for model in (local, faux):
        assert model.cost.input == model.cost.output == 0.0


def test_ollama_accepts_any_pulled_model(tmp_path: Path) -> None:
    model = load(tmp_path).resolve("ollama/deepseek-coder-v2:16b")
    assert model.id == "deepseek-coder-v2:16b"
    assert model.base_url == "http://127.0.0.1:11434/v1"
    assert model.api == "openai-completions"
    assert model.context_window == GENERIC_CONTEXT_WINDOW


# --- errors ---------------------------------------------------------------------------


def test_unknown_model_lists_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as info:
        load(tmp_path).resolve("openai/gpt-nonexistent")
    message = str(info.value)
    assert message.startswith("Unknown model: openai/gpt-nonexistent. Known: ")
    assert "openai/gpt-4o-mini" in message and LOCAL_MODEL_REF in message


def test_unknown_provider(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"^Unknown model: nope/x\. Known: "):
        load(tmp_path).resolve("nope/x")


@pytest.mark.parametrize("ref", ["gpt-4o", "openai/", "/gpt-4o", ""])
def test_malformed_reference(tmp_path: Path, ref: str) -> None:
    with pytest.raises(ModelError, match='Model reference must be "provider/modelId"'):
        load(tmp_path).resolve(ref)


# --- config file ----------------------------------------------------------------------

CONFIG = """
default = "vllm/Qwen/Qwen2.5-Coder-32B-Instruct"
unrelated = "other parts of tiller may keep settings here"

[providers.vllm]
baseUrl = "http://10.0.0.5:8000/v1/"
apiKeyEnv = "VLLM_API_KEY"

[[providers.vllm.models]]
id = "Qwen/Qwen2.5-Coder-32B-Instruct"
name = "Qwen coder"
contextWindow = 32768
maxTokens = 4096
cost = { input = 0.5, output = 1.5 }

[providers.openai]
headers = { "X-Team" = "editor" }

[[providers.openai.models]]
id = "gpt-5"
reasoning = true
input = ["text", "image"]
"""


def test_config_adds_providers_models_and_default(tmp_path: Path) -> None:
    catalog = load(tmp_path, config=CONFIG)

    qwen = catalog.resolve("vllm/Qwen/Qwen2.5-Coder-32B-Instruct")
    assert qwen.name == "Qwen coder"
    assert qwen.api == "openai-completions"  # the default api
    assert qwen.base_url == "http://10.0.0.5:8000/v1"  # trailing slash trimmed
    assert (qwen.context_window, qwen.max_tokens, qwen.cost.output) == (32768, 4096, 1.5)
    assert catalog.default_model() == qwen

    # A provider the user defined accepts ids it does not list.
    assert catalog.resolve("vllm/other-model").base_url == "http://10.0.0.5:8000/v1"

    # A built-in provider gains a model and headers (for its built-ins too) but keeps
    # its address, and with it the closed list.
    gpt5 = catalog.resolve("openai/gpt-5")
    assert gpt5.reasoning and gpt5.name == "gpt-5" and gpt5.base_url == "https://api.openai.com/v1"
    assert catalog.resolve("openai/gpt-4o").headers == {"X-Team": "editor"}
    with pytest.raises(ModelError):
        catalog.resolve("openai/whatever")


def test_config_from_tiller_config_and_xdg(tmp_path: Path) -> None:
    path = tmp_path / "elsewhere.toml"
    path.write_text('default = "openai/gpt-4o"\n')
    catalog = ModelCatalog.load(env={"HOME": str(tmp_path), "TILLER_CONFIG": str(path)})
    assert catalog.default_model().ref == "openai/gpt-4o"

    xdg = tmp_path / "xdg"
    (xdg / "tiller").mkdir(parents=True)
    (xdg / "tiller" / "models.toml").write_text('default = "anthropic/claude-haiku-4-5"\n')
    catalog = ModelCatalog.load(env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(xdg)})
    assert catalog.default_model().ref == "anthropic/claude-haiku-4-5"

    home = tmp_path / "home"
    (home / ".config" / "tiller").mkdir(parents=True)
    (home / ".config" / "tiller" / "models.toml").write_text('default = "openai/o4-mini"\n')
    assert ModelCatalog.load(env={"HOME": str(home)}).default_model().ref == "openai/o4-mini"


def test_missing_default_config_is_fine_but_a_named_one_is_not(tmp_path: Path) -> None:
    assert load(tmp_path).default_model().ref == LOCAL_MODEL_REF
    with pytest.raises(ModelConfigError, match="Cannot read model config"):
        ModelCatalog.load(env={"TILLER_CONFIG": str(tmp_path / "missing.toml")})


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ("default = [", "Invalid TOML"),
        ("[providers.x]\napi = 'openai-completions'\n", "needs a baseUrl"),
        ("[providers.openai]\nbaseURL = 'http://x'\n", "unknown keys ['baseURL']"),
        ("[[providers.openai.models]]\nid = 'm'\ncontext = 5\n", "unknown keys ['context']"),
        ("[[providers.openai.models]]\nid = 'm'\nmaxTokens = 'lots'\n", "maxTokens"),
        ("default = 3\n", '"default" must be a string'),
    ],
)
def test_bad_config_names_the_file_and_entry(tmp_path: Path, config: str, expected: str) -> None:
    with pytest.raises(ModelConfigError) as info:
        load(tmp_path, config=config)
    assert expected in str(info.value)
    assert "models.toml" in str(info.value)


# --- environment ----------------------------------------------------------------------


def test_openai_base_url_relocates_and_opens_the_provider(tmp_path: Path) -> None:
    catalog = load(tmp_path, env={"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1/"})
    assert catalog.resolve("openai/gpt-4o").base_url == "http://127.0.0.1:8080/v1"
    # Local servers serve ids no catalogue knows; they are sent as-is.
    served = catalog.resolve("openai/qwen2.5-coder-7b-instruct-q4_k_m.gguf")
    assert served.id == "qwen2.5-coder-7b-instruct-q4_k_m.gguf"
    assert served.api == "openai-completions"
    assert served.base_url == "http://127.0.0.1:8080/v1"
    # Without the override the list is closed.
    with pytest.raises(ModelError):
        load(tmp_path).resolve("openai/qwen2.5-coder-7b-instruct-q4_k_m.gguf")


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


def test_keys_come_from_the_environment(tmp_path: Path) -> None:
    catalog = load(tmp_path, env={"OPENAI_API_KEY": SECRET, "ANTHROPIC_API_KEY": "  "})
    assert catalog.api_key("openai") == SECRET
    assert catalog.has_key("openai")
    assert catalog.api_key("anthropic") is None  # blank is unset
    assert not catalog.has_key("anthropic")
    assert not catalog.has_key("openrouter")
    assert not catalog.has_key("no-such-provider") and catalog.api_key("no-such-provider") is None


def test_keyless_providers_are_ready(tmp_path: Path) -> None:
    catalog = load(tmp_path)
    for provider in ("local", "faux", "ollama"):
        assert catalog.has_key(provider)
        assert catalog.api_key(provider) is None
    # A loopback server needs no key; a remote one still does.
    assert load(tmp_path, env={"OPENAI_BASE_URL": "http://localhost:8080/v1"}).has_key("openai")
    assert load(tmp_path, env={"OPENAI_BASE_URL": "http://[::1]:8080/v1"}).has_key("openai")
    assert not load(tmp_path, env={"OPENAI_BASE_URL": "https://llm.example.com/v1"}).has_key("openai")


def test_config_key_env_and_keyless_custom_providers(tmp_path: Path) -> None:
    config = """
[providers.vllm]
baseUrl = "http://10.0.0.5:8000/v1"
apiKeyEnv = ["VLLM_TOKEN", "VLLM_API_KEY"]

[providers.lan]
baseUrl = "http://10.0.0.6:8000/v1"
"""
    catalog = load(tmp_path, env={"VLLM_API_KEY": SECRET}, config=config)
    assert catalog.api_key("vllm") == SECRET
    assert catalog.has_key("lan") and catalog.api_key("lan") is None
    assert not load(tmp_path, config=config).has_key("vllm")


def test_keys_never_reach_models_or_reprs(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": SECRET, "ANTHROPIC_API_KEY": SECRET, "OPENROUTER_API_KEY": SECRET,
           "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    catalog = load(tmp_path, env=env)
    models = [*catalog.list(), catalog.default_model(), catalog.resolve("openai/unlisted")]
    for model in models:
        assert SECRET not in model.to_json()
        assert SECRET not in repr(model)
    assert SECRET not in json.dumps([m.dump() for m in models])
    assert SECRET not in repr(catalog) and SECRET not in str(catalog)
