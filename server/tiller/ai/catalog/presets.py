"""What tiller knows about providers beyond the models.dev dataset.

The dataset names each provider's key variables and, for OpenAI-compatible ones, the base
URL; it names the SDK package for the rest. This table adds what tiller needs on top:
the base URL of providers the dataset serves through a vendor SDK, the API tiller speaks
to them, the servers people run on their own machine, and tiller's own providers (the
offline model and the scripted one). Per-provider compatibility switches for OpenAI's chat
completions live with that provider (`providers/openai_compat.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..types import Model

LOCAL_MODEL_REF = "local/smollm2-135m"


@dataclass(frozen=True)
class Preset:
    api: str | None = None  # overrides the API implied by the dataset's SDK package
    base_url: str | None = None  # where the dataset gives none
    # For providers the dataset does not have: key variables and a display name.
    env: tuple[str, ...] = ()
    display_name: str = ""
    local: bool = False  # a server on this machine; needs no key, readiness is probed


# The dataset's SDK package -> the API tiller speaks to such a provider. Providers whose
# package is not here (Azure, Bedrock, Vertex, Cohere, ...) are left out of the catalogue.
SDK_APIS = {
    "@ai-sdk/openai-compatible": "openai-completions",
    "@openrouter/ai-sdk-provider": "openai-completions",
    "@ai-sdk/groq": "openai-completions",
    "@ai-sdk/xai": "openai-completions",
    "@ai-sdk/mistral": "openai-completions",
    "@ai-sdk/cerebras": "openai-completions",
    "@ai-sdk/togetherai": "openai-completions",
    "@ai-sdk/deepinfra": "openai-completions",
    "@ai-sdk/perplexity": "openai-completions",
    "@ai-sdk/vercel": "openai-completions",
    "@ai-sdk/gateway": "openai-completions",
    "venice-ai-sdk-provider": "openai-completions",
    "@ai-sdk/openai": "openai-responses",
    "@ai-sdk/anthropic": "anthropic-messages",
    "@ai-sdk/google": "google-generative-ai",
}

PRESETS: dict[str, Preset] = {
    # OpenAI's own models go through the Responses API (GPT-5 and codex models need it).
    "openai": Preset(api="openai-responses", base_url="https://api.openai.com/v1"),
    # The anthropic provider appends `/v1/messages`, as the official SDK does.
    "anthropic": Preset(base_url="https://api.anthropic.com"),
    "google": Preset(base_url="https://generativelanguage.googleapis.com/v1beta"),
    "groq": Preset(base_url="https://api.groq.com/openai/v1"),
    "xai": Preset(base_url="https://api.x.ai/v1"),
    "mistral": Preset(base_url="https://api.mistral.ai/v1"),
    "cerebras": Preset(base_url="https://api.cerebras.ai/v1"),
    "togetherai": Preset(base_url="https://api.together.xyz/v1"),
    "deepinfra": Preset(base_url="https://api.deepinfra.com/v1/openai"),
    "perplexity": Preset(base_url="https://api.perplexity.ai"),
    "v0": Preset(base_url="https://api.v0.dev/v1"),
    "vercel": Preset(base_url="https://ai-gateway.vercel.sh/v1"),
    "venice": Preset(base_url="https://api.venice.ai/api/v1"),
    # Servers on this machine, at their default ports. They serve whatever is installed,
    # so any id is accepted and the probe lists what is there.
    "ollama": Preset(api="openai-completions", base_url="http://127.0.0.1:11434/v1", display_name="Ollama",
                     local=True),
    "lmstudio": Preset(api="openai-completions", base_url="http://127.0.0.1:1234/v1", display_name="LM Studio",
                       env=("LMSTUDIO_API_KEY",), local=True),
    "vllm": Preset(api="openai-completions", base_url="http://127.0.0.1:8000/v1", display_name="vLLM",
                   env=("VLLM_API_KEY",), local=True),
    # No key variable: llama-server's LLAMA_API_KEY is also Meta's Llama API key.
    "llamacpp": Preset(api="openai-completions", base_url="http://127.0.0.1:8080/v1",
                       display_name="llama.cpp server", local=True),
}

# Listed first, in this order; the rest follow in the dataset's order.
FEATURED = ("openai", "anthropic", "google", "openrouter", "ollama", "lmstudio", "vllm", "llamacpp")

# Environment variables that relocate a provider (the official SDKs read these too).
BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}

# Picked as the default model when only that provider's key is set, in this order.
DEFAULT_MODELS = (
    ("anthropic", "claude-sonnet-4-5"),
    ("openai", "gpt-4.1-mini"),
    ("google", "gemini-2.5-pro"),
)


def own_models() -> dict[str, tuple[Preset, list[Model]]]:
    """tiller's in-process providers, which no dataset lists."""
    # The context window is the one providers/local.py allocates, not the model's 8k.
    local = Model(id="smollm2-135m", name="SmolLM2 135M Instruct (offline)", api="local", provider="local",
                  context_window=2_048, max_tokens=512)
    # Scripted responses for tests and demos ($TILLER_FAUX_SCRIPT).
    faux = Model(id="faux-1", name="Faux 1", api="faux", provider="faux", context_window=128_000, max_tokens=16_384)
    return {
        "local": (Preset(api="local", display_name="Offline (in-process)"), [local]),
        "faux": (Preset(api="faux", display_name="Faux (scripted)"), [faux]),
    }
