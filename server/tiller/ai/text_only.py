"""Models that answer in text and cannot call tools.

The offline SmolLM2-135M (api "local") is one: at 135M parameters it cannot follow a tool
schema, and a system prompt that talks about tools makes it talk about tools instead of
answering. Such a model is offered no tools (the agent loop checks `calls_tools`) and, unless
the client chose a system prompt, gets `SYSTEM_PROMPT` instead of a coding agent's.
"""

from __future__ import annotations

from .types import Model

TEXT_ONLY_APIS = frozenset({"local"})

# Short on purpose: tried on SmolLM2-135M against longer prompts (naming it, saying it runs
# offline, telling it to be direct), this one answered both README questions sensibly across
# seeds; every mention of what it cannot do made it talk about that instead.
SYSTEM_PROMPT = "You are a helpful assistant. Answer briefly."


def calls_tools(model: Model) -> bool:
    """Whether tool definitions sent to `model` can be used by it."""
    return model.api not in TEXT_ONLY_APIS
