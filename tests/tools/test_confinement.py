"""No tool path may reach outside the workspace: `../`, absolute paths, symlinked files and
symlinked directories are refused, and nothing outside is read or written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiller.tools import create_coding_tools

from .helpers import fails, run, snapshot, text

ESCAPES = ["../outside/secret.txt", "ABSOLUTE", "file-link", "dir-link/secret.txt", "dir-link", "@../outside/secret.txt"]

ARGS = {
    "read": lambda path: {"path": path},
    "write": lambda path: {"path": path, "content": "pwned"},
    "edit": lambda path: {"path": path, "oldText": "TOP SECRET", "newText": "pwned"},
    "ls": lambda path: {"path": path},
    "find": lambda path: {"path": path, "pattern": "*"},
    "grep": lambda path: {"path": path, "pattern": "SECRET"},
}


@pytest.fixture
def tools(project: Path, outside: Path):
    (project / "file-link").symlink_to(outside / "secret.txt")
    (project / "dir-link").symlink_to(outside)
    (project / "inside.txt").write_text("inside\n")
    return create_coding_tools(project)


@pytest.mark.parametrize("escape", ESCAPES)
@pytest.mark.parametrize("name", sorted(ARGS))
async def test_escapes_are_refused(tools, outside: Path, name: str, escape: str):
    before = snapshot(outside)
    path = str(outside / "secret.txt") if escape == "ABSOLUTE" else escape
    message = await fails(tools[name], **ARGS[name](path))
    assert message.startswith("Path is outside the workspace: ")
    assert "TOP SECRET" not in message
    assert snapshot(outside) == before


@pytest.mark.parametrize("name", ["write", "edit"])
async def test_new_files_through_a_symlinked_directory_are_refused(tools, outside: Path, name: str):
    before = snapshot(outside)
    args = ARGS[name]("dir-link/new/file.txt")
    assert (await fails(tools[name], **args)).startswith("Path is outside the workspace: ")
    assert snapshot(outside) == before and not (outside / "new").exists()


async def test_searching_the_workspace_does_not_follow_links_out(tools, project: Path):
    assert text(await run(tools["grep"], pattern="SECRET")) == "No matches found"
    assert text(await run(tools["find"], pattern="*")) == "inside.txt"
    # The links are listed by name, but only a link to a directory inside gets a `/`.
    assert text(await run(tools["ls"])) == "dir-link\nfile-link\ninside.txt"


async def test_dotdot_inside_the_workspace_is_fine(tools, project: Path):
    (project / "sub").mkdir()
    assert text(await run(tools["read"], path="sub/../inside.txt")) == "inside\n"
