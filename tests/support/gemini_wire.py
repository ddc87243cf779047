"""Gemini `streamGenerateContent?alt=sse` streams as Google sends them: each event a whole
`GenerateContentResponse` on one `data:` line ended by CRLF CRLF, usage on every chunk,
`finishReason` on the last, function calls whole in one part."""

from __future__ import annotations

import json
from typing import Any


def chunk(parts: list[dict[str, Any]], *, finish: str | None = None, prompt: int = 9, output: int = 0,
          thoughts: int = 0, cached: int = 0, model: str = "gemini-2.5-pro") -> bytes:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    usage: dict[str, Any] = {"promptTokenCount": prompt, "candidatesTokenCount": output,
                             "totalTokenCount": prompt + output + thoughts,
                             "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}]}
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    if cached:
        usage["cachedContentTokenCount"] = cached
    body = {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model,
            "responseId": "mXvLaLeyL5ej1MkPn7mGsQk"}
    return b"data: " + json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode() + b"\r\n\r\n"


def text_reply(*pieces: str) -> bytes:
    """A whole plain-text answer: one chunk per piece, the last one finishing."""
    chunks = [chunk([{"text": piece}], output=index + 1) for index, piece in enumerate(pieces[:-1])]
    chunks.append(chunk([{"text": pieces[-1]}], finish="STOP", output=len(pieces)))
    return b"".join(chunks)


def function_call(name: str, args: dict[str, Any], signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
    if signature:
        part["thoughtSignature"] = signature
    return part
