"""A shadow git repository of a workspace: snapshots of its files, never touching the user's .git.

The repository lives in tiller's data directory (`<dataDir>/checkpoints/<hash of the path>/`),
bare, and is pointed at the workspace with `--work-tree`, so git's own machinery does the work:
`.gitignore` files are honoured (and the workspace repository's `.git/info/exclude`, copied into
the shadow's), unchanged files cost one `stat` each thanks to the shadow's index (unchanged
directories less, with git's untracked cache), and contents are stored once however many
snapshots hold them. A snapshot lists what changed (`ls-files`: one walk of the tree), stages
just that, and writes a tree and a commit; whatever changed the files (the agent, bash, the
user) is captured alike.

A workspace inside a git repository (a package of a monorepo: the editor opened a subfolder)
is recorded with that repository's ignore rules, the `.gitignore` files above it included: the
work tree git is given is the repository's top, git runs in the workspace (so every listing
and every path is the workspace's, relative to it), and a tree is written of the workspace's
part of the index alone (`write-tree --prefix`). git reads the ignore files of the directories
above where it runs as it does in any repository; nothing above the workspace is listed, and
the user's repository is never run or written.

git runs without the user's global or system configuration (no hooks, filters, fsmonitor or
pager of theirs can run), in a minimal environment. Files larger than `max_file_bytes` are left
out of snapshots (a dataset or a build artefact nobody ignored would make each one slow and
large); a rewind never touches them. Snapshots of one workspace are taken one at a time, across
processes too (a lock file).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 10 * 1024 * 1024
# More changed paths than this are staged by one walk of the tree rather than path by path.
BULK_PATHS = 1000
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class GitError(RuntimeError):
    pass


def git_available() -> bool:
    return shutil.which("git") is not None


# Modes of tree entries, as git writes them.
MODE_ABSENT = "000000"  # (in a diff: no entry on that side)
MODE_EXECUTABLE = "100755"
MODE_SYMLINK = "120000"
MODE_GITLINK = "160000"  # a nested repository: a commit id, not its files


@dataclass(frozen=True)
class Change:
    """One path whose content differs between two snapshots."""

    path: str  # relative to the workspace, with "/" separators
    old_mode: str  # MODE_ABSENT when absent
    new_mode: str
    new_blob: str
    old_blob: str = ""


@dataclass(frozen=True)
class Commit:
    sha: str
    tree: str
    meta: dict[str, Any]


class ShadowRepo:
    def __init__(self, data_dir: Path, work_tree: str, max_file_bytes: int = MAX_FILE_BYTES,
                 bulk_paths: int = BULK_PATHS) -> None:
        self.work_tree = os.path.realpath(work_tree)
        # The enclosing repository's top (the work tree git is given) and the workspace's
        # place in it ("" or "pkg/a/").
        self.top = _repository_top(self.work_tree)
        self.prefix = "" if self.top == self.work_tree else os.path.relpath(self.work_tree, self.top) + "/"
        digest = hashlib.sha256(self.work_tree.encode("utf-8", "surrogateescape")).hexdigest()[:20]
        self.git_dir = data_dir / "checkpoints" / digest
        self.max_file_bytes = max_file_bytes
        self.bulk_paths = bulk_paths
        self._excluded_dirs = [d for d in (os.path.realpath(data_dir),) if _inside(d, self.work_tree)]
        self._lock = asyncio.Lock()

    # --- running git -----------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = {name: os.environ[name] for name in ("PATH", "HOME", "XDG_CONFIG_HOME", "TMPDIR") if name in os.environ}
        env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0", LC_ALL="C",
                   GIT_AUTHOR_NAME="tiller", GIT_AUTHOR_EMAIL="tiller@localhost", GIT_COMMITTER_NAME="tiller",
                   GIT_COMMITTER_EMAIL="tiller@localhost")
        return env

    async def git(self, *args: str, input: bytes | None = None, ok: tuple[int, ...] = (0,),
                  work_tree: str | None = None, at_top: bool = False) -> bytes:
        # `init` makes the repository; everything else runs in it, on the workspace (or in
        # the same place of another `work_tree`; or `at_top` of the work tree).
        top = work_tree or self.top
        here = top if at_top else os.path.join(top, self.prefix)
        where = [] if args[0] == "init" else [f"--git-dir={self.git_dir}", f"--work-tree={top}"]
        process = await asyncio.create_subprocess_exec(
            "git", *where,
            "-c", "core.autocrlf=false", "-c", "core.fsmonitor=false", "-c", "core.quotepath=false",
            "-c", "advice.addEmbeddedRepo=false", "-c", "gc.auto=0",
            # Directory mtimes spare git re-reading unchanged directories for untracked files.
            "-c", "core.untrackedCache=true", *args,
            cwd=here, env=self._env(), stdin=asyncio.subprocess.PIPE if input is not None else None,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await process.communicate(input)
        if process.returncode not in ok:
            message = err.decode("utf-8", "replace").strip() or f"exit code {process.returncode}"
            raise GitError(f"git {args[0]}: {message}")
        return out

    @contextlib.asynccontextmanager
    async def locked(self) -> AsyncIterator[None]:
        """One snapshot or restore of this workspace at a time, in this process and across."""
        async with self._lock:
            await asyncio.to_thread(self.git_dir.mkdir, parents=True, exist_ok=True, mode=0o700)
            handle = await asyncio.to_thread(open, self.git_dir / "tiller.lock", "a+")
            try:
                await asyncio.to_thread(fcntl.flock, handle.fileno(), fcntl.LOCK_EX)
                yield
            finally:
                handle.close()  # releases the lock

    # --- snapshots -------------------------------------------------------------------------

    async def _ensure(self) -> None:
        if not (self.git_dir / "HEAD").exists():
            await self.git("init", "--quiet", "--bare", str(self.git_dir))
            (self.git_dir / "workspace").write_text(self.work_tree + "\n")
        top = self.git_dir / "top"
        with contextlib.suppress(OSError):
            if top.read_text().rstrip("\n") != self.top:
                # The index names paths from another top (tiller before it looked above the
                # workspace, or a repository made or removed around it): start it again.
                (self.git_dir / "index").unlink(missing_ok=True)
        if not top.exists() and self.prefix:
            (self.git_dir / "index").unlink(missing_ok=True)
        top.write_text(self.top + "\n")
        excludes = [f"/{os.path.relpath(d, self.top)}/" for d in self._excluded_dirs]
        with contextlib.suppress(OSError):
            excludes.append(_repository_exclude(self.top).read_text(encoding="utf-8", errors="replace"))
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "exclude").write_text("\n".join(excludes) + "\n")

    async def snapshot(self, meta: dict[str, Any], ref: str | None, parent_ref: str | None = None) -> Commit:
        """Record the workspace as it is now; `ref` (if given) then points at the commit,
        whose parent is what `parent_ref` pointed at. Call under `locked()`."""
        await self._ensure()
        changed, gone, too_big = await self._changed_paths()
        if gone:  # deleted, or grown past the limit: forgotten, never kept at an old version
            # From the top: in a subdirectory, `git rm` takes that directory for a pathspec
            # and refuses --pathspec-from-file besides it.
            await self.git("rm", "--cached", "--force", "--quiet", "--ignore-unmatch", "-r", "--pathspec-from-file=-",
                           "--pathspec-file-nul", input=_pathspecs([self.prefix + p for p in gone]), at_top=True)
        if len(changed) > self.bulk_paths:
            # git matches every file against every pathspec: thousands of them (a first
            # snapshot) would cost files x paths. One walk of the whole tree instead, leaving
            # out only what is too big.
            await self.git("add", "--all", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul",
                           input=b".\0" + _pathspecs(too_big, magic="exclude,literal"), ok=(0, 1))
        elif changed:  # only what changed is staged: no second walk of the tree
            await self.git("add", "--all", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul",
                           input=_pathspecs(changed), ok=(0, 1))
        tree = await self._write_tree()
        if too_big:  # so a rewind to it knows these were there, and leaves them alone
            meta = {**meta, "tooLarge": too_big}
        parents: list[str] = []
        if parent_ref is not None and (parent := await self.resolve(parent_ref)):
            parents = ["-p", parent]
        message = json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        sha = (await self.git("commit-tree", tree, *parents, "-F", "-", input=message)).decode().strip()
        if ref is not None:
            await self.git("update-ref", ref, sha)
        return Commit(sha, tree, meta)

    async def _write_tree(self) -> str:
        if not self.prefix:
            return (await self.git("write-tree")).decode().strip()
        try:
            return (await self.git("write-tree", f"--prefix={self.prefix}")).decode().strip()
        except GitError as error:
            if f"prefix {self.prefix} not found" in str(error):
                return _EMPTY_TREE  # nothing recorded in the workspace (yet)
            raise

    async def _changed_paths(self) -> tuple[list[str], list[str], list[str]]:
        """What changed since the last snapshot, in one walk of the tree (ignored files left
        out): the paths to stage, the paths to drop (deleted, or too big to record), and the
        changed ones too big to record."""
        listed, now_ignored = await asyncio.gather(
            self.git("ls-files", "-z", "-t", "--others", "--modified", "--deleted", "--exclude-standard"),
            # Recorded before, ignored now: dropped, so a snapshot follows the ignore rules of now.
            self.git("ls-files", "-z", "--cached", "--ignored", "--exclude-standard"),
        )
        ignored = {p.decode("utf-8", "surrogateescape") for p in now_ignored.split(b"\0") if p}
        tagged = [entry.decode("utf-8", "surrogateescape") for entry in listed.split(b"\0") if len(entry) > 2]
        deleted = {entry[2:] for entry in tagged if entry[0] == "R"}  # git's "removed"
        dropped = deleted | ignored
        present = list(dict.fromkeys(entry[2:] for entry in tagged if entry[2:] not in dropped))
        # A directory that became a symlink: what was under it goes, the link itself is recorded.
        links = {path: link for path in present if (link := self._symlinked_parent(path)) is not None}
        present = list(dict.fromkeys(links.get(path, path) for path in present))
        too_big = set(await asyncio.to_thread(self._larger_than_limit, present))
        return ([p for p in present if p not in too_big], sorted(dropped | too_big | set(links.values())),
                sorted(too_big))

    def _symlinked_parent(self, path: str) -> str | None:
        parts = path.split("/")
        for end in range(1, len(parts)):
            if os.path.islink(os.path.join(self.work_tree, *parts[:end])):
                return "/".join(parts[:end])
        return None

    def _larger_than_limit(self, paths: list[str]) -> list[str]:
        big = []
        for path in paths:
            try:
                if os.lstat(os.path.join(self.work_tree, path)).st_size > self.max_file_bytes:
                    big.append(path)
            except OSError:
                continue  # deleted: nothing to weigh
        return big

    # --- reading -----------------------------------------------------------------------------

    async def resolve(self, ref: str) -> str | None:
        out = await self.git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", ok=(0, 1))
        return out.decode().strip() or None

    async def commits(self, ref: str) -> list[Commit]:
        """The commits reachable from `ref` along first parents, newest first."""
        if not (self.git_dir / "HEAD").exists() or await self.resolve(ref) is None:
            return []
        out = await self.git("log", "--first-parent", "--format=%H%x1f%T%x1f%B%x1e", ref)
        commits = []
        for record in out.decode("utf-8", "replace").split("\x1e"):
            fields = record.strip("\n").split("\x1f")
            if len(fields) == 3:
                with contextlib.suppress(ValueError):
                    commits.append(Commit(fields[0], fields[1], json.loads(fields[2])))
        return commits

    async def commit(self, sha: str) -> Commit | None:
        if not all(c in "0123456789abcdef" for c in sha) or not 4 <= len(sha) <= 40:
            return None
        out = await self.git("show", "--no-patch", "--format=%H%x1f%T%x1f%B", sha, "--", ok=(0, 128))
        fields = out.decode("utf-8", "replace").strip("\n").split("\x1f")
        if len(fields) != 3:
            return None
        try:
            return Commit(fields[0], fields[1], json.loads(fields[2]))
        except ValueError:
            return None

    async def changes(self, from_tree: str | None, to_tree: str) -> list[Change]:
        """What differs between two trees (no rename detection: a rename is a delete and an add)."""
        out = await self.git("diff-tree", "-r", "-z", "--no-renames", from_tree or _EMPTY_TREE, to_tree)
        fields = out.split(b"\0")
        changes = []
        for index in range(0, len(fields) - 1, 2):
            header, path = fields[index].decode(), fields[index + 1].decode("utf-8", "surrogateescape")
            if not header.startswith(":"):
                continue
            old_mode, new_mode, old_blob, new_blob, _ = header[1:].split(" ")
            changes.append(Change(path, old_mode, new_mode, new_blob, old_blob))
        return changes

    async def nested_repositories(self, *trees: str) -> list[str]:
        """The nested git repositories (a clone, a submodule's work tree) in any of `trees`: git
        records each as a commit id alone, never its files."""
        found: set[str] = set()
        gitlink = MODE_GITLINK.encode() + b" "
        for tree in trees:
            for entry in (await self.git("ls-tree", "-r", "-z", tree)).split(b"\0"):
                info, _, name = entry.partition(b"\t")
                if info.startswith(gitlink):
                    found.add(name.decode("utf-8", "surrogateescape"))
        return sorted(found)

    async def left_out(self, commit: Commit, paths: list[str]) -> dict[str, str]:
        """Which of `paths` (none of them in `commit`) the snapshot left out rather than found
        missing, and why: too large then, or ignored by the ignore files it holds. A rewind to
        it must not delete them: it never knew what they held."""
        too_large = set(commit.meta.get("tooLarge") or ())
        reasons = {path: "it was too large to be in the checkpoint" for path in paths if path in too_large}
        rest = [path for path in paths if path not in reasons]
        if rest:
            for path in await self._ignored_in(commit.tree, rest):
                reasons[path] = "it was ignored when the checkpoint was taken"
        return reasons

    async def _ignored_in(self, tree: str, paths: list[str]) -> list[str]:
        """Which `paths` the `.gitignore` files of `tree` (with those above the workspace as
        they are now, and the exclude file) ignore: git judges them in a scratch work tree
        holding just those ignore files."""
        listing = await self.git("ls-tree", "-r", "-z", tree)
        with tempfile.TemporaryDirectory(prefix="tiller-ignores-") as scratch:
            Path(scratch, self.prefix).mkdir(parents=True, exist_ok=True)
            above = Path(self.work_tree)
            while above != Path(self.top):
                above = above.parent
                with contextlib.suppress(OSError):
                    shutil.copyfile(above / ".gitignore", Path(scratch, above.relative_to(self.top), ".gitignore"))
            for entry in listing.split(b"\0"):
                info, _, name = entry.partition(b"\t")
                if name.rsplit(b"/", 1)[-1] == b".gitignore" and info.split(b" ")[1:2] == [b"blob"]:
                    target = Path(scratch, self.prefix, os.fsdecode(name))
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(await self.blob(info.split(b" ")[2].decode()))
            out = await self.git("check-ignore", "--no-index", "-z", "--stdin", input=_pathspecs(paths, magic=None),
                                 ok=(0, 1), work_tree=scratch)
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    async def blob(self, sha: str) -> bytes:
        return await self.git("cat-file", "blob", sha)

    async def delete_ref(self, ref: str) -> None:
        if (self.git_dir / "HEAD").exists():
            await self.git("update-ref", "-d", ref, ok=(0, 1))


def _pathspecs(paths: list[str], magic: str | None = "literal") -> bytes:
    prefix = f":({magic})".encode() if magic else b""
    return b"".join(prefix + p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)


def _repository_top(path: str) -> str:
    """The top of the git repository `path` lies in (its own `.git`, or the nearest one above:
    a directory, or a file as in a worktree or a submodule); `path` itself outside any."""
    here = path
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return path
        here = parent


def _repository_exclude(top: str) -> Path:
    """The repository's `info/exclude`: in `.git/`, or, where `.git` is a file (`gitdir: …`),
    in the common directory of the git directory it names."""
    dot_git = Path(top, ".git")
    if dot_git.is_dir():
        return dot_git / "info" / "exclude"
    pointer = dot_git.read_text(encoding="utf-8", errors="replace")
    if not pointer.startswith("gitdir:"):
        raise OSError(f"{dot_git} names no git directory")
    git_dir = Path(top, pointer[len("gitdir:"):].strip())
    common = git_dir / "commondir"
    if common.is_file():
        git_dir = git_dir / common.read_text(encoding="utf-8", errors="replace").strip()
    return git_dir / "info" / "exclude"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
