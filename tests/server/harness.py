"""Drive the real `python -m tiller serve` process over LSP framing, as an editor would.

`running_tiller` starts one server subprocess with its own environment (a faux script, an
OpenAI loopback URL, ...) and yields a `TillerClient`: a pytest-lsp client whose results and
`agent/event` params are plain dicts, that remembers every event and every message it
received, that answers `workspace/applyEdit` as an editor would (recording each), and that
reads the server's stdout strictly (a stray byte outside a frame is recorded, where pygls's
own reader would silently skip it). On the way out it checks that
the stream was clean, that no API key ever crossed the wire, that every `agent/event` and
every `agent/*` result matched its type in the generated JSON Schema (a renamed key fails the
test that received it), and that the server exits 0 after `shutdown` + `exit`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.io_ import run_async
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import forward_stderr, register_lsp_features
from pytest_lsp.protocol import LanguageClientProtocol

from tests.support.rebuild import rebuild  # noqa: F401  (re-exported for the tests)
from tests.support.sse_server import SSEServer
from tests.support.wire_schema import schema_errors
from tiller.lsp.server import dict_params_converter

# Present in every server's environment; must never appear in anything the server sends.
SECRET = "sk-test-SECRET"
FAUX = "faux/faux-1"
# How long any single wait on the server may take before the test fails (not a timing
# assertion: a healthy run answers in milliseconds).
WAIT = 30.0

Event = dict[str, Any]



# --- the client --------------------------------------------------------------------------


def dict_converter() -> Any:
    """The server's own converter: custom-method params and results stay plain dicts."""
    return dict_params_converter()


class StrictReader:
    """The server's stdout as pygls reads it, except that every line read where a header
    belongs must be a header: anything else is a stray write that corrupted the stream."""

    HEADER = re.compile(rb"(Content-Length: \d+|Content-Type: [^\r\n]*)?\r\n")

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.stream = stream
        self.stray: list[bytes] = []

    async def readline(self) -> bytes:
        line = await self.stream.readline()
        if line and not self.HEADER.fullmatch(line):
            self.stray.append(line)
        return line

    async def readexactly(self, n: int) -> bytes:
        return await self.stream.readexactly(n)


