"""A scripted loopback HTTP server for tests that drive real HTTP clients.

The server runs aiohttp on its own event loop in a background thread, bound to
127.0.0.1 on a free port, so the code under test talks real HTTP over real sockets.
Each incoming request (any method, any path) is answered with the next scripted `Reply`,
and recorded (`server.requests`) with its headers and body::

    with SSEServer() as server:
        server.reply(
            Reply(chunks=[b'data: {"x": 1}\\n\\n', 0.05, b"data: [DONE]\\n\\n"]),
        )
        ...  # point a client at server.url
        assert server.requests[0].json["stream"] is True

A `Reply` can stream byte chunks with pauses between them, delay its headers, end by
resetting the TCP connection, or stall until the client goes away. With no reply left,
the server answers 500 so a missing script shows up as a test failure, unless a
`responder` is set: then it makes the answer to each request not scripted in advance
(a model that answers what it is asked, tests/support/windowed_model.py).
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from aiohttp import web

# How often a pausing handler checks whether the client is gone or the server stops.
_POLL = 0.01


@dataclass
class Reply:
    """One scripted response.

    - `chunks`: raw bytes written to the body as they are, in order; a float between
      them is a pause of that many seconds (so each piece reaches the client alone).
    - `headers`: a 200 defaults to `content-type: text/event-stream`, others to JSON.
    - `delay`: seconds to wait before sending the status line and headers.
    - `reset`: after the chunks, reset the connection (TCP RST) instead of ending the body.
    - `stall`: after the chunks, keep the connection open until the client closes it.
    """

    status: int = 200
    chunks: Sequence[bytes | float] = ()
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    reset: bool = False
    stall: bool = False

    @classmethod
    def json(cls, status: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
        """A complete JSON answer, typically a vendor's error body."""
        return cls(status=status, chunks=[json.dumps(body).encode()], headers=headers or {})


@dataclass
class Request:
    """What the server received. Header names are lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    # The client's (host, port): one per TCP connection, so distinct peers count connections.
    peer: tuple[str, int] | None = None
    # Set when a delayed or stalled reply saw the client close the connection.
    disconnected: threading.Event = field(default_factory=threading.Event)
    query: str = ""  # the raw query string, without "?"

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class SSEServer:
    """Start on construction (or `with`); `close()` stops it. `url` has no trailing slash."""

    def __init__(self, responder: Callable[[Request], Reply] | None = None) -> None:
        self.requests: list[Request] = []
        self.responder = responder
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._closing = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sse-server", daemon=True)
        self._thread.start()
        self._runner: web.AppRunner | None = None
        port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        self.url = f"http://127.0.0.1:{port}"

    def reply(self, *replies: Reply) -> None:
        """Queue replies; each request takes the next one."""
        with self._lock:
            self._replies.extend(replies)

    @property
    def connections(self) -> int:
        """How many TCP connections the requests so far came over."""
        return len({request.peer for request in self.requests})

    async def wait_for_requests(self, count: int, timeout: float = 5.0) -> None:
        """Wait (in the test's event loop) until `count` requests have arrived."""
        with anyio.fail_after(timeout):
            while len(self.requests) < count:
                await anyio.sleep(_POLL)

    def close(self) -> None:
        self._closing = True
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> SSEServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- inside the server's loop ----------------------------------------------------------

    async def _start(self) -> int:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(self._runner, sock).start()
        return sock.getsockname()[1]

    async def _handle(self, http_request: web.Request) -> web.StreamResponse:
        body = await http_request.read()
        recorded = Request(
            method=http_request.method,
            path=http_request.path,
            headers={k.lower(): v for k, v in http_request.headers.items()},
            body=body,
            query=http_request.query_string,
            peer=http_request.transport.get_extra_info("peername") if http_request.transport else None,
        )
        with self._lock:
            self.requests.append(recorded)
            scripted = self._replies.popleft() if self._replies else None
        if scripted is not None:
            reply = scripted
        elif self.responder is not None:
            reply = self.responder(recorded)
        else:
            reply = Reply.json(500, {"error": {"message": "SSEServer: no reply scripted for this request"}})

        if not await self._pause(http_request, recorded, reply.delay):
            return web.Response(status=499)
        default_type = "text/event-stream" if reply.status == 200 else "application/json"
        response = web.StreamResponse(
            status=reply.status, headers={"content-type": default_type, **reply.headers}
        )
        await response.prepare(http_request)
        for chunk in reply.chunks:
            if isinstance(chunk, (int, float)):
                if not await self._pause(http_request, recorded, float(chunk)):
                    return response
            else:
                await response.write(chunk)
        if reply.reset:
            _reset(http_request)
            return response
        if reply.stall:
            await self._pause(http_request, recorded, float("inf"))
            return response
        await response.write_eof()
        return response

    async def _pause(self, http_request: web.Request, recorded: Request, seconds: float) -> bool:
        """Sleep up to `seconds`; False (and `disconnected` set) if the client left first."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while loop.time() < deadline and not self._closing:
            transport = http_request.transport
            if transport is None or transport.is_closing():
                recorded.disconnected.set()
                return False
            await asyncio.sleep(min(_POLL, max(0.0, deadline - loop.time())))
        return True


def _reset(http_request: web.Request) -> None:
    """Drop the connection with a TCP RST, as a crashed server or a proxy would."""
    transport = http_request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
