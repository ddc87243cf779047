"""Project instructions: AGENTS.md (or CLAUDE.md) files added to a session's system prompt.

Where they are looked for, in the order they are added (the nearest last, so that it has
the final word):
1. tiller's config directory (`$XDG_CONFIG_HOME/tiller`, else `~/.config/tiller`): the
   user's instructions for every project;
2. each directory from the workspace root down to the session's cwd. The workspace root is
   the deepest workspace folder holding the cwd; failing that the git repository holding it
   (the nearest directory with a `.git`); failing that the cwd alone.
In each directory AGENTS.md is read, or CLAUDE.md when there is no AGENTS.md.

A project file is read only if it is a regular file whose real path stays inside the
workspace root (`CLAUDE.md -> AGENTS.md` is common; a link to `/proc/self/environ` or
`~/.ssh/config` in a cloned repository would put secrets into the prompt). Only the first
MAX_FILE_CHARS characters of a file are read and sent, so a huge file costs nothing.

Before each prompt the files are looked for again; a file that changed, appeared or went
away changes the system prompt of that run, and the session reports the new list.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..agent import Agent
from ..ai.models import config_dir
from ..protocol.context import InstructionFile, InstructionsEvent

NAMES = ("AGENTS.md", "CLAUDE.md")
# One file's share of the system prompt; a longer one is cut with a notice.
MAX_FILE_CHARS = 32_000
HEADING = (
    "# Project instructions\n\n"
    "The user's instructions for this work, from the files below. Follow them; where two "
    "disagree, the later file (nearer the working directory) wins."
)

Scope = Literal["user", "project"]


@dataclass(frozen=True)
class _Loaded:
    path: Path
    scope: Scope
    stamp: tuple[int, int]  # (mtime_ns, size): a change shows in either
    text: str  # at most MAX_FILE_CHARS characters
    cut: bool  # the file holds more than `text`


class ProjectInstructions:
    def __init__(self, cwd: str, roots: Iterable[str], base_prompt: str, user_dir: Path | None = None) -> None:
        self.cwd = Path(cwd)
        self.roots = [Path(os.path.realpath(root)) for root in roots]
        # The system prompt without instructions: what the session file records.
        self.base_prompt = base_prompt
        self.user_dir = user_dir if user_dir is not None else config_dir()
        self._loaded: list[_Loaded] = []

    @property
    def files(self) -> list[InstructionFile]:
        return [InstructionFile(path=str(item.path), scope=item.scope) for item in self._loaded]

    def system_prompt(self) -> str:
        if not self._loaded:
            return self.base_prompt
        sections = [self.base_prompt, HEADING]
        for item in self._loaded:
            text = item.text.strip()
            if item.cut:
                text += f"\n[… cut here: only the first {MAX_FILE_CHARS} characters of this {item.stamp[1]}-byte file are shown]"
            sections.append(f"## {item.path}\n\n{text}")
        return "\n\n".join(sections)

    def refresh(self) -> bool:
        """Look for the files again and read the ones that changed; True if anything did."""
        found: list[_Loaded] = []
        previous = {item.path: item for item in self._loaded}
        for path, scope in self._candidates():
            try:
                status = path.stat()
            except OSError:
                continue
            stamp = (status.st_mtime_ns, status.st_size)
            known = previous.get(path)
            if known is not None and known.stamp == stamp:
                found.append(known)
                continue
            try:
                text, cut = _read_start(path)
            except OSError:
                continue
            found.append(_Loaded(path, scope, stamp, text, cut))
        changed = found != self._loaded
        self._loaded = found
        return changed

    def start(self, agent: Agent, emit: Callable[[InstructionsEvent], None]) -> None:
        """At session start: the files as they are now (announced if there are any)."""
        self.refresh()
        agent.set_system_prompt(self.system_prompt())
        if self._loaded:
            emit(InstructionsEvent(files=self.files))

    async def apply(self, agent: Agent, emit: Callable[[InstructionsEvent], None]) -> None:
        """Before a run: bring the agent's system prompt up to date (file reads off the
        event loop) and tell the client when the files or their text changed."""
        if await asyncio.to_thread(self.refresh):
            agent.set_system_prompt(self.system_prompt())
            emit(InstructionsEvent(files=self.files))

    def _candidates(self) -> list[tuple[Path, Scope]]:
        candidates: list[tuple[Path, Scope]] = []
        # The user's own directory is theirs to link wherever they keep their dotfiles.
        if (user := _first_existing(self.user_dir, confined_to=None)) is not None:
            candidates.append((user, "user"))
        root, directories = self._project_dirs()
        for directory in directories:
            if (path := _first_existing(directory, confined_to=root)) is not None:
                candidates.append((path, "project"))
        return candidates

    def _project_dirs(self) -> tuple[Path, list[Path]]:
        """The workspace root, and the directories from it down to the cwd."""
        cwd = Path(os.path.realpath(self.cwd))
        holding = [root for root in self.roots if cwd == root or root in cwd.parents]
        root = max(holding, key=lambda r: len(r.parts)) if holding else _git_root(cwd) or cwd
        chain = [cwd, *(parent for parent in cwd.parents if parent == root or root in parent.parents)]
        return root, list(reversed(chain))


def _first_existing(directory: Path, confined_to: Path | None) -> Path | None:
    """The directory's AGENTS.md, else its CLAUDE.md: a regular file (links followed) whose
    real path lies under `confined_to`, when given. A name that is there but leads outside
    counts as absent, so the next name is tried."""
    for name in NAMES:
        path = directory / name
        if not path.is_file():
            continue
        real = Path(os.path.realpath(path))
        if confined_to is None or confined_to in real.parents:
            return path
    return None


def _read_start(path: Path) -> tuple[str, bool]:
    """The first MAX_FILE_CHARS characters of the file, and whether it holds more."""
    with path.open(encoding="utf-8", errors="replace") as file:
        text = file.read(MAX_FILE_CHARS + 1)
    return text[:MAX_FILE_CHARS], len(text) > MAX_FILE_CHARS


def _git_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None
