"""How commands that run other commands read their own options, as getopt_long reads them.

Getting this wrong means judging the wrong command: `xargs --max-lines rm cat` runs rm (the
option's value may only be attached, `--max-lines=2`), `sudo -R dir rm x` runs rm (`-R` takes a
value), `env -S'rm -rf x'` runs rm. So each wrapper lists its options: which take a value (the
rest of the word or the next word), which take one only when attached (`-i`, `--eof=x`), and
every long option, so that an abbreviation (`--split` for `--split-string`) is read as the one
option it abbreviates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .shell_parser import Word


@dataclass(frozen=True)
class Options:
    short_value: str = ""  # letters whose value is the rest of the word, else the next word
    short_optional: str = ""  # letters whose value is only the rest of the word (xargs -i)
    long_value: frozenset[str] = frozenset()  # `--name value` or `--name=value`
    long_optional: frozenset[str] = frozenset()  # `--name=value` only
    long_flags: frozenset[str] = frozenset()  # the other long options (to tell abbreviations apart)
    leading_operands: int = 0  # words after the options before the command (timeout's duration)
    assignments: bool = False  # NAME=value words before the command (env, sudo)
    transparent: bool = True  # whether what it runs alone decides (see command_wrappers)
    # Short letters and long names that mean the same (`-S` is `--split-string`).
    aliases: dict[str, str] = field(default_factory=dict)


@dataclass
class Parsed:
    start: int  # where the command it runs begins
    assignments: dict[str, Word | None] = field(default_factory=dict)
    # Each option seen (long options by their full name, short ones as `-x`), with its value.
    seen: dict[str, Word | None] = field(default_factory=dict)
    # Why the options cannot be read (a word only known at run time where an option may be).
    unknown: str | None = None


def read_options(words: list[Word], options: Options) -> Parsed:
    parsed = Parsed(start=len(words))
    index = 1
    while index < len(words):
        word = words[index]
        text = word.text
        if text == "--":
            index += 1
            break
        if options.assignments and not word.dynamic and "=" in text[1:] and not text.startswith("-"):
            # env takes any word holding `=` as a variable: `BASH_FUNC_ls%%=() { …; }` too.
            name, _, value = text.partition("=")
            parsed.assignments[name] = Word(value, splits=word.splits, glob=word.glob)
        elif word.dynamic and word.may_be_option():
            parsed.unknown = f"{words[0]}'s option {word} is only known when the line runs"
            return parsed
        elif text.startswith("--"):
            index += _long_option(words, index, options, parsed)
        elif text.startswith("-") and text != "-":
            index += _short_options(words, index, options, parsed)
        elif text == "-" and options.assignments:  # env's lone "-" is -i
            parsed.seen["-i"] = None
        else:
            break
        index += 1
    parsed.start = index + options.leading_operands
    return parsed


def _long_option(words: list[Word], index: int, options: Options, parsed: Parsed) -> int:
    """Record `--name[=value]`; returns how many following words it took as its value."""
    text = words[index].text
    given, equals, value = text.partition("=")
    name = _full_name(given, options)
    attached = Word(value) if equals else None
    if name in options.long_value and not equals and index + 1 < len(words):
        parsed.seen[name] = words[index + 1]
        return 1
    parsed.seen[name] = attached
    return 0


def _full_name(given: str, options: Options) -> str:
    """The long option `given` abbreviates (getopt_long takes any unambiguous start)."""
    every = options.long_value | options.long_optional | options.long_flags
    if given in every:
        return given
    candidates = [name for name in every if name.startswith(given)]
    return candidates[0] if len(candidates) == 1 else given


def _short_options(words: list[Word], index: int, options: Options, parsed: Parsed) -> int:
    """Record a bundle of short options (`-vS'…'`, `-n5`); returns how many following words
    it took as a value."""
    letters = words[index].text[1:]
    for position, letter in enumerate(letters):
        name = options.aliases.get(f"-{letter}", f"-{letter}")
        rest = letters[position + 1 :]
        if letter in options.short_value:
            if rest:
                parsed.seen[name] = Word(rest)
                return 0
            parsed.seen[name] = words[index + 1] if index + 1 < len(words) else None
            return 1
        if letter in options.short_optional:
            parsed.seen[name] = Word(rest) if rest else None
            return 0
        parsed.seen[name] = None
    return 0


def _longs(*names: str) -> frozenset[str]:
    return frozenset(names)


ENV = Options(
    short_value="uCSa", assignments=True,
    long_value=_longs("--unset", "--chdir", "--split-string", "--argv0"),
    long_optional=_longs("--block-signal", "--default-signal", "--ignore-signal"),
    long_flags=_longs("--ignore-environment", "--null", "--list-signal-handling", "--debug", "--help", "--version"),
    aliases={"-S": "--split-string", "-u": "--unset", "-C": "--chdir"},
)
TIMEOUT = Options(short_value="sk", leading_operands=1, long_value=_longs("--signal", "--kill-after"),
                  long_flags=_longs("--preserve-status", "--foreground", "--verbose", "--help", "--version"))
NICE = Options(short_value="n", long_value=_longs("--adjustment"), long_flags=_longs("--help", "--version"))
TIME = Options(short_value="fo", long_value=_longs("--format", "--output"),
               long_flags=_longs("--append", "--verbose", "--quiet", "--portability", "--help", "--version"),
               aliases={"-o": "--output"})
STDBUF = Options(short_value="ioe", long_value=_longs("--input", "--output", "--error"))
IONICE = Options(short_value="cnpPu", long_value=_longs("--class", "--classdata", "--pid", "--pgid", "--uid"),
                 long_flags=_longs("--ignore", "--help", "--version"))
SETSID = Options(long_flags=_longs("--ctty", "--fork", "--wait", "--help", "--version"))
EXEC = Options(short_value="a")
PLAIN = Options()
SUDO = Options(
    short_value="aCcDgpRrTtUu", short_optional="h", assignments=True, transparent=False,
    long_value=_longs("--auth-type", "--close-from", "--login-class", "--chdir", "--group", "--prompt", "--chroot",
                      "--role", "--type", "--command-timeout", "--other-user", "--user"),
    long_optional=_longs("--preserve-env", "--host"),
    long_flags=_longs("--askpass", "--background", "--bell", "--edit", "--set-home", "--help", "--login",
                      "--remove-timestamp", "--reset-timestamp", "--list", "--non-interactive",
                      "--preserve-groups", "--stdin", "--shell", "--version", "--validate"),
)
DOAS = Options(short_value="uC", transparent=False)
XARGS = Options(
    short_value="adEILnPs", short_optional="eil",
    long_value=_longs("--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"),
    long_optional=_longs("--eof", "--replace", "--max-lines"),
    long_flags=_longs("--null", "--interactive", "--no-run-if-empty", "--open-tty", "--show-limits", "--exit",
                      "--verbose", "--help", "--version"),
    aliases={"-I": "--replace", "-i": "--replace"},
)
GIT_GLOBAL = Options(
    short_value="Cc",
    long_value=_longs("--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--list-cmds"),
    long_optional=_longs("--exec-path"),
    long_flags=_longs("--version", "--help", "--html-path", "--man-path", "--info-path", "--paginate",
                      "--no-pager", "--no-replace-objects", "--bare", "--literal-pathspecs", "--glob-pathspecs",
                      "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks", "--no-advice"),
)
