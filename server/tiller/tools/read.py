"""read `{path, offset?, limit?}`: a text file with pi's paging notices, or an image."""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from ..agent.types import AgentTool, AgentToolResult, OnUpdate
from ..ai.abort import AbortSignal
from ..ai.types import ImageContent, TextContent
from .aborts import ToolAborted, raise_if_aborted
from .documents import editor_text
from .files import OpenFile, open_regular
from .ports import OpenDocument
from .results import text_result
from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_head, utf8_len
from .workspace import Workspace

# Files up to this size are read whole; larger ones are streamed (see read_file).
STREAM_ABOVE = 8 * 1024 * 1024
MAX_IMAGE_BYTES = 20 * 1024 * 1024

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime_type(data: bytes) -> str | None:
    """The MIME type of a supported image, judged by content, never by extension."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


class ReadTool(AgentTool):
    name = "read"
    read_only = True
    label = "read"
    description = (
        "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are "
        f"sent as attachments. For text files, output is truncated to {DEFAULT_MAX_LINES} lines or "
        f"{DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). Use offset/limit for large files. "
        "When you need the full file, continue with offset until complete."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
            "offset": {"type": "integer", "description": "Line number to start reading from (1-indexed)"},
            "limit": {"type": "integer", "description": "Maximum number of lines to read"},
        },
        "required": ["path"],
    }

    def __init__(self, workspace: Workspace, *, open_document: OpenDocument | None = None) -> None:
        self.workspace = workspace
        self.open_document = open_document

    async def execute(
        self, tool_call_id: str, args: dict[str, Any], cancel: AbortSignal, on_update: OnUpdate
    ) -> AgentToolResult:
        raise_if_aborted(cancel)
        display = args["path"]
        path = self.workspace.resolve(display)
        text = await editor_text(path, self.open_document)
        if text is not None:
            return page_text(text, display, args.get("offset"), args.get("limit"))
        # Off the event loop: a large file takes a while, and other sessions go on meanwhile.
        result = await asyncio.to_thread(read_file, path, display, args.get("offset"), args.get("limit"),
                                         lambda: cancel.aborted)
        raise_if_aborted(cancel)
        return result


def read_file(
    path: Path, display: str, offset: int | None, limit: int | None, aborted: Callable[[], bool]
) -> AgentToolResult:
    """A regular file's requested page (or the image it holds). Blocks: run it in a thread.

    Up to STREAM_ABOVE bytes the file is read whole and paged exactly as pi pages it; a
    larger one is streamed: only the requested lines are decoded and kept (at most pi's
    output limits), the rest is counted, never held. Its truncation details then describe
    the page read, not the whole file.
    """
    with open_regular(path, display) as file:
        head = os.pread(file.fd, 16, 0)
        mime = image_mime_type(head)
        if mime is not None:
            # Sent as is: pi shrinks images to 2000x2000 first, we leave sizing to the
            # provider (no imaging dependency on the server).
            data = _read_capped(file, display, MAX_IMAGE_BYTES, "an image")
            encoded = base64.b64encode(data).decode("ascii")
            return AgentToolResult(
                content=[TextContent(text=f"Read image file [{mime}]"), ImageContent(data=encoded, mime_type=mime)]
            )
        if file.size <= STREAM_ABOVE:
            text = _read_capped(file, display, STREAM_ABOVE * 2, "a file read whole").decode("utf-8", "replace")
            return page_text(text, display, offset, limit)
        return _page_stream(file.fd, display, offset, limit, aborted)


def _read_capped(file: OpenFile, display: str, limit: int, what: str) -> bytes:
    try:
        return file.read(limit)
    except ValueError:
        raise ValueError(f"{display} is too large for {what} (the limit is {format_size(limit)})") from None


def _page_stream(fd: int, display: str, offset: int | None, limit: int | None,
                 aborted: Callable[[], bool]) -> AgentToolResult:
    stream = os.fdopen(os.dup(fd), "rb")
    with stream:
        start = max(0, offset - 1) if offset else 0
        newlines = _skip_lines(stream, start, aborted)
        if newlines < start:
            raise ValueError(f"Offset {offset} is beyond end of file ({newlines + 1} lines total)")
        wanted = DEFAULT_MAX_LINES + 1 if limit is None else min(max(0, limit), DEFAULT_MAX_LINES + 1)
        window: list[str] = []
        first_line_bytes, used, ended = 0, 0, True
        while ended and len(window) < max(wanted, 1) and used <= DEFAULT_MAX_BYTES:
            line, size, ended = _read_line(stream, DEFAULT_MAX_BYTES + 1)
            if not window:
                first_line_bytes = size
            window.append(line.decode("utf-8", "replace"))
            used += size + 1
            newlines += ended
        if ended:  # more lines follow: count them without keeping them
            while chunk := stream.read(1 << 20):
                if aborted():
                    raise ToolAborted()
                newlines += chunk.count(b"\n")
    return page_lines(window, start, newlines + 1, display, offset, limit, first_line_bytes)


def _skip_lines(stream: BinaryIO, count: int, aborted: Callable[[], bool]) -> int:
    """Move `stream` to the start of line `count` (0-based); the newlines passed."""
    passed, position = 0, 0
    while passed < count:
        if aborted():
            raise ToolAborted()
        chunk = stream.read(1 << 20)
        if not chunk:
            break
        here = chunk.count(b"\n")
        if passed + here >= count:
            index = -1
            for _ in range(count - passed):
                index = chunk.index(b"\n", index + 1)
            stream.seek(position + index + 1)
            return count
        passed += here
        position += len(chunk)
    return passed


def _read_line(stream: BinaryIO, cap: int) -> tuple[bytes, int, bool]:
    """The next line without its newline (at most `cap` bytes of it kept), its full size, and
    whether a newline ended it (else the stream did)."""
    kept = bytearray()
    size = 0
    while piece := stream.readline(1 << 20):
        ended = piece.endswith(b"\n")
        content = piece[:-1] if ended else piece
        size += len(content)
        if len(kept) < cap:
            kept += content[: cap - len(kept)]
        if ended:
            return bytes(kept), size, True
    return bytes(kept), size, False


def page_text(text: str, path: str, offset: int | None, limit: int | None) -> AgentToolResult:
    """The requested lines, cut at pi's limits, with the notice that says how to go on."""
    lines = text.split("\n")
    return page_lines(lines, 0, len(lines), path, offset, limit)


