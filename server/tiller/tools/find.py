"""find `{pattern, path?, limit?}`: files matching a glob, via `rg --files`.

ripgrep applies .gitignore (also outside a git checkout), lists hidden files but never
`.git/`, and does not follow symlinks, so nothing outside the workspace is walked. Globs
follow gitignore rules: `*.py` matches at any depth, `src/**/*.ts` is anchored at the
search directory (see `glob_filter`). Only files are listed, in path order.
"""

from __future__ import annotations

from typing import Any

from ..agent.types import AgentToolResult, OnUpdate
from ..ai.abort import AbortSignal
from .results import limited_listing, positive_int, text_result
from .ripgrep import glob_filter, run_rg, strip_dot, walk_args
from .search import SearchTool
from .truncate import DEFAULT_MAX_BYTES

DEFAULT_LIMIT = 1000


class FindTool(SearchTool):
    name = "find"
    read_only = True
    label = "find"
    description = (
        "Search for files by glob pattern. Returns matching file paths relative to the search directory. "
        f"Respects .gitignore. Output is truncated to {DEFAULT_LIMIT} results or {DEFAULT_MAX_BYTES // 1024}KB "
        "(whichever is hit first)."
    )
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "description": "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'",
            },
            "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
            "limit": {"type": "integer", "description": f"Maximum number of results (default: {DEFAULT_LIMIT})"},
        },
        "required": ["pattern"],
    }

    async def execute(
        self, tool_call_id: str, args: dict[str, Any], cancel: AbortSignal, on_update: OnUpdate
    ) -> AgentToolResult:
        root = self.search_root(args)
        if not root.is_dir():
            raise NotADirectoryError(f"Not a directory: {root}")
        limit = positive_int(args, "limit", DEFAULT_LIMIT)
        found: list[str] = []

        def on_line(line: str) -> bool:
            found.append(strip_dot(line))
            return len(found) <= limit  # read one past the limit to know there is more

        with glob_filter(args["pattern"]) as only_matching:
            command = ["--files", "--sort=path", *walk_args(), *only_matching, "--", "."]
            run = await run_rg(command, cwd=root, cancel=cancel, on_line=on_line)
        if run.failed() and not found:
            raise RuntimeError(run.error())
        if not found:
            return text_result("No files found matching pattern")
        notice = f"{limit} results limit reached. Use limit={limit * 2} for more, or refine pattern"
        return limited_listing(found, limit, notice, "resultLimitReached")
