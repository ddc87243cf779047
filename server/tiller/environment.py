"""The process environment: what tiller keeps out of it, and what tool processes get.

Two rules, because a command the model runs can read more than its own environment:

- `withhold_secrets` takes variables that look like credentials (`*_KEY`, `*_TOKEN`,
  `*_SECRET`, `*PASSWORD`, `*_PAT`, `*_DSN`, `DATABASE_URL`, ...: every provider key follows
  these conventions, and models.toml's `apiKeyEnv` names whatever they look like) out of
  this process's environment: out of `os.environ` (so no
  child inherits them by accident) and out of the environment block the process started
  with, which `/proc/<pid>/environ` shows to every process of the same user: deleting from
  `os.environ` alone leaves that block as it was, so its entries are overwritten in place.
  The values stay in memory for the catalogue (and for variables the user passes on).
- `child_env` builds a tool process's environment from an allowlist of harmless variables
  (paths, locale, terminal, toolchain homes) plus what the user named in `TILLER_TOOL_ENV`
  (comma- or space-separated names; `NAME*` matches a prefix). Provider keys never pass,
  named or not (`mark_provider_keys`: the catalogue's names).
"""

from __future__ import annotations

import ctypes
import fnmatch
import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .ai.models import ModelCatalog

logger = logging.getLogger("tiller")

TOOL_ENV_VARIABLE = "TILLER_TOOL_ENV"

# Harmless variables a command may need: where things are, how to print, which toolchain.
ALLOWED = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "HOSTNAME", "LANG", "LANGUAGE", "TERM", "COLORTERM",
    "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "TZ", "TMPDIR", "TEMP", "TMP", "EDITOR", "VISUAL", "PAGER", "CI",
    "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
    "XDG_CONFIG_DIRS", "XDG_DATA_DIRS",
    "JAVA_HOME", "GOPATH", "GOROOT", "GOBIN", "GOFLAGS", "CARGO_HOME", "RUSTUP_HOME", "VIRTUAL_ENV",
    "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYENV_ROOT", "PYENV_VERSION", "NVM_DIR", "NVM_BIN", "NODE_PATH",
    "PNPM_HOME", "BUN_INSTALL", "DENO_DIR", "GEM_HOME", "GEM_PATH", "RBENV_ROOT", "DOTNET_ROOT",
    "ANDROID_HOME", "ANDROID_SDK_ROOT",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
})
ALLOWED_PREFIXES = ("LC_",)

# Names that hold credentials by convention (a word of the name, or the whole name); they
# are withheld from this process's own environment block too, so that
# `/proc/<tiller's pid>/environ` does not show them.
_CREDENTIAL_WORDS = {"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL",
                     "CREDENTIALS", "PAT", "AUTH", "DSN"}
_CREDENTIAL_NAMES = re.compile(r"^(PGPASSWORD|DATABASE_URL|.*_URI|.*APIKEY)$", re.IGNORECASE)

_withheld: dict[str, str] = {}
_provider_keys: set[str] = set()


def looks_like_a_credential(name: str) -> bool:
    words = set(name.upper().split("_"))
    return bool(words & _CREDENTIAL_WORDS) or bool(_CREDENTIAL_NAMES.match(name))


def withhold_secrets(provider_key_names: Iterable[str] = ()) -> dict[str, str]:
    """Take `provider_key_names` and credential-looking variables out of this process's
    environment; return them (name -> value). Call after the model catalogue read its keys."""
    _provider_keys.update(provider_key_names)
    names = [name for name in os.environ if name in _provider_keys or looks_like_a_credential(name)]
    withheld = {name: os.environ[name] for name in names}
    for name in names:
        del os.environ[name]
    _withheld.update(withheld)
    if withheld:
        _scrub_initial_environment(set(withheld))
    return withheld


def catalog_withholding_secrets() -> ModelCatalog:
    """The model catalogue, loaded while the keys are still in the environment; then every
    credential-looking variable leaves it. What every front end does before it serves. (The
    catalogue's full list of key variables needs its dataset, read on first use: the host
    marks those names once it has them, before any tool can run; `mark_provider_keys`.)"""
    from .ai.models import ModelCatalog

    catalog = ModelCatalog.load()
    # models.toml may name a key variable that looks like nothing in particular.
    withhold_secrets(catalog.configured_key_names())
    return catalog


def withhold_secrets_from_a_launcher() -> None:
    """For a process that started tiller's server and needs no key itself (`tiller chat`):
    the commands the server runs are its grandchildren, and its environment block is as
    readable to them as the server's. Call once the server has been started."""
    from .ai.models import ModelCatalog, ModelConfigError

    try:
        names = ModelCatalog.load().configured_key_names()
    except ModelConfigError:
        names = frozenset()  # the server reports a broken models.toml
    withhold_secrets(names)


def mark_provider_keys(names: Iterable[str]) -> None:
    """Provider key variables: never passed to a tool process, even when named in
    TILLER_TOOL_ENV."""
    _provider_keys.update(names)


def withheld() -> Mapping[str, str]:
    return dict(_withheld)


def child_env(source: Mapping[str, str] | None = None, configured: str | None = None) -> dict[str, str]:
    """The environment of a process a tool starts (see the module doc)."""
    environ = dict(os.environ if source is None else source)
    available = {**_withheld, **environ} if source is None else environ
    spec = environ.get(TOOL_ENV_VARIABLE, "") if configured is None else configured
    patterns = [p for p in re.split(r"[\s,]+", spec) if p]
    env = {}
    for name, value in available.items():
        if name in _provider_keys or name == TOOL_ENV_VARIABLE:
            continue
        if name in ALLOWED or name.startswith(ALLOWED_PREFIXES) or any(fnmatch.fnmatchcase(name, p) for p in patterns):
            env[name] = value
    return env


# --- the environment block the process started with -------------------------------------------


def _scrub_initial_environment(names: set[str]) -> None:
    """Overwrite the `NAME=value` entries of `names` in the process's original environment
    block (what `/proc/self/environ` reads) with NUL bytes. Linux only; elsewhere a warning."""
    region = _environment_region()
    if region is None:
        logger.warning("Cannot hide withheld variables from this process's environment block on this system")
        return
    start, end = region
    block = ctypes.string_at(start, end - start)
    offset = 0
    for entry in block.split(b"\0"):
        name = entry.split(b"=", 1)[0].decode("utf-8", "replace")
        if name in names:
            ctypes.memset(start + offset, 0, len(entry))
        offset += len(entry) + 1
    with open("/proc/self/environ", "rb") as handle:
        entries = handle.read().split(b"\0")
    left = [name for name in names if any(entry.startswith(name.encode() + b"=") for entry in entries)]
    if left:
        logger.error("Could not hide %s from this process's environment block", ", ".join(sorted(left)))


def _environment_region() -> tuple[int, int] | None:
    """(env_start, env_end) from /proc/self/stat (fields 50 and 51, Linux 3.5 and later)."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    # Field 3 (the state) is the first after the command name.
    if len(fields) < 49:
        return None
    start, end = int(fields[47]), int(fields[48])
    return (start, end) if 0 < start < end else None
