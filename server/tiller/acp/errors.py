"""Refusals as ACP errors, with messages that say what was wrong (the SDK's factories put
the reason in `data` under a generic message, which clients rarely show)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from acp import RequestError
from pydantic import ValidationError

from ..host import HostError
from ..protocol.errors import ErrorCode
from ..protocol.jsonrpc import clip_message
from ..protocol.params import describe

# ACP's code for a missing resource (an unknown session), from its schema's ErrorCode.
RESOURCE_NOT_FOUND = -32002


def invalid_params(message: str) -> RequestError:
    return RequestError(ErrorCode.INVALID_PARAMS, clip_message(f"Invalid params: {message}"))


@contextmanager
def host_errors_as_acp() -> Iterator[None]:
    """Host refusals as ACP errors: an unknown session is ACP's "resource not found"."""
    try:
        yield
    except ValidationError as error:  # the protocol's params classes (protocol/params.py)
        raise invalid_params(describe(error)) from None
    except HostError as error:
        message = clip_message(error.message)
        if error.code == ErrorCode.SESSION_NOT_FOUND:
            raise RequestError(RESOURCE_NOT_FOUND, message) from None
        if error.code in (ErrorCode.INVALID_PARAMS, ErrorCode.MODEL_NOT_FOUND):
            raise RequestError(ErrorCode.INVALID_PARAMS, message) from None
        raise RequestError(int(error.code), message) from None
