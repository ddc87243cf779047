"""Cutting the client's byte stream into LSP frames, whatever the client sends.

A frame is `Content-Length: N\\r\\n` (other headers allowed and ignored) `\\r\\n` and N bytes.
What the reader promises:

- memory is bounded: a frame larger than `max_frame_bytes` (default 64 MiB) is never held;
  it is reported as `Oversize` (with its first bytes, so the caller can answer its id) and
  skipped;
- nothing outside a frame is fatal: bytes before a header are skipped, a header whose length
  is not a number, or a header block that never ends, is dropped;
- after any of these the reader resynchronises on the next `Content-Length` header, so a bad
  frame never takes the next good one with it. Inside valid JSON the header can never occur
  (JSON strings cannot hold a raw line break, and `Content-Length:` is no JSON token), which is
  what makes scanning for it safe, also through the body of a skipped frame.
- a `Content-Length` that lied is caught either way: a header that shows up inside a body
  ends that body at once (the body is then no JSON and gets -32700), and a body that turns
  out not to be JSON but holds a header later on is handed back with `unread` from that
  header on, so the frame is read again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..stdio import MAX_MESSAGE_BYTES

logger = logging.getLogger("tiller.lsp")

DEFAULT_MAX_FRAME_BYTES = MAX_MESSAGE_BYTES  # 64 MiB, as the ACP front end
MAX_HEADER_BYTES = 8 * 1024  # the whole header block
READ_CHUNK = 64 * 1024
OVERSIZE_PREFIX = 4096  # how much of a skipped frame is kept to find its id

# Where a frame may start: the header's name, case-insensitively, as clients differ.
_HEADER_NAME = re.compile(rb"content-length:", re.IGNORECASE)
# A header that certainly starts a frame: name, a number and a raw line break.
_VALID_HEADER = re.compile(rb"content-length:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
_LENGTH_VALUE = re.compile(rb"[ \t]*(\d{1,20})[ \t]*")
_OTHER_HEADER = re.compile(rb"[!-9;-~]+:[^\r\n]*")  # a token, a colon, a value
_HEADER_END = re.compile(rb"\r?\n\r?\n")


@dataclass(frozen=True)
class Body:
    data: bytes


@dataclass(frozen=True)
class Oversize:
    size: int  # what the header claimed
    prefix: bytes  # the first bytes of the body that had arrived


Frame = Body | Oversize
Read = Callable[[int], Awaitable[bytes]]  # up to n bytes; b"" at the end of the stream


def find_header(data: bytes | bytearray, start: int = 0, end: int | None = None) -> int:
    """Where the next certain frame header starts in `data[start:end]`, or -1."""
    match = _VALID_HEADER.search(data, start, len(data) if end is None else end)
    return match.start() if match else -1


class FrameReader:
    def __init__(self, read: Read, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._read = read
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        self._pos = 0  # bytes before this are consumed
        self._eof = False
        self._skipping = False  # inside the body of an oversize frame
        self.skipped_bytes = 0  # outside any frame, for the logs and the tests

    async def next_frame(self) -> Frame | None:
        """The next frame, or None at the end of the stream."""
        while True:
            if self._skipping and not await self._skip_to_header():
                return None
            start = await self._find_header_name()
            if start is None:
                return None
            self._consume_junk(start)
            end = await self._header_block_end()
            if end is None:
                if self._eof:
                    return None
                self._drop_header("the header block does not end")
                continue
            header_end, body_start = end
            size = _content_length(bytes(self._buffer[self._pos : header_end]))
            if size is None:
                self._drop_header("malformed headers")
                continue
            if size > self.max_frame_bytes:
                self._pos = body_start
                if len(self._buffer) == self._pos:
                    await self._more()  # only what comes at once: the header may lie
                prefix = bytes(self._buffer[self._pos : self._pos + min(size, OVERSIZE_PREFIX)])
                if (next_header := find_header(prefix)) >= 0:
                    prefix = prefix[:next_header]  # the next frame is no part of this one
                self._skipping = True
                return Oversize(size, prefix)
            self._pos = body_start
            body_end = await self._fill_body(size)
            if body_end is None:
                return None  # the stream ended inside the body
            body = bytes(self._buffer[body_start:body_end])
            self._pos = body_end
            self._compact()
            return Body(body)

    def unread(self, data: bytes) -> None:
        """Put `data` back in front of what is still to be read."""
        self._buffer[self._pos : self._pos] = data

    # --- scanning --------------------------------------------------------------------------

    async def _find_header_name(self) -> int | None:
        while True:
            match = _HEADER_NAME.search(self._buffer, self._pos)
            if match is not None:
                return match.start()
            # Keep what could be the start of a header cut by the read.
            self._consume_junk(max(self._pos, len(self._buffer) - len(b"content-length:")))
            if not await self._more():
                return None

    async def _skip_to_header(self) -> bool:
        """Drop bytes (an oversize body) until a certain header; False at the end of stream."""
        while True:
            start = find_header(self._buffer, self._pos)
            if start >= 0:
                self._consume_junk(start, log=False)
                self._skipping = False
                return True
            # A header cut by the read is at most MAX_HEADER_BYTES long; keep that much.
            self._consume_junk(max(self._pos, len(self._buffer) - 64), log=False)
            if not await self._more():
                return False

    async def _header_block_end(self) -> tuple[int, int] | None:
        """(end of the last header line, start of the body) of the block at `_pos`."""
        while True:
            match = _HEADER_END.search(self._buffer, self._pos, self._pos + MAX_HEADER_BYTES)
            if match is not None:
                return match.start(), match.end()
            if len(self._buffer) - self._pos >= MAX_HEADER_BYTES or not await self._more():
                return None

    def _drop_header(self, why: str) -> None:
        """Skip the bad header's name and look for the next header from there."""
        logger.warning("Skipping a frame with %s", why)
        self._consume_junk(self._pos + len(b"content-length:"), log=False)

    def _consume_junk(self, upto: int, *, log: bool = True) -> None:
        if upto <= self._pos:
            return
        junk = bytes(self._buffer[self._pos : upto])
        self._pos = upto
        self._compact()
        if junk.strip():
            self.skipped_bytes += len(junk)
            if log:
                logger.warning("Skipping %d bytes outside any frame", len(junk))

    # --- reading ---------------------------------------------------------------------------

    async def _fill_body(self, size: int) -> int | None:
        """The end of a body of `size` bytes at `_pos` once it has arrived; or, if a frame
        header shows up inside it first (its length lied: no JSON holds one), the header's
        start, so that frame is read now instead of waiting for bytes that may never come."""
        end = self._pos + size
        scanned = self._pos
        while True:
            # A header that starts inside the body may end past it (a length a few bytes too
            # large): look that far, or the next frame's header would be cut in two.
            found = find_header(self._buffer, scanned, min(end + MAX_HEADER_BYTES, len(self._buffer)))
            if 0 <= found < end:
                return found
            if len(self._buffer) >= end:
                return end
            scanned = max(self._pos, len(self._buffer) - 64)  # a header cut by the last read
            if not await self._more(end - len(self._buffer)):
                return None

    async def _more(self, wanted: int = READ_CHUNK) -> bool:
        if self._eof:
            return False
        chunk = await self._read(max(READ_CHUNK, min(wanted, 1 << 20)))
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    def _compact(self) -> None:
        if self._pos > READ_CHUNK and self._pos * 2 > len(self._buffer):
            del self._buffer[: self._pos]
            self._pos = 0


def _content_length(block: bytes) -> int | None:
    """The length a header block declares, or None if the block is not well-formed."""
    lines = block.replace(b"\r\n", b"\n").split(b"\n")
    value = lines[0].partition(b":")[2]
    match = _LENGTH_VALUE.fullmatch(value)
    if match is None:
        return None
    for line in lines[1:]:
        if _HEADER_NAME.match(line) or not _OTHER_HEADER.fullmatch(line):
            return None  # a second length, or a line that is no header
    return int(match.group(1))
