"""Command rules kept in settings files: the user's and each project's.

- the user's: `$XDG_CONFIG_HOME/tiller/settings.json` (else `~/.config/tiller/settings.json`);
- a project's: `<cwd>/.tiller/settings.json`, shared with whoever clones the project.

Both hold `{"commands": {"allow": [...], "ask": [...], "deny": [...], "readOnly": [...]}}`;
other keys are kept as they are when tiller saves a rule.

A project's file arrives with the code, so its allow and readOnly rules (which widen what runs
without asking) apply only while the user trusts it: the user's file records, under
`trustedProjects`, the SHA-256 of each project file the user trusted. A file that changed since
(a `git pull`, an edit by the agent) is no longer trusted until the user trusts it again, as
direnv does with `.envrc`. Its deny and ask rules always apply.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..protocol.methods import CommandRules
from ..tools.atomic_write import write_atomically

PROJECT_FILE = Path(".tiller") / "settings.json"
_LISTS = {"allow", "ask", "deny", "readOnly"}


def user_settings_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    config_home = env.get("XDG_CONFIG_HOME", "").strip()
    base = Path(config_home) if config_home else Path(os.path.expanduser("~")) / ".config"
    return base / "tiller" / "settings.json"


@dataclass(frozen=True)
class RuleFile:
    path: Path
    rules: CommandRules
    error: str | None = None  # why it could not be read
    digest: str | None = None  # SHA-256 of its bytes; None when it does not exist
    settings: Mapping[str, Any] | None = None  # the whole file, as read


def read_rule_file(path: Path) -> RuleFile:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return RuleFile(path, CommandRules())
    except OSError as error:
        return RuleFile(path, CommandRules(), error=f"cannot read {path}: {error.strerror}")
    digest = hashlib.sha256(data).hexdigest()
    try:
        settings = json.loads(data.decode("utf-8"))
        if not isinstance(settings, dict):
            raise ValueError("the file must hold a JSON object")
        commands = settings.get("commands") or {}
        if not isinstance(commands, dict):
            raise ValueError('"commands" must be an object of lists')
        unknown = sorted(set(commands) - _LISTS)
        if unknown:
            raise ValueError(f"unknown key(s) in \"commands\": {', '.join(unknown)} (known: allow, ask, deny, readOnly)")
        rules = CommandRules.model_validate(commands)
    except (ValueError, ValidationError) as error:
        reason = "; ".join(_validation_problems(error)) if isinstance(error, ValidationError) else str(error)
        return RuleFile(path, CommandRules(), error=f"{path} is not valid: {reason}", digest=digest)
    return RuleFile(path, rules, digest=digest, settings=settings)


def _validation_problems(error: ValidationError) -> list[str]:
    return [f"commands.{'.'.join(str(p) for p in issue['loc'])}: {issue['msg']}" for issue in error.errors()]


def write_rules(path: Path, rules: CommandRules) -> RuleFile:
    """Save `rules` as the file's command rules, keeping its other settings. Refuses (ValueError)
    to overwrite a file it cannot read, so a typo never costs the user their settings."""
    current = read_rule_file(path)
    if current.error is not None:
        raise ValueError(f"{current.error}; fix it by hand first")
    _save(path, {**(current.settings or {}), "commands": rules.dump()})
    return read_rule_file(path)


def trusted_digest(user: RuleFile, project_root: str) -> str | None:
    trusted = (user.settings or {}).get("trustedProjects")
    value = trusted.get(project_root) if isinstance(trusted, dict) else None
    return value if isinstance(value, str) else None


def trust_project(user_path: Path, project_root: str, digest: str | None) -> None:
    """Record (or, with None, forget) the digest of the project file the user trusts."""
    current = read_rule_file(user_path)
    if current.error is not None:
        raise ValueError(f"{current.error}; fix it by hand first")
    settings = dict(current.settings or {})
    trusted = dict(settings.get("trustedProjects") or {})
    if digest is None:
        trusted.pop(project_root, None)
    else:
        trusted[project_root] = digest
    settings["trustedProjects"] = trusted
    _save(user_path, settings)


def _save(path: Path, settings: Mapping[str, Any]) -> None:
    write_atomically(path, (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
