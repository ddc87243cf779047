"""What the client tells the server at `initialize`, parsed into typed settings."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..ai.types import WireModel
from ..host.settings import HostSettings
from ..protocol.modes import ApprovalMode, ToolExecutionMode


class InitializationOptions(WireModel):
    """`initializationOptions`: defaults for every session of this client."""

    default_model: str | None = None
    approval_mode: ApprovalMode = "ask"
    tool_execution: ToolExecutionMode = "parallel"
    data_dir: str | None = None
    dump_payloads: str | None = None

    @classmethod
    def from_raw(cls, raw: Any) -> InitializationOptions:
        if not isinstance(raw, dict):
            return cls()
        try:
            return cls.model_validate(raw)
        except ValidationError:
            # A bad option must not stop the editor from starting; fall back field by field.
            valid = {}
            for key, value in raw.items():
                try:
                    cls.model_validate({key: value})
                    valid[key] = value
                except ValidationError:
                    continue
            return cls.model_validate(valid)

    def host_settings(self) -> HostSettings:
        return HostSettings(default_model=self.default_model, approval_mode=self.approval_mode,
                            tool_execution=self.tool_execution, data_dir=self.data_dir,
                            dump_payloads=self.dump_payloads)


class ClientFeatures(WireModel):
    """`capabilities.experimental.tiller`: what the client's UI can do."""

    # The client shows approval_request events and answers them.
    approvals: bool = False
    # After applying an agent edit to an open document the client saves it, so the server
    # need not write the file itself (protocol.md, "Edits land in the editor").
    saves_edited_documents: bool = False

    @classmethod
    def from_raw(cls, experimental: Any) -> ClientFeatures:
        if isinstance(experimental, dict) and isinstance(experimental.get("tiller"), dict):
            try:
                return cls.model_validate(experimental["tiller"])
            except ValidationError:
                return cls()
        return cls()
