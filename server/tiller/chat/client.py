"""A small asyncio JSON-RPC client for tiller's `agent/*` protocol: no terminal code here.

Why not pygls's `LanguageClient`? It was considered (see the pygls reference notes) and a
direct client over the subprocess pipes was preferred:

- pygls structures every custom-method *result* into nested namedtuples (renaming keys such
  as `_meta` or `from`), so an `agent/prompt` answer would need a custom converter, exactly
  as the server needed one; here results and events stay the plain dicts that went on the
  wire, which is also what `--json` prints;
- pygls's client reads stdout in its thread pool and goes through cattrs for every frame;
  this client decodes Content-Length frames from large `read()`s on the event loop and
  calls the notification callback synchronously, in wire order, before the response that
  follows them resolves — so a caller that awaits `agent/prompt` has seen every event of
  the run when the answer arrives;
- the client process never imports pygls, lsprotocol or cattrs (a faster start), and the
  benchmark in `bench/` reuses the same framing and dispatch to read both tiller and a
  bare writer, so the comparison measures the server only.

Layers: `FrameDecoder` (bytes -> message bodies), `JsonRpcConnection` (requests, responses,
notifications over any asyncio reader/writer pair), `AgentClient` (the tiller server as a
subprocess: spawn, `initialize`, the `agent/*` methods, `shutdown` + `exit`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from .. import __version__

Notification = Callable[[str, Any], None]
ServerRequest = Callable[[str, Any], Any]  # returns the result (or an awaitable of it)

METHOD_NOT_FOUND = -32601
READ_SIZE = 1 << 16


class RpcError(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def __str__(self) -> str:
        return self.message


class ConnectionLost(ConnectionError):
    """The server closed its output (exited or crashed) before answering."""


class FramingError(ValueError):
    pass


class FrameDecoder:
    """Splits a byte stream into the bodies of `Content-Length`-framed messages."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._length: int | None = None  # the body length of the frame being read

    def feed(self, data: bytes) -> list[bytes]:
        buffer = self._buffer
        buffer += data
        bodies: list[bytes] = []
        position = 0
        while True:
            if self._length is None:
                end = buffer.find(b"\r\n\r\n", position)
                if end < 0:
                    break
                self._length = _content_length(bytes(buffer[position:end]))
                position = end + 4
            if len(buffer) - position < self._length:
                break
            bodies.append(bytes(buffer[position : position + self._length]))
            position += self._length
            self._length = None
        if position:
            del buffer[:position]
        return bodies

    @property
    def pending(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._buffer)


def _content_length(header: bytes) -> int:
    for line in header.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return int(value.strip())
            except ValueError:
                break
    raise FramingError(f"frame header without a valid Content-Length: {header[:200]!r}")


