"""edit: pi's cases (replace, fuzzy matching, CRLF/BOM) plus multi-edit and the
improvement over pi 0.58.3 that a fuzzy match leaves the rest of the file alone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tiller.tools import EditTool, Workspace
from tiller.tools.ports import ApprovalRequest

from .helpers import fails, run, text

NOT_FOUND = (
    "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines."
)


@pytest.fixture
def tool(ws: Workspace) -> EditTool:
    return EditTool(ws)


@pytest.fixture
def f(project: Path):
    """Write f.txt (bytes kept exactly) and return a reader of its text."""

    def write(content: str) -> Path:
        path = project / "f.txt"
        path.write_bytes(content.encode("utf-8"))
        return path

    return write


def content(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


async def edit(tool: EditTool, old: str, new: str) -> str:
    return text(await run(tool, path="f.txt", oldText=old, newText=new))


# --- pi's basic cases ---------------------------------------------------------------------


async def test_replaces_text(tool, f):
    path = f("Hello, world!\nsecond line\n")
    result = await run(tool, path="f.txt", oldText="world", newText="testing")
    assert text(result) == "Successfully replaced text in f.txt."
    assert content(path) == "Hello, testing!\nsecond line\n"
    assert result.details["firstChangedLine"] == 1
    diff = result.details["diff"]
    assert diff.startswith("--- a/f.txt\n+++ b/f.txt\n@@ ")
    assert "-Hello, world!\n+Hello, testing!\n" in diff and " second line\n" in diff


async def test_text_not_found(tool, f):
    f("Hello, world!")
    assert await fails(tool, path="f.txt", oldText="nonexistent", newText="x") == NOT_FOUND


async def test_multiple_occurrences(tool, f):
    path = f("foo foo foo")
    assert await fails(tool, path="f.txt", oldText="foo", newText="bar") == (
        "Found 3 occurrences of the text in f.txt. The text must be unique. "
        "Please provide more context to make it unique."
    )
    assert content(path) == "foo foo foo"


async def test_missing_file(tool):
    assert await fails(tool, path="nope.txt", oldText="a", newText="b") == "File not found: nope.txt"


async def test_identical_replacement(tool, f):
    f("same")
    assert await fails(tool, path="f.txt", oldText="same", newText="same") == (
        "No changes made to f.txt. The replacement produced identical content. "
        "This might indicate an issue with special characters or the text not existing as expected."
    )


async def test_diff_has_context_and_first_changed_line(tool, f):
    f("\n".join(f"line {i}" for i in range(1, 21)) + "\n")
    result = await run(tool, path="f.txt", oldText="line 10\n", newText="line ten\n")
    assert result.details["firstChangedLine"] == 10
    diff = result.details["diff"]
    assert "@@ -6,9 +6,9 @@\n" in diff  # four lines of context either side
    assert " line 6\n" in diff and " line 14\n" in diff and "line 5\n" not in diff


# --- fuzzy matching -----------------------------------------------------------------------


async def test_fuzzy_trailing_whitespace(tool, f):
    path = f("line one   \nline two  \nline three\n")
    assert await edit(tool, "line one\nline two\n", "replaced\n") == "Successfully replaced text in f.txt."
    assert content(path) == "replaced\nline three\n"


async def test_fuzzy_trailing_whitespace_at_the_end_of_the_match_is_replaced_too(tool, f):
    path = f("keep\nvalue = \u20181\u2019   \nkeep\n")
    await edit(tool, "value = '1'", "value = '2'")
    assert content(path) == "keep\nvalue = '2'\nkeep\n"


async def test_exact_match_leaves_trailing_whitespace_alone(tool, f):
    path = f("keep\nvalue = 1   \nkeep\n")
    await edit(tool, "value = 1", "value = 2")
    assert content(path) == "keep\nvalue = 2   \nkeep\n"


async def test_fuzzy_smart_quotes(tool, f):
    path = f("console.log(\u2018hello\u2019);\nsay(\u201chi\u201d);\n")
    await edit(tool, "console.log('hello');", "console.log('world');")
    assert content(path) == "console.log('world');\nsay(\u201chi\u201d);\n"


async def test_fuzzy_unicode_dashes(tool, f):
    path = f("range: 1\u20135\nbreak\u2014here\nminus \u2212 sign\n")
    await edit(tool, "range: 1-5\nbreak-here", "range: 10-50\nbreak--here")
    assert content(path) == "range: 10-50\nbreak--here\nminus \u2212 sign\n"


async def test_fuzzy_non_breaking_space(tool, f):
    path = f("hello\u00a0world\n")
    await edit(tool, "hello world", "hello universe")
    assert content(path) == "hello universe\n"


async def test_fuzzy_fullwidth_punctuation_nfkc(tool, f):
    path = f("x = \uff3b1\uff0c 2\uff3d\n")  # ［1， 2］
    await edit(tool, "x = [1, 2]", "x = [3, 4]")
    assert content(path) == "x = [3, 4]\n"


async def test_fuzzy_nfkc_compatibility_letters(tool, f):
    path = f("\uff46\uff55\uff4c\uff4c width and the \ufb01le\n")  # ｆｕｌｌ, ﬁ ligature
    await edit(tool, "full width and the file", "plain")
    assert content(path) == "plain\n"


async def test_fuzzy_composed_and_decomposed_accents(tool, f):
    path = f("caf\u00e9 = 1\n")  # composed é
    await edit(tool, "cafe\u0301 = 1", "cafe = 2")  # decomposed in oldText
    assert content(path) == "cafe = 2\n"


async def test_fuzzy_match_leaves_the_rest_of_the_file_alone(tool, f):
    # pi 0.58.3 would write back the whole file normalised: curly quotes, dashes and
    # trailing spaces elsewhere would all change. Only the matched region may change.
    rest = "note = \u201cdon\u2019t\u201d   \nrange = 1\u20132\u00a0\n"
    path = f("title = \u2018old\u2019\n" + rest)
    await edit(tool, "title = 'old'", "title = 'new'")
    assert content(path) == "title = 'new'\n" + rest


async def test_exact_match_preferred(tool, f):
    path = f("const x = 'exact';\nconst y = 'other';\n")
    await edit(tool, "const x = 'exact';", "const x = 'changed';")
    assert content(path) == "const x = 'changed';\nconst y = 'other';\n"


async def test_fuzzy_still_fails_when_absent(tool, f):
    f("completely different content\n")
    assert await fails(tool, path="f.txt", oldText="this \u2018does\u2019 not exist", newText="x") == (
        NOT_FOUND
    )


async def test_duplicates_after_normalisation(tool, f):
    path = f("hello world   \nhello world\n")
    message = await fails(tool, path="f.txt", oldText="hello world", newText="replaced")
    assert message.startswith("Found 2 occurrences of the text in f.txt.")
    assert content(path) == "hello world   \nhello world\n"


async def test_a_match_cutting_a_ligature_in_half_is_not_a_match(tool, f):
    f("the \ufb01le\n")
    assert await fails(tool, path="f.txt", oldText="the f", newText="x") == NOT_FOUND


# --- several edits ------------------------------------------------------------------------


async def test_multiple_edits_apply_together(tool, f):
    path = f("alpha\nbeta\ngamma\n")
    result = await run(
        tool, path="f.txt", edits=[{"oldText": "alpha", "newText": "ALPHA"}, {"oldText": "gamma", "newText": "GAMMA"}]
    )
    assert text(result) == "Successfully replaced 2 blocks in f.txt."
    assert content(path) == "ALPHA\nbeta\nGAMMA\n"
    assert result.details["firstChangedLine"] == 1


async def test_edits_match_the_original_not_each_others_output(tool, f):
    path = f("a\nb\n")
    await run(tool, path="f.txt", edits=[{"oldText": "a", "newText": "b"}, {"oldText": "b", "newText": "c"}])
    assert content(path) == "b\nc\n"


async def test_a_single_edit_in_the_list_form(tool, f):
    path = f("one two")
    result = await run(tool, path="f.txt", edits=[{"oldText": "two", "newText": "2"}])
    assert text(result) == "Successfully replaced text in f.txt." and content(path) == "one 2"


async def test_errors_name_the_edit(tool, f):
    path = f("alpha beta beta")
    missing = [{"oldText": "alpha", "newText": "A"}, {"oldText": "omega", "newText": "O"}]
    assert await fails(tool, path="f.txt", edits=missing) == (
        "Could not find edits[1] in f.txt. The oldText must match exactly including all whitespace and newlines."
    )
    repeated = [{"oldText": "beta", "newText": "B"}]
    assert await fails(tool, path="f.txt", edits=repeated) == (
        "Found 2 occurrences of edits[0] in f.txt. Each oldText must be unique. "
        "Please provide more context to make it unique."
    )
    assert content(path) == "alpha beta beta"  # nothing applied when one edit fails


async def test_overlapping_edits(tool, f):
    path = f("abcdef")
    edits = [{"oldText": "cdef", "newText": "Y"}, {"oldText": "abcd", "newText": "X"}]
    assert await fails(tool, path="f.txt", edits=edits) == (
        "edits[0] and edits[1] overlap in f.txt. Merge them into one edit or make them target separate text."
    )
    assert content(path) == "abcdef"


async def test_adjacent_edits_do_not_overlap(tool, f):
    path = f("abcdef")
    await run(tool, path="f.txt", edits=[{"oldText": "abc", "newText": "1"}, {"oldText": "def", "newText": "2"}])
    assert content(path) == "12"


async def test_empty_old_text_is_refused(tool, f):
    f("x")
    assert await fails(tool, path="f.txt", oldText="", newText="y") == "oldText must not be empty"
    assert await fails(tool, path="f.txt", edits=[{"oldText": "", "newText": "y"}]) == (
        "edits[0].oldText must not be empty"
    )


async def test_needs_some_edit(tool, f):
    f("x")
    assert "oldText and newText" in await fails(tool, path="f.txt")
    assert "both oldText and newText" in await fails(tool, path="f.txt", oldText="x")


async def test_both_forms_together_apply_all(tool, f):
    path = f("one two")
    await run(tool, path="f.txt", edits=[{"oldText": "one", "newText": "1"}], oldText="two", newText="2")
    assert content(path) == "1 2"


# --- line endings and BOM -----------------------------------------------------------------


async def test_lf_old_text_matches_a_crlf_file(tool, f):
    path = f("line one\r\nline two\r\nline three\r\n")
    await edit(tool, "line two\n", "replaced line\n")
    assert content(path) == "line one\r\nreplaced line\r\nline three\r\n"


async def test_crlf_endings_are_preserved_for_new_lines(tool, f):
    path = f("first\r\nsecond\r\nthird\r\n")
    await edit(tool, "second", "second\nand a half")
    assert content(path) == "first\r\nsecond\r\nand a half\r\nthird\r\n"


async def test_lf_file_stays_lf(tool, f):
    path = f("first\nsecond\n")
    await edit(tool, "second", "2nd\r\n2nd bis")
    assert content(path) == "first\n2nd\n2nd bis\n"


async def test_duplicates_across_line_endings(tool, f):
    f("hello\r\nworld\r\n---\r\nhello\nworld\n")
    message = await fails(tool, path="f.txt", oldText="hello\nworld", newText="x")
    assert message.startswith("Found 2 occurrences of the text in f.txt.")


async def test_bom_is_preserved(tool, f):
    path = f("\ufefffirst\r\nsecond\r\n")
    await edit(tool, "first", "FIRST")
    assert content(path) == "\ufeffFIRST\r\nsecond\r\n"


async def test_mixed_endings_elsewhere_are_not_rewritten(tool, f):
    path = f("a\r\nb\nc\r\n")
    await edit(tool, "c", "C")
    assert content(path) == "a\r\nb\nC\r\n"


# --- editor buffers, approval, writers, concurrency ---------------------------------------


async def test_edits_the_open_buffer(ws: Workspace, project: Path):
    (project / "f.txt").write_text("on disk\n")
    written: list[str] = []

    class Writer:
        async def write(self, path: Path, new: str) -> None:
            written.append(new)

    tool = EditTool(ws, open_document=lambda p: "unsaved text\n", writer=Writer())
    await run(tool, path="f.txt", oldText="unsaved", newText="saved")
    assert written == ["saved text\n"]
    assert (project / "f.txt").read_text() == "on disk\n"


async def test_open_buffer_of_a_file_not_on_disk(ws: Workspace, project: Path):
    tool = EditTool(ws, open_document=lambda p: "draft\n")
    await run(tool, path="new.txt", oldText="draft", newText="final")
    assert (project / "new.txt").read_text() == "final\n"


async def test_approval_rejection_keeps_the_file(ws: Workspace, f):
    path = f("keep me")
    proposals: list[ApprovalRequest] = []

    def approve(proposal: ApprovalRequest) -> None:
        proposals.append(proposal)
        raise PermissionError("Edit rejected by the user")

    tool = EditTool(ws, approve=approve)
    assert await fails(tool, path="f.txt", oldText="keep", newText="drop") == "Edit rejected by the user"
    assert content(path) == "keep me"
    assert proposals[0].new_text == "drop me" and "-keep me" in proposals[0].diff


async def test_non_utf8_file_is_refused_not_corrupted(tool, project: Path):
    (project / "latin1.txt").write_bytes(b"caf\xe9\n")
    message = await fails(tool, path="latin1.txt", oldText="caf", newText="tea")
    assert "not valid UTF-8" in message
    assert (project / "latin1.txt").read_bytes() == b"caf\xe9\n"


async def test_parallel_edits_of_one_file_both_land(ws: Workspace, project: Path):
    from tiller.tools import create_coding_tools

    tools = create_coding_tools(ws)
    (project / "f.txt").write_text("".join(f"line {i}\n" for i in range(20)))
    await asyncio.gather(
        *(run(tools["edit"], path="f.txt", oldText=f"line {i}\n", newText=f"LINE {i}\n") for i in range(20))
    )
    assert (project / "f.txt").read_text() == "".join(f"LINE {i}\n" for i in range(20))
