"""Every message the client sends gets the answer JSON-RPC and LSP prescribe, before pygls
dispatches it.

- a body that is not JSON: -32700 (id null); a message that is not a valid request: -32600,
  with its id when one could be read; a frame over the size limit: -32600 to its id;
- a request before `initialize`: -32002 ServerNotInitialized (LSP); notifications then are
  dropped, except `exit`. tiller's own -32002 (SessionBusy) only ever answers `agent/prompt`
  after initialization; this one's message starts with "Server not initialized" and its data
  is `{"lspError": "ServerNotInitialized"}`;
- a second `initialize`, and any request after `shutdown`: -32600; notifications after
  `shutdown` other than `exit` are dropped;
- a request for a method tiller does not serve (hover, completion, executeCommand, `$/…`):
  -32601; params pygls cannot read for a standard method: -32602 (pygls itself would leave
  the request unanswered).
"""

from __future__ import annotations

import logging

from lsprotocol import types
from pygls.protocol import JsonRPCProtocol

from ..protocol.errors import ErrorCode
from ..protocol.jsonrpc import Incoming, RpcError, classify, clip, decode, peek_id
from .frames import Body, Frame, FrameReader, Oversize, find_header
from .framing import frame

logger = logging.getLogger("tiller.lsp")

SERVER_NOT_INITIALIZED = -32002  # LSP's code; see the module doc for SessionBusy's


def _is_lsp_notification(method: str) -> bool:
    entry = types.METHOD_TO_TYPES.get(method)
    return entry is not None and entry[1] is None


class Dispatcher:
    def __init__(self, protocol: JsonRPCProtocol, reader: FrameReader) -> None:
        self.protocol = protocol
        self.reader = reader
        self.initialized = False
        self.shutting_down = False

    def handle(self, item: Frame) -> None:
        try:
            if isinstance(item, Oversize):
                raise RpcError(
                    ErrorCode.INVALID_REQUEST,
                    f"Invalid request: the message is {item.size} bytes, over the limit of "
                    f"{self.reader.max_frame_bytes} (tiller serve --max-frame-bytes)",
                    peek_id(item.prefix),
                )
            self._message(self._decode(item))
        except RpcError as error:
            self._answer_error(error)

    def _decode(self, body: Body) -> Incoming:
        try:
            raw = decode(body.data)
        except RpcError:
            # A Content-Length that lied cuts into the next frame: read that frame again.
            start = find_header(body.data)
            if start >= 0:
                self.reader.unread(body.data[start:])
            raise
        return classify(raw, pending_responses=set(self.protocol._request_futures))

    def _message(self, incoming: Incoming) -> None:
        if incoming.kind == "response":
            try:
                self._deliver(incoming)
            except RpcError as error:  # a response is never answered (JSON-RPC 2.0)
                logger.warning("Dropping a response to request %s that does not read: %s",
                               clip(str(incoming.id), 80), error.message)
        elif incoming.kind == "notification":
            self._notification(incoming)
        else:
            self._request(incoming)

    def _notification(self, incoming: Incoming) -> None:
        method = incoming.method
        if method != types.EXIT and (not self.initialized or self.shutting_down):
            logger.info("Dropping the notification %s (%s)", clip(method, 80),
                        "shutting down" if self.initialized else "not initialized")
            return
        try:
            self._deliver(incoming)
        except RpcError as error:
            logger.warning("Dropping the notification %s: %s", clip(method, 80), error.message)

    def _request(self, incoming: Incoming) -> None:
        method, msg_id = incoming.method, incoming.id
        if method == types.INITIALIZE and self.initialized:
            raise RpcError(ErrorCode.INVALID_REQUEST, "Invalid request: the server is already initialized", msg_id)
        if method != types.INITIALIZE and not self.initialized:
            raise RpcError(SERVER_NOT_INITIALIZED,
                           "Server not initialized: send initialize first", msg_id,
                           {"lspError": "ServerNotInitialized"})
        if self.shutting_down:
            raise RpcError(ErrorCode.INVALID_REQUEST,
                           "Invalid request: the server is shutting down; only exit is accepted", msg_id)
        if not self._serves(method):
            raise RpcError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {clip(method, 80)}", msg_id)
        self._deliver(incoming)
        if method == types.INITIALIZE:
            self.initialized = True
        elif method == types.SHUTDOWN:
            self.shutting_down = True

    def _serves(self, method: str) -> bool:
        if method in (types.INITIALIZE, types.SHUTDOWN):
            return True
        return method in self.protocol.fm.features and not _is_lsp_notification(method)

    def _deliver(self, incoming: Incoming) -> None:
        try:
            message = self.protocol.structure_message(incoming.raw)
        except Exception:
            # pygls could not build the standard type (wrong field types): its own path would
            # leave a request unanswered.
            raise RpcError(ErrorCode.INVALID_PARAMS,
                           f"Invalid params: not a valid {clip(incoming.method, 80)} message", incoming.id) from None
        self.protocol.handle_message(message)

    def _answer_error(self, error: RpcError) -> None:
        logger.info("Answering error %d: %s", error.code, error.message)
        writer = self.protocol.writer
        if writer is not None:
            writer.write(frame(error.response()))


async def dispatch_frames(reader: FrameReader, dispatcher: Dispatcher) -> None:
    """Read and handle frames until the stream ends."""
    while (item := await reader.next_frame()) is not None:
        try:
            dispatcher.handle(item)
        except Exception as error:  # a bug in tiller: log it, and read on
            logger.exception("Could not handle a message: %s", error)
