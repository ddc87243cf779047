"""An OpenAI-compatible chat-completions server on 127.0.0.1 for the latency benchmark.

It runs aiohttp on its own thread and event loop, so its pacing never waits on the client
being measured. Each request takes the next scripted reply: `script_instant()` (a short
answer, all at once) or `script_paced(n, seconds)` (chunks "0 ", "1 ", … written `seconds`
apart; `sent_at(i)` is when chunk i was written, on the same clock as the caller's
`time.perf_counter()`). Requests are counted by peer address: one per TCP connection.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from typing import Any

from aiohttp import web


def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1730000000, "model": "bench",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


USAGE = (b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1730000000,"model":"bench",'
         b'"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}\n\n')
END = [chunk({}, "stop"), USAGE, b"data: [DONE]\n\n"]


class LoopbackProvider:
    def __init__(self) -> None:
        self._replies: deque[tuple[int, float]] = deque()  # (paced chunks, pause) or (0, 0) for instant
        self._sent: dict[int, float] = {}
        self._peers: set[Any] = set()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="loopback-provider", daemon=True)
        self._thread.start()
        port = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        self.url = f"http://127.0.0.1:{port}"

    def script_instant(self) -> None:
        with self._lock:
            self._replies.append((0, 0.0))

    def script_paced(self, chunks: int, pause: float) -> None:
        with self._lock:
            self._sent.clear()
            self._replies.append((chunks, pause))

    def sent_at(self, index: int) -> float | None:
        with self._lock:
            return self._sent.get(index)

    def reset_peers(self) -> None:
        with self._lock:
            self._peers.clear()

    def peer_count(self) -> int:
        with self._lock:
            return len(self._peers)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _start(self) -> int:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(self._runner, sock).start()
        return sock.getsockname()[1]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        with self._lock:
            self._peers.add(request.transport.get_extra_info("peername") if request.transport else None)
            chunks, pause = self._replies.popleft() if self._replies else (0, 0.0)
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(chunk({"role": "assistant", "content": ""}))
        if chunks == 0:
            await response.write(chunk({"content": "Hello there."}))
        for index in range(chunks):
            await asyncio.sleep(pause)
            with self._lock:
                self._sent[index] = time.perf_counter()
            await response.write(chunk({"content": f"{index} "}))
        for piece in END:
            await response.write(piece)
        await response.write_eof()
        return response
