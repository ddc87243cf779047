"""`agent/rewind`: the files, the conversation, or both, back to a checkpoint.

First the workspace and the conversation as they are now are recorded as a checkpoint of kind
`rewind`: rewinding to it undoes the rewind. Then:

- files: every path whose content differs between now and the checkpoint is put back: text
  files through the editor (so an open buffer changes where the user can undo it), other files
  and symlinks on disk; files created since are deleted. Paths are checked against the workspace
  (nothing outside it is touched, whatever symlinks say). A file the checkpoint left out
  (ignored by its ignore files, or too large then) is never deleted, and one present on disk but
  absent from the snapshot of now (ignored, or too large to be recorded) is left alone: both are
  listed in `skipped`.
- conversation: the messages after the checkpoint are dropped from the session (they stay in
  its file, as a branch).

Before touching anything it refuses, unless forced, when a path it would restore was changed
after the agent last touched the workspace (the user's own work, which would be lost), or has
unsaved changes in the editor; and a path that changes while it runs is left alone
(restore_guard.py).
"""

from __future__ import annotations

import asyncio
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..ai.types import now_ms
from ..persistence.session_files import from_ranges, to_ranges
from ..protocol.errors import ErrorCode
from ..protocol.events import RewindEvent
from ..protocol.methods import RewindParams, RewindResult, SkippedFile
from ..tools.atomic_write import write_atomically
from .editor import Editor
from .errors import HostError
from .restore_guard import RestoreGuard
from .shadow_git import MODE_ABSENT, MODE_EXECUTABLE, MODE_GITLINK, MODE_SYMLINK, Change, Commit, GitError, ShadowRepo

if TYPE_CHECKING:
    from .session import Session



async def rewind(session: Session, editor: Editor, params: RewindParams) -> RewindResult:
    checkpoints = session.checkpoints
    if session.is_running:
        raise HostError(ErrorCode.SESSION_BUSY, f"Session {session.id} is running; abort it before rewinding.")
    if checkpoints.repo is None:
        raise HostError(ErrorCode.CHECKPOINT_NOT_FOUND, "This session records no checkpoints (they need git).")
    repo = checkpoints.repo
    await checkpoints.idle()
    target = await checkpoints.find(params.checkpoint_id)
    if target is None:
        raise HostError(ErrorCode.CHECKPOINT_NOT_FOUND, f"Unknown checkpoint: {params.checkpoint_id} (see agent/listCheckpoints)")
    files = params.restore in ("files", "both")
    conversation = params.restore in ("conversation", "both")
    wanted = target.meta.get("conversation")
    if conversation and wanted is None:
        raise HostError(ErrorCode.INVALID_PARAMS,
                        "Invalid params: restore: that checkpoint's conversation was not saved, so it cannot be restored")
    current = session.conversation_records()
    outcome = _Outcome()
    try:
        async with repo.locked():
            now = await repo.snapshot(
                {"session": session.id, "kind": "rewind", "title": f"Before rewinding to: {target.meta.get('title', '')}",
                 "messageCount": len(session.agent.state.messages), "createdAt": now_ms(),
                 "conversation": to_ranges(current) if current is not None else None},
                ref=None, parent_ref=checkpoints.ref,
            )
            changes = await repo.changes(now.tree, target.tree) if files else []
            changes = await _keep_what_it_left_out(repo, target, changes, outcome)
            if files:
                changes = await _leave_nested_repositories(repo, now, target, changes, outcome)
            if changes and not params.force:
                await _refuse_if_user_changes(repo, await checkpoints.settled_tree(), now, changes)
            guard = RestoreGuard(repo, editor, session.id)
            await _refuse_if_unsaved(guard, repo, changes, bool(params.force))
            # Recorded only now: a refused rewind leaves no checkpoint behind.
            await repo.git("update-ref", checkpoints.ref, now.sha)
            await repo.git("update-ref", checkpoints.settled_ref, now.sha)
            await _restore_files(repo, editor, session, changes, outcome, guard)
            if changes:
                await repo.snapshot({"session": session.id, "kind": "settled", "createdAt": now_ms()},
                                    checkpoints.settled_ref)
    except (GitError, OSError) as error:
        raise HostError(ErrorCode.INTERNAL_ERROR, f"The rewind failed: {error}") from None
    if conversation:
        try:
            await session.restore_conversation(from_ranges(wanted or []))
        except ValueError as error:
            raise HostError(ErrorCode.INVALID_PARAMS, f"Invalid params: restore: {error}") from None
    count = len(session.agent.state.messages)
    session.events.emit(RewindEvent(checkpoint_id=target.sha, restore=params.restore, undo_checkpoint_id=now.sha,
                                    message_count=count))
    return RewindResult(undo_checkpoint_id=now.sha, restored=outcome.restored, deleted=outcome.deleted,
                        skipped=outcome.skipped, message_count=count)


async def _keep_what_it_left_out(repo: ShadowRepo, target: Commit, changes: list[Change],
                                 outcome: _Outcome) -> list[Change]:
    """The changes less the deletions of files the checkpoint left out (ignored or too large
    then, recorded since): it does not know what they held, so they stay, listed in `skipped`."""
    gone = [c.path for c in changes if c.new_mode == MODE_ABSENT and c.old_mode not in (MODE_ABSENT, MODE_GITLINK)]
    left_out = await repo.left_out(target, gone) if gone else {}
    outcome.skipped += [SkippedFile(path=path, reason=f"{reason}, so what is there now is kept")
                        for path, reason in sorted(left_out.items())]
    return [c for c in changes if c.path not in left_out]


