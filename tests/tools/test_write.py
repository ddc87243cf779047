"""write: pi's cases, plus the plan -> approve -> writer flow and atomic replacement."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from tiller.ai.abort import AbortSignal
from tiller.tools import Workspace, WriteTool
from tiller.tools.atomic_write import PathChangedError, write_atomically
from tiller.tools.ports import ApprovalRequest

from .helpers import fails, run, text


@pytest.fixture
def tool(ws: Workspace) -> WriteTool:
    return WriteTool(ws)


async def test_writes_a_file(tool, project: Path):
    result = await run(tool, path="out.txt", content="hello world")
    assert text(result) == "Successfully wrote 11 bytes to out.txt"
    assert (project / "out.txt").read_text() == "hello world"


async def test_creates_parent_directories(tool, project: Path):
    await run(tool, path="a/b/c/deep.txt", content="deep")
    assert (project / "a" / "b" / "c" / "deep.txt").read_text() == "deep"


async def test_overwrites_and_keeps_permissions(tool, project: Path):
    script = project / "run.sh"
    script.write_text("old")
    script.chmod(0o750)
    await run(tool, path="run.sh", content="#!/bin/sh\necho new\n")
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750


async def test_new_files_follow_the_umask(tool, project: Path):
    await run(tool, path="n.txt", content="x")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE((project / "n.txt").stat().st_mode) == 0o666 & ~mask


async def test_leaves_no_temporary_files(tool, project: Path):
    await run(tool, path="a.txt", content="1")
    await run(tool, path="a.txt", content="2")
    assert sorted(p.name for p in project.iterdir()) == ["a.txt"]


async def test_counts_like_pi(tool, project: Path):
    # pi reports the JavaScript string length: an emoji is two UTF-16 code units.
    result = await run(tool, path="u.txt", content="héllo😀")
    assert text(result) == "Successfully wrote 7 bytes to u.txt"
    assert (project / "u.txt").read_text(encoding="utf-8") == "héllo😀"


async def test_writing_a_directory_fails(tool, project: Path):
    (project / "d").mkdir()
    assert "is a directory" in await fails(tool, path="d", content="x")


async def test_plan_has_no_side_effects(tool, project: Path):
    (project / "a.txt").write_text("one\ntwo\n")
    proposal = await tool.plan({"path": "a.txt", "content": "one\nTWO\n"})
    assert proposal.path == project / "a.txt" and proposal.display_path == "a.txt"
    assert proposal.old_text == "one\ntwo\n" and proposal.new_text == "one\nTWO\n"
    assert "--- a/a.txt\n+++ b/a.txt\n" in proposal.diff and "-two\n+TWO\n" in proposal.diff
    assert (project / "a.txt").read_text() == "one\ntwo\n"
    new = await tool.plan({"path": "fresh/b.txt", "content": "x"})
    assert new.old_text is None and new.diff.startswith("--- /dev/null\n+++ b/fresh/b.txt\n")
    assert not (project / "fresh").exists()


async def test_approval_sees_the_proposal_and_may_refuse(ws: Workspace, project: Path):
    seen: list[ApprovalRequest] = []

    async def approve(proposal: ApprovalRequest) -> None:
        seen.append(proposal)
        raise PermissionError("User rejected the change")

    (project / "a.txt").write_text("keep")
    tool = WriteTool(ws, approve=approve)
    assert await fails(tool, path="a.txt", content="replace") == "User rejected the change"
    assert (project / "a.txt").read_text() == "keep"
    assert seen[0].new_text == "replace" and seen[0].old_text == "keep"


async def test_plain_function_approval(ws: Workspace, project: Path):
    approved: list[str] = []
    tool = WriteTool(ws, approve=lambda proposal: approved.append(proposal.display_path))
    await run(tool, path="ok.txt", content="fine")
    assert approved == ["ok.txt"] and (project / "ok.txt").read_text() == "fine"


async def test_abort_while_waiting_for_approval_writes_nothing(ws: Workspace, project: Path):
    never = asyncio.Event()

    async def approve(proposal: ApprovalRequest) -> None:
        await never.wait()

    tool = WriteTool(ws, approve=approve)
    cancel = AbortSignal()
    asyncio.get_running_loop().call_later(0.05, cancel.abort)
    assert await fails(tool, cancel, path="a.txt", content="x") == "Operation aborted"
    assert not (project / "a.txt").exists()


@pytest.mark.parametrize(("before", "meanwhile", "said"), [
    ("mine\n", "mine, typed while the approval waited\n", "changed"),
    (None, "made by the user meanwhile\n", "was created"),
    ("mine\n", None, "was deleted"),
])
async def test_a_file_that_changes_while_the_approval_waits_is_not_overwritten(
        ws: Workspace, project: Path, before: str | None, meanwhile: str | None, said: str):
    target = project / "a.txt"
    if before is not None:
        target.write_text(before)

    def the_user_acts_then_allows(proposal: ApprovalRequest) -> None:
        if meanwhile is None:
            target.unlink()
        else:
            target.write_text(meanwhile)

    tool = WriteTool(ws, approve=the_user_acts_then_allows)
    message = await fails(tool, path="a.txt", content="the agent's text\n")
    assert message == (f"Not written: a.txt {said} while the change waited for approval, so the approved "
                       "change no longer fits it. Read the file again and redo the change.")
    assert (target.read_text() if target.exists() else None) == meanwhile  # the user's work is kept


async def test_custom_writer_receives_the_text(ws: Workspace, project: Path):
    class Recorder:
        def __init__(self) -> None:
            self.calls: list[tuple[Path, str]] = []

        async def write(self, path: Path, content: str) -> None:
            self.calls.append((path, content))

    writer = Recorder()
    result = await run(WriteTool(ws, writer=writer), path="sub/x.txt", content="via editor")
    assert writer.calls == [(project / "sub" / "x.txt", "via editor")]
    assert not (project / "sub").exists()  # the editor, not us, creates it
    assert text(result) == "Successfully wrote 10 bytes to sub/x.txt"


async def test_diff_uses_the_open_buffer(ws: Workspace, project: Path):
    (project / "a.txt").write_text("disk\n")
    tool = WriteTool(ws, open_document=lambda path: "buffer\n" if path == project / "a.txt" else None)
    proposal = await tool.plan({"path": "a.txt", "content": "new\n"})
    assert proposal.old_text == "buffer\n" and "-buffer\n+new\n" in proposal.diff


async def test_failed_replace_leaves_the_old_file_and_no_temporary(tool, project: Path, monkeypatch):
    (project / "a.txt").write_text("original")

    def broken_replace(src, dst, **dir_fds):
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    assert await fails(tool, path="a.txt", content="new") == "disk on fire"
    assert sorted(p.name for p in project.iterdir()) == ["a.txt"]
    assert (project / "a.txt").read_text() == "original"


def test_the_writer_does_not_follow_a_directory_swapped_for_a_symlink(tmp_path: Path):
    """The last line of defence: even between the tool's re-check and the write, no part of
    the resolved path may have become a symlink."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    (workspace / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "f.txt").write_text("outside\n")
    resolved = workspace / "sub" / "f.txt"
    (workspace / "sub").rename(workspace / "moved")
    (workspace / "sub").symlink_to(outside)
    with pytest.raises(PathChangedError):
        write_atomically(resolved, b"payload")
    with pytest.raises(PathChangedError):
        write_atomically(workspace / "sub" / "new" / "g.txt", b"payload")
    (workspace / "sub").unlink()
    (workspace / "moved").rename(workspace / "sub")
    (workspace / "sub" / "f.txt").symlink_to(outside / "f.txt")  # the file itself became a link
    with pytest.raises(PathChangedError):
        write_atomically(resolved, b"payload")
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt"] and (outside / "f.txt").read_text() == "outside\n"
