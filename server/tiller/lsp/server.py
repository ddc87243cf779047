"""`tiller serve`'s language server: pygls, fitted to an agent protocol.

Three adjustments:
- custom-method params stay plain dicts (pygls's default turns them into namedtuples and
  renames keys such as `from` or `_meta`); the method table validates them with the
  protocol's pydantic classes;
- `initialize` reads the client's options and advertises the protocol under
  `capabilities.experimental.tiller`;
- frames go out through one coalescing writer (framing.py), events included.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Generator
from typing import Any

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
)
from pygls.protocol.language_server import lsp_method

from .. import __version__
from ..ai.models import ModelCatalog
from ..host import Host
from ..host.prompt_context import uri_to_path
from ..host.warm_up import warm_up
from ..protocol.modes import FEATURES, PROTOCOL_VERSION
from .client_options import ClientFeatures, InitializationOptions
from .editor import LspEditor

logger = logging.getLogger("tiller.lsp")


def dict_params_converter() -> cattrs.Converter:
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
    def __init__(self, server: TillerLanguageServer, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        self.tiller = server

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        result = yield from super().lsp_initialize(params)
        self.tiller.configure(params)
        result.capabilities.experimental = {"tiller": {"protocolVersion": PROTOCOL_VERSION, "features": FEATURES}}
        return result

    # Agent edits wait to see their text in the synced document (editor.py).
    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Generator[Any, Any, None]:
        yield from super().lsp_text_document__did_change(params)
        self.tiller.editor.document_synced()

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> Generator[Any, Any, None]:
        yield from super().lsp_text_document__did_close(params)
        self.tiller.editor.document_synced()


class TillerLanguageServer(LanguageServer):
    def __init__(self, catalog: ModelCatalog | None = None) -> None:
        super().__init__(
            "tiller",
            __version__,
            protocol_cls=TillerProtocol,
            converter_factory=dict_params_converter,
            max_workers=4,
        )
        self.client_features = ClientFeatures()
        self.editor = LspEditor(self, lambda: self.client_features)
        self.host = Host(catalog or ModelCatalog.load(), self.editor)

    def configure(self, params: types.InitializeParams) -> None:
        """Read `initializationOptions` and `capabilities.experimental.tiller`."""
        self.host.configure(InitializationOptions.from_raw(params.initialization_options).host_settings())
        experimental = params.capabilities.experimental if params.capabilities else None
        self.client_features = ClientFeatures.from_raw(experimental)
        warm_up(self.host)  # the first prompt's one-time work, off the event loop

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

    def report_server_error(self, error: Exception, source: Any) -> None:
        if isinstance(error, JsonRpcException) and error.code != -32603:
            logger.debug("Answered with error %s: %s", error.code, error)  # the client was told
        else:
            logger.error("Server error: %s", error)
