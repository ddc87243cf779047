"""The VS Code extension inside real VS Code. vscode-extension/scripts/test-vscode.mjs packages
the .vsix, starts code-server (the npm package that holds VS Code's workbench and Node
extension host; installed and cached by .ci/install-code-server), installs the .vsix there,
and drives the workbench from Debian's Chromium with playwright-core. The extension starts
this interpreter's `tiller serve` with the scripted faux model. Screenshots of the main states
land in vscode-extension/test-artifacts/."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.extension_build import EXTENSION, npm_with_dependencies, require

INSTALLER = Path(__file__).resolve().parents[2] / ".ci" / "install-code-server"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


def code_server_dir() -> str | None:
    """The code-server install: $TILLER_CODE_SERVER_DIR, else the cache, if it is there."""
    if os.environ.get("TILLER_CODE_SERVER_DIR"):
        return os.environ["TILLER_CODE_SERVER_DIR"]
    found = subprocess.run(["bash", str(INSTALLER), "--check"], capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else None


@pytest.mark.timeout(900)
def test_the_extension_works_in_real_vscode():
    require(Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)")
    code_server = code_server_dir()
    require(code_server, "code-server is not installed: run .ci/install-code-server (about 4 minutes once, then cached)")
    npm_with_dependencies()  # node, playwright-core and vsce
    env = {**os.environ, "TILLER_PYTHON": sys.executable, "TILLER_CODE_SERVER_DIR": str(code_server),
           "CHROMIUM_PATH": CHROMIUM}
    # Its own session: on a timeout the whole tree (code-server, its extension hosts, `tiller
    # serve`) is stopped, first politely so the runner can stop code-server's process group.
    runner = subprocess.Popen(["node", "scripts/test-vscode.mjs"], cwd=EXTENSION, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = runner.communicate(timeout=780)
    except subprocess.TimeoutExpired:
        os.killpg(runner.pid, signal.SIGTERM)
        try:
            output, _ = runner.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(runner.pid, signal.SIGKILL)
            output, _ = runner.communicate()
        pytest.fail(f"the real-VS-Code suite did not finish in 13 minutes:\n{output}")
    assert runner.returncode == 0, output
    assert "# fail 0" in output and "# pass 0" not in output, output
