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
FEATURES = ["sessions", "steering", "followUp", "abort", "editorContext", "deltaStreaming", "commandRules", "planMode",
            "checkpoints", "contextUsage", "compaction", "projectInstructions"]

# ask: every change and command needs the user's approval; acceptEdits: file changes go
# through, commands ask; yolo: nothing asks; plan: nothing changes (read-only tools and
# read-only commands run, edits and writes are refused; see host/plan_mode.py).
ApprovalMode = Literal["ask", "acceptEdits", "yolo", "plan"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = get_args(ApprovalMode)
# How much each mode lets happen without the user: plan ranks with ask, since leaving plan
# mode only brings the questions back.
APPROVAL_WIDTH: dict[ApprovalMode, int] = {"plan": 0, "ask": 0, "acceptEdits": 1, "yolo": 2}

# What an approval option does, in ACP's four kinds (clients pick icons and keys by it).
ApprovalOptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
# allow_always_project / allow_always_user save the command rule the option shows to the
# project's or the user's settings instead of the session; allow_server (an MCP tool call):
# every tool of that server runs without asking for the rest of the session.
ApprovalOptionId = Literal[
    "allow_once", "allow_always", "allow_server", "reject_once", "reject_always", "allow_always_project",
    "allow_always_user",
]
APPROVAL_OPTION_IDS: tuple[ApprovalOptionId, ...] = get_args(ApprovalOptionId)

# Where a command rule is kept: this session only, the project's .tiller/settings.json, or
# the user's settings.json.
RuleScope = Literal["session", "project", "user"]

# What agent/rewind restores: the files, the conversation, or both.
RestoreWhat = Literal["files", "conversation", "both"]

StreamingBehavior = Literal["steer", "followUp"]

__all__ = [
            "APPROVAL_MODES",
            "APPROVAL_OPTION_IDS",
            "APPROVAL_WIDTH",
            "FEATURES",
            "PROTOCOL_VERSION",
            "ApprovalKind",
            "ApprovalMode",
            "ApprovalOptionId",
            "ApprovalOptionKind",
            "QueueMode",
            "RestoreWhat",
            "RuleScope",
            "StreamingBehavior",
            "ToolExecutionMode",
]
