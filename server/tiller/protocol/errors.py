"""The error codes of the agent protocol (JSON-RPC reserves -32000..-32099 for servers)."""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SESSION_NOT_FOUND = -32001
    SESSION_BUSY = -32002
    MODEL_NOT_FOUND = -32003
    APPROVAL_NOT_FOUND = -32004
    SESSION_UNREADABLE = -32005
    CHECKPOINT_NOT_FOUND = -32006
    REWIND_CONFLICT = -32007
    COMPACTION_FAILED = -32008
    REQUEST_CANCELLED = -32800


# What each code means to a client (protocol.md's error table; the TypeScript client's
# constants are generated from the schema, which carries these).
ERROR_MEANINGS: dict[ErrorCode, str] = {
    ErrorCode.PARSE_ERROR: "The message is not valid JSON",
    ErrorCode.INVALID_REQUEST: "The message is not a valid JSON-RPC request",
    ErrorCode.METHOD_NOT_FOUND: "No such method",
    ErrorCode.INVALID_PARAMS: "Invalid params: a field is missing, has the wrong type or an unknown value",
    ErrorCode.INTERNAL_ERROR: "A bug in the server; the message says what failed",
    ErrorCode.SESSION_NOT_FOUND: "No session with that id in this server",
    ErrorCode.SESSION_BUSY: "The session is running; use streamingBehavior, agent/steer or agent/followUp",
    ErrorCode.MODEL_NOT_FOUND: "The model reference is malformed or unknown",
    ErrorCode.APPROVAL_NOT_FOUND: "No pending approval with that id (answered, cancelled, or never asked)",
    ErrorCode.SESSION_UNREADABLE: "The session's saved file cannot be loaded (the message says why)",
    ErrorCode.CHECKPOINT_NOT_FOUND: "No checkpoint with that id in this session",
    ErrorCode.REWIND_CONFLICT: "Restoring would lose changes made since the agent's last turn; pass force to restore anyway",
    ErrorCode.COMPACTION_FAILED: "The compaction (or its undo) could not be done; the session is unchanged",
    ErrorCode.REQUEST_CANCELLED: "The request was cancelled with $/cancelRequest",
}