class RecordingProtocol(LanguageClientProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        # Called bottom-up for every JSON object; the envelope is the one with "jsonrpc".
        if "jsonrpc" in data:
            self._server._check_shape(data)
            self._server._arrived(self._server.received, data)
        return super().structure_message(data)


class Pending:
    """A request on its way: `await pending.result()`; `events_before` is how many
    `agent/event` notifications had arrived when the answer did."""

    def __init__(self, client: TillerClient, msg_id: int, method: str, params: Any) -> None:
        self.msg_id = msg_id
        self.events_before: int | None = None

        def on_answer(_: Any) -> None:
            self.events_before = len(client.events)

        # Done callbacks run inside the client's message handling, so the count is exact.
        self.future = client.protocol.send_request(method, params, msg_id=msg_id)
        self.future.add_done_callback(on_answer)

    async def result(self, timeout: float = WAIT) -> Any:
        return await asyncio.wait_for(asyncio.wrap_future(self.future), timeout)


class TillerClient(LanguageClient):
    _ids = itertools.count(1)

    def __init__(self) -> None:
        super().__init__(protocol_cls=RecordingProtocol, converter_factory=dict_converter)
        register_lsp_features(self)
        self.events: list[Event] = []  # agent/event params, in arrival order
        self.methods_sent: dict[int, str] = {}  # request id -> method
        self.schema_violations: list[str] = []
        self.received: list[dict[str, Any]] = []  # every message from the server, raw JSON
        self.wire: StrictReader | None = None
        self.initialize_result: types.InitializeResult | None = None
        self.buffers: dict[str, tuple[str, int]] = {}  # uri -> (text, version) of open documents
        self._waiters: list[tuple[list[Any], Callable[[Any], bool], asyncio.Future[Any]]] = []

        def on_event(params: Any) -> None:  # a plain function: pygls tags what it registers
            self._arrived(self.events, params)

        self.feature("agent/event")(on_event)

        # workspace/applyEdit, as an editor answers it: every request's params are recorded
        # as raw JSON, and `answer_apply_edit(params)` gives the answer (default: applied;
        # None: an editor that hangs, until `release_hung_edits()` has it answer, too late).
        self.applied_edits: list[dict[str, Any]] = []
        self.answer_apply_edit: Callable[[dict[str, Any]], dict[str, Any] | None] = lambda params: {"applied": True}

        def on_apply_edit(_: Any) -> Any:
            # A generator runs its first part as the message is read: the last one received
            # is this one. What it yields, pygls runs before answering.
            raw = next(m for m in reversed(self.received) if m.get("method") == types.WORKSPACE_APPLY_EDIT)
            self.applied_edits.append(raw["params"])
            answer = self.answer_apply_edit(raw["params"])
            if answer is None:
                answer = yield self._late_answer, (), {}
            return answer

        self.feature(types.WORKSPACE_APPLY_EDIT)(on_apply_edit)
        self._hung_edits = asyncio.Event()

    async def _late_answer(self) -> dict[str, Any]:
        await self._hung_edits.wait()
        return {"applied": False, "failureReason": "answered too late"}

    def release_hung_edits(self) -> None:
        self._hung_edits.set()

    async def start_io(self, cmd: str, *args: str, **kwargs: Any) -> None:
        # pygls's start_io, reading through a StrictReader.
        server = await asyncio.create_subprocess_exec(
            cmd, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, **kwargs,
        )
        assert server.stdin is not None and server.stdout is not None
        self.protocol.set_writer(server.stdin)
        self.wire = StrictReader(server.stdout)
        self._server = server
        self._async_tasks.extend([
            asyncio.create_task(run_async(stop_event=self._stop_event, reader=self.wire, protocol=self.protocol,
                                          error_handler=self.report_server_error)),
            asyncio.create_task(self._server_exit()),
        ])
        self._stderr_forwarder = asyncio.create_task(forward_stderr(server))

    @property
    def process(self) -> asyncio.subprocess.Process:
        assert self._server is not None
        return self._server

    # --- requests ------------------------------------------------------------------------

    def send(self, method: str, params: Any = None) -> Pending:
        msg_id = next(self._ids)
        self.methods_sent[msg_id] = method
        return Pending(self, msg_id, method, params)

    def _check_shape(self, message: dict[str, Any]) -> None:
        """Every agent/event and every agent/* result must be what the schema declares."""
        if message.get("method") == "agent/event":
            problems = schema_errors("EventNotification", message.get("params"))
            where = "agent/event"
        elif "result" in message and (method := self.methods_sent.get(message.get("id"))):  # type: ignore[arg-type]
            problems = schema_errors(method, message["result"], result_of=True)
            where = f"the result of {method}"
        else:
            return
        self.schema_violations += [f"{where}: {problem}" for problem in problems]

    async def request(self, method: str, params: Any = None) -> Any:
        return await self.send(method, params).result()

    def cancel(self, pending: Pending) -> None:
        self.cancel_request(types.CancelParams(id=pending.msg_id))

    def write_raw(self, data: bytes) -> None:
        self.protocol.writer.write(data)

    # --- events --------------------------------------------------------------------------

    def _arrived(self, items: list[Any], item: Any) -> None:
        items.append(item)
        for waiter in list(self._waiters):
            source, predicate, future = waiter
            if source is items and not future.done() and predicate(item):
                future.set_result(item)
                self._waiters.remove(waiter)

    async def _wait(self, items: list[Any], predicate: Callable[[Any], bool], timeout: float) -> Any:
        """The first item (already there or still to come) that matches."""
        for item in items:
            if predicate(item):
                return item
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiters.append((items, predicate, future))
        return await asyncio.wait_for(future, timeout)

    async def wait_event(self, predicate: Callable[[Event], bool], timeout: float = WAIT) -> Event:
        """The first `agent/event` params that match."""
        return await self._wait(self.events, predicate, timeout)

    async def wait_message(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = WAIT) -> dict[str, Any]:
        """The first message from the server (raw JSON) that matches."""
        return await self._wait(self.received, predicate, timeout)

    async def wait_streaming(self, session_id: str, run: int = 1) -> Event:
        """The first text delta of the session's `run`-th run: its reply is streaming."""
        runs = 0

        def match(params: Event) -> bool:
            nonlocal runs
            if params["sessionId"] != session_id:
                return False
            event = params["event"]
            if event["type"] == "agent_start":
                runs += 1
            return runs == run and event.get("assistantMessageEvent", {}).get("type") == "text_delta"

        return await self.wait_event(match)

    def session_events(self, session_id: str, upto: int | None = None) -> list[Event]:
        """The session's notifications (sessionId, seq, event) among the first `upto` received."""
        return [p for p in self.events[:upto] if p["sessionId"] == session_id]

    # --- agent/* shortcuts ---------------------------------------------------------------

    async def new_session(self, **params: Any) -> str:
        result = await self.request("agent/newSession", params)
        return result["sessionId"]

    def prompt(self, session_id: str, text: str, **params: Any) -> Pending:
        return self.send("agent/prompt", {"sessionId": session_id, "text": text, **params})

    async def wait_approval(self, session_id: str, nth: int = 1) -> Event:
        """The session's `nth` approval_request event (already there or still to come)."""
        seen = 0

        def match(params: Event) -> bool:
            nonlocal seen
            if params["sessionId"] == session_id and params["event"]["type"] == "approval_request":
                seen += 1
            return seen == nth

        return (await self.wait_event(match))["event"]

    async def respond(self, session_id: str, approval_id: str, option_id: str, message: str | None = None) -> Any:
        params = {"sessionId": session_id, "approvalId": approval_id, "optionId": option_id}
        if message is not None:
            params["message"] = message
        return await self.request("agent/respondApproval", params)

    def events_of(self, session_id: str, *kinds: str) -> list[Event]:
        """The session's events (the `event` objects) of the given types, in order."""
        return [p["event"] for p in self.events if p["sessionId"] == session_id and p["event"]["type"] in kinds]

    # --- text document sync --------------------------------------------------------------

    def open_document(
        self, path: Path, text: str, version: int = 1, language_id: str = "plaintext", uri: str | None = None
    ) -> None:
        """didOpen `path` (under `uri`, if the editor spells it its own way)."""
        uri = uri or path.as_uri()
        self.buffers[uri] = (text, version)
        self.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri, language_id=language_id, version=version, text=text,
        )))

    def change_document(self, path: Path, text: str, version: int, uri: str | None = None) -> None:
        """A whole-buffer didChange to `version`, as when the user types."""
        uri = uri or path.as_uri()
        self.buffers[uri] = (text, version)
        self.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        ))

    def edit_like_an_editor(self, encoding: str = "utf-16", sync_delay: float | None = None) -> None:
        """Answer `workspace/applyEdit` as an editor does: apply the text edits to the open
        buffers (documentChanges or the `changes` map, positions in `encoding`), sync each
        with a whole-buffer didChange to the next version, and answer `applied: true`. The
        didChange goes out before the answer (VS Code), or `sync_delay` seconds after it
        (Neovim debounces its didChange)."""

        def answer(params: dict[str, Any]) -> dict[str, Any]:
            edit = params["edit"]
            changes = {c["textDocument"]["uri"]: c["edits"] for c in edit.get("documentChanges", [])
                       if "textDocument" in c and c["textDocument"]["uri"] in self.buffers}
            changes.update(edit.get("changes", {}))
            for uri, edits in changes.items():
                text, version = self.buffers[uri]
                edited = apply_text_edits(text, edits, encoding)
                if sync_delay is None:
                    self.change_document(Path(), edited, version + 1, uri=uri)
                else:
                    self.buffers[uri] = (edited, version + 1)
                    asyncio.get_running_loop().call_later(
                        sync_delay, lambda u=uri, t=edited, v=version + 1: self.change_document(Path(), t, v, uri=u))
            return {"applied": True}

        self.answer_apply_edit = answer


