"""A session's choices as ACP shows them: modes (the approval modes) and config options
(mode, model, thinking level), kept in step so that clients using either work."""

from __future__ import annotations

from typing import get_args

from acp.schema import (
    SessionConfigOptionBoolean,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
)

from ..ai.types import Model, ThinkingLevel
from ..host import Host, Session
from ..protocol.modes import APPROVAL_MODES, ApprovalMode
from .errors import invalid_params

MODES: dict[ApprovalMode, tuple[str, str]] = {
    "ask": ("Ask", "Every file change and command asks for approval"),
    "acceptEdits": ("Accept edits", "File changes go through; commands ask"),
    "yolo": ("Yolo", "Nothing asks: changes and commands run at once"),
    "plan": ("Plan", "Read-only: the agent explores and plans; edits and commands that change things are refused"),
}
THINKING_LEVELS: tuple[ThinkingLevel, ...] = get_args(ThinkingLevel)


def modes(session: Session) -> SessionModeState:
    return SessionModeState(
        current_mode_id=session.approvals.mode,
        available_modes=[SessionMode(id=mode, name=name, description=about) for mode, (name, about) in MODES.items()],
    )


def config_options(host: Host, session: Session) -> list[SessionConfigOptionSelect | SessionConfigOptionBoolean]:
    state = session.agent.state
    current = state.model.ref
    models = [SessionConfigSelectOption(value=m.ref, name=m.name) for m in _keyed_models(host)]
    if current not in {option.value for option in models}:
        models.insert(0, SessionConfigSelectOption(value=current, name=state.model.name))
    return [
        SessionConfigOptionSelect(
            id="mode", name="Mode", category="mode", type="select", current_value=session.approvals.mode,
            options=[SessionConfigSelectOption(value=mode, name=name, description=about)
                     for mode, (name, about) in MODES.items()],
        ),
        SessionConfigOptionSelect(id="model", name="Model", category="model", type="select", current_value=current,
                                  options=models),
        SessionConfigOptionSelect(
            id="thought_level", name="Thinking", category="thought_level", type="select",
            current_value=state.thinking_level,
            options=[SessionConfigSelectOption(value=level, name=level) for level in THINKING_LEVELS],
        ),
    ]


def _keyed_models(host: Host) -> list[Model]:
    """The models of providers whose key is set: a picker's worth, found without probing
    local servers on every session (`agent/listModels` over LSP searches everything)."""
    catalog = host.catalog
    keyed = {name for name in catalog.providers() if catalog.api_key(name)}
    return [model for model in catalog.list() if model.provider in keyed]


def set_mode(session: Session, mode_id: str) -> None:
    for mode in APPROVAL_MODES:
        if mode == mode_id:
            session.set_approval_mode(mode)
            session.settings_changed()
            return
    raise invalid_params(f"Unknown mode {mode_id!r}; modes: {', '.join(APPROVAL_MODES)}")


def set_option(host: Host, session: Session, config_id: str, value: str | bool) -> None:
    if not isinstance(value, str):
        raise invalid_params(f"Option {config_id} takes a string value")
    if config_id == "mode":
        set_mode(session, value)
    elif config_id == "model":
        session.set_model(host.resolve_model(value))
        session.settings_changed()
    elif config_id == "thought_level":
        level = next((level for level in THINKING_LEVELS if level == value), None)
        if level is None:
            raise invalid_params(f"Unknown thinking level {value!r}; levels: {', '.join(THINKING_LEVELS)}")
        session.agent.set_thinking_level(level)
        session.settings_changed()
    else:
        raise invalid_params(f"Unknown config option {config_id!r}")
