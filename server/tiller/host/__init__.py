"""The agent host: sessions, their runs and events, approvals and saving, for any front end.

It knows no transport. A front end (`tiller.lsp`, `tiller.acp`) builds a `Host` around its
own `Editor` (see `editor.py`) and turns its protocol's requests into calls on the host.
"""

from .editor import Editor, EditorCapabilities, EditorDocument
from .errors import HostError
from .host import Host
from .session import Session
from .settings import HostSettings

__all__ = ["Editor", "EditorCapabilities", "EditorDocument", "Host", "HostError", "HostSettings", "Session"]
