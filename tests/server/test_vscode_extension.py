"""Runs the VS Code extension's whole test suite (vscode-extension/, `npm test`) with this
interpreter as the server's Python: the protocol client against the real `tiller serve`, the
extension glue with a `vscode` stand-in, the chat webview in headless Chromium
(/usr/bin/chromium), the generated protocol types check, and the .vsix packaging."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.extension_build import EXTENSION, npm_with_dependencies


@pytest.mark.timeout(900)  # a whole npm suite (webview in Chromium, packaging): slow on a busy 2-core machine
def test_the_vscode_extension_builds_passes_its_tests_and_packages():
    result = subprocess.run(
        [npm_with_dependencies(), "test"], cwd=EXTENSION, env={**os.environ, "TILLER_PYTHON": sys.executable},
        capture_output=True, text=True, timeout=840,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "# fail 0" in result.stdout and "# fail 1" not in result.stdout, output
