"""Workspace path resolution and the environment bash gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiller.tools import OutsideWorkspaceError, Workspace


def test_relative_paths_resolve_under_the_root(ws: Workspace, project: Path):
    assert ws.resolve("src/a.py") == project / "src" / "a.py"
    assert ws.resolve(".") == project
    assert ws.resolve(None) == project
    assert ws.resolve("") == project


def test_leading_at_and_unicode_spaces(ws: Workspace, project: Path):
    assert ws.resolve("@notes.md") == project / "notes.md"
    assert ws.resolve("my\u00a0file.txt") == project / "my file.txt"


def test_absolute_path_inside_is_fine(ws: Workspace, project: Path):
    assert ws.resolve(str(project / "x" / "y")) == project / "x" / "y"


def test_tilde_expands(ws: Workspace, project: Path, monkeypatch):
    monkeypatch.setenv("HOME", str(project))
    assert ws.resolve("~/notes.md") == project / "notes.md"


def test_parent_escape_is_refused_with_a_clear_message(ws: Workspace, project: Path):
    with pytest.raises(OutsideWorkspaceError) as info:
        ws.resolve("../x")
    assert str(info.value) == (
        f"Path is outside the workspace: ../x (resolves to {project.parent / 'x'}); "
        f"tools may only touch files under {project}"
    )


def test_absolute_outside_is_refused(ws: Workspace):
    with pytest.raises(OutsideWorkspaceError):
        ws.resolve("/etc/passwd")


def test_dotdot_that_comes_back_inside_is_fine(ws: Workspace, project: Path):
    assert ws.resolve(f"../{project.name}/a.txt") == project / "a.txt"


def test_symlinks_are_judged_by_their_target(ws: Workspace, project: Path, outside: Path):
    (project / "out-file").symlink_to(outside / "secret.txt")
    (project / "out-dir").symlink_to(outside)
    (project / "dangling").symlink_to(outside / "not-yet")
    (project / "real.txt").write_text("x")
    (project / "in-link").symlink_to(project / "real.txt")
    for escape in ("out-file", "out-dir", "out-dir/secret.txt", "out-dir/new/deeper.txt", "dangling"):
        with pytest.raises(OutsideWorkspaceError):
            ws.resolve(escape)
    assert ws.resolve("in-link") == project / "real.txt"


def test_missing_paths_are_judged_by_their_nearest_existing_parent(ws: Workspace, project: Path):
    assert ws.resolve("new/dir/file.txt") == project / "new" / "dir" / "file.txt"


def test_extra_roots_and_allowing(project: Path, outside: Path):
    assert Workspace(project, [outside]).resolve(str(outside / "secret.txt")) == outside / "secret.txt"
    narrow = Workspace(project)
    wider = narrow.allowing(outside)
    assert wider.resolve(str(outside / "secret.txt")) == outside / "secret.txt"
    with pytest.raises(OutsideWorkspaceError) as info:
        narrow.resolve(str(outside / "secret.txt"))
    assert str(project) in str(info.value)


def test_root_itself_may_be_a_symlink(tmp_path: Path, project: Path):
    link = tmp_path / "link-to-proj"
    link.symlink_to(project)
    assert Workspace(link).resolve("a.txt") == project / "a.txt"
