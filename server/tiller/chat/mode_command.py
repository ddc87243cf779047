"""`/mode` in `tiller chat`: show or change the session's approval mode (plan mode included).

    /mode            the current mode and the others
    /mode MODE       switch to ask, acceptEdits, yolo or plan (agent/setApprovalMode)
"""

from __future__ import annotations

from ..protocol.modes import APPROVAL_MODES  # light: the protocol package imports nothing heavy
from .client import AgentClient, RpcError
from .rewind_command import Notices

USAGE = f"usage: /mode [{'|'.join(APPROVAL_MODES)}]"
MEANINGS = {
    "ask": "ask before every edit, write and command",
    "acceptEdits": "edits and writes go ahead; commands ask",
    "yolo": "everything goes ahead without asking",
    "plan": "explore and plan: no edits or writes, only read-only commands",
}


def is_mode_command(line: str) -> bool:
    return line.strip().split(" ", 1)[0] == "/mode"


async def mode_command(client: AgentClient, session_id: str, line: str, ui: Notices) -> None:
    words = line.split()[1:]
    try:
        if not words:
            state = await client.request("agent/getState", {"sessionId": session_id})
            ui.notice("\n".join([f"approval mode: {state['approvalMode']}",
                                 *(f"  {mode:<12} {MEANINGS[mode]}" for mode in APPROVAL_MODES), USAGE]))
            return
        if len(words) > 1 or words[0] not in APPROVAL_MODES:
            ui.error(f"unknown mode: {' '.join(words)}\n{USAGE}")
            return
        settings = await client.request("agent/setApprovalMode", {"sessionId": session_id, "mode": words[0]})
    except RpcError as error:
        ui.error(error.message)
        return
    ui.notice(f"approval mode: {settings['approvalMode']} ({MEANINGS[settings['approvalMode']]})")
