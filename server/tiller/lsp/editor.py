"""The editor behind an LSP connection, as the host's `Editor` port.

Documents the client opened are synced to the server (incremental text sync), so tools
read what the user sees, unsaved changes included.

An approved change of an open document goes to the editor whenever the client can apply
edits (`workspace.applyEdit`), as the smallest line edits (text_edits.py): in a versioned
`TextDocumentEdit` when the client declares `workspaceEdit.documentChanges`, else in the
plain `changes` map. It is made only if the buffer is still at the version the tool read.
An editor's `applied: true` is not proof: Neovim skips an edit for a buffer newer than the
edit (and never checks version 0) yet answers true, and the user may type at that moment.
So the change counts only once the synced text (the client's didChange) holds exactly the
computed text; otherwise the tool fails asking the model to read the file again, and
nothing is written.

The disk must hold the new text too (so `bash` sees it): a client that declares
`capabilities.experimental.tiller.savesEditedDocuments` saves the buffer itself; for any
other client the server then writes the file atomically. The new text was computed from
the buffer, so unsaved user changes in it are saved along with the agent's edit, never
thrown away. A client that cannot apply edits at all gets the disk write, then a
`window/showMessage` naming the open document that changed on disk, so the user reloads it.
Files that are not open are written atomically; a new file is created with a `CreateFile`
operation where the client supports it, and written to disk as well.
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
from .text_edits import line_edits

logger = logging.getLogger("tiller.lsp")

# How long an applied edit may take to show up in the synced text. Neovim sends didChange
# after its applyEdit answer, debounced (150 ms by default).
SYNC_TIMEOUT = 3.0

_ENCODINGS: dict[str, PositionEncoding] = {
    types.PositionEncodingKind.Utf8: "utf-8",
    types.PositionEncodingKind.Utf16: "utf-16",
    types.PositionEncodingKind.Utf32: "utf-32",
}


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
        # Set on every didChange/didClose, for edits waiting to see their text synced.
        self._sync_listeners: set[asyncio.Event] = set()

    # --- the Editor port -------------------------------------------------------------------

    @property
    def capabilities(self) -> EditorCapabilities:
        return EditorCapabilities(shows_approvals=self._client_features().approvals,
                                  position_encoding=self.position_encoding)

    @property
    def position_encoding(self) -> PositionEncoding:
        """The encoding negotiated at `initialize` (LSP's default, UTF-16, before it)."""
        try:
            negotiated = self._server.server_capabilities.position_encoding
        except (AttributeError, RuntimeError):
            negotiated = None
        return _ENCODINGS.get(negotiated or "", "utf-16")

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
        if document is not None and self._client_applies_edits():
            # A buffer that already holds the text gets no edit, so the client has nothing to
            # save: the disk may still differ (the file was deleted or changed behind the
            # buffer, e.g. a rewind restoring it), so it is written here.
            unchanged = document.source == text
            text = await self._edit_buffer(session_id, path, document, text)
            if unchanged or not self._client_features().saves_edited_documents:
                await self._disk.write(path, text)
            return
        if document is None and not path.exists() and self._client_creates_files():
            await self._create_in_editor(path, text)
        await self._disk.write(path, text)
        if document is not None:
            self._tell_changed_on_disk(path, document.uri)

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

    def document_synced(self) -> None:
        """The client changed or closed a document (called after the workspace took it)."""
        for listener in self._sync_listeners:
            listener.set()

    def _view(self, document: TextDocument) -> EditorDocument:
        return EditorDocument(uri=document.uri, text=document.source, version=document.version,
                              position_encoding=_ENCODINGS.get(document.position_codec.encoding or "", "utf-16"))

    # --- edits -----------------------------------------------------------------------------

    async def _edit_buffer(self, session_id: str, path: Path, document: TextDocument, text: str) -> str:
        """Put `text` in the open `document`; returns the text the buffer then holds."""
        seen = self._versions_read.get((session_id, document.uri), document.version)
        if seen != document.version:
            raise StaleBufferError(
                f"{path} changed in the editor after it was read (version {seen} -> {document.version}). "
                "Read the file again and redo the edit."
            )
        if document.source == text:
            return text
        edits: list[types.TextEdit] = line_edits(document.source, text, document.position_codec.client_num_units)
        if self._client_versions_edits():
            versioned = types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version)
            edit = types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=versioned, edits=edits)])
        else:
            edit = types.WorkspaceEdit(changes={document.uri: edits})
        await self._apply(edit, f"tiller: edit {path.name}", path)
        synced = await self._synced_text(document.uri, text)
        if synced is None:
            raise StaleBufferError(
                f"The editor's buffer of {path} does not hold the edited text: the editor skipped the change, or "
                "the buffer changed at the same moment. Nothing was written. Read the file again and redo the edit."
            )
        return synced

    async def _synced_text(self, uri: str, expected: str) -> str | None:
        """The document's synced text once it is `expected`, or None if it does not become
        that within SYNC_TIMEOUT (or the document closes)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SYNC_TIMEOUT
        while True:
            document = self._open_documents().get(uri)
            if document is None:
                return None
            if same_text(document.source, expected):
                return document.source
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            synced = asyncio.Event()
            self._sync_listeners.add(synced)
            try:
                await asyncio.wait_for(synced.wait(), remaining)
            except TimeoutError:
                pass  # one last look above
            finally:
                self._sync_listeners.discard(synced)

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

    def _tell_changed_on_disk(self, path: Path, uri: str) -> None:
        """The client cannot take edits: its buffer of `path` is now older than the file."""
        self._server.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Warning,
            message=f"tiller changed {path} on disk, and it is open in the editor: reload it ({uri}).",
        ))

    def _workspace_edit(self) -> types.WorkspaceEditClientCapabilities | None:
        workspace = self._server.client_capabilities.workspace
        return workspace.workspace_edit if workspace else None

    def _client_applies_edits(self) -> bool:
        workspace = self._server.client_capabilities.workspace
        return bool(workspace and workspace.apply_edit)

    def _client_versions_edits(self) -> bool:
        edit = self._workspace_edit()
        return bool(self._client_applies_edits() and edit and edit.document_changes)

    def _client_creates_files(self) -> bool:
        return self._client_supports(types.ResourceOperationKind.Create)

    def _client_deletes_files(self) -> bool:
        return self._client_supports(types.ResourceOperationKind.Delete)

    def _client_supports(self, operation: types.ResourceOperationKind) -> bool:
        # Resource operations exist only inside documentChanges.
        edit = self._workspace_edit()
        operations = (edit.resource_operations or []) if edit else []
        return self._client_versions_edits() and operation in operations


def same_text(synced: str, expected: str) -> bool:
    """Whether the editor holds `expected`. Vim-like editors keep the final newline as a
    property of the file ('eol'), so an edit cannot take it away: a buffer that holds
    `expected` plus that newline holds the edit."""
    return synced == expected or (not expected.endswith("\n") and synced == expected + "\n")


def _real_path(uri: str) -> str | None:
    path = uri_to_path(uri)
    return os.path.realpath(path) if path is not None else None
