"""Fixtures for the end-to-end server tests: `start_tiller` starts a real server process."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from .harness import TillerClient, faux_script, running_tiller, server_env

StartTiller = Callable[..., Awaitable[TillerClient]]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
async def start_tiller(tmp_path: Path, workspace: Path) -> AsyncIterator[StartTiller]:
    """`await start_tiller(responses=[...], env={...})`: a server with that faux script (and
    command-line `args`), initialized with `capabilities` (a pytest-lsp preset) and
    `initialization_options`; shut down (and checked) after the test."""
    numbers = itertools.count(1)
    async with AsyncExitStack() as stack:

        async def start(
            responses: list[dict[str, Any]] | None = None,
            *,
            chunk_chars: int = 4,
            delay_ms: float = 0,
            env: dict[str, str] | None = None,
            capabilities: str = "visual-studio-code",
            initialization_options: dict[str, Any] | None = None,
            workspace_folders: list[Path] | None = None,
            args: list[str] | None = None,
        ) -> TillerClient:
            script = faux_script(tmp_path / f"faux-{next(numbers)}.json", responses or [],
                                 chunk_chars=chunk_chars, delay_ms=delay_ms)
            environment = server_env(tmp_path, TILLER_FAUX_SCRIPT=script, **(env or {}))
            return await stack.enter_async_context(
                running_tiller(environment, workspace, capabilities, initialization_options, workspace_folders, args)
            )

        yield start
