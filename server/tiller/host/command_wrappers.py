"""Commands that run other commands, seen through: `timeout 5 pytest` runs pytest.

Each wrapper's own options are skipped the way the wrapper reads them, so the command it runs
is found however it is spelled: `env -u X A=1 cmd`, `timeout -k 5 10 cmd`, `nice -n 5 cmd`,
`xargs -0 -n 1 cmd`, `sudo -u root cmd`, `find … -exec cmd {} ;`, `git -C dir push`. Wrappers that
run a script (`sh -c`, `bash -lc`, `eval`, `watch`, `su -c`, `env -S`) have the script parsed as a
command line of its own; its commands, writes and problems become the outer line's.

Some commands do more than run another: `sudo`, `doas` and `su` run it as someone else, `env`
may set `LD_PRELOAD` or `PATH`, `git -c` may set a program git runs, `find` searches (and may
`-delete`) besides its `-exec`. For those a rule that allows the inner command does not allow
the whole (`transparent = False`); deny and ask rules still see the inner command.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable

from . import wrapper_options as options
from .option_writes import written_by_options
from .risky_variables import risky_assignments, runs_unseen
from .shell_parser import DYNAMIC, MAX_DEPTH, Command, CommandLine, Word, parse_command_line
from .wrapper_options import Options, Parsed, read_options

_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh"}

_ARGV_WRAPPERS: dict[str, Options] = {
    "env": options.ENV, "timeout": options.TIMEOUT, "nice": options.NICE, "nohup": options.PLAIN,
    "time": options.TIME, "stdbuf": options.STDBUF, "ionice": options.IONICE, "setsid": options.SETSID,
    "coproc": options.PLAIN, "exec": options.EXEC, "builtin": options.PLAIN, "command": options.PLAIN,
    "sudo": options.SUDO, "doas": options.DOAS, "xargs": options.XARGS,
}
# git global options that make git run a program of the line's choosing.
_GIT_RUNS_PROGRAMS = {"-c", "--config-env", "--exec-path"}
_FIND_EXEC = {"-exec", "-execdir", "-ok", "-okdir"}


def see_through(line: CommandLine, depth: int = 0) -> CommandLine:
    """Fill in every command's `inner` commands (recursively); returns `line`."""
    for command in list(line.commands):
        _unwrap(command, line, depth)
    for command in _every_command(line.commands):
        line.writes.extend(_from(command.directory, w) for w in written_by_options(command))
        for name, value in command.assignments.items():
            if runs_unseen(name, value):
                line.unseen.append(f"it sets {name}, which can make a program run a command the rules do not see")
    # A script's commands (sh -c) are seen here a second time: each finding once.
    line.writes = list(dict.fromkeys(line.writes))
    line.unseen = list(dict.fromkeys(line.unseen))
    return line


def _from(directory: Word | None, path: Word) -> Word:
    if directory is None or os.path.isabs(path.text):
        return path
    return Word(os.path.join(directory.text, path.text), splits=directory.splits or path.splits)


def _every_command(commands: list[Command]) -> list[Command]:
    return [c for command in commands for c in (command, *_every_command(command.inner))]


def read_command_line(source: str) -> CommandLine:
    """Parse a bash line and see through its wrappers."""
    return see_through(parse_command_line(source))


def _unwrap(command: Command, line: CommandLine, depth: int) -> None:
    if depth > MAX_DEPTH:
        line.note("commands nest too deeply to be judged")
        return
    if not command.words:
        return
    name = os.path.basename(command.name)
    handler = _SPECIAL.get(name) or (_shell if name in _SHELLS else None)
    if handler is not None:
        handler(command, line, depth)
    elif name in _ARGV_WRAPPERS:
        _argv_wrapper(command, _ARGV_WRAPPERS[name], line, depth)


# --- wrappers that run the rest of their arguments ---------------------------------------------


