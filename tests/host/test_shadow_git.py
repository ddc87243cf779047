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
