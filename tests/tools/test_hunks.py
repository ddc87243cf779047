"""Review per hunk: a change's hunks are exactly the @@ hunks of the diff the approval shows,
and any subset of them applies on its own, keeping the file's line endings and BOM; edit and
write apply only the hunks a `HunkSelection` accepts and tell the model which went in."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from tiller.tools import EditTool, Workspace, WriteTool
from tiller.tools.diff import unified_diff
from tiller.tools.hunks import apply_hunks, diff_hunks
from tiller.tools.ports import ApprovalRequest, HunkSelection

from .helpers import run, text

OLD = "".join(f"line {i}\n" for i in range(1, 41))
# Three changes far enough apart to be three hunks: a replacement, an insertion, a deletion.
NEW = OLD.replace("line 2\n", "LINE 2\n").replace("line 20\n", "line 20\nextra\n").replace("line 38\n", "")


def changed_lines(old: str, new: str) -> list[str]:
    return [line for line in unified_diff(old, new, "f").splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_hunks_are_the_diffs_hunks():
    hunks = diff_hunks(OLD, NEW)
    headers = [line for line in unified_diff(OLD, NEW, "f").splitlines() if line.startswith("@@")]
    assert [h.header for h in hunks] == headers == ["@@ -1,6 +1,6 @@", "@@ -17,8 +17,9 @@", "@@ -34,7 +35,6 @@"]
    assert [h.id for h in hunks] == ["h1", "h2", "h3"]
    assert [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in hunks] == [
        (1, 6, 1, 6), (17, 8, 17, 9), (34, 7, 35, 6)]
    assert [(h.header, h.old_start, h.old_lines) for h in diff_hunks(None, "a\nb\n")] == [("@@ -0,0 +1,2 @@", 0, 0)]
    assert diff_hunks(OLD, OLD) == []


def test_any_subset_of_hunks_applies_alone():
    every = {"h1": ["-line 2", "+LINE 2"], "h2": ["+extra"], "h3": ["-line 38"]}
    for size in range(4):
        for subset in itertools.combinations(every, size):
            result = apply_hunks(OLD, NEW, set(subset))
            assert changed_lines(OLD, result) == [line for hunk in subset for line in every[hunk]], subset
    assert apply_hunks(OLD, NEW, {"h1", "h2", "h3"}) == NEW
    assert apply_hunks(OLD, NEW, set()) == OLD


def test_line_endings_bom_and_new_files_survive():
    crlf_old, crlf_new = "\ufeff" + OLD.replace("\n", "\r\n"), "\ufeff" + NEW.replace("\n", "\r\n")
    assert [h.header for h in diff_hunks(crlf_old, crlf_new)] == [h.header for h in diff_hunks(OLD, NEW)]
    assert apply_hunks(crlf_old, crlf_new, {"h2"}) == "\ufeff" + apply_hunks(OLD, NEW, {"h2"}).replace("\n", "\r\n")
    assert apply_hunks("a\nb", "a\nB", {"h1"}) == "a\nB"  # no newline at the end, kept so
    assert apply_hunks(None, "new\n", {"h1"}) == "new\n"
    assert apply_hunks(None, "new\n", set()) == ""


async def test_edit_applies_the_accepted_hunks_only_and_says_which(project: Path, ws: Workspace):
    (project / "f.txt").write_text(OLD)
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> HunkSelection:
        asked.append(request)
        return HunkSelection(frozenset({"h1", "h3"}), "  keep the blank line out  ")

    tool = EditTool(ws, approve=approve)
    result = await run(tool, path="f.txt", edits=[
        {"oldText": "line 2\n", "newText": "LINE 2\n"},
        {"oldText": "line 20\n", "newText": "line 20\nextra\n"},
        {"oldText": "line 38\n", "newText": ""},
    ])
    assert [h.id for h in asked[0].hunks] == ["h1", "h2", "h3"]
    assert (project / "f.txt").read_text() == apply_hunks(OLD, NEW, {"h1", "h3"})
    assert text(result) == (
        "The user applied 2 of the 3 hunks of this change to f.txt: h1 (@@ -1,6 +1,6 @@), h3 (@@ -34,7 +35,6 @@). "
        "The user rejected h2 (@@ -17,8 +17,9 @@): keep the blank line out. "
        "The file now has only the applied hunks; read it again before changing it further."
    )
    assert result.details["appliedHunks"] == ["h1", "h3"] and result.details["rejectedHunks"] == ["h2"]
    assert re.findall(r"^[+-](?![+-]).*$", result.details["diff"], re.M) == ["-line 2", "+LINE 2", "-line 38"]


async def test_write_over_a_file_applies_the_accepted_hunks_only(project: Path, ws: Workspace):
    (project / "f.txt").write_text(OLD)
    tool = WriteTool(ws, approve=lambda request: HunkSelection(frozenset({"h2"})))
    result = await run(tool, path="f.txt", content=NEW)
    assert (project / "f.txt").read_text() == apply_hunks(OLD, NEW, {"h2"})
    assert "The user rejected h1 (@@ -1,6 +1,6 @@), h3 (@@ -34,7 +35,6 @@)." in text(result)
