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
FEATURES = ["sessions", "steering", "followUp", "abort", "editorContext", "deltaStreaming", "contextUsage",
            "compaction", "projectInstructions"]

# ask: every change and command needs the user's approval; acceptEdits: file changes go
# through, commands ask; yolo: nothing asks.
ApprovalMode = Literal["ask", "acceptEdits", "yolo"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = get_args(ApprovalMode)

ApprovalOptionId = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
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
    "QueueMode",
    "StreamingBehavior",
    "ToolExecutionMode",
]
