"""Recognising a provider's "the request is longer than my context window" refusal.

Providers say it in their own words, and tiller's providers pass the vendor's message on
(`400 Bad Request: <message>`), so the error message is what there is to go by:

| Who | What it says |
|---|---|
| OpenAI, vLLM, OpenRouter, DeepSeek | `This model's maximum context length is 8192 tokens. However, …` (code `context_length_exceeded`) |
| Anthropic | `prompt is too long: 208310 tokens > 200000 maximum` |
| llama.cpp server | `the request exceeds the available context size, try increasing it` (type `exceed_context_size_error`) |
| Ollama | `prompt too long; exceeded max context length by 12 tokens`, `the input length exceeds the context length` |
| LM Studio | `… the model is loaded with context length of only 4096 tokens, which is not enough …` |
| Mistral | `Prompt contains 40000 tokens … too large for model with 32768 maximum context length` |
| Google | `The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)` |

A rate limit phrased in tokens ("Request too large for gpt-4o … tokens per min") is not an
overflow: a shorter request would not help, waiting would.
"""

from __future__ import annotations

import re

_OVERFLOW = re.compile(
    "|".join((
        r"maximum context length",
        r"context[_ ]length[_ ]exceeded",
        r"prompt is too long",
        r"prompt too long",
        r"exceeds? the (available )?context (size|length|window)",
        r"exceed_context_size",
        r"context (size|window|length) (has been |was )?exceeded",
        r"is longer than the model'?s context length",
        r"context length of only \d+",
        r"too large for model with \d+ maximum context length",
        r"input token count .* exceeds the maximum",
        r"input is too long for (the )?(requested )?model",
    )),
    re.IGNORECASE,
)
_RATE_LIMIT = re.compile(r"rate limit|per min|\bTPM\b|\b429\b", re.IGNORECASE)


def is_context_overflow(error_message: str | None) -> bool:
    if not error_message:
        return False
    return bool(_OVERFLOW.search(error_message)) and not _RATE_LIMIT.search(error_message)
