"""How `tiller serve` meets its client: LSP frames over stdio, or one TCP connection.

The reading loop is ours rather than pygls's `run_async` so that every message gets an
answer (a body that is not JSON gets -32700 with id null, JSON-RPC's rule for a message
whose id cannot be read) and a frame's size is bounded before anything is allocated.
Parsed messages go to pygls's protocol (`handle_message`), which dispatches them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Awaitable
from typing import Any, BinaryIO, Protocol

from pygls.protocol import JsonRPCProtocol

from ..protocol.errors import ErrorCode
from ..stdio import MAX_MESSAGE_BYTES, take_over_stdio
from ..telemetry import settings as telemetry
from .framing import CoalescingWriter, frame
from .log_messages import forward_logs_to_editor
from .methods import register
from .server import TillerLanguageServer

logger = logging.getLogger("tiller.lsp")

# A header line longer than this, or a body larger than this, is not an LSP frame we accept.
MAX_HEADER_LINE = 8 * 1024
MAX_FRAME_BYTES = MAX_MESSAGE_BYTES
_CONTENT_LENGTH = re.compile(rb"Content-Length: *(\d+)\r?\n", re.IGNORECASE)


class ByteReader(Protocol):
    def readline(self) -> Awaitable[bytes]: ...

    def readexactly(self, n: int) -> Awaitable[bytes]: ...


class ThreadedReader:
    """Blocking reads of a binary stream, each in the server's thread pool."""

    def __init__(self, stream: BinaryIO, executor: Any) -> None:
        self._stream = stream
        self._executor = executor

    def readline(self) -> Awaitable[bytes]:
        return asyncio.get_running_loop().run_in_executor(self._executor, self._stream.readline, MAX_HEADER_LINE)

    def readexactly(self, n: int) -> Awaitable[bytes]:
        return asyncio.get_running_loop().run_in_executor(self._executor, self._stream.read, n)


def create_server() -> TillerLanguageServer:
    server = TillerLanguageServer()
    register(server)
    forward_logs_to_editor(server)
    return server


async def read_messages(reader: ByteReader, protocol: JsonRPCProtocol) -> None:
    """Hand every framed message to `protocol` until the stream ends."""
    try:
        await _read_messages(reader, protocol)
    except (asyncio.IncompleteReadError, ConnectionError):
        return  # the stream ended inside a frame


async def _read_messages(reader: ByteReader, protocol: JsonRPCProtocol) -> None:
    length: int | None = None
    while True:
        line = await reader.readline()
        if not line:
            return  # EOF
        if line.strip():
            if (match := _CONTENT_LENGTH.fullmatch(line)) is not None:
                length = int(match.group(1))
            continue  # other headers (Content-Type) are allowed and ignored
        if length is None:
            continue  # a blank line outside a frame
        size, length = length, None
        if size > MAX_FRAME_BYTES:
            logger.error("Refusing a frame of %d bytes (the limit is %d)", size, MAX_FRAME_BYTES)
            return
        body = await reader.readexactly(size)
        if len(body) < size:
            return  # EOF inside a body
        _dispatch(body, protocol)


def _dispatch(body: bytes, protocol: JsonRPCProtocol) -> None:
    try:
        message = json.loads(body, object_hook=protocol.structure_message)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        _answer_parse_error(protocol, str(error))
        return
    except Exception as error:
        logger.error("Could not read a message: %s", error)
        return
    try:
        protocol.handle_message(message)
    except Exception as error:
        logger.exception("Could not handle a message: %s", error)


def _answer_parse_error(protocol: JsonRPCProtocol, reason: str) -> None:
    if protocol.writer is not None:
        protocol.writer.write(frame({"jsonrpc": "2.0", "id": None,
                                     "error": {"code": ErrorCode.PARSE_ERROR, "message": f"Parse error: {reason}"}}))


# --- stdio ----------------------------------------------------------------------------------


def serve_stdio() -> int:
    """Serve on stdio until EOF or `exit`. Only protocol bytes ever reach stdout."""
    protocol_in, protocol_out = take_over_stdio()
    server = create_server()
    writer = CoalescingWriter(protocol_out)
    return _run(server, ThreadedReader(protocol_in, server.thread_pool), writer)


def _run(server: TillerLanguageServer, reader: ByteReader, writer: CoalescingWriter) -> int:
    server.protocol.set_writer(writer)

    async def main() -> None:
        try:
            await read_messages(reader, server.protocol)
        finally:
            # EOF or exit: abort runs so that nothing keeps the process alive.
            await server.host.close_all(timeout=0.5)

    code = 0
    try:
        asyncio.run(main())
    except SystemExit as exit_:  # the `exit` notification
        code = int(exit_.code or 0)
    except BrokenPipeError:
        logger.error("The client closed the connection")
    except KeyboardInterrupt:
        code = 130
    writer.flush()  # the last answers (shutdown) must reach the client before we go
    telemetry.shutdown()  # spans still in the batch (os._exit skips atexit)
    sys.stderr.flush()
    # Worker threads (a local model mid-generation, the stdin reader) must not hold the
    # process open after the client is gone.
    os._exit(code)


# --- TCP (debugging) --------------------------------------------------------------------------


class _SocketOut:
    """A blocking-style `write`/`flush`/`close` over an asyncio stream writer."""

    def __init__(self, stream: asyncio.StreamWriter) -> None:
        self._stream = stream

    def write(self, data: bytes) -> None:
        self._stream.write(data)

    def flush(self) -> None:
        pass  # the transport writes as soon as it can

    def close(self) -> None:
        self._stream.close()


def serve_tcp(port: int, host: str = "127.0.0.1") -> int:
    """A debugging transport: one client at a time on `host:port`; the server ends when the
    first client disconnects (like stdio's EOF)."""
    sys.stdout = sys.stderr
    server = create_server()
    done = threading.Event()

    async def main() -> None:
        finished = asyncio.Event()

        async def connection(reader: asyncio.StreamReader, stream: asyncio.StreamWriter) -> None:
            if done.is_set():
                stream.close()
                return
            done.set()
            server.protocol.set_writer(CoalescingWriter(_SocketOut(stream)))
            try:
                await read_messages(reader, server.protocol)
            finally:
                await server.host.close_all(timeout=0.5)
                finished.set()

        listener = await asyncio.start_server(connection, host, port, limit=MAX_HEADER_LINE)
        logger.warning("tiller serve listening on %s:%d", host, port)
        async with listener:
            await finished.wait()

    try:
        asyncio.run(main())
    except SystemExit as exit_:
        return int(exit_.code or 0)
    finally:
        telemetry.shutdown()
    return 0
