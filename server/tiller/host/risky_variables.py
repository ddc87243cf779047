"""Shell variables that make a command run other code, or run differently than it reads.

`GIT_EXTERNAL_DIFF=rm git diff` runs rm; `PATH=.:$PATH pytest` may run a pytest of the line's
making; `LD_PRELOAD`, `BASH_ENV`, `PAGER`, `EDITOR`, `NODE_OPTIONS` and the like load or run a
program of their value's choosing. A command spelled with one of them is not the command a rule
allowed, and what it runs is not seen by the rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .shell_parser import Word

_RISKY_VARIABLE = re.compile(
    r"^(LD_\w+|DYLD_\w+|BASH_ENV|ENV|PATH|IFS|SHELLOPTS|BASHOPTS|PROMPT_COMMAND|PS4|GIT_\w+|\w*PAGER|EDITOR|VISUAL"
    r"|PYTHON\w+|NODE_OPTIONS|PERL5\w*|RUBYOPT|LESSOPEN|LESSCLOSE|BASH_FUNC_\w+%*)$"
)
# Values that never name a program to run (`GIT_PAGER=cat git log` is common and harmless).
_HARMLESS_VALUES = {"", "cat", "0", "1"}


def risky_assignments(names: Iterable[str]) -> list[str]:
    return [name for name in names if _RISKY_VARIABLE.match(name)]


def runs_unseen(name: str, value: Word | None) -> bool:
    """Whether setting `name` to `value` may make a program run a command no rule sees."""
    if not _RISKY_VARIABLE.match(name):
        return False
    return value is None or value.dynamic or value.text not in _HARMLESS_VALUES
