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
from collections.abc import Callable
from dataclasses import dataclass

from .risky_variables import risky_assignments, runs_unseen
from .shell_parser import DYNAMIC, MAX_DEPTH, Command, CommandLine, Word, parse_command_line

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh"}


@dataclass(frozen=True)
class _Options:
    """How a wrapper reads its own options before the command it runs."""

    with_value: frozenset[str] = frozenset()  # options whose value is the next word
    leading_operands: int = 0  # words after the options before the command (timeout's duration)
    assignments: bool = False  # NAME=value words before the command (env, sudo)
    transparent: bool = True


_ARGV_WRAPPERS: dict[str, _Options] = {
    "env": _Options(frozenset({"-u", "--unset", "-C", "--chdir"}), assignments=True),
    "timeout": _Options(frozenset({"-s", "--signal", "-k", "--kill-after"}), leading_operands=1),
    "nice": _Options(frozenset({"-n", "--adjustment"})),
    "nohup": _Options(),
    "time": _Options(frozenset({"-f", "--format", "-o", "--output"})),
    "stdbuf": _Options(frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})),
    "ionice": _Options(frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"})),
    "setsid": _Options(),
    "coproc": _Options(),
    "exec": _Options(frozenset({"-a"})),
    "builtin": _Options(),
    "command": _Options(),
    "sudo": _Options(frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "--user", "--group",
                                "--close-from", "--chdir", "--host", "--prompt", "--role", "--type",
                                "--command-timeout", "--other-user"}), assignments=True, transparent=False),
    "doas": _Options(frozenset({"-u", "-C"}), transparent=False),
    "xargs": _Options(frozenset({"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--eof",
                                 "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars",
                                 "--process-slot-var"})),
}
_GIT_GLOBAL = _Options(frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path",
                                  "--config-env", "--super-prefix", "--list-cmds"}))
# git global options that make git run a program of the line's choosing.
_GIT_RUNS_PROGRAMS = {"-c", "--config-env", "--exec-path"}
_FIND_EXEC = {"-exec", "-execdir", "-ok", "-okdir"}


def see_through(line: CommandLine, depth: int = 0) -> CommandLine:
    """Fill in every command's `inner` commands (recursively); returns `line`."""
    for command in list(line.commands):
        _unwrap(command, line, depth)
    for command in _every_command(line.commands):
        for name, value in command.assignments.items():
            if runs_unseen(name, value):
                line.unseen.append(f"it sets {name}, which can make a program run a command the rules do not see")
    return line


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


def _skip_options(words: list[Word], options: _Options) -> tuple[int, dict[str, Word | None], set[str]]:
    """Where the wrapped command starts; the assignments and options passed on the way."""
    index, seen = 1, set()
    assignments: dict[str, Word | None] = {}
    while index < len(words):
        text = words[index].text
        if text == "--":
            index += 1
            break
        if options.assignments and _ASSIGNMENT.match(text):
            name, _, value = text.partition("=")
            assignments[name] = Word(value, splits=words[index].splits, glob=words[index].glob)
        elif text.startswith("-") and text != "-":
            option = text.split("=", 1)[0]
            seen.add(option)
            if text in options.with_value:
                index += 1  # its value
        elif text == "-" and options.assignments:  # env's lone "-" is -i
            seen.add("-i")
        else:
            break
        index += 1
    return index + options.leading_operands, assignments, seen


def _argv_wrapper(command: Command, options: _Options, line: CommandLine, depth: int) -> None:
    start, assignments, seen = _skip_options(command.words, options)
    name = os.path.basename(command.name)
    if name == "env" and ({"-S", "--split-string"} & seen or any(w.text.startswith("--split-string=") for w in command.words)):
        line.note("env -S splits a string into a command; that is not judged")
        return
    if name == "command" and {"-v", "-V"} & seen:
        return  # only looks the name up
    rest = command.words[start:]
    if name == "xargs":
        rest = (rest or [Word("echo")]) + [Word(DYNAMIC, splits=True)]  # and the arguments it reads
    if not rest:
        return
    inner = Command(list(rest), assignments=assignments)
    command.inner.append(inner)
    command.transparent = options.transparent and not risky_assignments(assignments)
    _unwrap(inner, line, depth + 1)


def _git(command: Command, line: CommandLine, depth: int) -> None:
    start, _, seen = _skip_options(command.words, _GIT_GLOBAL)
    if start == 1 or start >= len(command.words):
        return  # no global options: the command is already as rules spell it
    inner = Command([command.words[0], *command.words[start:]], assignments=dict(command.assignments))
    command.inner.append(inner)
    command.transparent = not (seen & _GIT_RUNS_PROGRAMS)


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


def _eval(command: Command, line: CommandLine, depth: int) -> None:
    if len(command.words) > 1:
        _run_script(command, Word(" ".join(w.text for w in command.words[1:])), line, depth)


def _watch(command: Command, line: CommandLine, depth: int) -> None:
    start, _, _ = _skip_options(command.words, _Options(frozenset({"-n", "--interval", "-q", "--equexit"})))
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
}