def _argv_wrapper(command: Command, wrapper: Options, line: CommandLine, depth: int) -> None:
    parsed = read_options(command.words, wrapper)
    name = os.path.basename(command.name)
    if parsed.unknown:
        line.note(parsed.unknown)
        return
    if name == "command" and {"-v", "-V"} & parsed.seen.keys():
        return  # only looks the name up
    if name == "time" and "--output" in parsed.seen:
        written = parsed.seen["--output"]
        line.writes.append(written if written is not None else Word(DYNAMIC))
    rest = command.words[parsed.start:]
    if name == "env" and "--split-string" in parsed.seen:
        _split_string(command, parsed.seen["--split-string"], rest, line, depth)
        return
    if name == "xargs":
        rest = _xargs_command(rest, parsed)
    if not rest:
        return
    inner = Command(list(rest), assignments=parsed.assignments)
    command.inner.append(inner)
    command.transparent = wrapper.transparent and not risky_assignments(parsed.assignments)
    if inner.words[0].dynamic:
        line.note(f"{name} runs a command only known when the line runs ({inner})")
    _unwrap(inner, line, depth + 1)


def _split_string(command: Command, value: Word | None, rest: list[Word], line: CommandLine, depth: int) -> None:
    """`env -S 'cmd args' more`: env splits the string into words (its own way, close to the
    shell's); deny rules see the commands, and the line asks since the split is env's."""
    script = [value or Word(DYNAMIC), *rest]
    source = " ".join(w.text if i == 0 else shlex.quote(w.text) for i, w in enumerate(script))
    _run_script(command, Word(source), line, depth)
    line.note("env -S splits a string into a command its own way, which is not judged exactly")


def _xargs_command(rest: list[Word], parsed: Parsed) -> list[Word]:
    """What xargs runs: its command (echo by default) and the words it reads, which also take
    the place of the replace string (`-I {}`, `--replace`) wherever it is."""
    rest = rest or [Word("echo")]
    if "--replace" not in parsed.seen:
        return [*rest, Word(DYNAMIC, splits=True)]
    marker = parsed.seen["--replace"]
    replaced = marker.text if marker is not None and marker.text else "{}"
    return [Word(w.text.replace(replaced, DYNAMIC), splits=w.splits, glob=w.glob) for w in rest]


def _git(command: Command, line: CommandLine, depth: int) -> None:
    parsed = read_options(command.words, options.GIT_GLOBAL)
    start, seen = parsed.start, parsed.seen.keys()
    if parsed.unknown:
        line.note(parsed.unknown)
        return
    if start == 1 or start >= len(command.words):
        return  # no global options: the command is already as rules spell it
    inner = Command([command.words[0], *command.words[start:]], assignments=dict(command.assignments))
    command.inner.append(inner)
    runs_programs = bool(seen & _GIT_RUNS_PROGRAMS) and not _harmless_git_config(command.words[1:start])
    command.transparent = not runs_programs
    if runs_programs:
        line.unseen.append("git -c (or --config-env, --exec-path) can make git run a command the rules do not see")
    directories = [w for i, w in enumerate(command.words[:start]) if i > 0 and command.words[i - 1].text == "-C"]
    directories += [Word(w.text[2:], splits=w.splits) for w in command.words[1:start] if w.text.startswith("-C") and w.text != "-C"]
    if directories:  # git -C dir diff --output=F writes dir/F
        inner.directory = Word(os.path.join(*(d.text for d in directories)), splits=any(d.splits for d in directories))


# git settings that never make git run a program (git -c core.pager='rm -rf x' log would).
_HARMLESS_GIT_SETTINGS = re.compile(
    r"^(color\.[\w.-]+|core\.quotepath|core\.autocrlf|core\.safecrlf|user\.name|user\.email|log\.[\w-]+"
    r"|init\.defaultbranch|advice\.[\w-]+|column\.ui|diff\.noprefix|diff\.renames|safe\.directory)=", re.IGNORECASE)


def _harmless_git_config(options: list[Word]) -> bool:
    """Whether git's global options set only settings that run nothing (`-c color.ui=never`)."""
    for index, word in enumerate(options):
        if word.text in ("--config-env", "--exec-path") or word.text.startswith(("--config-env=", "--exec-path")):
            return False
        if word.text.startswith("-c"):
            setting = word.text[2:] or (options[index + 1].text if index + 1 < len(options) else "")
            if word.dynamic or not _HARMLESS_GIT_SETTINGS.match(setting):
                return False
    return True


def _find(command: Command, line: CommandLine, depth: int) -> None:
    words = command.words
    index = 1
    while index < len(words):
        if words[index].text in _FIND_EXEC:
            end = index + 1
            while end < len(words) and words[end].text not in (";", "+"):
                end += 1
            # `{}` stays as written: find puts a path there (./x), never an option.
            run = words[index + 1 : end]
            if run:
                inner = Command(list(run))
                command.inner.append(inner)
                _unwrap(inner, line, depth + 1)
            index = end
        index += 1
    command.transparent = False  # find itself needs a rule too


