"""Differential test: tiller's agent core against the real pi-agent-core 0.58.3 from npm.

Each scenario of scenarios.json runs through pi (node/pi_trace.mjs: pi's `Agent`, `agentLoop`
and `agentLoopContinue`, with a stream function replaying the scripted responses exactly as
tiller's faux provider streams them) and through tiller (tiller_trace.py, the real faux
provider). The traces must be identical:

- `events`: every event as the listener received it (types, roles, content, tool calls and
  results, stop reasons, errors, streaming deltas and partial tool arguments);
- `kept`: the same event objects read again after the run, which shows what a listener that
  keeps events sees (pi hands out shallow copies of the streaming message);
- `llmCalls`: what each LLM call received (system prompt, messages, tool names, options);
- `executions` and `hooks`: which tools ran with which (validated) arguments, and what the
  before/after hooks saw, in order;
- `steps` and `messages`: each public call's outcome (thrown errors, state afterwards) and the
  final transcript; `result` / `thrown` for the bare loop.

Timestamps and token usage are left out: the one is the clock, the other the faux provider's
estimate, neither pi's logic. A scenario may differ only if DEPARTURES lists it with the
reason (the README's "Parity with pi-agent-core" section lists the same).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .tiller_trace import run_scenario

# The module's fixture installs and runs the real pi-agent-core in Node once (npm ci when stale).
pytestmark = pytest.mark.timeout(600)

PARITY = Path(__file__).resolve().parent
NODE_DIR = PARITY / "node"
SPEC = json.loads((PARITY / "scenarios.json").read_text(encoding="utf-8"))
TRACE_KEYS = ("steps", "messages", "result", "thrown", "events", "kept", "llmCalls", "executions", "hooks")

# Scenario name -> why tiller differs from pi-agent-core 0.58.3 there. Empty: no departures.
DEPARTURES: dict[str, str] = {}


def _dependencies_stale() -> bool:
    installed = NODE_DIR / "node_modules" / ".package-lock.json"
    lock = NODE_DIR / "package-lock.json"
    return not installed.is_file() or installed.stat().st_mtime < lock.stat().st_mtime


def _missing(tool: str) -> None:
    message = f"{tool} is not installed; the pi-agent-core parity test (tests/parity) needs Node 20+ and npm"
    if os.environ.get("CI", "").lower() in ("true", "1"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def pi_traces() -> dict[str, Any]:
    """Every scenario's trace from the real pi-agent-core, in one Node process."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None:
        _missing("node")
    if npm is None:
        _missing("npm")
    assert node is not None and npm is not None
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    assert int(version.lstrip("v").split(".")[0]) >= 20, f"pi-agent-core 0.58.3 needs Node 20+, found {version}"
    if _dependencies_stale():
        installed = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, capture_output=True,
                                   text=True, timeout=300)
        assert installed.returncode == 0, f"npm ci failed in {NODE_DIR}:\n{installed.stdout}{installed.stderr}"
    run = subprocess.run([node, "pi_trace.mjs"], cwd=NODE_DIR, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"pi_trace.mjs failed:\n{run.stderr}"
    return json.loads(run.stdout)


def first_difference(ours: Any, theirs: Any, path: str = "") -> str | None:
    """Where two JSON values first differ, as `path: tiller ... / pi ...`, or None."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in sorted(set(ours) | set(theirs)):
            if key not in theirs or key not in ours:
                side = "pi" if key not in ours else "tiller"
                return f"{path}.{key}: only {side} has it: {json.dumps((ours | theirs)[key])[:400]}"
            found = first_difference(ours[key], theirs[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(ours, list) and isinstance(theirs, list):
        for index, (a, b) in enumerate(zip(ours, theirs, strict=False)):
            found = first_difference(a, b, f"{path}[{index}]")
            if found:
                return found
        if len(ours) != len(theirs):
            return f"{path}: tiller has {len(ours)} items, pi {len(theirs)}"
        return None
    if ours != theirs or type(ours) is not type(theirs):
        return f"{path}: tiller {json.dumps(ours)[:400]} / pi {json.dumps(theirs)[:400]}"
    return None


def event_types(trace: dict[str, Any]) -> list[str]:
    return [e["type"] for e in trace.get("events", [])]


@pytest.mark.parametrize("scenario", SPEC["scenarios"], ids=[s["name"] for s in SPEC["scenarios"]])
async def test_tiller_traces_match_pi_agent_core(scenario: dict[str, Any], pi_traces: dict[str, Any]) -> None:
    theirs = pi_traces[scenario["name"]]
    assert "timedOut" not in theirs, f"pi never finished the scenario: {theirs['timedOut']}"
    ours = await run_scenario(scenario, SPEC["tools"])
    differences = [d for key in TRACE_KEYS if (d := first_difference(ours.get(key), theirs.get(key), key))]
    if scenario["name"] in DEPARTURES:
        assert differences, f"listed as a departure but now identical to pi: {DEPARTURES[scenario['name']]}"
        return
    assert not differences, (
        "tiller departs from pi-agent-core 0.58.3:\n  " + "\n  ".join(differences)
        + f"\n\ntiller events: {event_types(ours)}\npi events:     {event_types(theirs)}"
    )
    assert theirs.get("kept") or theirs.get("thrown"), "an empty trace proves nothing"


def test_every_scenario_ran_through_pi(pi_traces: dict[str, Any]) -> None:
    assert sorted(pi_traces) == sorted(s["name"] for s in SPEC["scenarios"])
    assert set(DEPARTURES) <= set(pi_traces)
