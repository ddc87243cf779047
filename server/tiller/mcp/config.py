"""Which MCP servers a session uses, where they are named, and how each one is launched.

Three places name servers; for one name, a later place wins:

1. the user's config file, the one the model catalogue reads (`$TILLER_CONFIG`, else
   `$XDG_CONFIG_HOME/tiller/models.toml`, else `~/.config/tiller/models.toml`):

       [mcpServers.github]
       command = "npx"
       args = ["-y", "@modelcontextprotocol/server-github"]
       env = { GITHUB_TOKEN = "${GITHUB_TOKEN}" }
       autoApprove = ["search_issues"]

       [mcpServers.docs]
       url = "https://docs.example.com/mcp"
       headers = { Authorization = "Bearer ${DOCS_TOKEN}" }

2. the workspace's `.mcp.json`, `{"mcpServers": {"name": {"command", "args", "env"}}}` (the
   format other agents read), started only once the user approved the file (`trust.py`);
3. the session: `agent/newSession {mcpServers: [...]}`, ACP's `mcpServers`.

Every entry has the keys of `McpServerSpec` (protocol/mcp.py). `${VAR}` and `${VAR:-default}`
in the command, args, env, cwd, url and headers are read from tiller's environment, so that
tokens need not be written into files. tiller takes credentials out of its environment when
it starts (environment.py); the user's own config file may still name them (provider keys
included: `${NAME}` there is the user asking for it), but a project's file and a client's
entries may not: a cloned repository (or the editor settings it ships) must not be able to
pull the user's credentials into a server it chose. A bad entry makes that one server fail
with a message saying why; the other servers are not affected.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..ai.models import config_file_path
from ..environment import withheld
from ..protocol.mcp import McpServerSource, McpServerSpec, McpTransport

PROJECT_FILE = ".mcp.json"
MAX_PROJECT_FILE_BYTES = 1 << 20  # a configuration, not a data file
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_STARTUP_TIMEOUT_S = 30.0
# The keys an entry may have, as written in files (camelCase).
ENTRY_KEYS = frozenset((info.alias or name) for name, info in McpServerSpec.model_fields.items()) - {"name"}
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpConfigError(ValueError):
    """An entry that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class McpServerConfig:
    """One server as a session uses it, every variable substituted."""

    name: str
    source: McpServerSource
    transport: McpTransport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = DEFAULT_TIMEOUT_S
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_S
    auto_approve: frozenset[str] = frozenset()
    disabled: bool = False
    # The env and headers as written, variables unexpanded: what the user is shown.
    declared_env: tuple[tuple[str, str], ...] = ()
    declared_headers: tuple[tuple[str, str], ...] = ()

    @property
    def launch(self) -> tuple[Any, ...]:
        """What makes two servers the same server: sessions whose configurations launch it
        the same way share one connection."""
        return (self.transport, self.command, self.args, self.env, self.cwd, self.url, self.headers)

    def describe(self) -> str:
        """The command line or the URL, for people (never the env or headers: they may hold tokens)."""
        if self.transport == "stdio":
            return " ".join([self.command or "", *self.args]).strip()
        return f"{self.url} ({self.transport})"

    def describe_in_full(self) -> str:
        """Everything that decides what runs, for a user asked to approve it: the command
        line, and on lines of their own the environment and headers as written (the file's
        words, never the values of tiller's variables) and the working directory. An
        innocent command line can run anything through its environment (NODE_OPTIONS,
        PYTHONSTARTUP, LD_PRELOAD) or its directory."""
        lines = [self.describe()]
        lines += [f"  env: {key}={value}" for key, value in self.declared_env]
        lines += [f"  header: {key}: {value}" for key, value in self.declared_headers]
        if self.cwd is not None:
            lines.append(f"  cwd: {self.cwd}")
        return "\n".join(lines)


@dataclass(frozen=True)
class McpConfigProblem:
    """An entry (or a whole file) that could not be read: reported as a failed server."""

    name: str
    source: McpServerSource
    transport: McpTransport
    message: str


ConfiguredServer = McpServerConfig | McpConfigProblem


def from_spec(spec: McpServerSpec, source: McpServerSource, cwd: str,
              environ: Mapping[str, str] | None = None) -> McpServerConfig:
    """A spec made concrete for a session working in `cwd`. Raises McpConfigError."""
    environ = os.environ if environ is None else environ

    def expand(text: str) -> str:
        return _expand(text, environ, spec.name)

    assert spec.type is not None  # the spec's validator infers it
    workdir = os.path.realpath(os.path.join(cwd, expand(spec.cwd))) if spec.cwd else cwd
    url = expand(spec.url) if spec.url else None
    if url is not None and not url.startswith(("http://", "https://")):
        raise McpConfigError(f"{spec.name}: url must start with http:// or https://, got {url!r}")
    return McpServerConfig(
        name=spec.name, source=source, transport=spec.type,
        command=expand(spec.command) if spec.command else None,
        args=tuple(expand(arg) for arg in spec.args or ()),
        env=tuple(sorted((key, expand(value)) for key, value in (spec.env or {}).items())),
        cwd=workdir if spec.type == "stdio" else None,
        url=url,
        headers=tuple(sorted((key, expand(value)) for key, value in (spec.headers or {}).items())),
        timeout=(spec.timeout_ms or DEFAULT_TIMEOUT_S * 1000) / 1000,
        startup_timeout=(spec.startup_timeout_ms or DEFAULT_STARTUP_TIMEOUT_S * 1000) / 1000,
        # A repository does not get to approve its own tools.
        auto_approve=frozenset(spec.auto_approve or ()) if source != "project" else frozenset(),
        disabled=bool(spec.disabled),
        declared_env=tuple(sorted((spec.env or {}).items())),
        declared_headers=tuple(sorted((spec.headers or {}).items())),
    )


