"""Fixtures: `start_neovim(...)` starts an embedded Neovim with the plugin, in `workspace`."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.harness import faux_script, openai_env, server_env
from tests.support.sse_server import SSEServer

from .driver import Neovim, nvim_binary

StartNeovim = Callable[..., Neovim]


@pytest.fixture(scope="session", autouse=True)
def neovim_installed() -> None:
    nvim_binary()  # fails under CI=true, skips elsewhere, when Neovim is missing


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / ".git").mkdir(parents=True)  # a root marker, as in a real project
    return root


@pytest.fixture
def start_neovim(tmp_path: Path, workspace: Path) -> Iterator[StartNeovim]:
    """`start_neovim(responses=[...], setup={...})`: a Neovim whose tiller server runs the
    faux model with that script; with `sse=server`, `openai/test-model` from that loopback
    OpenAI-compatible server instead."""
    numbers = itertools.count(1)
    started: list[Neovim] = []

    def start(
        responses: list[dict[str, Any]] | None = None,
        *,
        chunk_chars: int = 4,
        delay_ms: float = 0,
        env: dict[str, str] | None = None,
        setup: dict[str, Any] | None = None,
        sse: SSEServer | None = None,
    ) -> Neovim:
        script = faux_script(tmp_path / f"faux-{next(numbers)}.json", responses or [],
                             chunk_chars=chunk_chars, delay_ms=delay_ms)
        if sse is not None:  # the model is `openai/test-model`, served by `sse`
            env = {**(env or {}), **openai_env(sse)}
            setup = {"model": "openai/test-model", **(setup or {})}
        environment = server_env(tmp_path, TILLER_FAUX_SCRIPT=script, **(env or {}))
        environment["HOME"] = str(tmp_path / "home")  # no user config of Neovim either
        neovim = Neovim(environment, workspace, setup)
        started.append(neovim)
        return neovim

    yield start
    for neovim in started:
        neovim.close()
