"""tiller.agent: the agent loop (pi-agent-core semantics) and the stateful `Agent`."""

from .agent import BUSY_CONTINUE, BUSY_PROMPT, DEFAULT_MODEL, Agent, AgentState
from .loop import (
    AgentEventStream,
    agent_loop,
    agent_loop_continue,
    default_convert_to_llm,
    run_agent_loop,
    run_agent_loop_continue,
)
from .tool_execution import SKIPPED_TEXT
from .types import *  # noqa: F403

__all__ = [
    "BUSY_CONTINUE",
    "BUSY_PROMPT",
    "DEFAULT_MODEL",
    "SKIPPED_TEXT",
    "Agent",
    "AgentEventStream",
    "AgentState",
    "agent_loop",
    "agent_loop_continue",
    "default_convert_to_llm",
    "run_agent_loop",
    "run_agent_loop_continue",
]
