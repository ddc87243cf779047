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

from .shell_parser import DYNAMIC, Word

ANY_WORDS = "*"
_SYSTEM_DIRS = {"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"}
# A pattern's short options, one or several letters (`-f`, `-rf`, `-o*` for `-o x` and `-ofile`).
_SHORT_GROUP = re.compile(r"^-([A-Za-z0-9]+)\*?$")
_SHORT_LETTERS = re.compile(r"[A-Za-z0-9]*")
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
        return _may_become(word, glob)
    return not word.splits and "*" in glob and fnmatchcase(word.text, glob)


def _may_become(word: Word, glob: str) -> bool:
    """Whether a dynamic word may turn out to be one that `glob` matches (wide: when unsure, yes).
    Its known start must agree with the glob's (`src/$X` is never `-rf`, `"$X"` may be)."""
    if word.splits and not word.glob:
        return True  # split words after the first may be anything
    known = word.text.split(DYNAMIC, 1)[0]
    literal = re.split(r"[*?\[]", glob, maxsplit=1)[0]
    if not any(c in glob for c in "*?["):
        shape = "".join(".*" if c == DYNAMIC else re.escape(c) for c in word.text)
        return re.fullmatch(shape, glob, re.DOTALL) is not None
    return known.startswith(literal) or literal.startswith(known)


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
            # An unquoted expansion may become any number of words, none included; each of
            # them has its shape.
            if match(i, j + 1):
                return True
            return _word_matches(pattern[i], word, exact) and (match(i + 1, j) or match(i + 1, j + 1))
        return _word_matches(pattern[i], word, exact) and match(i + 1, j + 1)

    return match(0, 0)


def _wild(word: Word) -> bool:
    return word.splits and word.dynamic


def _may_be_bundle(word: Word) -> bool:
    """Whether a dynamic word may turn out to be short options (`*` may be `-rf`, `*.py` not)."""
    if word.splits and not word.glob:
        return True
    if not word.text.startswith(("-", DYNAMIC)):
        return False
    rest = word.text[1:] if word.text.startswith("-") else word.text
    return all(c.isalnum() or c == DYNAMIC for c in rest)


def _abbreviates(text: str, option: str) -> bool:
    """GNU tools (and git) take a long option by any unambiguous start: `--outp=x` is
    `--output=x`. Wide: any start counts (an ambiguous one makes the tool fail anyway)."""
    if not option.startswith("--") or not text.startswith("--"):
        return False
    name = text.split("=", 1)[0]
    wanted = re.split(r"[*?\[=]", option, maxsplit=1)[0]
    return len(name) > 2 and wanted.startswith(name) and (name != wanted or fnmatchcase(text, option))


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
    # `-vumaster` is -v -u master: its leading letters may all be options (wide: the value's too).
    letters = {c for o in options if splits_letters and not o.text.startswith("--")
               for c in _SHORT_LETTERS.match(o.text[1:]).group(0)}  # type: ignore[union-attr]
    unknown = [w for w in subject[1:] if w.dynamic]

    def present(option: str) -> bool:
        if any(fnmatchcase(o.text, option) or _abbreviates(o.text, option) for o in options):
            return True
        if any(_may_become(w, option) for w in unknown):
            return True
        group = _SHORT_GROUP.match(option)
        if group is not None and any(_may_be_bundle(w) for w in unknown):
            return True  # a bundle of options only known at run time
        return group is not None and set(group.group(1)) <= letters

    return all(present(o) for o in wanted) and _sequence(operands, tuple(rest), exact=False)
