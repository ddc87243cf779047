"""The protocol's enumerations, each declared once.

Where the agent core or the tools already name a set of values (queue modes, approval
kinds), the protocol uses theirs rather than a copy.
"""

from __future__ import annotations

from typing import Literal, get_args

from ..agent.agent import QueueMode
from ..agent.types import ToolExecutionMode
from ..tools.ports import ApprovalKind

PROTOCOL_VERSION = 1

# What the server advertises under `capabilities.experimental.tiller.features`.
FEATURES = ["sessions", "steering", "followUp", "abort", "editorContext", "deltaStreaming"]

# ask: every change and command needs the user's approval; acceptEdits: file changes go
# through, commands ask; yolo: nothing asks.
ApprovalMode = Literal["ask", "acceptEdits", "yolo"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = get_args(ApprovalMode)

# What an answer does, as ACP's permission option kinds say it.
ApprovalOptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
# The answers: one per kind, and allow_server (an MCP tool call: every tool of that server
# runs without asking for the rest of the session).
ApprovalOptionId = Literal["allow_once", "allow_always", "allow_server", "reject_once", "reject_always"]
APPROVAL_OPTION_IDS: tuple[ApprovalOptionId, ...] = get_args(ApprovalOptionId)

StreamingBehavior = Literal["steer", "followUp"]

__all__ = [
    "APPROVAL_MODES",
    "APPROVAL_OPTION_IDS",
    "FEATURES",
    "PROTOCOL_VERSION",
    "ApprovalKind",
    "ApprovalMode",
    "ApprovalOptionId",
    "ApprovalOptionKind",
    "QueueMode",
    "StreamingBehavior",
    "ToolExecutionMode",
]
