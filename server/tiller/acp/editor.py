"""The editor behind an ACP connection, as the host's `Editor` port.

When the client declares `fs.readTextFile` / `fs.writeTextFile`, tools read through it (so
they see unsaved buffers) and approved changes are written through it (so they land in the
editor, with its undo); otherwise both use the disk. Events go to each session's stream.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from acp import RequestError
from acp.interfaces import Client
from acp.schema import ClientCapabilities

from ..host.editor import EditorCapabilities, EditorDocument
from ..protocol.events import AnyWireEvent
from ..tools.atomic_write import AtomicFileWriter
from .session_stream import SessionStream

logger = logging.getLogger("tiller.acp")

# A file with a NUL byte here is binary: the read tool takes it from disk (an image, say).
_SNIFF_BYTES = 8192


class AcpEditor:
    def __init__(self) -> None:
        self.client: Client | None = None
        self.client_capabilities = ClientCapabilities()
        self.streams: dict[str, SessionStream] = {}
        self._disk = AtomicFileWriter()

    @property
    def capabilities(self) -> EditorCapabilities:
        # Every ACP client answers session/request_permission: the spec requires it.
        return EditorCapabilities(shows_approvals=True)

    def _reads_through_client(self) -> bool:
        fs = self.client_capabilities.fs
        return self.client is not None and fs is not None and bool(fs.read_text_file)

    def _writes_through_client(self) -> bool:
        fs = self.client_capabilities.fs
        return self.client is not None and fs is not None and bool(fs.write_text_file)

    async def read_document(self, session_id: str, path: Path) -> EditorDocument | None:
        if not self._reads_through_client() or not await asyncio.to_thread(_is_text_file, path):
            return None
        assert self.client is not None
        try:
            answer = await self.client.read_text_file(session_id=session_id, path=str(path))
        except RequestError as error:
            logger.warning("The client could not read %s (%s); reading the disk", path, error)
            return None
        return EditorDocument(uri=path.as_uri(), text=answer.content)

    async def document_at(self, uri: str) -> EditorDocument | None:
        return None  # ACP prompts carry their resources' text themselves

    async def write_document(self, session_id: str, path: Path, text: str) -> None:
        if not self._writes_through_client():
            await self._disk.write(path, text)
            return
        assert self.client is not None
        await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
        await self.client.write_text_file(session_id=session_id, path=str(path), content=text)

    async def delete_document(self, session_id: str, path: Path) -> None:
        # ACP has no way to delete through the client: the disk it is.
        await asyncio.to_thread(path.unlink, missing_ok=True)

    def send_event(self, session_id: str, seq: int, event: AnyWireEvent) -> None:
        stream = self.streams.get(session_id)
        if stream is None:
            logger.error("An event of session %s, which has no stream; dropped", session_id)
            return
        stream.push(event)


def _is_text_file(path: Path) -> bool:
    """A regular file that exists and holds no NUL byte near its start."""
    try:
        if not path.is_file():  # never open a FIFO or a device: that could block forever
            return False
        with path.open("rb") as handle:
            return b"\0" not in handle.read(_SNIFF_BYTES)
    except OSError:
        return False
