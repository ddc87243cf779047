"""Listing the catalogue as pickers and `tiller models` do: search, paging, which providers
are ready, and local servers found by a real probe of a loopback HTTP server."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.support.sse_server import Reply, SSEServer
from tiller.ai.models import ModelCatalog

SECRET = "sk-test-0123456789-do-not-leak"
# Every local preset moved to a port nobody listens on, so that servers running on this
# machine (or not) cannot change what the tests see.
LOCAL_PRESETS = ("ollama", "lmstudio", "vllm", "llamacpp")


def dead_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def catalog(tmp_path: Path, env: dict[str, str] | None = None, extra: str = "",
            served: dict[str, str] | None = None) -> ModelCatalog:
    """Local presets point at `served` URLs, the others at a dead port."""
    port = dead_port()
    urls = {name: f"http://127.0.0.1:{port}/v1" for name in LOCAL_PRESETS} | (served or {})
    config = "".join(f'[providers.{name}]\nbaseUrl = "{url}"\n' for name, url in urls.items()) + extra
    path = tmp_path / "models.toml"
    path.write_text(config)
    return ModelCatalog.load(env={"HOME": str(tmp_path), **(env or {})}, config_path=path)


async def test_gpt_5_finds_the_openai_models_with_exact_ids_first(tmp_path: Path) -> None:
    found = await catalog(tmp_path, env={"OPENAI_API_KEY": SECRET}).list_models("gpt-5")
    refs = [listing.model.ref for listing in found.models]
    assert refs[0] == "openai/gpt-5"
    assert {"openai/gpt-5", "openai/gpt-5.1-codex", "openai/gpt-5-mini"} <= set(refs)
    assert all(listing.ready for listing in found.models)
    assert all("gpt-5" in ref for ref in refs)
    assert found.total == len(refs)
    # Ready providers only: OpenRouter's GPT-5 needs its own key.
    assert not any(ref.startswith("openrouter/") for ref in refs)


async def test_all_includes_providers_that_are_not_ready(tmp_path: Path) -> None:
    every = await catalog(tmp_path, env={"OPENAI_API_KEY": SECRET}).list_models("gpt-5", include_all=True)
    by_ref = {listing.model.ref: listing.ready for listing in every.models}
    assert by_ref["openai/gpt-5"] is True
    assert by_ref["openrouter/openai/gpt-5"] is False
    assert every.total > 100  # many providers resell GPT-5


async def test_every_word_must_match_anywhere(tmp_path: Path) -> None:
    found = await catalog(tmp_path, env={"ANTHROPIC_API_KEY": SECRET}).list_models("Claude OPUS 4.5")
    refs = [listing.model.ref for listing in found.models]
    assert "anthropic/claude-opus-4-5" in refs  # "4.5" is in the name "Claude Opus 4.5"
    assert all(ref.startswith("anthropic/claude-opus-4") for ref in refs)
    # The provider's display name counts too.
    google = await catalog(tmp_path, env={"GEMINI_API_KEY": SECRET}).list_models("google 2.5 pro")
    assert "google/gemini-2.5-pro" in [listing.model.ref for listing in google.models]


async def test_paging(tmp_path: Path) -> None:
    models = catalog(tmp_path, env={"OPENAI_API_KEY": SECRET})
    whole = await models.list_models("gpt")
    first = await models.list_models("gpt", offset=0, limit=5)
    second = await models.list_models("gpt", offset=5, limit=5)
    assert first.total == second.total == whole.total > 10
    assert [m.model.ref for m in first.models + second.models] == [m.model.ref for m in whole.models[:10]]
    past = await models.list_models("gpt", offset=whole.total, limit=5)
    assert (past.models, past.total) == ([], whole.total)


async def test_no_keys_lists_only_what_runs_here(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("TILLER_FAUX_SCRIPT", raising=False)
    found = await catalog(tmp_path).list_models()
    assert [listing.model.ref for listing in found.models] == ["local/smollm2-135m"]
    faux = await catalog(tmp_path, env={"TILLER_FAUX_SCRIPT": "/tmp/script.json"}).list_models("faux")
    assert [listing.model.ref for listing in faux.models] == ["faux/faux-1"]


async def test_a_running_local_server_is_ready_and_lists_what_it_serves(tmp_path: Path) -> None:
    with SSEServer() as ollama:
        ollama.reply(Reply.json(200, {"object": "list", "data": [
            {"id": "qwen3:8b", "object": "model", "created": 1746000000, "owned_by": "library"},
            {"id": "llama3.2:latest", "object": "model", "created": 1746000000, "owned_by": "library"},
        ]}, headers={"content-type": "application/json"}))
        models = catalog(tmp_path, served={"ollama": ollama.url + "/v1"})
        ready = await models.readiness()
        assert ready["ollama"] is True
        assert ready["lmstudio"] is False and ready["vllm"] is False
        assert (ollama.requests[0].method, ollama.requests[0].path) == ("GET", "/v1/models")

        found = await models.list_models("ollama")
        assert [listing.model.ref for listing in found.models] == ["ollama/qwen3:8b", "ollama/llama3.2:latest"]
        # The probe is remembered briefly: no second request within the cache time.
        await models.list_models("qwen")
        assert len(ollama.requests) == 1
        assert models.resolve("ollama/qwen3:8b").base_url == ollama.url + "/v1"


async def test_a_server_that_answers_at_all_is_running(tmp_path: Path) -> None:
    with SSEServer() as vllm:
        vllm.reply(Reply.json(401, {"error": {"message": "Unauthorized"}}))
        models = catalog(tmp_path, env={"VLLM_API_KEY": SECRET}, served={"vllm": vllm.url + "/v1"})
        assert (await models.readiness())["vllm"] is True
        assert vllm.requests[0].headers["authorization"] == f"Bearer {SECRET}"


async def test_openai_moved_to_this_machine_is_probed(tmp_path: Path) -> None:
    port = dead_port()
    models = catalog(tmp_path, env={"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"})
    assert (await models.readiness())["openai"] is False
    assert models.setup_hint("openai") == f"not running at http://127.0.0.1:{port}/v1"


async def test_setup_hints(tmp_path: Path) -> None:
    models = catalog(tmp_path)
    assert models.setup_hint("openai") == "set OPENAI_API_KEY"
    assert models.setup_hint("google") == "set GOOGLE_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY or GEMINI_API_KEY"
    assert models.setup_hint("ollama").startswith("not running at http://127.0.0.1:")
    assert models.setup_hint("faux") == "set TILLER_FAUX_SCRIPT"
