"""Keeping stdin and stdout for the protocol, whichever front end speaks it."""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

# The largest message either front end reads (an LSP frame, an ACP line); a larger one is
# answered with an error and skipped, never read into memory.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


def take_over_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Keep the protocol on private copies of file descriptors 0 and 1, then point fd 1 at
    stderr and fd 0 at /dev/null. Replacing `sys.stdout` alone only catches Python's print():
    a native library, or a child process a tool starts (it inherits fds 0-2), would write
    into the protocol stream or read the client's messages."""
    sys.stdout.flush()
    protocol_in = os.fdopen(os.dup(0), "rb")  # os.dup: not inherited by child processes
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(sys.stderr.fileno(), 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    return protocol_in, protocol_out
