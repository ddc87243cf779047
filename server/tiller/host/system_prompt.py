"""A session's system prompt: the client's choice, else the default that fits its model."""

from __future__ import annotations

from ..ai import text_only
from ..ai.types import Model

DEFAULT_SYSTEM_PROMPT = (
    "You are tiller, a coding agent working inside the user's code editor. Be concise and "
    "precise. Use the tools you are given to read and change files in the workspace."
)
_DEFAULTS = frozenset({DEFAULT_SYSTEM_PROMPT, text_only.SYSTEM_PROMPT})


def system_prompt_for(model: Model, chosen: str | None) -> str:
    """The system prompt the client chose, else the default that fits `model`: the coding
    agent's, or the short one written for a text-only model (which is offered no tools).
    A default stays a default: it follows the model through a model change and a reload."""
    if chosen and chosen not in _DEFAULTS:
        return chosen
    return DEFAULT_SYSTEM_PROMPT if text_only.calls_tools(model) else text_only.SYSTEM_PROMPT
