"""Runs tests/node (vscode-jsonrpc, VS Code's strict JSON-RPC reader, against the real
server) with this interpreter as the server's Python."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NODE_TESTS = Path(__file__).resolve().parents[1] / "node"


def test_a_vscode_jsonrpc_client_drives_the_server():
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed; the vscode-jsonrpc interop test (tests/node) needs Node 20+")
    if not (NODE_TESTS / "node_modules" / "vscode-jsonrpc").is_dir():
        npm = shutil.which("npm")
        assert npm is not None, "node is installed but npm is not: cannot install tests/node's dependencies"
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_TESTS, check=True, timeout=90,
                       capture_output=True)

    result = subprocess.run(
        [node, "--test", str(NODE_TESTS)],
        env={**os.environ, "TILLER_PYTHON": sys.executable},
        capture_output=True, text=True, timeout=90,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# pass 1" in result.stdout and "# fail 0" in result.stdout
