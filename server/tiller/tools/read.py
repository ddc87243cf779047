"""read `{path, offset?, limit?}`: a text file with pi's paging notices, or an image."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from ..agent.types import AgentTool, AgentToolResult, OnUpdate
from ..ai.abort import AbortSignal
from ..ai.types import ImageContent, TextContent
from .aborts import raise_if_aborted
from .documents import editor_text
from .ports import OpenDocument
from .results import text_result
from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_head, utf8_len
from .workspace import Workspace

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
        if text is None:
            data = await asyncio.to_thread(path.read_bytes)  # its OSError text is the message
            raise_if_aborted(cancel)
            mime = image_mime_type(data)
            if mime is not None:
                # Sent as is: pi shrinks images to 2000x2000 first, we leave sizing to the
                # provider (no imaging dependency on the server).
                encoded = base64.b64encode(data).decode("ascii")
                return AgentToolResult(
                    content=[TextContent(text=f"Read image file [{mime}]"), ImageContent(data=encoded, mime_type=mime)]
                )
            text = data.decode("utf-8", "replace")
        return page_text(text, display, args.get("offset"), args.get("limit"))


def page_text(text: str, path: str, offset: int | None, limit: int | None) -> AgentToolResult:
    """The requested lines, cut at pi's limits, with the notice that says how to go on."""
    lines = text.split("\n")
    total = len(lines)
    start = max(0, offset - 1) if offset else 0
    if start >= total:
        raise ValueError(f"Offset {offset} is beyond end of file ({total} lines total)")
    end = total if limit is None else min(start + max(0, limit), total)
    truncation = truncate_head("\n".join(lines[start:end]))
    first = start + 1
    if truncation.first_line_exceeds_limit:
        size, limit_text = format_size(utf8_len(lines[start])), format_size(DEFAULT_MAX_BYTES)
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