def resolve_specs(specs: list[McpServerSpec], source: McpServerSource, cwd: str,
                  environ: Mapping[str, str] | None = None) -> list[ConfiguredServer]:
    servers: list[ConfiguredServer] = []
    for spec in specs:
        try:
            servers.append(from_spec(spec, source, cwd, environ))
        except McpConfigError as error:
            servers.append(McpConfigProblem(spec.name, source, spec.type or "stdio", str(error)))
    return servers


def parse_table(table: Any, where: str, source: McpServerSource, cwd: str,
                environ: Mapping[str, str] | None = None) -> list[ConfiguredServer]:
    """The servers of an `mcpServers` table (TOML) or object (JSON), each checked on its own."""
    if not isinstance(table, dict):
        return [McpConfigProblem(Path(where).name, source, "stdio", f"{where}: mcpServers must be a table of servers")]
    return [_entry(name, entry, where, source, cwd, environ) for name, entry in table.items()]


def _entry(name: str, entry: Any, where: str, source: McpServerSource, cwd: str,
           environ: Mapping[str, str] | None) -> ConfiguredServer:
    transport: McpTransport = "stdio"
    try:
        if not isinstance(entry, dict):
            raise McpConfigError(f"{where}: mcpServers.{name} must be a table")
        if isinstance(entry.get("type"), str) and entry["type"] in ("http", "sse", "stdio"):
            transport = entry["type"]
        elif "url" in entry:
            transport = "http"
        if unknown := set(entry) - ENTRY_KEYS:
            raise McpConfigError(f"{where}: mcpServers.{name}: unknown keys {sorted(unknown)}; allowed: {sorted(ENTRY_KEYS)}")
        try:
            spec = McpServerSpec.model_validate({**entry, "name": name})
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'entry'}: {e['msg']}" for e in error.errors())
            raise McpConfigError(f"{where}: mcpServers.{name}: {problems}") from None
        return from_spec(spec, source, cwd, environ)
    except McpConfigError as error:
        return McpConfigProblem(name, source, transport, str(error))


def user_servers(cwd: str, environ: Mapping[str, str] | None = None) -> list[ConfiguredServer]:
    """The `[mcpServers.*]` tables of the user's config file (none if it does not exist).
    Their variables may be credentials tiller withheld from its environment (see above)."""
    environ = {**withheld(), **os.environ} if environ is None else environ
    path, _ = config_file_path(environ)
    if not path.exists():
        return []
    try:
        with path.open("rb") as file:
            data = tomllib.load(file)
    except (OSError, tomllib.TOMLDecodeError) as error:
        return [McpConfigProblem(path.name, "config", "stdio", f"cannot read {path}: {error}")]
    if "mcpServers" not in data:
        return []
    return parse_table(data["mcpServers"], str(path), "config", cwd, environ)


@dataclass(frozen=True)
class ProjectFile:
    """A workspace's `.mcp.json`, as read once: its servers run only if the user approved
    this file with exactly these bytes."""

    path: Path
    content: bytes
    servers: list[ConfiguredServer]


def project_file(cwd: str, environ: Mapping[str, str] | None = None) -> ProjectFile | None:
    """The workspace's `.mcp.json`, if it has one. Blocking: call it in a worker thread."""
    path = Path(cwd) / PROJECT_FILE
    try:
        content = _read_project_file(path)
    except FileNotFoundError:
        return None
    except (OSError, McpConfigError) as error:
        why = str(error) if isinstance(error, McpConfigError) else f"cannot read {path}: {error}"
        return ProjectFile(path, b"", [McpConfigProblem(PROJECT_FILE, "project", "stdio", why)])
    try:
        data = json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return ProjectFile(path, content, [McpConfigProblem(PROJECT_FILE, "project", "stdio", f"{path} is not valid JSON: {error}")])
    if not isinstance(data, dict) or "mcpServers" not in data:
        return ProjectFile(path, content, [McpConfigProblem(PROJECT_FILE, "project", "stdio", f'{path} has no "mcpServers" object')])
    return ProjectFile(path, content, parse_table(data["mcpServers"], str(path), "project", cwd, environ))


def _read_project_file(path: Path) -> bytes:
    """The bytes of a regular file of reasonable size. A repository decides what its
    `.mcp.json` is: a FIFO would block the read forever, a device or a huge file fill
    memory, and a symbolic link point anywhere."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise McpConfigError(f"{path} is a symbolic link; tiller reads only a regular file there") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise McpConfigError(f"{path} is not a regular file; tiller does not read it")
        if info.st_size > MAX_PROJECT_FILE_BYTES:
            raise McpConfigError(f"{path} is {info.st_size} bytes, more than the {MAX_PROJECT_FILE_BYTES} "
                                 "bytes a configuration may have; tiller does not read it")
        chunks, total = [], 0
        while total <= MAX_PROJECT_FILE_BYTES and (chunk := os.read(fd, 1 << 16)):
            chunks.append(chunk)
            total += len(chunk)
        if total > MAX_PROJECT_FILE_BYTES:  # it grew while being read
            raise McpConfigError(f"{path} is more than {MAX_PROJECT_FILE_BYTES} bytes; tiller does not read it")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _expand(text: str, environ: Mapping[str, str], server: str) -> str:
    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        if name in withheld():
            raise McpConfigError(f"{server}: ${{{name}}} names a credential, which only your config file "
                                 "(models.toml) may pass to an MCP server")
        raise McpConfigError(f"{server}: ${{{name}}} is used but {name} is not set in tiller's environment")

    return _VARIABLE.sub(value, text)
