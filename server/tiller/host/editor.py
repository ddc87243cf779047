"""The editor as the host sees it: the port every front end implements.

Through it the host reads what the user sees (open documents, unsaved changes included),
puts approved changes where the user will see them, and sends each session's events. Asking
the user travels as events too: an `approval_request` event goes out, and the front end
brings the answer back with `Session.approvals.respond`, however its protocol asks (an LSP
client answers with `agent/respondApproval`; an ACP client a `session/request_permission`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from ..protocol.events import AnyWireEvent

PositionEncoding = Literal["utf-8", "utf-16", "utf-32"]


@dataclass(frozen=True)
class EditorDocument:
    """The editor's copy of one file."""

    uri: str
    text: str
    version: int | None = None
    # How the editor counts characters in positions (LSP's negotiated encoding).
    position_encoding: PositionEncoding = "utf-16"


@dataclass(frozen=True)
class EditorCapabilities:
    # The client shows `approval_request` events and answers them; without it every change
    # that needs approval is refused with an explanation, never made silently.
    shows_approvals: bool = False
    # How the editor counts characters in the positions it sends (prompt context ranges).
    position_encoding: PositionEncoding = "utf-16"


class Editor(Protocol):
    @property
    def capabilities(self) -> EditorCapabilities: ...

    async def read_document(self, session_id: str, path: Path) -> EditorDocument | None:
        """The editor's copy of the file at the resolved `path`, if it holds one."""
        ...

    async def document_at(self, uri: str) -> EditorDocument | None:
        """The editor's copy of the document at `uri` (any scheme), if it holds one."""
        ...

    async def write_document(self, session_id: str, path: Path, text: str) -> None:
        """Make `text` the content of the file at `path`: in the editor where it is open
        there, and on disk. Raises with a message for the model if it cannot."""
        ...

    async def delete_document(self, session_id: str, path: Path) -> None:
        """Delete the file at `path`: through the editor where it is open there (so the user
        can undo it), and from disk."""
        ...

    def send_event(self, session_id: str, seq: int, event: AnyWireEvent) -> None:
        """Deliver one event of a session, in order."""
        ...