def page_lines(
    window: list[str], window_start: int, total: int, path: str, offset: int | None, limit: int | None,
    first_line_bytes: int | None = None,
) -> AgentToolResult:
    """`page_text` over the lines `window` (line `window_start` onwards, at least as many as
    pi's limits can show) of a text of `total` lines."""
    start = max(0, offset - 1) if offset else 0
    if start >= total:
        raise ValueError(f"Offset {offset} is beyond end of file ({total} lines total)")
    end = total if limit is None else min(start + max(0, limit), total)
    selected = window[start - window_start : end - window_start]
    truncation = truncate_head("\n".join(selected))
    first = start + 1
    if truncation.first_line_exceeds_limit:
        first_size = first_line_bytes if first_line_bytes is not None else utf8_len(selected[0])
        size, limit_text = format_size(first_size), format_size(DEFAULT_MAX_BYTES)
        command = f"sed -n '{first}p' {path} | head -c {DEFAULT_MAX_BYTES}"
        notice = f"[Line {first} is {size}, exceeds {limit_text} limit. Use bash: {command}]"
        return text_result(notice, {"truncation": truncation.as_details()})
    if truncation.truncated:
        last = first + truncation.output_lines - 1
        limit_note = "" if truncation.truncated_by == "lines" else f" ({format_size(DEFAULT_MAX_BYTES)} limit)"
        notice = f"[Showing lines {first}-{last} of {total}{limit_note}. Use offset={last + 1} to continue.]"
        return text_result(f"{truncation.content}\n\n{notice}", {"truncation": truncation.as_details()})
    if end < total:
        notice = f"[{total - end} more lines in file. Use offset={end + 1} to continue.]"
        return text_result(f"{truncation.content}\n\n{notice}")
    return text_result(truncation.content)
