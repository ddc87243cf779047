"""The language server process: pygls over stdio (or TCP), hosting agent sessions.

Three pygls adjustments make it fit an agent protocol:
- custom-method params stay plain dicts (pygls's default turns them into namedtuples and
  renames keys such as `from` or `_meta`); they are validated with the pydantic types;
- `initialize` advertises the protocol under `capabilities.experimental.tiller`;
- a body that is not JSON gets a -32700 answer (id null) instead of only a log line.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdinAsyncReader, run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
)
from pygls.protocol.language_server import lsp_method
from pygls.workspace import TextDocument

from .. import __version__
from ..ai.models import ModelCatalog
from .config import ClientFeatures, InitializationOptions
from .context import uri_to_path
from .framing import CoalescingWriter, frame
from .protocol import PROTOCOL_VERSION
from .sessions import SessionManager

logger = logging.getLogger("tiller.server")

FEATURES = ["sessions", "steering", "followUp", "abort", "editorContext", "deltaStreaming"]


def dict_params_converter() -> Any:
    """pygls's converter, except that JSON-RPC envelopes keep `params`/`result` as dicts."""
    converter = default_converter()

    def keep_dicts(obj: dict[str, Any], cls: type) -> Any:
        # JSON-RPC lets a request or notification omit `params` (vscode-jsonrpc and Neovim do
        # for a call without arguments); `cls(**obj)` would fail and the request go unanswered.
        return cls(**{name: obj.get(name) for name in inspect.signature(cls).parameters})

    for envelope in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(envelope, keep_dicts)
    return converter


class TillerProtocol(LanguageServerProtocol):
    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        server: TillerServer = self._server  # type: ignore[assignment]
        server.configure(params)
        result.capabilities.experimental = {
            "tiller": {"protocolVersion": PROTOCOL_VERSION, "features": FEATURES}
        }
        return result


class TillerServer(LanguageServer):
    def __init__(self, catalog: ModelCatalog | None = None) -> None:
        super().__init__(
            "tiller",
            __version__,
            protocol_cls=TillerProtocol,
            converter_factory=dict_params_converter,
            max_workers=4,
        )
        self.catalog = catalog or ModelCatalog.load()
        self.options = InitializationOptions()
        self.client_features = ClientFeatures()
        self.sessions = SessionManager(self)

    def configure(self, params: types.InitializeParams) -> None:
        """Read `initializationOptions` and `capabilities.experimental.tiller`."""
        self.options = InitializationOptions.from_raw(params.initialization_options)
        experimental = params.capabilities.experimental if params.capabilities else None
        self.client_features = ClientFeatures.from_raw(experimental)

    def workspace_root(self) -> str:
        try:
            root = self.workspace.root_path
        except RuntimeError:
            root = None
        return os.path.realpath(root or os.getcwd())

    def workspace_folders(self) -> list[str]:
        """The folders the client declared (`workspaceFolders`): tools may work in all of
        them, besides the session's own cwd."""
        try:
            folders = self.workspace.folders.values()
        except RuntimeError:  # before initialize
            return []
        paths = [uri_to_path(folder.uri) for folder in folders]
        return [str(path) for path in paths if path is not None and path.is_dir()]

    def open_document(self, path: Path) -> TextDocument | None:
        """The open document of the resolved `path`, whatever URI the editor opened it by."""
        try:
            documents = self.workspace.text_documents
        except RuntimeError:  # no workspace before initialize
            return None
        document = documents.get(path.as_uri())
        if document is None:
            # Editors spell URIs their own way (Neovim leaves "(", "+", "@" unescaped) and may
            # have opened the project through a symlink: compare resolved paths.
            document = next((d for d in documents.values() if _real_path(d.uri) == str(path)), None)
        return document

    def read_document(self, uri: str) -> str | None:
        """The editor's text of an open document (unsaved changes included), else None."""
        try:
            document = self.workspace.text_documents.get(uri)
        except RuntimeError:
            return None
        if document is None and (path := uri_to_path(uri)) is not None:
            document = self.open_document(Path(os.path.realpath(path)))
        return document.source if document is not None else None

    def notify_event(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification whose params are plain JSON data (the hot path: see framing.py)."""
        writer = self.protocol.writer
        if writer is None:
            logger.error("No client connected; dropping %s", method)
            return
        writer.write(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def report_server_error(self, error: Exception, source: Any) -> None:
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            # JSON-RPC 2.0: an unparsable message is answered with -32700 and id null.
            self.protocol._send_data(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": f"Parse error: {error}"}}
            )
            return
        if isinstance(error, JsonRpcException) and error.code != -32603:
            logger.debug("Answered with error %s: %s", error.code, error)  # the client was told
        else:
            logger.error("Server error: %s", error)


def _real_path(uri: str) -> str | None:
    path = uri_to_path(uri)
    return os.path.realpath(path) if path is not None else None


def create_server(catalog: ModelCatalog | None = None) -> TillerServer:
    from .methods import register  # the method table is wired in one place

    server = TillerServer(catalog)
    register(server)
    return server


def serve_stdio() -> int:
    """Serve on stdio until EOF or `exit`. Only protocol bytes ever reach stdout."""
    protocol_in, protocol_out = _take_over_stdio()
    server = create_server()
    return _run(server, StdinAsyncReader(protocol_in, server.thread_pool), CoalescingWriter(protocol_out))


def _take_over_stdio() -> tuple[Any, Any]:
    """Keep the protocol on private copies of file descriptors 0 and 1, then point fd 1 at
    stderr and fd 0 at /dev/null. Replacing `sys.stdout` alone only catches Python's print():
    a native library, or a child process a tool starts (it inherits fds 0-2), would write
    into the protocol stream or read the client's messages."""
    sys.stdout.flush()
    protocol_in = os.fdopen(os.dup(0), "rb")  # os.dup: not inherited by child processes
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(sys.stderr.fileno(), 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    return protocol_in, protocol_out


def serve_tcp(port: int, host: str = "127.0.0.1") -> int:
    """A debugging transport: one client at a time on 127.0.0.1."""
    sys.stdout = sys.stderr
    server = create_server()
    server.start_tcp(host, port)
    return 0


def _run(server: TillerServer, reader: Any, writer: Any) -> int:
    server.protocol.set_writer(writer)
    stop = threading.Event()
    server._stop_event = stop

    async def main() -> None:
        try:
            await run_async(stop_event=stop, reader=reader, protocol=server.protocol,
                            logger=logger, error_handler=server.report_server_error)
        finally:
            # EOF or exit: abort runs so that nothing keeps the process alive.
            await server.sessions.close_all(timeout=0.5)

    code = 0
    try:
        asyncio.run(main())
    except SystemExit as exit_:  # the `exit` notification
        code = int(exit_.code or 0)
    except BrokenPipeError:
        logger.error("The client closed the connection")
    except KeyboardInterrupt:
        code = 130
    if isinstance(writer, CoalescingWriter):
        writer.flush()  # the last answers (shutdown) must reach the client before we go
    sys.stderr.flush()
    # Worker threads (a local model mid-generation, the stdin reader) must not hold the
    # process open after the client is gone.
    os._exit(code)
