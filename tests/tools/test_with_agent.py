"""The tools inside a real agent run (faux provider): argument validation, streamed bash
updates through the loop, results the model sees, and abort reaching a running command."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anyio

from tiller.agent import Agent
from tiller.ai.providers.faux import FauxProvider, faux_message, faux_tool_call
from tiller.tools import create_coding_tools

from .helpers import text


def agent_for(faux: FauxProvider, project: Path) -> Agent:
    agent = Agent(stream_fn=faux.stream)
    agent.set_model(faux.model())
    agent.set_tools(list(create_coding_tools(project).values()))
    return agent


async def test_a_session_writes_edits_reads_and_runs(project: Path):
    faux = FauxProvider()
    faux.set_responses(
        [
            faux_message([faux_tool_call("write", {"path": "hello.py", "content": "print('hi')\n"})]),
            faux_message([faux_tool_call("edit", {"path": "hello.py", "oldText": "hi", "newText": "bye"})]),
            faux_message([faux_tool_call("read", {"path": "hello.py", "limit": "5"})]),  # "5": coerced
            faux_message([faux_tool_call("bash", {"command": "python3 hello.py; sleep 0.3; echo done"})]),
            faux_message([faux_tool_call("bash", {"command": "exit 4"})]),
            faux_message("all done"),
        ]
    )
    agent = agent_for(faux, project)
    events: list = []
    agent.subscribe(events.append)
    await agent.prompt("go")
    results = [m for m in agent.state.messages if m.role == "toolResult"]
    assert [text(r) for r in results] == [
        "Successfully wrote 12 bytes to hello.py",
        "Successfully replaced text in hello.py.",
        "print('bye')\n",
        "bye\ndone\n",
        "(no output)\n\nCommand exited with code 4",
    ]
    assert [r.is_error for r in results] == [False, False, False, False, True]
    assert "+print('bye')" in results[1].details["diff"]
    updates = [text(e.partial_result) for e in events if e.type == "tool_execution_update"]
    assert "bye\n" in updates and "bye\ndone\n" in updates


async def test_abort_kills_a_running_command(project: Path):
    faux = FauxProvider()
    faux.set_responses([faux_message([faux_tool_call("bash", {"command": "echo started; sleep 300"})]), faux_message("x")])
    agent = agent_for(faux, project)
    events: list = []
    agent.subscribe(events.append)
    task = asyncio.create_task(agent.prompt("go"))
    with anyio.fail_after(5):
        while not any(e.type == "tool_execution_update" and text(e.partial_result) for e in events):
            await asyncio.sleep(0.01)
    agent.abort()
    with anyio.fail_after(5):
        await task
    result = next(m for m in agent.state.messages if m.role == "toolResult")
    assert result.is_error and text(result) == "started\n\n\nCommand aborted"
