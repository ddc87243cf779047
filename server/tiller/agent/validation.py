"""Tool argument validation: JSON Schema with AJV-style type coercion and pi's error text.

Models often send `"5"` for a number or `"true"` for a boolean. pi validates with AJV's
`coerceTypes: true`, which fixes such scalars in place before checking; we do the same on
a deep copy (the events keep the raw arguments), then validate with `jsonschema`,
collecting every error.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

_NUMBER = re.compile(r"^\s*-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")


def validate_tool_arguments(tool_name: str, schema: dict[str, Any], arguments: Any) -> Any:
    """Return the coerced arguments, or raise ValueError with pi's validation text."""
    # Imported on the first tool call, not at start-up: it is ~60 ms of the server's cold start.
    from jsonschema import validators

    args = coerce(copy.deepcopy(arguments), schema)
    validator_class = validators.validator_for(schema)
    errors = sorted(validator_class(schema).iter_errors(args), key=lambda e: list(e.absolute_path))
    if not errors:
        return args
    lines = [f"  - {_error_path(e)}: {_ajv_message(e)}" for e in errors]
    received = json.dumps(arguments, indent=2, ensure_ascii=False)
    raise ValueError(
        f'Validation failed for tool "{tool_name}":\n' + "\n".join(lines) + f"\n\nReceived arguments:\n{received}"
    )


# --- coercion (AJV's coerceTypes table for scalars) ---------------------------------------


def coerce(value: Any, schema: Any) -> Any:
    if not isinstance(schema, dict):
        return value
    types = schema.get("type")
    allowed = [types] if isinstance(types, str) else list(types or [])
    if allowed and not any(_is_type(value, t) for t in allowed):
        for target in allowed:
            converted, ok = _coerce_scalar(value, target)
            if ok:
                value = converted
                break
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key in list(value):
            if key in properties:
                value[key] = coerce(value[key], properties[key])
            elif isinstance(extra, dict):
                value[key] = coerce(value[key], extra)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            value[:] = [coerce(item, items) for item in value]
        elif isinstance(items, list):
            value[: len(items)] = [coerce(v, s) for v, s in zip(value, items, strict=False)]
    return value


def _is_type(value: Any, json_type: str) -> bool:
    if json_type == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if json_type == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return {
        "string": lambda v: isinstance(v, str),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
    }.get(json_type, lambda v: True)(value)


def _coerce_scalar(value: Any, target: str) -> tuple[Any, bool]:
    if isinstance(value, (dict, list)):
        return value, False
    if target == "string":
        if value is None:
            return "", True
        if isinstance(value, bool):
            return ("true" if value else "false"), True
        if isinstance(value, (int, float)):
            return json.dumps(value), True
    elif target in ("number", "integer"):
        if value is None:
            return 0, True
        if isinstance(value, bool):
            return int(value), True
        if isinstance(value, str) and _NUMBER.match(value):
            number = float(value)
            if number.is_integer() and (("." not in value and "e" not in value.lower()) or target == "integer"):
                return int(number), True
            return (number, True) if target == "number" else (value, False)
    elif target == "boolean":
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        if value == "true" or (numeric and value == 1):
            return True, True
        if value == "false" or value is None or (numeric and value == 0):
            return False, True
    elif target == "null":
        if value in ("", 0, False):
            return None, True
    return value, False


# --- error text in AJV's words --------------------------------------------------------------


def _error_path(error: Any) -> str:
    path = "/".join(str(p) for p in error.absolute_path)
    if path:
        return path
    if error.validator == "required":
        return _missing_property(error) or "root"
    return "root"


def _missing_property(error: Any) -> str | None:
    match = re.match(r"'(.+)' is a required property", error.message)
    return match.group(1) if match else None


def _ajv_message(error: Any) -> str:
    kind, expected = error.validator, error.validator_value
    if kind == "required":
        return f"must have required property '{_missing_property(error)}'"
    if kind == "type":
        return f"must be {expected if isinstance(expected, str) else ','.join(expected)}"
    if kind == "enum":
        return "must be equal to one of the allowed values"
    if kind == "const":
        return "must be equal to constant"
    if kind == "additionalProperties":
        return "must NOT have additional properties"
    bounds = {
        "minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<",
    }
    if kind in bounds:
        return f"must be {bounds[kind]} {expected}"
    if kind in ("minLength", "maxLength"):
        word = "fewer" if kind == "minLength" else "more"
        return f"must NOT have {word} than {expected} characters"
    if kind in ("minItems", "maxItems"):
        word = "fewer" if kind == "minItems" else "more"
        return f"must NOT have {word} than {expected} items"
    if kind == "pattern":
        return f'must match pattern "{expected}"'
    return error.message
