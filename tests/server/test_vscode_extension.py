"""Runs the VS Code extension's whole test suite (vscode-extension/, `npm test`) with this
interpreter as the server's Python: the protocol client against the real `tiller serve`, the
extension glue with a `vscode` stand-in, the chat webview in headless Chromium
(/usr/bin/chromium), the generated protocol types check, and the .vsix packaging."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXTENSION = Path(__file__).resolve().parents[2] / "vscode-extension"


def _dependencies_stale() -> bool:
    installed = EXTENSION / "node_modules" / ".package-lock.json"
    lock = EXTENSION / "package-lock.json"
    return not installed.is_file() or installed.stat().st_mtime < lock.stat().st_mtime


def test_the_vscode_extension_builds_passes_its_tests_and_packages():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed; the VS Code extension's tests (vscode-extension/) need Node 20+")
    npm = shutil.which("npm")
    assert npm is not None, "node is installed but npm is not: cannot install vscode-extension's dependencies"
    if _dependencies_stale():
        installed = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=EXTENSION, capture_output=True,
                                   text=True, timeout=300)
        assert installed.returncode == 0, f"npm ci failed:\n{installed.stdout}{installed.stderr}"

    result = subprocess.run(
        [npm, "test"], cwd=EXTENSION, env={**os.environ, "TILLER_PYTHON": sys.executable},
        capture_output=True, text=True, timeout=400,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "# fail 0" in result.stdout and "# fail 1" not in result.stdout, output
