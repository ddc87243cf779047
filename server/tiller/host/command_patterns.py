"""Command patterns: `git diff *`, `npm test`, `rm -rf *`, and how they match a command.

A pattern is words, as a shell would split them (quotes allowed). A `*` word matches any number
of words, none included; inside a word, `*`, `?` and `[…]` glob one word (`--output=*`). The
first word names the command.

Matching is exact for rules that allow and wide for rules that deny or ask, so that a rule can
neither be slipped past nor stretched:

- allow: the command must be spelled as the pattern says. `/usr/bin/git` counts as `git` (a
  system directory), `./git` does not; a part only known when the line runs (`$FILE`) matches
  only a `*` glob, and an unquoted one (which bash may split) only a `*` word.
- deny and ask: any path to the command counts (`/bin/rm` is `rm`); options match in any order
  and grouping (`rm -rf *` also catches `rm -r -f x`, `rm -fr x`, `rm x -rf`, and `rm -f *`
  catches `rm -rf x`); and a part only known when the line runs may be anything at all. Long
  options are words of their own: `--force` is not `-f` (write a rule for each).
"""

from __future__ import annotations

import os
import re
import shlex
from fnmatch import fnmatchcase
from functools import cache

from .shell_parser import Word

ANY_WORDS = "*"
_SYSTEM_DIRS = {"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"}
# A pattern's short options, one or several letters (`-f`, `-rf`, `-o*` for `-o x` and `-ofile`).
_SHORT_GROUP = re.compile(r"^-([A-Za-z0-9]+)\*?$")
_SHORT_OPTIONS = re.compile(r"^-[A-Za-z0-9]+$")
# Commands whose options are words after one dash (`find -delete`): never split into letters.
_WORD_OPTIONS = {"find"}
_OPERATORS = {"|", "||", "&", "&&", ";", ";;", "(", ")", "<", ">", ">>", "|&"}


class PatternError(ValueError):
    pass


def parse_pattern(text: str) -> tuple[str, ...]:
    """The words of a pattern; PatternError says what is wrong with it."""
    try:
        words = tuple(shlex.split(text, comments=False, posix=True))
    except ValueError as error:
        raise PatternError(f"{text!r}: {error}") from None
    if not words:
        raise PatternError("a pattern needs at least a command name")
    if words[0] == ANY_WORDS:
        raise PatternError(f"{text!r}: the first word must name a command")
    operators = [w for w in words if w in _OPERATORS]
    if operators:
        raise PatternError(f"{text!r}: a pattern is one command; {operators[0]!r} joins commands (write one rule each)")
    return words


def format_pattern(words: list[str]) -> str:
    """A pattern that matches exactly these words (glob characters in them escaped)."""
    return " ".join(shlex.quote(_escape_glob(w)) for w in words)


def _escape_glob(word: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in word)


def matches(pattern: tuple[str, ...], words: list[Word], *, exact: bool) -> bool:
    """Whether a command's words match; `exact` for allow rules, wide for deny and ask."""
    if not words or words[0].dynamic:
        return False  # a command known only at run time cannot be judged: the line asks
    subject = [_command_name(words[0], exact), *words[1:]]
    if _sequence(pattern, tuple(subject), exact):
        return True
    return not exact and _ignoring_option_order(pattern, subject)


def _command_name(word: Word, exact: bool) -> Word:
    text = word.text
    if "/" not in text or word.dynamic:
        return word
    if not exact or os.path.dirname(text) in _SYSTEM_DIRS:
        return Word(os.path.basename(text))
    return word


def _word_matches(glob: str, word: Word, exact: bool) -> bool:
    if not word.dynamic:
        return fnmatchcase(word.text, glob)
    if not exact:
        return True  # it may turn out to be anything
    return not word.splits and "*" in glob and fnmatchcase(word.text, glob)


def _sequence(pattern: tuple[str, ...], subject: tuple[Word, ...], exact: bool) -> bool:
    @cache
    def match(i: int, j: int) -> bool:
        if i == len(pattern):
            return j == len(subject) or (not exact and all(_wild(w) for w in subject[j:]))
        if pattern[i] == ANY_WORDS:
            return any(match(i + 1, k) for k in range(j, len(subject) + 1))
        if j == len(subject):
            return all(p == ANY_WORDS for p in pattern[i:])
        word = subject[j]
        if not exact and _wild(word):
            # An unquoted expansion may become any number of words, none included.
            return match(i, j + 1) or match(i + 1, j) or match(i + 1, j + 1)
        return _word_matches(pattern[i], word, exact) and match(i + 1, j + 1)

    return match(0, 0)


def _wild(word: Word) -> bool:
    return word.splits and word.dynamic


def _is_option(text: str) -> bool:
    return text.startswith("-") and len(text) > 1


def _ignoring_option_order(pattern: tuple[str, ...], subject: list[Word]) -> bool:
    """The pattern's options each present anywhere (before `--`), its other words in order."""
    wanted = [w for w in pattern[1:] if _is_option(w)]
    operands = (pattern[0], *(w for w in pattern[1:] if not _is_option(w)))
    options: list[Word] = []
    rest: list[Word] = [subject[0]]
    after_dashes = False
    for word in subject[1:]:
        if not after_dashes and word.text == "--":
            after_dashes = True
        elif not after_dashes and not word.dynamic and _is_option(word.text):
            options.append(word)
        else:
            rest.append(word)
    splits_letters = subject[0].text not in _WORD_OPTIONS
    letters = {c for o in options if splits_letters and _SHORT_OPTIONS.match(o.text) for c in o.text[1:]}
    anything = any(w.dynamic for w in subject[1:])

    def present(option: str) -> bool:
        if anything or any(fnmatchcase(o.text, option) for o in options):
            return True
        group = _SHORT_GROUP.match(option)
        return group is not None and set(group.group(1)) <= letters

    return all(present(o) for o in wanted) and _sequence(operands, tuple(rest), exact=False)
