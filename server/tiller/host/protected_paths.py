"""Paths whose change can run code or change tiller's own rules.

- *Forbidden*: tiller's data directory (saved sessions). No tool may write there, in any
  approval mode: a session that edited its own file could give itself more on reload.
- *Protected*: a change always asks the user, in every mode but yolo, and "always allow"
  does not cover it: version control internals (`.git/config` can run a command at the
  next `git status` through core.fsmonitor; `.git/hooks/*` run on commit), tiller's project
  and user configuration, editor task, launch and workspace configuration, files the shell
  or direnv run (rc files, `.envrc`), and exrc files Neovim runs.

Matching is by path part inside the workspace (`sub/.git/config` counts), so the rules
hold for nested repositories and for a workspace that is the user's home directory.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

# Any path with one of these directory (or file) names among its parts.
PROTECTED_PARTS = {
    ".git": "a git directory (hooks and config can run commands)",
    ".tiller": "tiller's project configuration",
    ".vscode": "editor configuration (tasks, launch configurations and settings can run commands)",
    ".idea": "editor configuration (run configurations can run commands)",
    ".zed": "editor configuration (tasks can run commands)",
    ".devcontainer": "dev container configuration (runs commands when the container starts)",
    ".husky": "git hooks",
}
# Files by name, wherever they are.
PROTECTED_NAMES = {
    name: "a shell startup file (runs in every new shell)"
    for name in (".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
                 ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".inputrc")
} | {
    ".envrc": "a direnv file (runs when a shell enters the directory)",
    ".gitconfig": "git configuration (can run commands)",
    ".nvim.lua": "an editor file Neovim runs (exrc)",
    ".nvimrc": "an editor file Neovim runs (exrc)",
    ".exrc": "an editor file Vim runs (exrc)",
}
# Directories by their path inside the workspace (when the workspace is a home directory).
PROTECTED_PREFIXES = {
    (".config", "git"): "git configuration (can run commands)",
    (".config", "fish"): "a shell startup file (runs in every new shell)",
    (".config", "nvim"): "editor configuration Neovim runs",
    (".config", "tiller"): "tiller's configuration (models and providers)",
}


class PathRules:
    def __init__(self, roots: Iterable[Path], data_dir: Path, config_file: Path | None = None) -> None:
        self._roots = tuple(roots)
        self._data_dir = data_dir
        self._config_file = config_file

    def forbidden(self, path: Path) -> str | None:
        """Why no tool may ever write `path` (resolved), or None."""
        if _inside(path, self._data_dir):
            return f"inside tiller's data directory ({self._data_dir}), which tools never change"
        return None

    def protected(self, path: Path) -> str | None:
        """Why a change of `path` (resolved) always asks the user, or None."""
        if self._config_file is not None and path == self._config_file:
            return "tiller's configuration (models and providers)"
        parts = self._relative_parts(path)
        if parts and parts[-1] in PROTECTED_NAMES:
            return PROTECTED_NAMES[parts[-1]]
        for part in parts:
            if part in PROTECTED_PARTS:
                return PROTECTED_PARTS[part]
        for prefix, why in PROTECTED_PREFIXES.items():
            if tuple(parts[: len(prefix)]) == prefix:
                return why
        return None

    def in_workspace(self, path: Path) -> bool:
        return any(_inside(path, root) for root in self._roots)

    def _relative_parts(self, path: Path) -> tuple[str, ...]:
        for root in self._roots:
            if _inside(path, root):
                return path.relative_to(root).parts
        return path.parts[1:]


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or path.is_relative_to(directory)
