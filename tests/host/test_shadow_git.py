"""The shadow repository with real git: staging path by path and staging by one walk of the
tree (used when many paths changed, e.g. a first snapshot) record the same tree."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from tiller.host.shadow_git import ShadowRepo


def tree_of(repo: ShadowRepo, commit_tree: str) -> list[str]:
    out = subprocess.run(["git", f"--git-dir={repo.git_dir}", "ls-tree", "-r", "--name-only", "-z", commit_tree],
                         capture_output=True, check=True).stdout
    return sorted(p.decode() for p in out.split(b"\0") if p)


def test_bulk_and_path_by_path_staging_record_the_same_tree(tmp_path: Path):
    work = tmp_path / "work"
    (work / "src" / "deep").mkdir(parents=True)
    (work / ".gitignore").write_text("build/\n*.log\n")
    for i in range(30):
        (work / "src" / f"m{i}.py").write_text(f"x = {i}\n")
    (work / "src" / "deep" / "[odd]*name?.txt").write_text("glob characters, taken literally\n")
    (work / "src" / "ünï cödé.txt").write_text("unicode\n")
    (work / "build").mkdir()
    (work / "build" / "out.bin").write_text("ignored\n")
    (work / "run.log").write_text("ignored\n")
    (work / "huge.dat").write_bytes(b"x" * 2048)  # over the limit below: left out
    os.symlink("src/m1.py", work / "link.py")

    async def snapshots(bulk_paths: int, name: str) -> tuple[str, str]:
        repo = ShadowRepo(tmp_path / name, str(work), max_file_bytes=1024, bulk_paths=bulk_paths)
        async with repo.locked():
            first = await repo.snapshot({"n": 1}, "refs/t/a")
        (work / "src" / "m0.py").write_text("changed\n")
        (work / "src" / "m2.py").unlink()
        (work / "src" / "new.py").write_text("new\n")
        async with repo.locked():
            second = await repo.snapshot({"n": 2}, "refs/t/b", "refs/t/a")
        # Put the tree back for the other repository's run.
        (work / "src" / "m0.py").write_text("x = 0\n")
        (work / "src" / "m2.py").write_text("x = 2\n")
        (work / "src" / "new.py").unlink()
        assert tree_of(repo, first.tree) != tree_of(repo, second.tree)
        return first.tree, second.tree

    bulk = asyncio.run(snapshots(0, "bulk"))  # every snapshot by one walk
    by_path = asyncio.run(snapshots(10_000, "by-path"))  # every snapshot path by path
    assert bulk == by_path  # the same trees, object for object
    repo = ShadowRepo(tmp_path / "bulk", str(work))
    listed = tree_of(repo, bulk[0])
    assert "src/deep/[odd]*name?.txt" in listed and "src/ünï cödé.txt" in listed and "link.py" in listed
    assert not any(p.startswith("build/") or p.endswith(".log") or p == "huge.dat" for p in listed)
    assert "src/new.py" in tree_of(repo, bulk[1]) and "src/m2.py" not in tree_of(repo, bulk[1])


def git(*args: str) -> None:
    subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@example.com", *args], check=True,
                   capture_output=True)


async def three_snapshots(data: Path, package: Path, bulk_paths: int) -> tuple[list[str], list[str], list[str]]:
    """The trees of a package as found, after an edit and a deletion, and after the edit is undone."""
    repo = ShadowRepo(data, str(package), bulk_paths=bulk_paths)
    async with repo.locked():
        first = await repo.snapshot({}, "refs/t/a")
    (package / "main.py").write_text("print(2)\n")
    (package / "sub" / "build").unlink()
    async with repo.locked():
        second = await repo.snapshot({}, "refs/t/b", "refs/t/a")
    (package / "main.py").write_text("print(1)\n")
    async with repo.locked():
        third = await repo.snapshot({}, "refs/t/c", "refs/t/b")
    return tree_of(repo, first.tree), tree_of(repo, second.tree), tree_of(repo, third.tree)


def test_a_workspace_inside_a_repository_follows_its_ignore_rules(tmp_path: Path):
    # The editor opened pkg/, a package of a repository: the ignore files above it count.
    root = tmp_path / "repo"
    git("init", "-q", str(root))
    (root / ".gitignore").write_text(".env\nnode_modules/\n/pkg/build/\n")
    (root / ".git" / "info" / "exclude").write_text("secret.txt\n")
    git("-C", str(root), "add", ".gitignore")
    git("-C", str(root), "commit", "-qm", "ignore rules")
    git("-C", str(root), "worktree", "add", "-q", str(tmp_path / "linked"))  # .git is a file there

    for top in (root, tmp_path / "linked"):
        package = top / "pkg"
        (package / "node_modules" / "x").mkdir(parents=True)
        (package / "node_modules" / "x" / "i.js").write_text("1\n")
        (package / "build").mkdir()
        (package / "build" / "out.o").write_text("o\n")
        (package / "main.py").write_text("print(1)\n")
        (package / ".env").write_text("TOKEN=abc\n")
        (package / "secret.txt").write_text("s\n")
        (package / "sub").mkdir()
        (package / "sub" / "build").write_text("not the ignored /pkg/build/\n")

        for bulk_paths in (0, 1000):  # staged by one walk, and path by path
            (package / "sub" / "build").write_text("not the ignored /pkg/build/\n")
            assert asyncio.run(three_snapshots(tmp_path / f"data-{top.name}-{bulk_paths}", package, bulk_paths)) == (["main.py", "sub/build"], ["main.py"], ["main.py"]), top
    # A package with nothing to record yet records an empty tree.
    (root / "empty").mkdir()

    async def empty() -> str:
        repo = ShadowRepo(tmp_path / "data-empty", str(root / "empty"))
        async with repo.locked():
            return (await repo.snapshot({}, "refs/t/a")).tree

    assert asyncio.run(empty()) == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    # The user's repository is only read: nothing of it is staged or changed.
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True).stdout
    assert status.split() == ["??", "pkg/"]