def encode_frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class JsonRpcConnection:
    """JSON-RPC 2.0 over one reader/writer pair with LSP (`Content-Length`) framing.

    Notifications go to `on_notification(method, params)`, synchronously and in wire
    order. Requests from the server go to `on_request(method, params)`; without a handler
    they are answered with -32601 so the server never waits on us.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        on_notification: Notification | None = None,
        on_request: ServerRequest | None = None,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.on_notification = on_notification
        self.on_request = on_request
        self.bytes_received = 0
        self.frames_received = 0
        self._decoder = FrameDecoder()
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._answering: set[asyncio.Task[None]] = set()
        self._task: asyncio.Task[None] | None = None
        self._closed_error: BaseException | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._read_loop())

    @property
    def closed(self) -> bool:
        return self._closed_error is not None

    async def wait_closed(self) -> None:
        if self._task is not None:
            await asyncio.shield(self._task)

    # --- sending --------------------------------------------------------------------------

    async def request(self, method: str, params: Any = None) -> Any:
        if self._closed_error is not None:
            raise ConnectionLost(str(self._closed_error))
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self._write(message)
            await self.writer.drain()
            return await future
        finally:
            self._pending.pop(request_id, None)

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    def _write(self, message: dict[str, Any]) -> None:
        if self.writer.is_closing():
            raise ConnectionLost("the connection to the server is closed")
        self.writer.write(encode_frame(message))

    # --- receiving ------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        error: BaseException = ConnectionLost("the server closed the connection")
        try:
            while True:
                data = await self.reader.read(READ_SIZE)
                if not data:
                    break
                self.bytes_received += len(data)
                for body in self._decoder.feed(data):
                    self.frames_received += 1
                    self._dispatch(json.loads(body))
        except (FramingError, ValueError) as exc:  # a corrupt stream cannot be resynchronised
            error = ConnectionLost(f"unreadable message from the server: {exc}")
        except (ConnectionError, OSError) as exc:
            error = ConnectionLost(f"lost the connection to the server: {exc}")
        finally:
            self._closed_error = error
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(error)

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if method is None:  # a response
            future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if future is None or future.done():
                return
            if "error" in message and message["error"] is not None:
                error = message["error"]
                future.set_exception(RpcError(error.get("code", 0), error.get("message", ""), error.get("data")))
            else:
                future.set_result(message.get("result"))
        elif "id" in message:  # a request from the server
            task = asyncio.create_task(self._answer(message["id"], method, message.get("params")))
            self._answering.add(task)  # a task nobody references may be garbage-collected mid-run
            task.add_done_callback(self._answering.discard)
        elif self.on_notification is not None:
            self.on_notification(method, message.get("params"))

    async def _answer(self, request_id: Any, method: str, params: Any) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if self.on_request is None:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"Method Not Found: {method}"}
        else:
            try:
                result = self.on_request(method, params)
                reply["result"] = await result if inspect.isawaitable(result) else result
            except RpcError as error:
                reply["error"] = {"code": error.code, "message": error.message}
            except Exception as error:
                reply["error"] = {"code": -32603, "message": f"{type(error).__name__}: {error}"}
        try:
            self._write(reply)
        except ConnectionLost:
            pass


EventCallback = Callable[[dict[str, Any]], None]


class AgentClient:
    """`tiller serve` as a subprocess, spoken to like an editor would.

    `on_event` receives every `agent/event` notification's params
    (`{"sessionId", "seq", "event"}`), in order. Other notifications (e.g.
    `window/showMessage`) go to `on_notification`.
    """

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        on_event: EventCallback | None = None,
        on_notification: Notification | None = None,
    ) -> None:
        self.process = process
        self.on_event = on_event
        self.on_other_notification = on_notification
        assert process.stdout is not None and process.stdin is not None
        self.connection = JsonRpcConnection(process.stdout, process.stdin, self._on_notification)
        self.connection.start()
        self.server_info: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}

    @classmethod
    async def spawn(
        cls,
        command: list[str] | None = None,
        *,
        env: dict[str, str] | None = None,
        stderr: IO[Any] | int | None = None,
        on_event: EventCallback | None = None,
        on_notification: Notification | None = None,
    ) -> AgentClient:
        """Start `python -m tiller serve` (or `command`). The server gets its own session
        (process group) so that a Ctrl-C on the terminal reaches only the client, which
        turns it into `agent/abort`."""
        command = command or [sys.executable, "-m", "tiller", "serve"]
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=env,
            start_new_session=True,
        )
        return cls(process, on_event=on_event, on_notification=on_notification)

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "agent/event":
            if self.on_event is not None:
                self.on_event(params)
        elif self.on_other_notification is not None:
            self.on_other_notification(method, params)

    async def request(self, method: str, params: Any = None) -> Any:
        return await self.connection.request(method, params)

    # --- lifecycle ------------------------------------------------------------------------

    async def initialize(self, root: str | os.PathLike[str], *, client_name: str = "tiller-chat",
                         initialization_options: dict[str, Any] | None = None,
                         approvals: bool = False) -> dict[str, Any]:
        """`initialize` + `initialized`; fails unless the server speaks the tiller protocol.
        `approvals`: this client shows `approval_request` events and answers them."""
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "clientInfo": {"name": client_name, "version": __version__},
            "rootUri": Path(root).resolve().as_uri(),
            "capabilities": {"experimental": {"tiller": {"approvals": True} if approvals else {}}},
        }
        if initialization_options:
            params["initializationOptions"] = initialization_options
        result = await self.request("initialize", params)
        self.server_info = result.get("serverInfo") or {}
        self.server_capabilities = result.get("capabilities") or {}
        tiller = (self.server_capabilities.get("experimental") or {}).get("tiller")
        if not isinstance(tiller, dict):
            raise RpcError(0, "the server does not advertise the tiller protocol (capabilities.experimental.tiller)")
        self.connection.notify("initialized", {})
        return result

    async def shutdown(self, timeout: float = 5.0) -> int:
        """`shutdown` then `exit`; waits for the process (killing it after `timeout`)."""
        if not self.connection.closed:
            try:
                await asyncio.wait_for(self.request("shutdown"), timeout)
                self.connection.notify("exit")
            except (TimeoutError, RpcError, ConnectionError):
                pass
        return await self.close(timeout)

    async def close(self, timeout: float = 5.0) -> int:
        """Close our end of the pipe and wait for the server to go (kill it if it won't)."""
        writer = self.process.stdin
        if writer is not None and not writer.is_closing():
            writer.close()
        try:
            return await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            self.process.kill()
            return await self.process.wait()

    # --- agent/* --------------------------------------------------------------------------

    async def new_session(self, *, cwd: str | None = None, model: str | None = None,
                          system_prompt: str | None = None, thinking_level: str | None = None,
                          tools: list[str] | None = None, approval_mode: str | None = None) -> dict[str, Any]:
        params = _without_none(cwd=cwd, model=model, systemPrompt=system_prompt,
                               thinkingLevel=thinking_level, tools=tools, approvalMode=approval_mode)
        return await self.request("agent/newSession", params)

    async def prompt(self, session_id: str, text: str, *, streaming_behavior: str | None = None,
                     context: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        params = _without_none(sessionId=session_id, text=text, streamingBehavior=streaming_behavior,
                               context=context)
        return await self.request("agent/prompt", params)

    async def steer(self, session_id: str, text: str) -> dict[str, Any]:
        return await self.request("agent/steer", {"sessionId": session_id, "text": text})

    async def follow_up(self, session_id: str, text: str) -> dict[str, Any]:
        return await self.request("agent/followUp", {"sessionId": session_id, "text": text})

    async def abort(self, session_id: str) -> None:
        await self.request("agent/abort", {"sessionId": session_id})

    async def clear_queue(self, session_id: str) -> dict[str, Any]:
        return await self.request("agent/clearQueue", {"sessionId": session_id})

    async def get_state(self, session_id: str) -> dict[str, Any]:
        return await self.request("agent/getState", {"sessionId": session_id})


def _without_none(**fields: Any) -> dict[str, Any]:
    return {key: value for key, value in fields.items() if value is not None}

