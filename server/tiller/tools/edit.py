"""edit `{path, edits: [{oldText, newText}]}` (or pi 0.58.3's `{path, oldText, newText}`).

Every oldText is located in the ORIGINAL file (see matching.py), must occur exactly once and
must not overlap another edit; then all replacements are applied together. The file keeps
its BOM and line endings: newText is written with the file's own line break.
"""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

from ..agent.types import AgentToolResult
from .change import FileChangeTool, Proposal
from .diff import first_changed_line, unified_diff
from .documents import current_text
from .matching import TextView, find
from .results import text_result

_BOM = "\ufeff"

_EDIT_ITEM = {
    "type": "object",
    "properties": {
        "oldText": {"type": "string", "description": "Exact text to find; must occur once in the original file"},
        "newText": {"type": "string", "description": "Text to replace it with"},
    },
    "required": ["oldText", "newText"],
    "additionalProperties": False,
}


class EditTool(FileChangeTool):
    name = "edit"
    label = "edit"
    description = (
        "Edit a file by replacing exact text. Pass `edits`, a list of {oldText, newText}; each oldText "
        "must match exactly (including whitespace) and uniquely in the original file, and edits must not "
        "overlap. A single {oldText, newText} at the top level is also accepted. Use this for precise, "
        "surgical edits."
    )
    # A flat object rather than anyOf: several providers reject combinators at the top level.
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
            "edits": {"type": "array", "items": _EDIT_ITEM, "description": "Replacements to apply together"},
            "oldText": {"type": "string", "description": "Single-edit form: exact text to find and replace"},
            "newText": {"type": "string", "description": "Single-edit form: new text to replace the old text with"},
        },
        "required": ["path"],
    }

    async def plan(self, args: dict[str, Any]) -> Proposal:
        display = args["path"]
        edits, named = _edits_of(args)
        path = self.workspace.resolve(display)
        original = await current_text(path, self.open_document, strict=True)
        if original is None:
            raise FileNotFoundError(f"File not found: {display}")
        new_text = apply_edits(original, edits, display, named=named)
        changed = first_changed_line(original, new_text)
        return Proposal(
            path, display, original, new_text, unified_diff(original, new_text, display),
            details={"count": len(edits), "firstChangedLine": changed},
        )  # fmt: skip

    def result(self, proposal: Proposal) -> AgentToolResult:
        count = proposal.details["count"]
        what = "text" if count == 1 else f"{count} blocks"
        details = {"diff": proposal.diff, "firstChangedLine": proposal.details["firstChangedLine"]}
        return text_result(f"Successfully replaced {what} in {proposal.display_path}.", details)


def _edits_of(args: dict[str, Any]) -> tuple[list[tuple[str, str]], bool]:
    """The (oldText, newText) pairs, and whether errors should name them as `edits[i]`."""
    edits = [(e["oldText"], e["newText"]) for e in args.get("edits") or []]
    legacy = "oldText" in args or "newText" in args
    if legacy:
        if "oldText" not in args or "newText" not in args:
            raise ValueError("edit needs both oldText and newText (or an edits list)")
        edits.append((args["oldText"], args["newText"]))
    if not edits:
        raise ValueError("edit needs edits: [{oldText, newText}, ...] (or oldText and newText)")
    return edits, not legacy or len(edits) > 1


class _Replacement(NamedTuple):
    start: int  # span of the original text (BOM removed) to replace
    end: int
    index: int  # type: ignore[assignment]  # position in the edits list, for error messages
    text: str


def apply_edits(original: str, edits: list[tuple[str, str]], path: str, *, named: bool = True) -> str:
    """The file text after all `edits`; raises with pi's messages when one cannot apply."""
    bom = _BOM if original.startswith(_BOM) else ""
    body = original[len(bom) :]
    line_break = _line_break_of(body)
    exact, loose = TextView(body, loose=False), TextView(body, loose=True)
    replacements: list[_Replacement] = []
    for index, (old, new) in enumerate(edits):
        label = f"edits[{index}]" if named else None
        if not old:
            raise ValueError(f"{label}.oldText must not be empty" if label else "oldText must not be empty")
        match = find(exact, loose, old)
        if match.count > 1:
            raise ValueError(_multiple(path, match.count, label))
        if match.span is None:
            raise ValueError(_not_found(path, label))
        text = new.replace("\r\n", "\n").replace("\r", "\n").replace("\n", line_break)
        replacements.append(_Replacement(*match.span, index, text))
    replacements.sort()
    for before, after in itertools.pairwise(replacements):
        if after.start < before.end:
            a, b = sorted((before.index, after.index))
            raise ValueError(
                f"edits[{a}] and edits[{b}] overlap in {path}. "
                "Merge them into one edit or make them target separate text."
            )
    pieces, position = [], 0
    for replacement in replacements:
        pieces += [body[position : replacement.start], replacement.text]
        position = replacement.end
    result = "".join([*pieces, body[position:]])
    if result == body:
        raise ValueError(
            f"No changes made to {path}. The replacement produced identical content. "
            "This might indicate an issue with special characters or the text not existing as expected."
        )
    return bom + result


def _line_break_of(text: str) -> str:
    """The file's line break: that of its first line (pi's rule)."""
    lf = text.find("\n")
    return "\r\n" if lf > 0 and text[lf - 1] == "\r" else "\n"


def _not_found(path: str, label: str | None) -> str:
    if label is None:
        return (
            f"Could not find the exact text in {path}. "
            "The old text must match exactly including all whitespace and newlines."
        )
    return f"Could not find {label} in {path}. The oldText must match exactly including all whitespace and newlines."


def _multiple(path: str, count: int, label: str | None) -> str:
    if label is None:
        return (
            f"Found {count} occurrences of the text in {path}. "
            "The text must be unique. Please provide more context to make it unique."
        )
    return (
        f"Found {count} occurrences of {label} in {path}. "
        "Each oldText must be unique. Please provide more context to make it unique."
    )
