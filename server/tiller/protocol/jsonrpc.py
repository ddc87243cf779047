"""JSON-RPC 2.0 messages as they arrive, checked before any method sees them.

Shared by every front end: `decode` turns a body into JSON or a -32700, `classify` checks the
envelope (a request, a notification or a response, each well-formed) or gives the -32600 the
spec asks for, with the id to answer when one could be read. Nothing here echoes more than a
few hundred characters of what the client sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from .errors import ErrorCode

MAX_NESTING = 64  # deeper than any message of the protocol (LSP capabilities reach ~8)
MAX_ID_CHARS = 256
MAX_METHOD_CHARS = 256
# Beyond what every JSON peer represents exactly (JavaScript's safe integers).
MAX_ID_INTEGER = 2**53 - 1
MAX_ECHO_CHARS = 200  # of client input quoted in an error message
MAX_MESSAGE_CHARS = 2000  # of any error message

MessageId = int | str


class RpcError(Exception):
    """A message that gets an error answer (or, without an id, is dropped)."""

    def __init__(self, code: int, message: str, msg_id: MessageId | None = None, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = clip_message(message)
        self.id = msg_id
        self.data = data

    def response(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": int(self.code), "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return {"jsonrpc": "2.0", "id": self.id, "error": error}


@dataclass(frozen=True)
class Incoming:
    kind: Literal["request", "notification", "response"]
    raw: dict[str, Any]
    id: MessageId | None = None
    method: str = ""


def clip(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def clip_message(message: str) -> str:
    return clip(message, MAX_MESSAGE_CHARS)


# --- decoding --------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode(body: bytes) -> Any:
    """The JSON value of a body (strictly UTF-8), or RpcError(-32700)."""
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as error:
        reason = f"not UTF-8 ({error.reason} at byte {error.start})"
    except json.JSONDecodeError as error:
        reason = str(error)
    except RecursionError:
        reason = "nested too deeply"
    except ValueError as error:  # NaN, or an integer beyond Python's digit limit
        reason = clip(str(error))
    raise RpcError(ErrorCode.PARSE_ERROR, f"Parse error: {reason}")


def nesting_depth_exceeds(value: Any, limit: int = MAX_NESTING) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


# --- the envelope ----------------------------------------------------------------------------


def _valid_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -MAX_ID_INTEGER <= value <= MAX_ID_INTEGER
    return isinstance(value, str) and len(value) <= MAX_ID_CHARS and not has_unpaired_surrogate(value)


def classify(message: Any, *, pending_responses: frozenset[MessageId] | set[Any] = frozenset()) -> Incoming:
    """What `message` is, or RpcError(-32600). `pending_responses`: ids of our own requests,
    whose answers are accepted even when a client leaves out `result`."""
    if isinstance(message, list):
        raise RpcError(ErrorCode.INVALID_REQUEST, "Invalid request: batches are not supported; send one message per frame")
    if not isinstance(message, dict):
        raise RpcError(ErrorCode.INVALID_REQUEST, f"Invalid request: expected an object, got {_json_type(message)}")
    has_id = "id" in message
    msg_id = message.get("id")
    answer_id = msg_id if _valid_id(msg_id) else None

    def invalid(reason: str) -> RpcError:
        return RpcError(ErrorCode.INVALID_REQUEST, f"Invalid request: {reason}", answer_id)

    if message.get("jsonrpc") != "2.0":
        raise invalid('"jsonrpc" must be "2.0"')
    if has_id and answer_id is None:
        raise RpcError(ErrorCode.INVALID_REQUEST,
                       "Invalid request: id must be a string or an integer (|id| < 2^53, strings up to "
                       f"{MAX_ID_CHARS} characters)")
    if nesting_depth_exceeds(message):
        raise invalid(f"nested deeper than {MAX_NESTING} levels")
    if "method" not in message:
        if has_id and ("result" in message or "error" in message or msg_id in pending_responses):
            return Incoming("response", message, msg_id)
        raise invalid('no "method"')
    method = message["method"]
    if not isinstance(method, str):
        raise invalid(f'"method" must be a string, got {_json_type(method)}')
    if not method or len(method) > MAX_METHOD_CHARS or has_unpaired_surrogate(method):
        raise invalid(f'"method" must be 1 to {MAX_METHOD_CHARS} characters of valid text')
    params = message.get("params")
    if params is not None and not isinstance(params, dict | list):
        raise invalid(f'"params" must be an object or an array, got {_json_type(params)}')
    if has_id:
        if (where := unpaired_surrogate_at(params)) is not None:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"Invalid params: {where}: contains a lone UTF-16 surrogate",
                           msg_id)
        return Incoming("request", message, msg_id, method)
    return Incoming("notification", message, None, method)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


# --- text ------------------------------------------------------------------------------------


def has_unpaired_surrogate(text: str) -> bool:
    """Whether `text` holds a lone UTF-16 surrogate (JSON lets `\\ud800` through; UTF-8,
    files and most peers do not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def unpaired_surrogate_at(value: Any, path: str = "") -> str | None:
    """The path (`context.0.text`) of the first string in `value` with a lone surrogate."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if has_unpaired_surrogate(item):
                return where or "params"
        elif isinstance(item, dict):
            for key, child in item.items():
                name = clip(str(key), 40)
                if isinstance(key, str) and has_unpaired_surrogate(key):
                    return f"{where}.{name}" if where else name
                stack.append((child, f"{where}.{name}" if where else name))
        elif isinstance(item, list):
            stack.extend((child, f"{where}.{index}" if where else str(index)) for index, child in enumerate(item))
    return None


# --- the id of a frame too large to read ------------------------------------------------------


def peek_id(prefix: bytes) -> MessageId | None:
    """The top-level `"id"` of a JSON object from its first bytes, if they hold it, so that a
    request too large to read can still be answered. Only a complete number or string at the
    object's first level counts; anything unclear gives None."""
    text = prefix.decode("utf-8", "replace").lstrip()
    if not text.startswith("{"):
        return None
    depth, i, n = 0, 0, len(text)
    expecting_key = False
    while i < n:
        char = text[i]
        if char == '"':
            end = _string_end(text, i)
            if end < 0:
                return None
            if depth == 1 and expecting_key:
                key = text[i : end + 1]
                rest = text[end + 1 :].lstrip()
                if rest.startswith(":") and key == '"id"':
                    return _id_value(rest[1:].lstrip())
            expecting_key = False
            i = end + 1
            continue
        if char in "{[":
            depth += 1
            expecting_key = char == "{" and depth == 1
        elif char in "}]":
            depth -= 1
        elif char == "," and depth == 1:
            expecting_key = True
        i += 1
    return None


def _string_end(text: str, start: int) -> int:
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i
        i += 1
    return -1


def _id_value(text: str) -> MessageId | None:
    if text.startswith('"'):
        end = _string_end(text, 0)
        candidate = text[: end + 1] if end > 0 else ""
    else:
        digits = len(text) - len(text.lstrip("-0123456789"))
        candidate = text[:digits]
        if digits == len(text):
            return None  # the number may go on beyond the prefix
    try:
        value = json.loads(candidate)
    except ValueError:
        return None
    return value if _valid_id(value) else None
