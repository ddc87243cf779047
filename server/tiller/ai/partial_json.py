"""Best-effort parsing of tool-call arguments while their JSON is still streaming.

Clients show these partial arguments as they grow, so they follow pi-ai's `parseStreamingJson`
(the `partial-json` package): the text is trimmed first, so a string still being written
loses its trailing blanks until more text arrives, and a `true` / `false` / `null` cut short
(`tr`, `fa`, `nu`) already counts as that value.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pydantic_core

# What JavaScript's String.prototype.trim removes (Python's str.strip differs at the edges).
_JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_LITERAL_TAIL = re.compile(r"(?<=[\[:,])[ \t\n\r]*(t|tr|tru|f|fa|fal|fals|n|nu|nul)$")
_LITERALS = {"t": "true", "f": "false", "n": "null"}


def parse_streaming_json(text: str) -> dict[str, Any]:
    """Parse complete or truncated JSON; blank or unparsable text gives `{}`. Never raises."""
    if not text or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = pydantic_core.from_json(_complete_literal(text.strip(_JS_WHITESPACE)), allow_partial="trailing-strings")
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _complete_literal(text: str) -> str:
    """Finish a literal cut short at the end of `text`, unless the end is inside a string."""
    match = _LITERAL_TAIL.search(text)
    if match is None or _ends_inside_string(text[: match.start()]):
        return text
    prefix = match.group(1)
    return text + _LITERALS[prefix[0]][len(prefix) :]


def _ends_inside_string(text: str) -> bool:
    inside = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = inside
        elif char == '"':
            inside = not inside
    return inside