# --- wrappers that run a script ------------------------------------------------------------------


def _run_script(command: Command, script: Word | None, line: CommandLine, depth: int, *,
                transparent: bool = True) -> None:
    if script is None:
        return
    if script.dynamic:
        line.note(f"{os.path.basename(command.name)} runs a script only known when the line runs")
        return
    inner_line = see_through(parse_command_line(script.text, depth + 1), depth + 1)
    command.inner.extend(inner_line.commands)
    command.transparent = transparent
    line.writes.extend(inner_line.writes)
    line.unseen.extend(inner_line.unseen)
    if inner_line.problem:
        line.note(f"in {os.path.basename(command.name)}'s script: {inner_line.problem}")


def _shell(command: Command, line: CommandLine, depth: int) -> None:
    """`bash -c SCRIPT`, `sh -ec SCRIPT`, `bash -o pipefail -c SCRIPT` (options may follow -c)."""
    words = command.words
    index, runs_string = 1, False
    while index < len(words):
        text = words[index].text
        if text == "--":
            index += 1
            break
        if text in ("-o", "+o", "-O", "+O"):
            index += 2
            continue
        if text.startswith(("-", "+")) and len(text) > 1:
            if not text.startswith("--") and "c" in text[1:]:
                runs_string = True
            index += 1
            continue
        break
    if runs_string:
        _run_script(command, words[index] if index < len(words) else None, line, depth)
    elif index >= len(words) or any(w.text == "-s" for w in words[1:index]) or _reads_input(words[index]):
        _run_input(command, line, depth)
    elif words[index].dynamic:  # bash <(curl …), bash "$SCRIPT"
        line.note(f"{os.path.basename(command.name)} runs a script file only known when the line runs")
    # else: `bash script.sh` runs a file; it needs a rule of its own like any program


def _reads_input(operand: Word) -> bool:
    return operand.text in ("-", "/dev/stdin") or operand.text.startswith(("/dev/fd/", "/proc/self/fd/"))


def _run_input(command: Command, line: CommandLine, depth: int) -> None:
    """A shell that reads its commands from its input: a here-document or here-string is parsed
    like `-c`; a pipe or a file (`echo 'rm -rf x' | sh`) is out of the rules' sight."""
    if command.words[-1].text in ("--version", "--help"):
        return
    if command.stdin is not None:
        _run_script(command, command.stdin, line, depth)
        return
    line.note(f"{os.path.basename(command.name)} runs commands it reads from its input, which the rules do not see")


def _source(command: Command, line: CommandLine, depth: int) -> None:
    line.note(f"{command.name} runs the commands of a file, which the rules do not see")


def _trap(command: Command, line: CommandLine, depth: int) -> None:
    """`trap 'cleanup; rm -rf x' EXIT` runs its action later: judged like `sh -c`."""
    operands = [w for w in command.words[1:] if w.text != "--"]
    if len(operands) >= 2 and not operands[0].text.startswith("-"):
        _run_script(command, operands[0], line, depth)


def _eval(command: Command, line: CommandLine, depth: int) -> None:
    if len(command.words) > 1:
        _run_script(command, Word(" ".join(w.text for w in command.words[1:])), line, depth)


_WATCH = Options(short_value="nq", short_optional="d", long_value=frozenset({"--interval", "--equexit"}),
                 long_optional=frozenset({"--differences"}))


def _watch(command: Command, line: CommandLine, depth: int) -> None:
    start = read_options(command.words, _WATCH).start
    if start < len(command.words):
        _run_script(command, Word(" ".join(w.text for w in command.words[start:])), line, depth)


def _su(command: Command, line: CommandLine, depth: int) -> None:
    words = command.words
    for index, word in enumerate(words[:-1]):
        if word.text in ("-c", "--command"):
            _run_script(command, words[index + 1], line, depth, transparent=False)
            return
        if word.text.startswith("--command="):
            _run_script(command, Word(word.text.split("=", 1)[1]), line, depth, transparent=False)
            return
    command.transparent = False


_SPECIAL: dict[str, Callable[[Command, CommandLine, int], None]] = {
    "git": _git,
    "find": _find,
    "eval": _eval,
    "watch": _watch,
    "su": _su,
    "trap": _trap,
    "source": _source,
    ".": _source,
}
