"""grep `{pattern, path?, glob?, ignoreCase?, literal?, context?, limit?}` via `rg --json`.

Output is pi's: `path:line: text` for matches, `path-line- text` for context lines, paths
relative to the searched directory (or the file name when a file is searched). Context
comes from ripgrep itself, so nearby matches share their context lines.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

from ..agent.types import AgentToolResult, OnUpdate
from ..ai.abort import AbortSignal
from .files import check_regular
from .results import capped_listing, positive_int, text_result
from .ripgrep import glob_filter, run_rg, strip_dot, walk_args
from .search import SearchTool
from .truncate import DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, truncate_line

DEFAULT_LIMIT = 100


class GrepTool(SearchTool):
    name = "grep"
    read_only = True
    label = "grep"
    description = (
        "Search file contents for a pattern. Returns matching lines with file paths and line numbers. "
        f"Respects .gitignore. Output is truncated to {DEFAULT_LIMIT} matches or {DEFAULT_MAX_BYTES // 1024}KB "
        f"(whichever is hit first). Long lines are truncated to {GREP_MAX_LINE_LENGTH} chars."
    )
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
            "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
            "glob": {"type": "string", "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'"},
            "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
            "literal": {
                "type": "boolean",
                "description": "Treat pattern as literal string instead of regex (default: false)",
            },
            "context": {
                "type": "integer",
                "description": "Number of lines to show before and after each match (default: 0)",
            },
            "limit": {
                "type": "integer",
                "description": f"Maximum number of matches to return (default: {DEFAULT_LIMIT})",
            },
        },
        "required": ["pattern"],
    }

    async def execute(
        self, tool_call_id: str, args: dict[str, Any], cancel: AbortSignal, on_update: OnUpdate
    ) -> AgentToolResult:
        root = self.search_root(args)
        context = max(0, int(args.get("context") or 0))
        collector = _Collector(positive_int(args, "limit", DEFAULT_LIMIT), context)
        command = ["--json", "--line-number", "--sort=path", *walk_args()]
        if args.get("ignoreCase"):
            command.append("--ignore-case")
        if args.get("literal"):
            command.append("--fixed-strings")
        if context:
            command.append(f"--context={context}")
        if not root.is_dir():  # rg would wait forever on a named pipe it is pointed at
            check_regular(os.stat(root), args.get("path") or root.name)
        # Search "." (or the file's name) from inside: paths come out relative, as pi shows them.
        cwd, target = (root, ".") if root.is_dir() else (root.parent, root.name)
        command += ["--regexp", args["pattern"]]
        with glob_filter(args.get("glob")) as only_matching:
            command += [*only_matching, "--", target]
            run = await run_rg(command, cwd=cwd, cancel=cancel, on_line=collector.feed)
        if run.failed() and not collector.matches:
            raise RuntimeError(run.error())
        return collector.result()


class _Collector:
    """Turns rg's JSON events into output lines, stopping after `limit` matches.

    After the last match we still want its trailing context, which rg sends before the next
    match; context lines further away than `context` belong to that next match and are cut.
    """

    def __init__(self, limit: int, context: int) -> None:
        self.limit, self.context = limit, context
        self.lines: list[str] = []
        self.matches = 0
        self.limit_reached = False
        self.long_lines = False
        self._last: tuple[str, int] | None = None

    def feed(self, raw: str) -> bool:
        event = json.loads(raw)
        kind = event.get("type")
        if kind not in ("match", "context"):
            return True
        data = event["data"]
        path, number = strip_dot(_text(data["path"])), data["line_number"]
        if kind == "match":
            if self.matches == self.limit:
                self.limit_reached = True
                return False
            self.matches += 1
            self._last = (path, number)
            self._add(f"{path}:{number}: ", data["lines"])
        elif self.matches < self.limit or self._is_trailing_context(path, number):
            self._add(f"{path}-{number}- ", data["lines"])
        return True

    def _is_trailing_context(self, path: str, number: int) -> bool:
        return self._last is not None and self._last[0] == path and number <= self._last[1] + self.context

    def _add(self, prefix: str, lines: dict[str, str]) -> None:
        text = _text(lines).rstrip("\n").replace("\r", "")
        text, cut = truncate_line(text)
        self.long_lines = self.long_lines or cut
        self.lines.append(prefix + text)

    def result(self) -> AgentToolResult:
        if not self.matches:
            return text_result("No matches found")
        notices: list[str] = []
        details: dict[str, Any] = {}
        if self.limit_reached:
            limit = self.limit
            notices.append(f"{limit} matches limit reached. Use limit={limit * 2} for more, or refine pattern")
            details["matchLimitReached"] = self.limit
        later: list[str] = []
        if self.long_lines:
            later.append(f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines")
            details["linesTruncated"] = True
        return capped_listing(self.lines, notices, details, later)


def _text(field: dict[str, str]) -> str:
    """rg gives UTF-8 as `text` and anything else as base64 `bytes`."""
    if "text" in field:
        return field["text"]
    return base64.b64decode(field["bytes"]).decode("utf-8", "replace")
