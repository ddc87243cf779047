"""What the user chose for every session of one host, whatever the front end."""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol.modes import ApprovalMode


@dataclass(frozen=True)
class HostSettings:
    # The model of sessions that name none (else the catalogue's default).
    default_model: str | None = None
    # The approval mode of new sessions.
    approval_mode: ApprovalMode = "ask"
    # Where sessions are saved (else $TILLER_DATA_DIR, $XDG_DATA_HOME/tiller, ...).
    data_dir: str | None = None
    # Where every LLM request and response is written (else --dump-payloads / TILLER_DUMP_PAYLOADS).
    dump_payloads: str | None = None
