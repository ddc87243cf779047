"""Approvals on the terminal: what a pending change looks like, and reading the answer.

An `approval_request` event (protocol.md section 5) is shown as its title and the coloured
unified diff (edit, write) or the command (bash); the user answers with one key word:

    y  allow once        a  always allow this tool in the session
    n  reject            r  reject and say why (the model reads the reason)

A command's "always" options save command rules: each is shown with the exact patterns it
saves, and `p` (this project) and `u` (every project) are offered when the request has them.

Ctrl-C (or end of input) while asked rejects the change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text

QUESTION = "Allow? [y] once  [a] always  [n] reject  [r] reject with a reason: "
REASON_QUESTION = "Reason (the model reads it): "

CHOICES = {
    "y": "allow_once", "yes": "allow_once",
    "a": "allow_always", "always": "allow_always",
    "n": "reject_once", "no": "reject_once",
    "r": "reject_once",  # then asks for the reason
}
# Keys for the "always" options that save a command rule elsewhere than the session.
RULE_KEYS = {"p": "allow_always_project", "u": "allow_always_user"}


@dataclass
class Answer:
    option_id: str
    message: str | None = None


def describe(event: dict[str, Any]) -> RenderableType:
    """The request as the user sees it: title, then the diff or the command."""
    title = Text(f"● {event.get('title') or event.get('toolName', 'change')}", style="bold yellow")
    parts: list[RenderableType] = [title]
    if event.get("diff"):
        parts.append(Syntax(event["diff"].rstrip("\n"), "diff", theme="ansi_dark", background_color="default"))
    if event.get("command"):
        parts.append(Text("$ ", style="bold") + Text(event["command"], style="cyan"))
    if event.get("reason"):
        parts.append(Text(event["reason"], style="dim"))
    # What each "always" answer saves, spelled out (the server's option names carry the patterns).
    keys = {"allow_always": "a", **{option_id: key for key, option_id in RULE_KEYS.items()}}
    for option in event.get("options") or []:
        if option.get("rule") and option.get("optionId") in keys:
            parts.append(Text(f"  [{keys[option['optionId']]}] {option.get('name', '')}", style="dim"))
    return Group(*parts)


def question(options: list[dict[str, Any]]) -> str:
    """QUESTION, with the keys for saving a rule to the project or the user when offered."""
    offered = {option.get("optionId") for option in options}
    extra = "".join(f"[{key}] {'project' if key == 'p' else 'every project'}  "
                    for key, option_id in RULE_KEYS.items() if option_id in offered)
    return QUESTION if not extra else QUESTION.replace("[n] reject", f"{extra}[n] reject")


def option_for(kind: str, options: list[dict[str, Any]]) -> str:
    """The request's option id of `kind` (allow_once, ...): the ids are the server's to choose.
    A rule key's answer is already an option id of the request."""
    if any(option.get("optionId") == kind for option in options if kind in RULE_KEYS.values()):
        return kind
    for option in options:
        if option.get("kind") == kind:
            return str(option.get("optionId"))
    return kind


def parse(answer: str, options: list[dict[str, Any]] | None = None) -> tuple[str, bool] | None:
    """(option kind or id, asks for a reason) for a typed answer; None if it is not one (a
    rule key counts only when the request offers that option)."""
    word = answer.strip().lower()
    rule_option = RULE_KEYS.get(word)
    if rule_option is not None:
        offered = any(option.get("optionId") == rule_option for option in options or [])
        return (rule_option, False) if offered else None
    kind = CHOICES.get(word)
    if kind is None:
        return None
    return kind, word == "r"
