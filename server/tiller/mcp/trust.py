"""The user's answers about workspaces' `.mcp.json` files, remembered per project and content.

A project file can run any command, so its servers start only once the user approved it.
The answer is kept in `<data dir>/mcp-approvals.json` under the SHA-256 of the file's real
path and its bytes: a file that changed (another command, one more server) is asked about
again, and so is the same file in another repository, where its relative paths
(`tools/server.py`, `cwd`) name that repository's files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Literal

from ..ai.types import now_ms
from ..tools.atomic_write import write_atomically

logger = logging.getLogger("tiller.mcp")

Decision = Literal["allow", "reject"]
FILE_NAME = "mcp-approvals.json"


def project_key(project_file: Path, content: bytes) -> str:
    """Which file, where: its real path and its bytes."""
    where = os.path.realpath(project_file).encode("utf-8", "surrogateescape")
    return hashlib.sha256(where + b"\0" + content).hexdigest()


class ProjectApprovals:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME

    def decision(self, project_file: Path, content: bytes) -> Decision | None:
        entry = self._read().get(project_key(project_file, content))
        decision = entry.get("decision") if isinstance(entry, dict) else None
        return decision if decision in ("allow", "reject") else None

    def remember(self, project_file: Path, content: bytes, decision: Decision) -> None:
        files = self._read()
        files[project_key(project_file, content)] = {"decision": decision, "path": os.path.realpath(project_file),
                                                     "at": now_ms()}
        try:
            self._write({"version": 1, "files": files})
        except OSError as error:
            # The answer still holds for this session; it will be asked again next time.
            logger.warning("Could not remember the answer about %s in %s: %s", project_file, self.path, error)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as error:
            logger.warning("Ignoring %s, which cannot be read: %s", self.path, error)
            return {}
        files = data.get("files") if isinstance(data, dict) else None
        return files if isinstance(files, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        write_atomically(self.path, json.dumps(data, indent=1).encode("utf-8"))
        os.chmod(self.path, 0o600)  # which projects the user trusts is nobody else's business
