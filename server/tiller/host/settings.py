"""What the user chose for every session of one host, whatever the front end."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..protocol.modes import ApprovalMode, ToolExecutionMode

# How long a request to the editor (workspace/applyEdit, ACP's fs/*) may go unanswered: an
# editor that hangs must fail the tool call, not the whole run. Editors answer in
# milliseconds; an applyEdit may wait on a save dialog, hence the margin.
DEFAULT_EDITOR_TIMEOUT_MS = 60_000


def editor_timeout_from_env() -> float:
    """Seconds, from TILLER_EDITOR_TIMEOUT_MS (else the default); a bad value is ignored."""
    try:
        milliseconds = int(os.environ.get("TILLER_EDITOR_TIMEOUT_MS", DEFAULT_EDITOR_TIMEOUT_MS))
    except ValueError:
        milliseconds = DEFAULT_EDITOR_TIMEOUT_MS
    return (milliseconds if milliseconds > 0 else DEFAULT_EDITOR_TIMEOUT_MS) / 1000


@dataclass(frozen=True)
class HostSettings:
    # The model of sessions that name none (else the catalogue's default).
    default_model: str | None = None
    # The approval mode of new sessions.
    approval_mode: ApprovalMode = "ask"
    # How new sessions run the tool calls of one reply (pi's default: parallel).
    tool_execution: ToolExecutionMode = "parallel"
    # Where sessions are saved (else $TILLER_DATA_DIR, $XDG_DATA_HOME/tiller, ...).
    data_dir: str | None = None
    # Where every LLM request and response is written (else --dump-payloads / TILLER_DUMP_PAYLOADS).
    dump_payloads: str | None = None
    # Seconds a request to the editor may take (TILLER_EDITOR_TIMEOUT_MS).
    editor_timeout: float = field(default_factory=editor_timeout_from_env)
