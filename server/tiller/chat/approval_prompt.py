"""Approvals on the terminal: what a pending change looks like, and reading the answer.

An `approval_request` event (protocol.md section 5) is shown as its title and the coloured
unified diff (edit, write) or the command (bash); the user answers with one key word:

    y  allow once        a  always allow this tool in the session
    n  reject            r  reject and say why (the model reads the reason)

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
    return Group(*parts)


def option_for(kind: str, options: list[dict[str, Any]]) -> str:
    """The request's option id of `kind` (allow_once, ...): the ids are the server's to choose."""
    for option in options:
        if option.get("kind") == kind:
            return str(option.get("optionId"))
    return kind


def parse(answer: str) -> tuple[str, bool] | None:
    """(option kind, asks for a reason) for a typed answer; None if it is not one."""
    word = answer.strip().lower()
    kind = CHOICES.get(word)
    if kind is None:
        return None
    return kind, word == "r"
