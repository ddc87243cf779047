from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tiller.tools import Workspace


@pytest.fixture(autouse=True)
def private_tempdir(tmp_path: Path, monkeypatch) -> None:
    """Temp files the tools make (bash logs, glob filters) land in the test's own tmp_path."""
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace holding a file no tool may read or change."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("TOP SECRET\n")
    return directory


@pytest.fixture
def ws(project: Path) -> Workspace:
    return Workspace(project)
