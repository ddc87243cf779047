"""`/rewind` in `tiller chat`: list the session's checkpoints, or go back to one.

    /rewind                              the checkpoints, numbered, oldest first
    /rewind N [files|conversation|both] [force]
                                         back to checkpoint N (default: both); prints how to undo

Everything is done by the server (`agent/listCheckpoints`, `agent/rewind`); this only reads the
command and prints the outcome.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from .client import AgentClient, RpcError

USAGE = "usage: /rewind [N [files|conversation|both] [force]]"
RESTORE = ("files", "conversation", "both")


class Notices(Protocol):
    def notice(self, text: str) -> None: ...

    def error(self, text: str) -> None: ...


def is_rewind_command(line: str) -> bool:
    return line.strip().split(" ", 1)[0] == "/rewind"


async def rewind_command(client: AgentClient, session_id: str, line: str, ui: Notices) -> None:
    words = line.split()[1:]
    try:
        listed = await client.request("agent/listCheckpoints", {"sessionId": session_id})
        checkpoints = listed["checkpoints"]
        if not words:
            _show(checkpoints, listed, ui)
            return
        number, restore, force = _parse(words, len(checkpoints))
        target = checkpoints[number - 1]
        done = await client.request("agent/rewind", {"sessionId": session_id, "checkpointId": target["checkpointId"],
                                                     "restore": restore, "force": force})
    except (ValueError, IndexError) as error:
        ui.error(f"{error}\n{USAGE}")
        return
    except RpcError as error:
        ui.error(error.message)
        return
    ui.notice(_outcome(done, restore, number, len(checkpoints) + 1))


def _parse(words: list[str], count: int) -> tuple[int, str, bool]:
    if not words[0].isdigit() or not 1 <= int(words[0]) <= count:
        raise ValueError(f"no checkpoint {words[0]} (there are {count})")
    restore = next((w for w in words[1:] if w in RESTORE), "both")
    unknown = [w for w in words[1:] if w not in (*RESTORE, "force")]
    if unknown:
        raise ValueError(f"unknown word(s): {' '.join(unknown)}")
    return int(words[0]), restore, "force" in words[1:]


def _show(checkpoints: list[dict[str, Any]], listed: dict[str, Any], ui: Notices) -> None:
    if not listed.get("available", True):
        ui.notice(f"no checkpoints: {listed.get('reason', 'not available')}")
        return
    if not checkpoints:
        ui.notice("no checkpoints yet: one is taken before each prompt that may change files")
        return
    lines = ["checkpoints (oldest first):"]
    for number, checkpoint in enumerate(checkpoints, 1):
        when = time.strftime("%H:%M:%S", time.localtime(checkpoint["createdAt"] / 1000))
        branch = "" if checkpoint["onCurrentBranch"] else "  (another branch of the conversation)"
        lines.append(f"  {number:>3}  {when}  {checkpoint['kind']:<6}  {checkpoint['title']}{branch}")
    lines.append(USAGE)
    ui.notice("\n".join(lines))


def _outcome(done: dict[str, Any], restore: str, number: int, undo_number: int) -> str:
    parts = [f"rewound {restore} to checkpoint {number}"]
    if done["restored"]:
        parts.append(f"restored {', '.join(done['restored'])}")
    if done["deleted"]:
        parts.append(f"deleted {', '.join(done['deleted'])}")
    for skipped in done["skipped"]:
        parts.append(f"left {skipped['path']}: {skipped['reason']}")
    parts.append(f"{done['messageCount']} messages in the conversation")
    return "; ".join(parts) + f" (undo: /rewind {undo_number} {restore})"
