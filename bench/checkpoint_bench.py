"""What does a checkpoint of a large workspace cost, compared with plain git on the same tree?

    python bench/checkpoint_bench.py [--files 50000] [--ignored 10000] [--repeat 3]

(with the project's interpreter: `uv run python bench/checkpoint_bench.py`)

A tree of `files` source-like files (1-3 KiB, 50 per directory, nested two deep) plus
`ignored` files under a `.gitignore`d node_modules/ is built in a temporary directory. Then,
in the same run, each of these is timed against its baseline:

1. first checkpoint (tiller's ShadowRepo.snapshot: every file hashed into the shadow
   repository in tiller's data directory) vs `git init && git add -A` of the same tree in a
   fresh repository: the cost of reading the tree once;
2. a checkpoint with nothing changed vs a second `git add -A` in that repository (both only
   stat the files, thanks to their index);
3. a checkpoint after an agent-sized change (20 files edited, 5 created, 5 deleted) vs
   `git add -A` after the same change;
4. listing what a rewind would restore (diff of the two snapshots' trees) vs `git diff --cached
   --name-status HEAD` after the change.

Each figure is the median of `repeat` runs (the "first" ones on a fresh repository each time).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    from tiller.host.shadow_git import ShadowRepo
except ImportError:  # pragma: no cover
    sys.exit("run with the project's interpreter: uv run python bench/checkpoint_bench.py")

PER_DIRECTORY = 50
WORDS = ["alpha", "beta", "gamma", "delta", "value", "result", "index", "count", "name", "items"]


def build_tree(root: Path, files: int, ignored: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    (root / ".gitignore").write_text("node_modules/\n*.log\n")
    for number in range(files):
        directory = root / "src" / f"pkg{number // (PER_DIRECTORY * 20):03d}" / f"mod{number // PER_DIRECTORY:05d}"
        if number % PER_DIRECTORY == 0:
            directory.mkdir(parents=True, exist_ok=True)
        lines = [f"def f{number}_{i}({rng.choice(WORDS)}): return {rng.choice(WORDS)} + {i}" for i in
                 range(rng.randint(20, 60))]
        (directory / f"file{number}.py").write_text("\n".join(lines) + "\n")
    for number in range(ignored):
        directory = root / "node_modules" / f"dep{number // PER_DIRECTORY:04d}"
        if number % PER_DIRECTORY == 0:
            directory.mkdir(parents=True, exist_ok=True)
        (directory / f"index{number}.js").write_text(f"module.exports = {number};\n" * 20)


def agent_sized_change(root: Path, round_number: int) -> None:
    sources = sorted((root / "src").rglob("*.py"))
    for path in sources[round_number * 37 % len(sources) :][:20]:
        with path.open("a") as handle:
            handle.write(f"# edited in round {round_number}\n")
    for index in range(5):
        (root / "src" / f"new_{round_number}_{index}.py").write_text("x = 1\n")
    for path in sources[-(round_number + 1) * 5 :][:5]:
        path.unlink(missing_ok=True)


def git(work_tree: Path, git_dir: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "bench",
           "GIT_AUTHOR_EMAIL": "bench@localhost", "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}
    subprocess.run(["git", f"--git-dir={git_dir}", f"--work-tree={work_tree}", *args], cwd=work_tree, env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


async def checkpoint(repo: ShadowRepo, ref: str) -> str:
    async with repo.locked():
        commit = await repo.snapshot({"kind": "bench"}, ref, parent_ref=ref)
    return commit.tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--ignored", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="tiller-checkpoint-bench-"))
    try:
        run(base, args)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def one_round(base: Path, tree: Path, round_number: int, record) -> None:
    data_dir = base / f"data{round_number}"
    plain = base / f"plain{round_number}.git"
    repo = ShadowRepo(data_dir, str(tree))
    ref = "refs/tiller/sessions/bench"

    def plain_first() -> None:
        subprocess.run(["git", "init", "-q", "--bare", str(plain)], check=True)
        git(tree, plain, "add", "-A")

    def ours() -> str:
        return asyncio.run(checkpoint(repo, ref))

    first_baseline = timed(plain_first)
    first = timed(ours)
    record("first checkpoint / git init + add -A", first, first_baseline)

    unchanged_baseline = timed(lambda: git(tree, plain, "add", "-A"))
    unchanged = timed(ours)
    record("unchanged checkpoint / git add -A again", unchanged, unchanged_baseline)

    git(tree, plain, "commit", "-q", "-m", "before", "--no-verify")
    before_tree = ours()
    agent_sized_change(tree, round_number)
    changed_baseline = timed(lambda: git(tree, plain, "add", "-A"))
    start = time.perf_counter()
    after_tree = ours()
    changed = time.perf_counter() - start
    record("checkpoint after 30 changed files / git add -A", changed, changed_baseline)

    diff_baseline = timed(lambda: git(tree, plain, "diff", "--cached", "--name-status", "HEAD"))
    start = time.perf_counter()
    listed = asyncio.run(repo.changes(before_tree, after_tree))
    diff = time.perf_counter() - start
    assert len(listed) == 30, listed  # 20 edited, 5 created, 5 deleted
    record("what a rewind restores (30 paths) / git diff --cached", diff, diff_baseline)


def run(base: Path, args: argparse.Namespace) -> None:
    tree = base / "workspace"
    tree.mkdir()
    started = time.perf_counter()
    build_tree(tree, args.files, args.ignored)
    print(f"tree: {args.files} files + {args.ignored} ignored under node_modules/ "
          f"(built in {time.perf_counter() - started:.1f}s)")
    results: dict[str, tuple[list[float], list[float]]] = {}

    def record(name: str, ours: float, baseline: float) -> None:
        mine, theirs = results.setdefault(name, ([], []))
        mine.append(ours)
        theirs.append(baseline)

    for round_number in range(args.repeat):
        one_round(base, tree, round_number, record)

    print(f"{'measure':58} {'tiller':>9} {'baseline':>9} {'ratio':>7}")
    for name, (mine, theirs) in results.items():
        ours, baseline = statistics.median(mine), statistics.median(theirs)
        print(f"{name:58} {ours * 1000:8.0f}ms {baseline * 1000:8.0f}ms {ours / baseline:6.2f}x")
    size = sum(f.stat().st_size for f in (base / "data0").rglob("*") if f.is_file())
    print(f"shadow repository after 4 checkpoints: {size / 1e6:.1f} MB "
          f"(the tree's tracked files: {sum(f.stat().st_size for f in (tree / 'src').rglob('*.py')) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
