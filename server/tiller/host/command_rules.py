"""Rules on bash commands (allow / ask / deny), and the verdict they give a whole command line.

Every command of the line is judged (pipes, `&&`, substitutions, subshells, what wrappers run):
deny wins over ask, ask over allow, and the line is allowed only when every command in it is.
No matching rule leaves the verdict to the approval mode (`None`). A transparent wrapper
(`timeout 5 pytest` is judged as `pytest`) is allowed when what it runs is. Other commands that
run commands (`sudo`, `find -exec`) need a rule for themselves and for what they run, unless the
rule that allows them spells the whole command out without a `*` word (`sudo apt update`): so
`find *` does not allow `find . -exec rm {} ;`.

`readOnly` rules are the allow rules of plan mode (see plan_mode.py): there, only they allow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..protocol.methods import CommandRules
from .command_patterns import ANY_WORDS, PatternError, format_pattern, matches, parse_pattern
from .risky_variables import risky_assignments
from .shell_parser import Command, CommandLine

Action = Literal["allow", "ask", "deny", "readOnly"]
Verdict = Literal["allow", "ask", "deny"]
RuleScope = Literal["session", "project", "user", "built-in"]

_SCOPE_NAMES: dict[RuleScope, str] = {
    "session": "this session",
    "project": "the project's .tiller/settings.json",
    "user": "your settings",
    "built-in": "tiller's read-only list",
}


@dataclass(frozen=True)
class Rule:
    pattern: str
    words: tuple[str, ...]
    action: Action
    scope: RuleScope

    def describe(self) -> str:
        kind = "read-only" if self.action == "readOnly" else self.action
        return f"the {kind} rule `{self.pattern}` ({_SCOPE_NAMES[self.scope]})"

    def covers(self, command: Command) -> bool:
        exact = self.action in ("allow", "readOnly")
        return matches(self.words, command.words, exact=exact)


@dataclass
class RuleBook:
    """The rules that apply to one session, in the order they are reported."""

    rules: list[Rule] = field(default_factory=list)
    # Rule files that could not be read: while one is broken, every command asks.
    broken: list[str] = field(default_factory=list)

    def add(self, scope: RuleScope, rules: CommandRules, *, allows: bool = True) -> list[str]:
        """Add a layer; `allows=False` keeps only its deny and ask rules. Returns the
        patterns that could not be read, each with why."""
        problems: list[str] = []
        layers: list[tuple[Action, list[str]]] = [("deny", rules.deny), ("ask", rules.ask)]
        if allows:
            layers += [("allow", rules.allow), ("readOnly", rules.read_only)]
        for action, patterns in layers:
            for pattern in patterns:
                try:
                    self.rules.append(Rule(pattern, parse_pattern(pattern), action, scope))
                except PatternError as error:
                    problems.append(str(error))
        return problems

    @property
    def restricts(self) -> bool:
        """Whether any rule could stop a command (so a line that cannot be judged must ask)."""
        return bool(self.broken) or any(rule.action in ("deny", "ask") for rule in self.rules)

    def first(self, action: Action, command: Command) -> Rule | None:
        return next((rule for rule in self.rules if rule.action == action and rule.covers(command)), None)


@dataclass
class Judgement:
    line: CommandLine
    verdict: Verdict | None
    rule: Rule | None = None  # the rule behind a deny or ask, or one rule that allowed
    # Commands that no rule allows (what an "always allow" would have to cover).
    unallowed: list[Command] = field(default_factory=list)


def judge(line: CommandLine, book: RuleBook, *, allowing: Action = "allow") -> Judgement:
    """The verdict of the rules on a whole line; `allowing` names the rules that allow
    (`readOnly` in plan mode)."""
    results = [_judge(command, book, allowing) for command in line.commands]
    for verdict in ("deny", "ask"):
        decided = next((r for r in results if r.verdict == verdict), None)
        if decided is not None:
            return Judgement(line, decided.verdict, decided.rule, [c for r in results for c in r.unallowed])
    unallowed = [c for r in results for c in r.unallowed]
    if line.commands and not unallowed:
        return Judgement(line, "allow", next((r.rule for r in results if r.rule), None))
    return Judgement(line, None, None, unallowed)


@dataclass
class _Result:
    verdict: Verdict | None
    rule: Rule | None
    unallowed: list[Command]


_STOPPING: tuple[Verdict, ...] = ("deny", "ask")


def _judge(command: Command, book: RuleBook, allowing: Action) -> _Result:
    inner = [_judge(c, book, allowing) for c in command.inner]
    for action in _STOPPING:
        own = book.first(action, command)
        if own is not None:
            return _Result(action, own, [command])
        decided = next((r for r in inner if r.verdict == action), None)
        if decided is not None:
            return decided
    # `LD_PRELOAD=x cmd` is not the command a rule allowed, however it is spelled.
    risky = bool(risky_assignments(command.assignments))
    if command.declaration and not risky:
        return _Result("allow", None, [])  # `export NODE_ENV=test`: sets a variable, runs nothing
    allowed_as_written = None if risky else book.first(allowing, command)
    if allowed_as_written is not None and (not command.inner or ANY_WORDS not in allowed_as_written.words):
        return _Result("allow", allowed_as_written, [])
    transparent = command.transparent and not risky
    if command.inner and all(r.verdict == "allow" for r in inner) and (transparent or allowed_as_written):
        return _Result("allow", allowed_as_written or inner[0].rule, [])
    unallowed = [c for r in inner for c in r.unallowed]
    if not (transparent and command.inner) and allowed_as_written is None:
        unallowed.insert(0, command)
    return _Result(None, None, unallowed)


# --- what "always allow" saves ------------------------------------------------------------------

# Tools whose second word names what they do (`git log`, `npm test`): a rule keeps both.
_SUBCOMMANDS = {"git", "npm", "pnpm", "yarn", "bun", "cargo", "go", "docker", "podman", "kubectl", "pip", "pip3",
                "uv", "poetry", "dotnet", "gradle", "mvn", "make", "just", "deno", "gh", "helm", "terraform",
                "brew", "apt", "apt-get", "rustup", "conda", "mix", "composer", "bundle", "rake", "swift"}
# Commands whose arguments decide how much harm they do: a rule spells the whole command out.
_SPELLED_OUT = {"rm", "rmdir", "mv", "dd", "chmod", "chown", "chgrp", "kill", "pkill", "killall", "curl", "wget",
                "ssh", "scp", "rsync", "shred", "truncate", "mkfs", "shutdown", "reboot", "sudo", "doas", "su",
                "eval", "sh", "bash", "zsh", "python", "python3", "node", "perl", "ruby", "crontab", "ln"}
_SPELLED_OUT_SUBCOMMANDS = {("git", "push"), ("git", "reset"), ("git", "clean"), ("git", "checkout"),
                            ("git", "restore"), ("git", "rebase"), ("git", "branch"), ("git", "tag"),
                            ("git", "config"), ("git", "stash"), ("npm", "publish"), ("cargo", "publish")}


def proposed_patterns(judgement: Judgement) -> list[str]:
    """The patterns an "always allow" of this line would save: one per command no rule
    allows yet, as narrow as is still useful (`git log *`, `pytest *`, `rm build/x.o`)."""
    if judgement.line.problem or judgement.verdict in ("deny", "ask"):
        return []
    patterns: list[str] = []
    covered: set[int] = set()
    for command in judgement.unallowed:
        if id(command) in covered:
            continue
        pattern, spelled_out = _pattern_for(command)
        if pattern is None:
            continue
        if pattern not in patterns:
            patterns.append(pattern)
        if spelled_out:  # a rule spelling the whole command out allows what it runs too
            covered |= {id(c) for c in _nested(command)}
    return patterns


def _nested(command: Command) -> list[Command]:
    return [c for inner in command.inner for c in (inner, *_nested(inner))]


def _pattern_for(command: Command) -> tuple[str | None, bool]:
    """A pattern for the command, and whether it spells the command out (no `*` word)."""
    words = command.words
    if not words or words[0].dynamic or risky_assignments(command.assignments):
        return None, False  # no rule allows it
    texts = [w.text for w in words]
    dynamic_at = next((i for i, w in enumerate(words) if w.dynamic), len(words))
    name = texts[0].rsplit("/", 1)[-1] if texts[0].startswith(("/usr/", "/bin/")) else texts[0]
    keep = 1
    if len(texts) > 2 and texts[1] == "-m" and dynamic_at > 2:  # python -m pytest
        keep = 3
    elif name in _SPELLED_OUT or (len(texts) > 1 and (name, texts[1]) in _SPELLED_OUT_SUBCOMMANDS) \
            or not command.transparent:
        keep = dynamic_at
    elif name in _SUBCOMMANDS and len(texts) > 1 and not texts[1].startswith("-") and dynamic_at > 1:
        keep = 2
    prefix = format_pattern([name, *texts[1:keep]])
    if keep == len(texts):
        return prefix, True
    return f"{prefix} {ANY_WORDS}", False
