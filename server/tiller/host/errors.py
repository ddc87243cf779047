"""The one exception the host raises for a request it refuses: a code from the protocol's
table and a message fit for the user."""

from __future__ import annotations

from ..protocol.errors import ErrorCode


class HostError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
