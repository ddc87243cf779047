"""grep, find and ls: .gitignore, hidden files, never .git/, limits and pi's notices."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiller.ai.abort import AbortSignal
from tiller.tools import FindTool, GrepTool, LsTool, Workspace, ripgrep

from .helpers import fails, run, text


@pytest.fixture
def tree(project: Path) -> Path:
    files = {
        ".gitignore": "build/\n*.log\n",
        "README.md": "Hello readme\n",
        ".env": "hello=1\n",
        ".hidden/note.txt": "hidden hello\n",
        "src/app.py": "def main():\n    return 'hello'\n",
        "src/util.py": "def helper():\n    pass\n",
        "build/out.py": "hello from build\n",
        "debug.log": "hello log\n",
        "logs/today.log": "hello again\n",
        ".git/config": "hello git\n",
    }
    for name, body in files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    return project


def lines(result) -> list[str]:
    return text(result).split("\n")


# --- grep ---------------------------------------------------------------------------------


@pytest.fixture
def grep(ws: Workspace) -> GrepTool:
    return GrepTool(ws)


async def test_grep_respects_gitignore_and_includes_hidden_files(grep, tree):
    assert lines(await run(grep, pattern="hello")) == [
        ".env:1: hello=1",
        ".hidden/note.txt:1: hidden hello",
        "src/app.py:2:     return 'hello'",
    ]


async def test_grep_options(grep, tree):
    assert "README.md:1: Hello readme" in lines(await run(grep, pattern="hello", ignoreCase=True))
    assert lines(await run(grep, pattern="def", glob="*.py")) == ["src/app.py:1: def main():", "src/util.py:1: def helper():"]
    (tree / "dots.txt").write_text("a.b\naxb\n")
    assert lines(await run(grep, pattern="a.b", path="dots.txt", literal=True)) == ["dots.txt:1: a.b"]
    assert lines(await run(grep, pattern="a.b", path="dots.txt")) == ["dots.txt:1: a.b", "dots.txt:2: axb"]


async def test_grep_glob_does_not_bring_back_ignored_files(grep, tree):
    assert text(await run(grep, pattern="hello", glob="*.log")) == "No matches found"
    assert text(await run(grep, pattern="hello", glob="src/**")) == "src/app.py:2:     return 'hello'"


async def test_grep_single_file_shows_its_name(grep, tree):
    assert text(await run(grep, pattern="return", path="src/app.py")) == "app.py:2:     return 'hello'"


async def test_grep_directory_paths_are_relative_to_it(grep, tree):
    assert text(await run(grep, pattern="return", path="src")) == "app.py:2:     return 'hello'"


async def test_grep_an_ignored_directory_on_request(grep, tree):
    assert text(await run(grep, pattern="hello", path="build")) == "out.py:1: hello from build"


async def test_grep_no_matches(grep, tree):
    result = await run(grep, pattern="zebra")
    assert text(result) == "No matches found" and result.details is None


async def test_grep_missing_path(grep, tree):
    assert await fails(grep, pattern="x", path="nowhere") == f"Path not found: {tree / 'nowhere'}"


async def test_grep_bad_regex(grep, tree):
    assert "regex parse error" in await fails(grep, pattern="(unclosed")


async def test_grep_pattern_starting_with_a_dash(grep, tree):
    (tree / "flags.txt").write_text("run --verbose\n")
    assert text(await run(grep, pattern="--verbose")) == "flags.txt:1: run --verbose"


async def test_grep_match_limit(grep, project):
    for name in "abc":
        (project / f"{name}.txt").write_text("needle\n")
    result = await run(grep, pattern="needle", limit=2)
    assert text(result) == (
        "a.txt:1: needle\nb.txt:1: needle\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]"
    )
    assert result.details == {"matchLimitReached": 2}


async def test_grep_exactly_limit_matches_has_no_notice(grep, project):
    (project / "a.txt").write_text("needle\nneedle\n")
    assert text(await run(grep, pattern="needle", limit=2)) == "a.txt:1: needle\na.txt:2: needle"


async def test_grep_global_limit_with_context(grep, project):
    (project / "context.txt").write_text("before\nmatch one\nafter\nmiddle\nmatch two\nafter two\n")
    output = text(await run(grep, pattern="match", path="context.txt", limit=1, context=1))
    assert output == (
        "context.txt-1- before\ncontext.txt:2: match one\ncontext.txt-3- after\n\n"
        "[1 matches limit reached. Use limit=2 for more, or refine pattern]"
    )


async def test_grep_context_of_nearby_matches_is_shared(grep, project):
    (project / "c.txt").write_text("a\nhit 1\nb\nhit 2\nc\n")
    assert lines(await run(grep, pattern="hit", context=1)) == [
        "c.txt-1- a",
        "c.txt:2: hit 1",
        "c.txt-3- b",
        "c.txt:4: hit 2",
        "c.txt-5- c",
    ]


async def test_grep_long_lines_are_cut(grep, project):
    (project / "wide.txt").write_text("needle " + "x" * 600 + "\n")
    result = await run(grep, pattern="needle")
    output = text(result)
    assert output.startswith("wide.txt:1: needle " + "x" * 493 + "... [truncated]\n\n")
    assert output.endswith("[Some lines truncated to 500 chars. Use read tool to see full lines]")
    assert result.details == {"linesTruncated": True}


async def test_grep_byte_limit_and_notice_order(grep, project):
    (project / "many.txt").write_text("".join(f"needle {i} " + "y" * 600 + "\n" for i in range(200)))
    result = await run(grep, pattern="needle", limit=150)
    output = text(result)
    assert output.endswith(
        "\n\n[150 matches limit reached. Use limit=300 for more, or refine pattern. 50.0KB limit reached. "
        "Some lines truncated to 500 chars. Use read tool to see full lines]"
    )
    assert len(output.encode()) < 52000
    assert result.details["truncation"]["truncatedBy"] == "bytes"


async def test_grep_crlf_lines_lose_their_cr(grep, project):
    (project / "dos.txt").write_bytes(b"needle\r\nother\r\n")
    assert text(await run(grep, pattern="needle")) == "dos.txt:1: needle"


# --- find ---------------------------------------------------------------------------------


@pytest.fixture
def find(ws: Workspace) -> FindTool:
    return FindTool(ws)


async def test_find_respects_gitignore(find, tree):
    assert lines(await run(find, pattern="*.py")) == ["src/app.py", "src/util.py"]
    assert text(await run(find, pattern="*.log")) == "No files found matching pattern"


async def test_find_includes_hidden_files_but_never_git(find, tree):
    assert lines(await run(find, pattern="*")) == [
        ".env",
        ".gitignore",
        ".hidden/note.txt",
        "README.md",
        "src/app.py",
        "src/util.py",
    ]
    assert text(await run(find, pattern="config")) == "No files found matching pattern"


async def test_find_glob_with_directories(find, tree):
    assert lines(await run(find, pattern="src/*.py")) == ["src/app.py", "src/util.py"]
    assert lines(await run(find, pattern="**/note.txt")) == [".hidden/note.txt"]


async def test_find_glob_does_not_bring_back_ignored_files(find, project):
    # A common editor setup: .vscode/ ignored except the shared settings file.
    (project / ".gitignore").write_text(".vscode/*\n!.vscode/settings.json\n*.tmp\n")
    for name in (".vscode/settings.json", ".vscode/launch.json", "a.py", "lib/b.py", "c.tmp", "lib/d.tmp"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text("")
    assert lines(await run(find, pattern="*.py")) == ["a.py", "lib/b.py"]
    assert lines(await run(find, pattern="lib/*.py")) == ["lib/b.py"]
    assert text(await run(find, pattern="*.tmp")) == "No files found matching pattern"
    assert text(await run(find, pattern="lib/*.tmp")) == "No files found matching pattern"
    assert lines(await run(find, pattern="*.json")) == [".vscode/settings.json"]


async def test_find_odd_patterns(find, project):
    for name in ("#notes.md", "x.py", "a/b/c.py"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text("")
    assert lines(await run(find, pattern="**/*.py")) == ["a/b/c.py", "x.py"]
    assert lines(await run(find, pattern="a/**")) == ["a/b/c.py"]
    assert lines(await run(find, pattern="*.{md,py}")) == ["#notes.md", "a/b/c.py", "x.py"]
    assert "line breaks" in await fails(find, pattern="*.py\n!*")


async def test_find_in_a_subdirectory(find, tree):
    assert lines(await run(find, pattern="*.py", path="src")) == ["app.py", "util.py"]


async def test_find_limit(find, tree):
    result = await run(find, pattern="*.py", limit=1)
    assert text(result) == "src/app.py\n\n[1 results limit reached. Use limit=2 for more, or refine pattern]"
    assert result.details == {"resultLimitReached": 1}


async def test_find_byte_limit(find, project):
    for i in range(300):
        (project / f"{i:03d}{'n' * 200}.txt").write_text("")
    result = await run(find, pattern="*.txt")
    assert text(result).endswith("\n\n[50.0KB limit reached]")
    assert result.details["truncation"]["truncated"] is True


async def test_find_errors(find, tree):
    assert await fails(find, pattern="*", path="missing") == f"Path not found: {tree / 'missing'}"
    assert await fails(find, pattern="*", path="README.md") == f"Not a directory: {tree / 'README.md'}"


# --- ls -----------------------------------------------------------------------------------


@pytest.fixture
def ls(ws: Workspace) -> LsTool:
    return LsTool(ws)


async def test_ls_lists_dotfiles_and_directories_without_ignored_ones(ls, tree):
    # build/ and debug.log are ignored, logs/ holds only ignored files, .git/ is never shown.
    assert lines(await run(ls)) == [".env", ".gitignore", ".hidden/", "README.md", "src/"]


async def test_ls_sorts_case_insensitively(ls, project):
    for name in ("b.txt", "A.txt", "c.txt", "B2.txt"):
        (project / name).write_text("")
    assert lines(await run(ls)) == ["A.txt", "b.txt", "B2.txt", "c.txt"]


async def test_ls_shows_empty_directories(ls, project):
    (project / "empty").mkdir()
    assert text(await run(ls)) == "empty/"
    assert text(await run(ls, path="empty")) == "(empty directory)"


async def test_ls_subdirectory_and_ignored_directory_on_request(ls, tree):
    assert lines(await run(ls, path="src")) == ["app.py", "util.py"]
    assert text(await run(ls, path="build")) == "out.py"


async def test_ls_limit(ls, project):
    for name in "abcde":
        (project / name).write_text("")
    result = await run(ls, limit=2)
    assert text(result) == "a\nb\n\n[2 entries limit reached. Use limit=4 for more]"
    assert result.details == {"entryLimitReached": 2}


async def test_ls_byte_limit(ls, project):
    for i in range(300):
        (project / f"{i:03d}{'n' * 200}").write_text("")
    assert text(await run(ls)).endswith("\n\n[50.0KB limit reached]")


async def test_ls_errors(ls, tree):
    assert await fails(ls, path="missing") == f"Path not found: {tree / 'missing'}"
    assert await fails(ls, path="README.md") == f"Not a directory: {tree / 'README.md'}"


async def test_ls_shows_symlinks_inside(ls, project):
    (project / "real").mkdir()
    (project / "real" / "f").write_text("")
    (project / "dir-link").symlink_to(project / "real")
    (project / "file-link").symlink_to(project / "real" / "f")
    assert lines(await run(ls)) == ["dir-link/", "file-link", "real/"]


# --- shared -------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [GrepTool, FindTool, LsTool])
async def test_abort_before_start(make, ws, tree):
    cancel = AbortSignal()
    cancel.abort()
    args = {"pattern": "x"} if make is not LsTool else {}
    assert await fails(make(ws), cancel, **args) == "Operation aborted"


async def test_missing_ripgrep_is_explained(monkeypatch, tmp_path, ws, tree):
    monkeypatch.setattr(ripgrep.sysconfig, "get_path", lambda name: str(tmp_path))
    monkeypatch.setattr(ripgrep.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert await fails(FindTool(ws), pattern="*") == ripgrep.RG_MISSING


def test_ripgrep_is_found_next_to_the_interpreter():
    assert Path(ripgrep.find_rg()).name == "rg"


async def test_grep_non_utf8_lines_are_decoded_with_replacement(grep, project):
    (project / "bin.txt").write_bytes(b"needle caf\xe9\n")
    assert text(await run(grep, pattern="needle")) == "bin.txt:1: needle caf\ufffd"


async def test_find_invalid_glob_is_reported(find, project):
    (project / "a.txt").write_text("")
    assert "glob" in (await fails(find, pattern="[abc")).lower()


async def test_abort_while_ripgrep_streams_kills_it(project):
    for i in range(50):
        (project / f"f{i}.txt").write_text("x")
    cancel = AbortSignal()
    seen: list[str] = []

    def on_line(line: str) -> None:
        seen.append(line)
        cancel.abort()  # as if the user hit stop while results were arriving

    with pytest.raises(ripgrep.ToolAborted, match="Operation aborted"):
        await ripgrep.run_rg(["--files", "."], cwd=project, cancel=cancel, on_line=on_line)
    assert 1 <= len(seen) < 50
