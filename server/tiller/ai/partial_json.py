"""Best-effort parsing of tool-call arguments while their JSON is still streaming."""

from __future__ import annotations

import json
from typing import Any

import pydantic_core


def parse_streaming_json(text: str) -> dict[str, Any]:
    """Parse complete or truncated JSON; blank or unparsable text gives `{}`. Never raises."""
    if not text or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        try:
            value = pydantic_core.from_json(text, allow_partial="trailing-strings")
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}
