"""Checking what crossed the wire against the generated JSON Schema (schema/tiller.schema.json),
the same file the clients are generated from."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schema" / "tiller.schema.json"


@cache
def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
    return schema


@cache
def _validator(definition: str) -> Draft202012Validator:
    return Draft202012Validator({"$defs": _closed(_schema()["$defs"]), "$ref": f"#/$defs/{definition}"})


def _closed(node: Any) -> Any:
    """The schema with every declared object closed to keys it does not declare, so that a
    renamed optional key fails too (the server sends only declared fields; types that
    allow extra keys say so with their own `additionalProperties`)."""
    if isinstance(node, list):
        return [_closed(item) for item in node]
    if not isinstance(node, dict):
        return node
    closed = {key: _closed(value) for key, value in node.items()}
    if "properties" in closed and "additionalProperties" not in closed:
        closed["additionalProperties"] = False
    return closed


def schema_errors(name: str, value: Any, *, result_of: bool = False) -> list[str]:
    """What is wrong with `value` as the type `name` (or, with `result_of`, as the result of
    the method `name`); [] when it matches. Methods the schema does not list are not checked."""
    if result_of:
        method = _schema()["x-tiller"]["methods"].get(name)
        if method is None:
            return []
        name = method["result"]
    return [f"{'/'.join(str(p) for p in error.absolute_path) or '(top)'}: {error.message}"
            for error in _validator(name).iter_errors(value)]
