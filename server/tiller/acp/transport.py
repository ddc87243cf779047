"""ACP's stdio framing, one JSON-RPC message per line, as the SDK's `Connection` runs on it.

The SDK's own line transport drops a line it cannot parse with a log entry and trusts that
every line holds an object; a client that sent it would wait forever. This one answers, as
JSON-RPC asks: a line that is not JSON gets -32700, one that is not a request object
(an array, a number, a wrong `jsonrpc`, an `id` of the wrong type) -32600, with the
request's id when it has a usable one, params holding a lone surrogate -32602, and the
connection goes on (protocol/jsonrpc.py, shared with the LSP front end).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any, BinaryIO

from ..protocol.errors import ErrorCode
from ..protocol.jsonrpc import RpcError, classify, decode
from ..stdio import MAX_MESSAGE_BYTES

logger = logging.getLogger("tiller.acp")


class LineTransport:
    def __init__(self, source: BinaryIO, sink: BinaryIO, max_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self._source = source
        self._sink = sink
        self._max_bytes = max_bytes
        self._write_lock = threading.Lock()
        self._closed = False

    # --- the SDK's Transport protocol ------------------------------------------------------

    async def send(self, message: dict[str, Any]) -> None:
        self._write(message)

    def _write(self, message: dict[str, Any]) -> None:
        # json.dumps escapes newlines inside strings, so one message is one line.
        # backslashreplace: a lone surrogate (a model can stream one) goes out as its JSON escape.
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace") + b"\n"
        with self._write_lock:
            if self._closed:
                return
            try:
                self._sink.write(line)
                self._sink.flush()
            except (BrokenPipeError, ValueError):
                logger.warning("The client closed the connection; dropping a message")

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if line is None:
                return None
            if not line.strip():
                continue
            message = self._checked(line)
            if message is not None:
                return message

    async def close(self) -> None:
        with self._write_lock:
            self._closed = True

    # --- reading ---------------------------------------------------------------------------

    async def _read_line(self) -> bytes | None:
        """The next line, or None at EOF. An overlong line is answered and skipped."""
        loop = asyncio.get_running_loop()
        line: bytes = await loop.run_in_executor(None, self._source.readline, self._max_bytes + 1)
        if not line:
            return None
        if len(line) > self._max_bytes and not line.endswith(b"\n"):
            while (rest := await loop.run_in_executor(None, self._source.readline, 1 << 20)) and not rest.endswith(b"\n"):
                pass
            self._answer(None, ErrorCode.INVALID_REQUEST, f"Invalid request: a message longer than {self._max_bytes} bytes")
            return b""
        return line

    def _checked(self, line: bytes) -> dict[str, Any] | None:
        """The message, or None once it was answered with the error JSON-RPC prescribes
        (the same checks as the LSP front end: protocol/jsonrpc.py)."""
        try:
            return classify(decode(line.rstrip(b"\r\n"))).raw
        except RpcError as error:
            self._write(error.response())
            return None

    def _answer(self, request_id: Any, code: ErrorCode, message: str) -> None:
        """Answer from the reading side: the message never reached a handler."""
        self._write({"jsonrpc": "2.0", "id": request_id, "error": {"code": int(code), "message": message}})