def apply_text_edits(text: str, edits: list[dict[str, Any]], encoding: str = "utf-16") -> str:
    """`text` with LSP `edits` (raw JSON, positions counted in `encoding`) applied, as an
    editor applies them: every range refers to the text before any edit."""
    codec, width = {"utf-8": ("utf-8", 1), "utf-16": ("utf-16-le", 2), "utf-32": ("utf-32-le", 4)}[encoding]
    lines = text.split("\n")
    starts = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))

    def offset(position: dict[str, int]) -> int:
        line = lines[position["line"]]
        used = 0
        for index, char in enumerate(line):
            if used >= position["character"]:
                return starts[position["line"]] + index
            used += len(char.encode(codec)) // width
        return starts[position["line"]] + len(line)

    ordered = sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]))
    pieces, at = [], 0
    for edit in ordered:
        start, end = offset(edit["range"]["start"]), offset(edit["range"]["end"])
        assert start >= at, f"overlapping edits: {edits}"
        pieces += [text[at:start], edit["newText"]]
        at = end
    return "".join([*pieces, text[at:]])


@asynccontextmanager
async def running_tiller(
    env: dict[str, str],
    root: Path,
    capabilities: str | types.ClientCapabilities,
    initialization_options: dict[str, Any] | None = None,
    workspace_folders: list[Path] | None = None,
    args: list[str] | None = None,
) -> AsyncIterator[TillerClient]:
    """A server started in `root` with `env` (and `tiller serve` `args`), initialized by a
    client that claims the capabilities of a pytest-lsp preset ("visual-studio-code",
    "neovim@v0.7", ...), or exactly `capabilities` (see `editor_capabilities`)."""
    client = TillerClient()
    await client.start_io(sys.executable, "-m", "tiller", "serve", *(args or []), env=env, cwd=str(root))
    try:
        client.initialize_result = await asyncio.wait_for(
            client.initialize_session(types.InitializeParams(
                capabilities=client_capabilities(capabilities) if isinstance(capabilities, str) else capabilities,
                root_uri=root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)
                                   for folder in (workspace_folders or [root])],
                initialization_options=initialization_options,
            )),
            WAIT,
        )
        yield client
        if client.process.returncode is None:
            await asyncio.wait_for(client.shutdown_session(), WAIT)
            assert client.process.returncode == 0
    finally:
        if client.process.returncode is None:
            client.process.kill()
        await client.stop()
    assert client.wire is not None and client.wire.stray == [], f"bytes outside LSP frames: {client.wire.stray}"
    assert SECRET not in json.dumps(client.received), "an API key crossed the wire"
    assert client.schema_violations == [], "\n".join(client.schema_violations)