async def _leave_nested_repositories(repo: ShadowRepo, now: Commit, target: Commit, changes: list[Change],
                                     outcome: _Outcome) -> list[Change]:
    """The changes less those in nested git repositories, each of which is listed in `skipped`:
    checkpoints hold no files of theirs, so whatever changed in them cannot be put back."""
    nested = await repo.nested_repositories(now.tree, target.tree)
    if not nested:
        return changes
    outcome.skipped += [SkippedFile(path=path, reason="it is a nested git repository, whose files checkpoints do not "
                                                      "hold, so what changed in it is not rewound") for path in nested]
    return [c for c in changes if not any(c.path == n or c.path.startswith(n + "/") for n in nested)]


async def _refuse_if_user_changes(repo: ShadowRepo, settled: str | None, now: Commit, changes: list[Change]) -> None:
    if settled is None:
        return
    touched = {change.path for change in await repo.changes(settled, now.tree)}
    lost = [change.path for change in changes if change.path in touched]
    if lost:
        raise _conflict(lost, "changed after the agent's last turn, and restoring would lose those changes. Pass "
                              "force: true to restore anyway (what is there now is kept in a checkpoint, so the "
                              "rewind can be undone).")


async def _refuse_if_unsaved(guard: RestoreGuard, repo: ShadowRepo, changes: list[Change], force: bool) -> None:
    root = Path(repo.work_tree)
    targets = [(change, path) for change in changes if (path := _inside(root, change.path)) is not None]
    unsaved = await guard.unsaved(targets)
    if unsaved and not force:
        raise _conflict(unsaved, f"{'has' if len(unsaved) == 1 else 'have'} unsaved changes in the editor, which "
                                 "restoring would replace (no checkpoint holds them). Save or revert them first, or "
                                 "pass force: true to restore anyway (the editor can undo it).")


def _conflict(paths: list[str], why: str) -> HostError:
    shown = ", ".join(paths[:10]) + (f" and {len(paths) - 10} more" if len(paths) > 10 else "")
    return HostError(ErrorCode.REWIND_CONFLICT, f"Not rewound: {shown} {why}")


@dataclass
class _Outcome:
    restored: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)


async def _restore_files(repo: ShadowRepo, editor: Editor, session: Session, changes: list[Change],
                         outcome: _Outcome, guard: RestoreGuard) -> None:
    root = Path(repo.work_tree)
    # Deletions first: a path may turn from a directory into a file.
    for change in sorted(changes, key=lambda c: c.new_mode != MODE_ABSENT):
        path = _inside(root, change.path)
        if path is None:
            outcome.skipped.append(SkippedFile(path=change.path, reason="it lies outside the workspace"))
            continue
        try:
            reason = await _restore(repo, editor, session.id, change, path, guard)
        except (OSError, GitError, UnicodeError) as error:
            reason = f"it could not be restored: {error}"
        except Exception as error:  # the editor refused (a stale buffer, a failed applyEdit)
            reason = f"the editor did not take it: {error}"
        if reason is not None:
            outcome.skipped.append(SkippedFile(path=change.path, reason=reason))
        elif change.new_mode == MODE_ABSENT:
            outcome.deleted.append(change.path)
        else:
            outcome.restored.append(change.path)


def _inside(root: Path, relative: str) -> Path | None:
    """The path to write, if its directory really lies in the workspace (symlinks resolved)."""
    candidate = root / relative
    parent = Path(os.path.realpath(candidate.parent))
    if parent != root and not parent.is_relative_to(root):
        return None
    return parent / candidate.name


async def _restore(repo: ShadowRepo, editor: Editor, session_id: str, change: Change, path: Path,
                   guard: RestoreGuard) -> str | None:
    """Put one path back; the reason it was skipped, or None."""
    exists = os.path.lexists(path)
    if change.old_mode == MODE_ABSENT and exists:
        return "it is ignored or too large to be in checkpoints, so what is there now was never recorded"
    if not await guard.still_holds(change, path):
        return "it changed while the rewind ran, so what is there now is kept"
    if change.new_mode == MODE_ABSENT:
        if exists and not path.is_symlink() and await editor.read_document(session_id, path) is not None:
            await editor.delete_document(session_id, path)
        elif exists:
            await asyncio.to_thread(path.unlink)
        return None
    data = await repo.blob(change.new_blob)
    if change.new_mode == MODE_SYMLINK:
        if exists:
            await asyncio.to_thread(path.unlink)
        await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
        await asyncio.to_thread(os.symlink, os.fsdecode(data), path)
        return None
    if path.is_symlink():
        await asyncio.to_thread(path.unlink)  # a file again: never write through a link
    text = _text(data)
    if text is not None:
        await editor.read_document(session_id, path)  # the version the edit applies to
        await editor.write_document(session_id, path, text)
    else:
        await asyncio.to_thread(write_atomically, path, data)
    await asyncio.to_thread(_set_executable, path, change.new_mode == MODE_EXECUTABLE)
    return None


def _text(data: bytes) -> str | None:
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _set_executable(path: Path, executable: bool) -> None:
    mode = stat.S_IMODE(os.stat(path).st_mode)
    wanted = mode | ((mode & 0o444) >> 2) if executable else mode & ~0o111
    if wanted != mode:
        os.chmod(path, wanted)
