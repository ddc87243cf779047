"""What the VS Code extension's test suites (tests/server/test_vscode_extension.py, and
tests/vscode/ in real VS Code) need before they run: their tools, and vscode-extension's npm
dependencies."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "vscode-extension"


def require(found: object, message: str) -> None:
    """A missing tool skips the test with `message`, except under CI=true, where a suite that
    silently stops running is a failure."""
    if found:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message} (CI=true: .ci/run must install it)")
    pytest.skip(message)


def npm_with_dependencies() -> str:
    """npm, with vscode-extension's dependencies installed (npm ci when the lock file is newer)."""
    require(shutil.which("node"), "node is not installed; the VS Code extension's tests (vscode-extension/) need Node 20+")
    found = shutil.which("npm")
    assert found is not None, "node is installed but npm is not: cannot install vscode-extension's dependencies"
    installed = EXTENSION / "node_modules" / ".package-lock.json"
    lock = EXTENSION / "package-lock.json"
    if not installed.is_file() or installed.stat().st_mtime < lock.stat().st_mtime:
        done = subprocess.run([found, "ci", "--no-audit", "--no-fund"], cwd=EXTENSION, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, f"npm ci failed:\n{done.stdout}{done.stderr}"
    return found
