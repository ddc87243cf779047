"""One session's command rules, and what they decide about a change before the mode does.

`decide` answers for every bash line (and for every change in plan mode): run it, ask the
user whatever the mode, or refuse it; `None` leaves the change to the approval mode (edit and
write outside plan mode). The order:

1. a deny rule refuses, in every mode;
2. a rule file that cannot be read makes every command ask (its deny rules are unknown);
3. plan mode runs only read-only lines (plan_mode.py) and refuses the rest, never asking; an MCP
   tool call runs in plan mode, unasked, only when its server marks the tool read-only
   (`readOnlyHint`), and is refused otherwise (outside plan mode the mode decides);
4. an ask rule asks, in every mode;
5. a line that cannot be judged (unparsable, a command only known at run time, text that may
   reach arithmetic, a script read from a pipe) or that may run commands no rule sees (it sets
   `GIT_EXTERNAL_DIFF`, `git -c core.pager=…`) asks, unless the mode is yolo and no rule could
   have stopped it;
6. a line whose every command is allowed runs, except that a file it writes (by redirection or
   by an option such as `git diff --output`) still needs what a write needs (the user is asked
   in `ask` mode; approvals.py checks each file's path like a write tool's);
7. anything else is up to the mode: yolo runs it, the other modes ask, offering to save
   "always allow" rules for it (the exact patterns, to the session, the project or the user).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..persistence.rule_files import (
    PROJECT_FILE,
    RuleFile,
    read_rule_file,
    trust_project,
    trusted_digest,
    user_settings_path,
    write_rules,
)
from ..protocol.events import ApprovalOption, PersistenceErrorEvent, SavedRule
from ..protocol.methods import CommandRules, ProjectRulesInfo, RuleFileInfo, RulesResult
from ..protocol.modes import ApprovalMode, RuleScope
from ..tools.ports import ApprovalRequest
from . import plan_mode
from .command_rules import RuleBook, judge, proposed_patterns
from .command_wrappers import read_command_line
from .shell_parser import Command, CommandLine, Word

_log = logging.getLogger(__name__)


@dataclass
class Decision:
    outcome: Literal["allow", "ask", "refuse"]
    # refuse: the tool's error result, for the model; ask: why the user is asked, if not the mode.
    message: str | None = None
    # ask: what "always allow" would save, one pattern per command no rule allows yet.
    proposals: list[str] = field(default_factory=list)
    # bash: the files its redirections write (None: only known when it runs), which approvals
    # check like a write tool's path (protected paths, the workspace, tiller's data directory).
    writes: list[Path | None] = field(default_factory=list)


class CommandPolicy:
    def __init__(self, cwd: str, report: Callable[[PersistenceErrorEvent], None],
                 user_path: Path | None = None) -> None:
        self.cwd = cwd
        self.session_rules = CommandRules()
        self.user_path = user_path or user_settings_path()
        self.project_path = Path(cwd) / PROJECT_FILE
        self._report = report

    # --- the rules in force ----------------------------------------------------------------

    def _files(self) -> tuple[RuleFile, RuleFile, bool]:
        user = read_rule_file(self.user_path)
        project = read_rule_file(self.project_path)
        trusted = project.digest is not None and trusted_digest(user, self.cwd) == project.digest
        return user, project, trusted

    def book(self, mode: ApprovalMode) -> RuleBook:
        user, project, trusted = self._files()
        book = RuleBook()
        problems = book.add("session", self.session_rules)
        problems += [f"{project.path}: {p}" for p in book.add("project", project.rules, allows=trusted)]
        problems += [f"{user.path}: {p}" for p in book.add("user", user.rules)]
        book.add("built-in", plan_mode.BUILT_IN_RULES)
        if mode == "plan":
            book.add("built-in", plan_mode.PLAN_ONLY_RULES)
        book.broken = [f.error for f in (project, user) if f.error] + problems
        return book

    # --- deciding --------------------------------------------------------------------------

    def decide(self, request: ApprovalRequest, mode: ApprovalMode) -> Decision | None:
        if request.kind != "execute":
            return self._decide_change(request, mode)
        try:
            line = read_command_line(request.command or "")
            decision = self._decide_command(line, mode)
            if decision.outcome != "refuse":
                decision.writes = self._write_targets(line)
            return decision
        except Exception as error:  # a line nobody foresaw must not take the tool call down
            _log.exception("judging a command line failed: %r", request.command)
            why = f"it cannot be checked against the command rules: judging it failed ({type(error).__name__})"
            return Decision("refuse", plan_mode.refused_command(why)) if mode == "plan" else Decision("ask", why)

    def _decide_change(self, request: ApprovalRequest, mode: ApprovalMode) -> Decision | None:
        if request.kind == "mcp":
            return self._decide_mcp_call(request, mode)
        return Decision("refuse", plan_mode.REFUSED_CHANGE) if mode == "plan" else None

    def _decide_mcp_call(self, request: ApprovalRequest, mode: ApprovalMode) -> Decision | None:
        """An MCP call is judged as a command of one word, the tool's name as the model sees
        it (`<server>__<tool>`): `deny: ["github__delete_*"]`, `allow: ["time__*"]`. None
        leaves it to the approval mode and the user's earlier answers."""
        book = self.book(mode)
        call = Command(words=[Word(request.tool_name)])
        if (rule := book.first("deny", call)) is not None:
            return Decision("refuse", f"Not run: {rule.describe()} denies it. Do not try to get around the rule; "
                                      "if the call is needed, tell the user why.")
        if mode == "plan":
            # The server's readOnlyHint is the only word on what an MCP tool changes.
            return Decision("allow") if request.read_only else Decision("refuse", plan_mode.refused_mcp_call(request.tool_name, request.server))
        if book.broken:
            return Decision("ask", f"the command rules cannot be read ({book.broken[0]})")
        if (rule := book.first("ask", call)) is not None:
            return Decision("ask", f"{rule.describe()} asks about it")
        if book.first("allow", call) is not None:
            return Decision("allow")
        return None

    def _decide_command(self, line: CommandLine, mode: ApprovalMode) -> Decision:
        book = self.book(mode)
        judgement = judge(line, book, allowing="readOnly" if mode == "plan" else "allow")
        rule = judgement.rule
        if judgement.verdict == "deny" and rule is not None:
            if mode == "plan" and rule.scope == "built-in":
                return Decision("refuse", plan_mode.refused_command(f"{rule.describe()} says it can write files"))
            return Decision("refuse", f"Not run: {rule.describe()} denies it. Do not try to get around the rule; "
                                      "if the command is needed, tell the user why.")
        if book.broken:
            unreadable = f"the command rules cannot be read ({book.broken[0]})"
            if mode == "plan":
                return Decision("refuse", plan_mode.refused_command(unreadable))
            return Decision("ask", unreadable)
        if mode == "plan":
            why = _not_read_only(judgement.verdict, line.problem, line.unseen, [str(w) for w in line.writes],
                                 [str(c) for c in judgement.unallowed], rule.describe() if rule else "")
            return Decision("refuse", plan_mode.refused_command(why)) if why else Decision("allow")
        if judgement.verdict == "ask" and rule is not None:
            return Decision("ask", f"{rule.describe()} asks about it")
        if line.unseen and (mode != "yolo" or book.restricts):
            return Decision("ask", line.unseen[0])
        if line.problem:
            if mode == "yolo" and not book.restricts:
                return Decision("allow")
            return Decision("ask", f"it cannot be checked against the command rules: {line.problem}")
        if judgement.verdict == "allow":
            if line.writes and mode == "ask":
                return Decision("ask", f"it writes to {', '.join(str(w) for w in line.writes)}")
            return Decision("allow")
        if mode == "yolo":
            return Decision("allow")
        return Decision("ask", proposals=proposed_patterns(judgement))

    def _write_targets(self, line: CommandLine) -> list[Path | None]:
        """The files the line's redirections write, resolved as bash would from the session's
        directory (None: only known when the line runs). After a `cd` a relative target is
        checked from each directory the line may be in."""
        bases: list[str | None] = [self.cwd]
        for command in line.commands:
            if os.path.basename(command.name) in ("cd", "pushd", "popd"):
                operands = [w for w in command.words[1:] if not w.text.startswith("-")]
                if not operands:
                    bases.append(os.path.expanduser("~") if command.name == "cd" else None)
                else:
                    bases.append(None if operands[0].dynamic else os.path.join(self.cwd, os.path.expanduser(operands[0].text)))
        targets: list[Path | None] = []
        for word in line.writes:
            if word.dynamic:
                targets.append(None)
                continue
            for base in bases if not os.path.isabs(word.text) else [self.cwd]:
                targets.append(Path(os.path.realpath(os.path.join(base, word.text))) if base is not None else None)
        return targets

    def approval_options(self, decision: Decision) -> list[ApprovalOption]:
        """The options of a bash approval: "always allow" saves the shown patterns."""
        options = [ApprovalOption(option_id="allow_once", name="Allow once", kind="allow_once")]
        if decision.proposals:
            shown = ", ".join(f"`{p}`" for p in decision.proposals)
            patterns = list(decision.proposals)
            options += [
                ApprovalOption(option_id="allow_always", name=f"Always allow {shown} in this session",
                               kind="allow_always", rule=SavedRule(scope="session", patterns=patterns)),
                ApprovalOption(option_id="allow_always_project", name=f"Always allow {shown} in this project",
                               kind="allow_always",
                               rule=SavedRule(scope="project", patterns=patterns, path=str(self.project_path))),
                ApprovalOption(option_id="allow_always_user", name=f"Always allow {shown} in every project",
                               kind="allow_always",
                               rule=SavedRule(scope="user", patterns=patterns, path=str(self.user_path))),
            ]
        options += [
            ApprovalOption(option_id="reject_once", name="Reject", kind="reject_once"),
            ApprovalOption(option_id="reject_always", name="Always reject bash in this session", kind="reject_always"),
        ]
        return options

    # --- saving ----------------------------------------------------------------------------

    def save(self, rule: SavedRule) -> None:
        """Save the allow patterns an approval's option showed. If a file cannot be written, the
        rule holds for the session and the client hears why."""
        try:
            if rule.scope == "user":
                current = read_rule_file(self.user_path).rules
                write_rules(self.user_path, _with_allowed(current, rule.patterns))
                return
            if rule.scope == "project":
                if self._save_to_project(rule.patterns):
                    return
        except (OSError, ValueError) as error:
            self._report(PersistenceErrorEvent(message=f"Could not save the rule to {rule.path}: {error}; "
                                                       "it holds for this session"))
        self.session_rules = _with_allowed(self.session_rules, rule.patterns)

    def _save_to_project(self, patterns: list[str]) -> bool:
        """Write to the project's file; trust the result if the user trusted it before (or it
        allowed nothing). False when the file's other allow rules are not trusted: then the
        new rule applies through the session until the user trusts the file."""
        _, project, trusted = self._files()
        had_allows = bool(project.rules.allow or project.rules.read_only)
        written = write_rules(self.project_path, _with_allowed(project.rules, patterns))
        if trusted or not had_allows:
            trust_project(self.user_path, self.cwd, written.digest)
            return True
        return False

    # --- agent/getRules, agent/setRules ----------------------------------------------------

    def rules(self) -> RulesResult:
        user, project, trusted = self._files()
        return RulesResult(
            session=self.session_rules,
            project=ProjectRulesInfo(path=str(project.path), rules=project.rules, error=project.error, trusted=trusted),
            user=RuleFileInfo(path=str(user.path), rules=user.rules, error=user.error),
            built_in_read_only=list(plan_mode.READ_ONLY),
        )

    def set_rules(self, scope: RuleScope, rules: CommandRules | None, trust: bool | None) -> RulesResult:
        """Replace a scope's rules (ValueError for a bad pattern or a file that cannot be
        written); for the project, optionally trust (or stop trusting) its file."""
        if rules is not None:
            problems = RuleBook().add("session", rules)
            if problems:
                raise ValueError("; ".join(problems))
            if scope == "session":
                self.session_rules = rules
            else:
                write_rules(self.user_path if scope == "user" else self.project_path, rules)
        if trust is not None:
            if scope != "project":
                raise ValueError("trust applies to the project's rules only")
            digest = read_rule_file(self.project_path).digest
            trust_project(self.user_path, self.cwd, digest if trust else None)
        return self.rules()


def _with_allowed(rules: CommandRules, patterns: list[str]) -> CommandRules:
    allow = list(rules.allow) + [p for p in patterns if p not in rules.allow]
    return rules.model_copy(update={"allow": allow})


def _not_read_only(verdict: str | None, problem: str | None, unseen: list[str], writes: list[str],
                   unallowed: list[str], rule: str) -> str | None:
    """Why plan mode will not run a line, or None when every command in it only reads."""
    if problem:
        return f"it cannot be checked: {problem}"
    if unseen:
        return unseen[0]
    if verdict == "ask":
        return f"{rule} asks about it"
    if writes:
        return f"it writes to {', '.join(writes)}"
    if verdict != "allow":
        listed = ", ".join(f"`{c}`" for c in unallowed) or "it"
        return f"{listed} {'is' if len(unallowed) < 2 else 'are'} not on the read-only list"
    return None