def editor_capabilities(
    preset: str = "visual-studio-code",
    *,
    resource_operations: list[types.ResourceOperationKind] | None = None,
    **tiller: bool,
) -> types.ClientCapabilities:
    """A preset's capabilities plus `experimental.tiller` (approvals=True,
    saves_edited_documents=True, ...) and, if given, exactly these workspace edit
    `resourceOperations`."""
    capabilities = client_capabilities(preset)
    if tiller:
        names = {"saves_edited_documents": "savesEditedDocuments"}
        capabilities.experimental = {"tiller": {names.get(k, k): v for k, v in tiller.items()}}
    if resource_operations is not None:
        assert capabilities.workspace is not None and capabilities.workspace.workspace_edit is not None
        capabilities.workspace.workspace_edit.resource_operations = resource_operations
    return capabilities


def server_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a server under test: no real keys or endpoints, no user config."""
    env = {
        k: v for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_BASE_URL")) and not k.startswith("TILLER_")
    }
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "xdg-config"),  # no user models.toml
        TILLER_DATA_DIR=str(tmp_path / "tiller-data"),  # saved sessions stay in the test's directory
        TILLER_MODEL=FAUX,
        OPENAI_API_KEY=SECRET,
    )
    env.update(extra)
    return env


# --- scripted models ---------------------------------------------------------------------


def faux_script(path: Path, responses: list[dict[str, Any]], *, chunk_chars: int = 4, delay_ms: float = 0) -> str:
    """Write a faux provider script (see tiller.ai.providers.faux) and return its path."""
    path.write_text(json.dumps({"chunkChars": chunk_chars, "delayMs": delay_ms, "responses": responses}))
    return str(path)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value}


def tool_call(name: str, arguments: dict[str, Any], id: str = "") -> dict[str, Any]:
    return {"type": "toolCall", "id": id, "name": name, "arguments": arguments}


def reply(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"content": list(blocks)}


def one_call_per_turn(*calls: dict[str, Any], end: str = "Done.") -> list[dict[str, Any]]:
    """A script whose replies make one tool call each (so each sees what the one before
    did), then end the run with the text `end`."""
    return [*(reply(call) for call in calls), reply(text(end))]


def tool_results(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """An agent/prompt answer's toolResult messages, by toolCallId."""
    return {m["toolCallId"]: m for m in answer["newMessages"] if m["role"] == "toolResult"}


