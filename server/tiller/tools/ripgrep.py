"""Running ripgrep: it owns glob matching and .gitignore semantics so the tools don't.

The `ripgrep` wheel on PyPI installs `rg` into the environment's scripts directory, so we
look there (next to the running interpreter) before PATH.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..ai.abort import AbortSignal
from ..environment import child_env
from .aborts import ToolAborted, raise_if_aborted

RG_MISSING = (
    "ripgrep (rg) is not available: install the 'ripgrep' Python package into tiller's "
    "environment or put rg on PATH"
)



def walk_args() -> list[str]:
    """Hidden files are searched, .gitignore applies even outside a git checkout, no user
    config file may change the output, and `.git/` is never listed."""
    return ["--hidden", "--no-require-git", "--color=never", "--no-config", "--glob=!.git"]


@contextmanager
def glob_filter(pattern: str | None) -> Iterator[list[str]]:
    """rg arguments that keep only files matching `pattern`, .gitignore still applying.

    rg's `--glob` would match for us, but as an override it also brings back ignored files
    that match it. Instead the name part becomes a file type (types are checked after the
    ignore rules, even for files a .gitignore re-includes with `!`), and a pattern with
    directories also gets an ignore file that ignores everything else (`--ignore-file`
    ranks below .gitignore, so what .gitignore ignores stays ignored). Patterns are
    relative to rg's working directory, the search directory. No pattern: no filter.
    """
    if not pattern:
        yield []
        return
    if "\n" in pattern or "\r" in pattern:
        raise ValueError("Glob patterns cannot contain line breaks")
    core = pattern
    while core.startswith("**/"):
        core = core[3:]
    name = core.rsplit("/", 1)[-1]
    args = ["--type-add", f"tillerglob:{name}", "--type=tillerglob"] if name and "**" not in name else []
    if "/" not in core:
        yield args
        return
    rule = "\\" + core if core[0] in "#!" else core  # a literal, not a comment or negation
    with tempfile.NamedTemporaryFile("w", prefix="tiller-glob-", suffix=".ignore", delete=False) as handle:
        handle.write(f"*\n!*/\n!{rule}\n")
    try:
        yield [*args, "--ignore-file", handle.name]
    finally:
        os.unlink(handle.name)


# rg --json puts a whole matched line on one stdout line; minified files have huge ones.
_LINE_LIMIT = 1 << 30


def find_rg() -> str:
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        for name in ("rg", "rg.exe"):
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    found = shutil.which("rg")
    if found is None:
        raise RuntimeError(RG_MISSING)
    return found


@dataclass
class RgRun:
    returncode: int | None
    stderr: str
    stopped: bool  # the caller had enough and we killed rg

    def failed(self) -> bool:
        """rg exits 0 (found), 1 (nothing found) or 2 (error, possibly after some output)."""
        return not self.stopped and self.returncode not in (0, 1)

    def error(self) -> str:
        return self.stderr.strip() or f"ripgrep exited with code {self.returncode}"


async def run_rg(
    args: list[str], *, cwd: Path, cancel: AbortSignal, on_line: Callable[[str], bool | None]
) -> RgRun:
    """Run rg in `cwd`, feeding each stdout line to `on_line` until it returns False.

    Abort kills rg and raises `Operation aborted`.
    """
    raise_if_aborted(cancel)
    proc = await asyncio.create_subprocess_exec(
        find_rg(), *args, cwd=cwd, limit=_LINE_LIMIT, env=child_env(),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    loop = asyncio.get_running_loop()
    forget_abort = cancel.on_abort(lambda: loop.call_soon_threadsafe(_kill, proc))
    # Read stderr alongside stdout: a full stderr pipe would otherwise stall rg.
    stderr = asyncio.ensure_future(proc.stderr.read())  # type: ignore[union-attr]
    stopped = False
    try:
        while not cancel.aborted and (line := await proc.stdout.readline()):  # type: ignore[union-attr]
            if on_line(line.decode("utf-8", "replace").rstrip("\n")) is False:
                stopped = True
                _kill(proc)
                break
        await proc.wait()
    finally:
        forget_abort()
        if proc.returncode is None:  # on_line raised or we were cancelled
            _kill(proc)
            await proc.wait()
        errors = (await stderr).decode("utf-8", "replace")
    if cancel.aborted:
        raise ToolAborted()
    return RgRun(proc.returncode, errors, stopped)


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def strip_dot(path: str) -> str:
    """rg prints paths under the `.` we search as `./x`; tools show `x`."""
    return path[2:] if path.startswith("./") else path
