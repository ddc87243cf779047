"""One session's checkpoints: the workspace (and the conversation) before each turn.

Before a prompt runs, a snapshot of the workspace is taken in the shadow repository
(shadow_git.py) and recorded on the session's ref, `refs/tiller/sessions/<id>`, with what the
conversation was then: the session file's message records it held (see recorder.py). The
snapshot runs while the model thinks; the first tool that would change something waits for it
(`before_change`), so it always shows the files as they were before the turn changed them.
Turns that cannot change files (plan mode, no change tools) record none.

After a run that tried to change something, the workspace is recorded once more as *settled*
(`refs/tiller/settled/<id>`): what the agent left. A rewind compares the files with it, to tell
the user's later changes (which a restore would lose) from the agent's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ..ai.types import now_ms
from ..persistence.session_files import from_ranges, to_ranges
from ..protocol.events import PersistenceErrorEvent
from ..protocol.methods import Checkpoint, ListCheckpointsResult
from .shadow_git import Commit, GitError, ShadowRepo, git_available

logger = logging.getLogger("tiller.checkpoints")

Emit = Callable[[Any], None]


class SessionCheckpoints:
    def __init__(self, repo: ShadowRepo | None, session_id: str, emit: Emit) -> None:
        self.repo = repo if repo is not None and git_available() else None
        self.session_id = session_id
        self.ref = f"refs/tiller/sessions/{session_id}"
        self.settled_ref = f"refs/tiller/settled/{session_id}"
        self._emit = emit
        self._pending: asyncio.Task[None] | None = None
        self._settling: asyncio.Task[None] | None = None
        self._changed = False

    @property
    def available(self) -> bool:
        return self.repo is not None

    # --- around a turn -----------------------------------------------------------------------

    def begin_turn(self, title: str, message_count: int, conversation: list[int] | None) -> None:
        """Start recording the workspace before a turn (the first change waits for it)."""
        self._changed = False
        if self.repo is None:
            self._pending = None
            return
        meta = {"kind": "turn", "title": title, "messageCount": message_count, "createdAt": now_ms(),
                "conversation": to_ranges(conversation) if conversation is not None else None}
        self._pending = asyncio.get_running_loop().create_task(self._record(meta))

    async def before_change(self) -> None:
        self._changed = True
        pending = self._pending
        if pending is not None:
            await asyncio.shield(pending)

    async def end_turn(self) -> None:
        """After a run: the checkpoint before it is complete (so it cannot catch what the user
        does next); if the run tried to change files, what it left is recorded (in the background)."""
        if self._pending is not None:
            await asyncio.shield(self._pending)
        if self.repo is None or not self._changed:
            return
        self._changed = False
        self._settling = asyncio.get_running_loop().create_task(self._settle())

    async def idle(self) -> None:
        """Wait until no snapshot of this session is being taken."""
        for task in (self._pending, self._settling):
            if task is not None:
                await asyncio.shield(task)

    async def _record(self, meta: dict[str, Any]) -> None:
        try:
            await self.record(meta)
        except (GitError, OSError) as error:
            logger.warning("No checkpoint for session %s: %s", self.session_id, error)
            self._emit(PersistenceErrorEvent(message=f"Could not record a checkpoint of the workspace: {error}"))

    async def record(self, meta: dict[str, Any]) -> Commit:
        """A checkpoint on the session's ref; the workspace is settled there too."""
        assert self.repo is not None
        async with self.repo.locked():
            commit = await self.repo.snapshot({"session": self.session_id, **meta}, self.ref, parent_ref=self.ref)
            await self.repo.git("update-ref", self.settled_ref, commit.sha)
        return commit

    async def _settle(self) -> None:
        assert self.repo is not None
        try:
            async with self.repo.locked():
                await self.repo.snapshot({"session": self.session_id, "kind": "settled", "createdAt": now_ms()},
                                         self.settled_ref)
        except (GitError, OSError) as error:
            logger.warning("Could not record the workspace after a turn of %s: %s", self.session_id, error)

    # --- reading -----------------------------------------------------------------------------

    async def listing(self, current: list[int] | None) -> ListCheckpointsResult:
        if self.repo is None:
            return ListCheckpointsResult(checkpoints=[], available=False, reason="checkpoints need git, which is not installed")
        await self.idle()
        commits = await self.repo.commits(self.ref)
        return ListCheckpointsResult(checkpoints=[self.describe(c, current) for c in reversed(commits)], available=True)

    def describe(self, commit: Commit, current: list[int] | None) -> Checkpoint:
        meta = commit.meta
        conversation = meta.get("conversation")
        on_branch = current is None or (
            conversation is not None and current[: len(from_ranges(conversation))] == from_ranges(conversation)
        )
        return Checkpoint(checkpoint_id=commit.sha, created_at=int(meta.get("createdAt") or 0),
                          kind="rewind" if meta.get("kind") == "rewind" else "turn",
                          message_count=int(meta.get("messageCount") or 0), title=str(meta.get("title") or ""),
                          on_current_branch=on_branch)

    async def find(self, checkpoint_id: str) -> Commit | None:
        """A checkpoint of this session (by full id or a unique prefix)."""
        if self.repo is None:
            return None
        for commit in await self.repo.commits(self.ref):
            if commit.sha.startswith(checkpoint_id.lower()) and checkpoint_id:
                return commit
        return None

    async def forget(self) -> None:
        """The session is deleted: its checkpoints go (their files stay until git prunes them)."""
        if self.repo is not None:
            async with self.repo.locked():
                await self.repo.delete_ref(self.ref)
                await self.repo.delete_ref(self.settled_ref)

    async def settled_tree(self) -> str | None:
        if self.repo is None:
            return None
        settled = await self.repo.commit(await self.repo.resolve(self.settled_ref) or "")
        return settled.tree if settled is not None else None



async def forget_saved_session(repo: ShadowRepo, session_id: str) -> None:
    """A saved session that is not loaded is deleted: its checkpoints go too."""
    await SessionCheckpoints(repo, session_id, lambda _: None).forget()
