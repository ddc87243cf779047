"""tiller's warnings and errors, sent to the editor as `window/logMessage`.

An editor shows these in its output panel (VS Code's "tiller" channel, Neovim's LSP log), so
a failed LLM call, a retry after a rate limit or a session that could not be saved reach the
user without a terminal. Everything still goes to stderr (or the log file) as well.

The transport's own records (logger `tiller.lsp`) are not sent: they are about the
connection itself, and a closed connection would only log again that it dropped them.
"""

from __future__ import annotations

import logging

from lsprotocol import types

from ..telemetry.log_setup import TextFormatter
from .framing import frame
from .server import TillerLanguageServer

TRANSPORT_LOGGER = "tiller.lsp"


class EditorLogHandler(logging.Handler):
    def __init__(self, server: TillerLanguageServer) -> None:
        super().__init__(logging.WARNING)
        self._server = server
        self.setFormatter(TextFormatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == TRANSPORT_LOGGER or record.name.startswith(TRANSPORT_LOGGER + "."):
            return
        writer = self._server.protocol.writer
        if writer is None:
            return  # no client yet, or gone
        kind = types.MessageType.Error if record.levelno >= logging.ERROR else types.MessageType.Warning
        try:
            message = self.format(record)
            writer.write(frame({"jsonrpc": "2.0", "method": types.WINDOW_LOG_MESSAGE,
                                "params": {"type": int(kind), "message": message}}))
        except Exception:
            self.handleError(record)


def forward_logs_to_editor(server: TillerLanguageServer) -> EditorLogHandler:
    """Send the warnings and errors of every `tiller.*` logger to `server`'s client."""
    handler = EditorLogHandler(server)
    logging.getLogger("tiller").addHandler(handler)
    return handler
