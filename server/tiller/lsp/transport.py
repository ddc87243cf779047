"""How `tiller serve` meets its client: LSP frames over stdio, or one TCP connection.

The reading loop is ours rather than pygls's `run_async`: frames are cut by `FrameReader`
(bounded in size, resynchronising after anything malformed) and every message is checked by
the `Dispatcher` (every request gets an answer, as JSON-RPC and LSP prescribe) before pygls's
protocol dispatches it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Awaitable
from typing import Any, BinaryIO, NoReturn

from ..environment import catalog_withholding_secrets
from ..process_exit import cancel_leftover_tasks
from ..stdio import take_over_stdio
from ..telemetry import settings as telemetry
from .dispatch import Dispatcher, dispatch_frames
from .frames import DEFAULT_MAX_FRAME_BYTES, FrameReader, Read
from .framing import CoalescingWriter
from .log_messages import forward_logs_to_editor
from .methods import register
from .server import TillerLanguageServer

logger = logging.getLogger("tiller.lsp")


class ThreadedReader:
    """Blocking reads of a binary stream, each in the server's thread pool."""

    def __init__(self, stream: BinaryIO, executor: Any) -> None:
        self._stream = stream
        self._executor = executor

    def __call__(self, n: int) -> Awaitable[bytes]:
        read = getattr(self._stream, "read1", self._stream.read)  # what has arrived, up to n
        return asyncio.get_running_loop().run_in_executor(self._executor, read, n)


def create_server() -> TillerLanguageServer:
    # The catalogue reads the keys first; then they leave the process environment, which
    # every command a tool runs could otherwise read (environment.py).
    server = TillerLanguageServer(catalog_withholding_secrets())
    register(server)
    forward_logs_to_editor(server)
    return server


async def read_messages(read: Read, server: TillerLanguageServer, max_frame_bytes: int) -> None:
    """Hand every framed message to the server until the stream ends."""
    reader = FrameReader(read, max_frame_bytes)
    try:
        await dispatch_frames(reader, Dispatcher(server.protocol, reader))
    except ConnectionError:
        return


# --- stdio ----------------------------------------------------------------------------------


def serve_stdio(max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> int:
    """Serve on stdio until EOF or `exit`. Only protocol bytes ever reach stdout."""
    protocol_in, protocol_out = take_over_stdio()
    server = create_server()
    writer = CoalescingWriter(protocol_out)
    return _run(server, ThreadedReader(protocol_in, server.thread_pool), writer, max_frame_bytes)


def _run(server: TillerLanguageServer, read: Read, writer: CoalescingWriter, max_frame_bytes: int) -> int:
    server.protocol.set_writer(writer)

    async def main() -> None:
        try:
            await read_messages(read, server, max_frame_bytes)
        finally:
            # EOF or exit: abort runs so that nothing keeps the process alive.
            await server.host.close_all(timeout=0.5)
            if await cancel_leftover_tasks():
                ending = sys.exc_info()[1]
                _finish(writer, int(ending.code or 0) if isinstance(ending, SystemExit) else 0)

    code = 0
    try:
        asyncio.run(main())
    except SystemExit as exit_:  # the `exit` notification
        code = int(exit_.code or 0)
    except BrokenPipeError:
        logger.error("The client closed the connection")
    except KeyboardInterrupt:
        code = 130
    _finish(writer, code)


def _finish(writer: CoalescingWriter, code: int) -> NoReturn:
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


def serve_tcp(port: int, host: str = "127.0.0.1", max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> int:
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
                await read_messages(reader.read, server, max_frame_bytes)
            finally:
                await server.host.close_all(timeout=0.5)
                finished.set()

        listener = await asyncio.start_server(connection, host, port)
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
