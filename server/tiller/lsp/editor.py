"""The editor behind an LSP connection, as the host's `Editor` port.

Documents the client opened are synced to the server (incremental text sync), so tools
read what the user sees, unsaved changes included.

An approved change of an open document goes out as `workspace/applyEdit` with a
*versioned* `TextDocumentEdit`: the editor applies it to the buffer (so the user can undo
it) only if the buffer is still at the version the tool read; if the user typed in between,
the edit is refused and the tool fails asking the model to read the file again.

The disk must hold the new text too (so `bash` sees it): a client that declares
`capabilities.experimental.tiller.savesEditedDocuments` saves the buffer itself; for any
other client the server then writes the file atomically. The new text was computed from
the buffer, so unsaved user changes in it are saved along with the agent's edit, never
thrown away. Files that are not open are written atomically; a new file is created with a
`CreateFile` operation where the client supports it, and written to disk as well.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from ..host.editor import EditorCapabilities, EditorDocument, PositionEncoding
from ..host.prompt_context import uri_to_path
from ..protocol.events import AnyWireEvent
from ..tools.atomic_write import AtomicFileWriter
from .client_options import ClientFeatures
from .framing import event_frame

logger = logging.getLogger("tiller.lsp")


class StaleBufferError(Exception):
    pass


class LspEditor:
    def __init__(self, server: LanguageServer, client_features: Callable[[], ClientFeatures]) -> None:
        self._server = server
        self._client_features = client_features
        self._disk = AtomicFileWriter()
        # The version of each document a session's tools last read: an edit is only
        # applied to the buffer it was computed from.
        self._versions_read: dict[tuple[str, str], int | None] = {}

    # --- the Editor port -------------------------------------------------------------------

    @property
    def capabilities(self) -> EditorCapabilities:
        return EditorCapabilities(shows_approvals=self._client_features().approvals)

    async def read_document(self, session_id: str, path: Path) -> EditorDocument | None:
        document = self.open_document(path)
        if document is None:
            return None
        self._versions_read[(session_id, document.uri)] = document.version
        return self._view(document)

    async def document_at(self, uri: str) -> EditorDocument | None:
        documents = self._open_documents()
        document = documents.get(uri)
        if document is None and (path := uri_to_path(uri)) is not None:
            document = self.open_document(Path(os.path.realpath(path)))
        return self._view(document) if document is not None else None

    async def write_document(self, session_id: str, path: Path, text: str) -> None:
        document = self.open_document(path)
        in_buffer = document is not None and self._client_applies_edits()
        if document is not None and in_buffer:
            await self._edit_buffer(session_id, path, document, text)
        elif document is None and not path.exists() and self._client_creates_files():
            await self._create_in_editor(path, text)
        # The client saves only buffers it was sent an edit for: an open document it cannot
        # take versioned edits for (no documentChanges) still has to be written here.
        if not (in_buffer and self._client_features().saves_edited_documents):
            await self._disk.write(path, text)

    async def delete_document(self, session_id: str, path: Path) -> None:
        document = self.open_document(path)
        if document is not None and self._client_deletes_files():
            edit = types.WorkspaceEdit(document_changes=[
                types.DeleteFile(uri=document.uri, options=types.DeleteFileOptions(ignore_if_not_exists=True)),
            ])
            await self._apply(edit, f"tiller: delete {path.name}", path)
        await asyncio.to_thread(path.unlink, missing_ok=True)

    def send_event(self, session_id: str, seq: int, event: AnyWireEvent) -> None:
        # Framed here rather than through pygls's notify: the hot path (see framing.py).
        writer = self._server.protocol.writer
        if writer is None:
            logger.error("No client connected; dropping an event of session %s", session_id)
            return
        writer.write(event_frame(session_id, seq, event))

    # --- open documents --------------------------------------------------------------------

    def _open_documents(self) -> dict[str, TextDocument]:
        try:
            return self._server.workspace.text_documents
        except RuntimeError:  # no workspace before initialize
            return {}

    def open_document(self, path: Path) -> TextDocument | None:
        """The open document of the resolved `path`, whatever URI the editor opened it by."""
        documents = self._open_documents()
        document = documents.get(path.as_uri())
        if document is None:
            # Editors spell URIs their own way (Neovim leaves "(", "+", "@" unescaped) and may
            # have opened the project through a symlink: compare resolved paths.
            document = next((d for d in documents.values() if _real_path(d.uri) == str(path)), None)
        return document

    def _view(self, document: TextDocument) -> EditorDocument:
        encoding: PositionEncoding = "utf-16"
        if document.position_codec.encoding == types.PositionEncodingKind.Utf8:
            encoding = "utf-8"
        elif document.position_codec.encoding == types.PositionEncodingKind.Utf32:
            encoding = "utf-32"
        return EditorDocument(uri=document.uri, text=document.source, version=document.version,
                              position_encoding=encoding)

    # --- edits -----------------------------------------------------------------------------

    async def _edit_buffer(self, session_id: str, path: Path, document: TextDocument, text: str) -> None:
        seen = self._versions_read.get((session_id, document.uri), document.version)
        if seen != document.version:
            raise StaleBufferError(
                f"{path} changed in the editor after it was read (version {seen} -> {document.version}). "
                "Read the file again and redo the edit."
            )
        lines = document.source.split("\n")
        # The end of the buffer, in the position encoding negotiated with this client.
        end = types.Position(line=len(lines) - 1, character=document.position_codec.client_num_units(lines[-1]))
        edit = types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version),
            edits=[types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=end), new_text=text)],
        )
        await self._apply(types.WorkspaceEdit(document_changes=[edit]), f"tiller: edit {path.name}", path)

    async def _create_in_editor(self, path: Path, text: str) -> None:
        uri = path.as_uri()
        changes: list[types.TextDocumentEdit | types.CreateFile] = [
            types.CreateFile(uri=uri, options=types.CreateFileOptions(overwrite=False, ignore_if_exists=True)),
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                edits=[types.TextEdit(range=types.Range(start=types.Position(line=0, character=0),
                                                        end=types.Position(line=0, character=0)), new_text=text)],
            ),
        ]
        path.parent.mkdir(parents=True, exist_ok=True)
        await self._apply(types.WorkspaceEdit(document_changes=changes), f"tiller: create {path.name}", path)

    async def _apply(self, edit: types.WorkspaceEdit, label: str, path: Path) -> None:
        result = await self._server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=label))
        if not result.applied:
            reason = f" ({result.failure_reason})" if result.failure_reason else ""
            raise StaleBufferError(
                f"The editor did not apply the change to {path}{reason}. The file probably changed in the "
                "editor since it was read: read it again and redo the edit."
            )

    def _client_applies_edits(self) -> bool:
        workspace = self._server.client_capabilities.workspace
        edit = workspace.workspace_edit if workspace else None
        return bool(workspace and workspace.apply_edit and edit and edit.document_changes)

    def _client_creates_files(self) -> bool:
        return self._client_supports(types.ResourceOperationKind.Create)

    def _client_deletes_files(self) -> bool:
        return self._client_supports(types.ResourceOperationKind.Delete)

    def _client_supports(self, operation: types.ResourceOperationKind) -> bool:
        workspace = self._server.client_capabilities.workspace
        edit = workspace.workspace_edit if workspace else None
        operations = (edit.resource_operations or []) if edit else []
        return self._client_applies_edits() and operation in operations


def _real_path(uri: str) -> str | None:
    path = uri_to_path(uri)
    return os.path.realpath(path) if path is not None else None
