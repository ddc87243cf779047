"""Drive the real `python -m tiller acp` process with the ACP SDK's own client.

`running_acp` spawns the agent with `acp.spawn_agent_process` and yields a `Session`: the
SDK's `ClientSideConnection` plus an `EditorClient` that plays the editor: it records every
`session/update`, answers `session/request_permission` with a policy the test sets, serves
`fs/read_text_file` / `fs/write_text_file` from in-memory buffers when it declares them, and
taps every raw message in both directions. On the way out it checks that no API key crossed
the wire.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from tests.server.harness import SECRET, WAIT

Answer = Callable[[Any], str | None]  # a permission request -> the option id, or None to cancel


@dataclass
class EditorClient:
    """The editor side of ACP (the SDK's `Client` protocol)."""

    buffers: dict[str, str] = field(default_factory=dict)  # path -> unsaved text (client fs)
    updates: list[tuple[str, Any]] = field(default_factory=list)  # (session id, update)
    permission_requests: list[Any] = field(default_factory=list)
    written: list[tuple[str, str]] = field(default_factory=list)  # fs/write_text_file calls
    answer: Answer = lambda request: "allow_once"
    held_permissions: list[asyncio.Future[str | None]] = field(default_factory=list)
    hold_permissions: bool = False

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.permission_requests.append({"session_id": session_id, "tool_call": tool_call, "options": options})
        if self.hold_permissions:
            future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
            self.held_permissions.append(future)
            option = await future
        else:
            option = self.answer(tool_call)
        if option is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        text = self.buffers[path] if path in self.buffers else Path(path).read_text()
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str,
                              **kwargs: Any) -> WriteTextFileResponse | None:
        self.written.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        pass

    # --- reading what arrived --------------------------------------------------------------

    def kinds(self, session_id: str) -> list[str]:
        return [u.session_update for s, u in self.updates if s == session_id]

    def of_kind(self, session_id: str, kind: str) -> list[Any]:
        return [u for s, u in self.updates if s == session_id and u.session_update == kind]

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of_kind(session_id, kind))


@dataclass
class Acp:
    connection: ClientSideConnection
    editor: EditorClient
    process: asyncio.subprocess.Process
    wire: list[StreamEvent]

    async def start(self, *, fs: bool = False) -> Any:
        capabilities = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=False
        )
        return await asyncio.wait_for(
            self.connection.initialize(protocol_version=1, client_capabilities=capabilities), WAIT
        )

    async def new_session(self, cwd: Path) -> str:
        result = await asyncio.wait_for(self.connection.new_session(cwd=str(cwd), mcp_servers=[]), WAIT)
        return str(result.session_id)

    async def prompt(self, session_id: str, text: str, timeout: float = WAIT) -> Any:
        return await asyncio.wait_for(
            self.connection.prompt(session_id=session_id, prompt=[text_block(text)]), timeout
        )

    def write_raw(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line)

    def incoming(self) -> list[dict[str, Any]]:
        return [e.message for e in self.wire if e.direction == StreamDirection.INCOMING]

    async def wait_incoming(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = WAIT) -> dict[str, Any]:
        async def poll() -> dict[str, Any]:
            while True:
                for message in self.incoming():
                    if predicate(message):
                        return message
                await asyncio.sleep(0.01)

        return await asyncio.wait_for(poll(), timeout)

    async def wait_update(self, session_id: str, predicate: Callable[[Any], bool], timeout: float = WAIT) -> Any:
        async def poll() -> Any:
            while True:
                for sid, update in self.editor.updates:
                    if sid == session_id and predicate(update):
                        return update
                await asyncio.sleep(0.01)

        return await asyncio.wait_for(poll(), timeout)


@asynccontextmanager
async def running_acp(env: dict[str, str], cwd: Path, editor: EditorClient | None = None) -> AsyncIterator[Acp]:
    editor = editor or EditorClient()
    wire: list[StreamEvent] = []
    async with spawn_agent_process(
        editor, sys.executable, "-m", "tiller", "acp", env=env, cwd=cwd, transport_kwargs={"stderr": None},
        observers=[wire.append],
    ) as (connection, process):
        yield Acp(connection, editor, process, wire)
    assert SECRET not in json.dumps([e.message for e in wire]), "an API key crossed the wire"
