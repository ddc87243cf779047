"""The code passes its linter (ruff) and its type checker (mypy), as configured in pyproject.toml.

Run as tests so that `pytest` alone says whether the tree is ready to land."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# mypy without its cache (a fresh clone) on a busy 2-core machine takes minutes, not seconds.
pytestmark = pytest.mark.timeout(600)

ROOT = Path(__file__).resolve().parent.parent


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    result = run("ruff", "check", "--output-format", "concise", "server", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing() -> None:
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
