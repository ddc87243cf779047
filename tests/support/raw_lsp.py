"""A bare LSP client for tests that must send what no well-behaved client would: arbitrary
bytes, frames with lying headers, requests before `initialize`.

It starts the real `python -m tiller serve`, writes raw bytes to its stdin and reads its
stdout strictly (every frame must be `Content-Length: N\\r\\n\\r\\n` + N bytes of JSON).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from pathlib import Path
from typing import Any

WAIT = 15.0


def frame(body: bytes | dict[str, Any] | list[Any]) -> bytes:
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class RawServer:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.received: list[dict[str, Any]] = []
        self._answers: dict[Any, dict[str, Any]] = {}  # the first answer to each id
        self._ids = itertools.count(1_000_000)
        self._arrived = asyncio.Condition()
        self._reader = asyncio.ensure_future(self._read_all())

    @classmethod
    async def start(cls, env: dict[str, str], cwd: Path, *args: str) -> RawServer:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tiller", "serve", *args, env=env, cwd=str(cwd),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            limit=256 * 1024 * 1024,
        )
        return cls(process)

    # --- writing ---------------------------------------------------------------------------

    async def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def send(self, message: dict[str, Any]) -> None:
        await self.write(frame(message))

    async def request(self, method: str, params: Any = None, timeout: float = WAIT) -> dict[str, Any]:
        """The whole answer message (`result` or `error`) to a fresh request."""
        msg_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.answer(msg_id, timeout)

    async def initialize(self, root: Path, **options: Any) -> dict[str, Any]:
        answer = await self.request("initialize", {
            "processId": None, "rootUri": root.as_uri(), "capabilities": {},
            "initializationOptions": options or None,
        })
        await self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return answer

    async def shutdown(self) -> int:
        await self.request("shutdown")
        await self.send({"jsonrpc": "2.0", "method": "exit"})
        return await asyncio.wait_for(self.process.wait(), WAIT)

    # --- reading ---------------------------------------------------------------------------

    async def _read_all(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            try:
                header = await stream.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as end:
                assert not end.partial.strip(), f"bytes after the last frame: {end.partial[:80]!r}"
                return
            fields = dict(line.split(b": ", 1) for line in header[:-4].split(b"\r\n"))
            assert set(fields) <= {b"Content-Length", b"Content-Type"}, f"not a frame header: {header[:80]!r}"
            body = await stream.readexactly(int(fields[b"Content-Length"]))
            message = json.loads(body)
            async with self._arrived:
                self.received.append(message)
                if "method" not in message and isinstance(message.get("id"), int | str):
                    self._answers.setdefault(message["id"], message)
                self._arrived.notify_all()

    async def wait_for(self, predicate: Any, timeout: float = WAIT) -> dict[str, Any]:
        async def find() -> dict[str, Any]:
            async with self._arrived:
                while True:
                    for message in self.received:
                        if predicate(message):
                            return message
                    await self._arrived.wait()

        return await asyncio.wait_for(find(), timeout)

    async def answer(self, msg_id: Any, timeout: float = WAIT) -> dict[str, Any]:
        async def find() -> dict[str, Any]:
            async with self._arrived:
                await self._arrived.wait_for(lambda: msg_id in self._answers)
                return self._answers[msg_id]

        return await asyncio.wait_for(find(), timeout)

    def answers(self) -> list[dict[str, Any]]:
        return [m for m in self.received if "method" not in m]

    async def close(self) -> None:
        """Kill the server if it still runs; fail if its stdout held anything but frames."""
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        done, _ = await asyncio.wait({self._reader}, timeout=WAIT)
        if not done:
            self._reader.cancel()
        elif (error := self._reader.exception()) is not None:
            raise error
