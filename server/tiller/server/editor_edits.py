"""Approved file changes land in the editor's buffers when the file is open there.

For an open document the change goes out as `workspace/applyEdit` with a *versioned*
`TextDocumentEdit`: the editor applies it to the buffer (so the user can undo it) only if
the buffer is still at the version the tool read; if the user typed in between, the edit
is refused and the tool fails asking the model to read the file again.

The disk must hold the new text too (so `bash` sees it): a client that declares
`capabilities.experimental.tiller.savesEditedDocuments` saves the buffer itself; for any
other client the server then writes the file atomically. The new text was computed from
the buffer, so unsaved user changes in it are saved along with the agent's edit, never
thrown away. Files that are not open are written atomically; a new file is created with a
`CreateFile` operation where the client supports it, and written to disk as well.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ..tools.writer import AtomicFileWriter

if TYPE_CHECKING:
    from .app import TillerServer


class StaleBufferError(Exception):
    pass


class EditorDocuments:
    """The open-document view the tools read through, remembering the version they saw."""

    def __init__(self, server: TillerServer) -> None:
        self.server = server
        self.versions_read: dict[str, int | None] = {}

    def __call__(self, path: Path) -> str | None:
        document = self.server.open_document(path)
        if document is None:
            return None
        self.versions_read[document.uri] = document.version
        return document.source


class EditorWriter:
    def __init__(self, server: TillerServer, documents: EditorDocuments) -> None:
        self.server = server
        self.documents = documents
        self.disk = AtomicFileWriter()

    async def write(self, path: Path, text: str) -> None:
        document = self.server.open_document(path)
        in_buffer = document is not None and self._client_applies_edits()
        if in_buffer:
            await self._edit_buffer(path, document, text)
        elif document is None and not path.exists() and self._client_creates_files():
            await self._create_in_editor(path, text)
        # The client saves only buffers it was sent an edit for: an open document it cannot
        # take versioned edits for (no documentChanges) still has to be written here.
        if not (in_buffer and self.server.client_features.saves_edited_documents):
            await self.disk.write(path, text)

    async def _edit_buffer(self, path: Path, document, text: str) -> None:
        seen = self.documents.versions_read.get(document.uri, document.version)
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
        result = await self.server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=label))
        if not result.applied:
            reason = f" ({result.failure_reason})" if result.failure_reason else ""
            raise StaleBufferError(
                f"The editor did not apply the change to {path}{reason}. The file probably changed in the "
                "editor since it was read: read it again and redo the edit."
            )

    def _client_applies_edits(self) -> bool:
        workspace = self.server.client_capabilities.workspace
        edit = workspace.workspace_edit if workspace else None
        return bool(workspace and workspace.apply_edit and edit and edit.document_changes)

    def _client_creates_files(self) -> bool:
        workspace = self.server.client_capabilities.workspace
        edit = workspace.workspace_edit if workspace else None
        operations = (edit.resource_operations or []) if edit else []
        return self._client_applies_edits() and types.ResourceOperationKind.Create in operations