def result_text(message: dict[str, Any]) -> str:
    """The text of a toolResult message (or of a tool_execution_* result)."""
    return "".join(block.get("text", "") for block in message["content"] if block["type"] == "text")


# A reply that streams for minutes unless aborted (1 character every 20 ms).
SLOW = reply(text("slow " * 2000))
SLOW_CHUNKING = {"chunk_chars": 1, "delay_ms": 20}


def openai_chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    """One `chat.completion.chunk` SSE line, as OpenAI sends it."""
    body = {
        "id": "chatcmpl-T1", "object": "chat.completion.chunk", "created": 1730000000, "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if usage is not None:
        body["choices"], body["usage"] = [], usage
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def openai_env(server: SSEServer) -> dict[str, str]:
    """Server environment for `openai/<any id>` models served by `server`."""
    return {"OPENAI_BASE_URL": server.url + "/v1"}


def openai_text(*pieces: str | float) -> list[bytes | float]:
    """A complete OpenAI text stream; a float between pieces is a pause (see SSEServer)."""
    chunks: list[bytes | float] = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [p if isinstance(p, float) else openai_chunk({"content": p}) for p in pieces]
    chunks += [openai_chunk({}, "stop"), openai_chunk({}, usage={"prompt_tokens": 10, "completion_tokens": 3,
                                                                  "total_tokens": 13}), b"data: [DONE]\n\n"]
    return chunks


def openai_tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> list[bytes | float]:
    """A complete OpenAI stream whose reply is one tool call."""
    call = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return [
        openai_chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
        openai_chunk({}, "tool_calls"),
        openai_chunk({}, usage={"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}),
        b"data: [DONE]\n\n",
    ]


# A pause of HOLD seconds in a GatedSSEServer reply lasts until the test calls `release()`.
HOLD = 3600.0


class GatedSSEServer(SSEServer):
    """An SSEServer whose replies can wait at a HOLD until the test lets them go on, so a
    test can act "mid-stream" without guessing how long a stream takes."""

    def __init__(self) -> None:
        self._releases = threading.Semaphore(0)
        super().__init__()

    def release(self) -> None:
        self._releases.release()

    async def _pause(self, http_request: Any, recorded: Any, seconds: float) -> bool:
        if seconds != HOLD:
            return await super()._pause(http_request, recorded, seconds)
        while not self._releases.acquire(blocking=False):
            if not await super()._pause(http_request, recorded, 0.01):
                return False  # the client went away (abort)
        return True


# --- reading events ----------------------------------------------------------------------


def assert_gap_free(notifications: list[Event]) -> None:
    """One session's notifications: seq 1, 2, 3, ... without a gap."""
    assert [n["seq"] for n in notifications] == list(range(1, len(notifications) + 1))


def types_of(notifications: list[Event]) -> list[str]:
    return [n["event"]["type"] for n in notifications]
