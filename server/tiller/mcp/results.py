"""An MCP tool result as the model sees it.

Text stays text and images stay images. What a model cannot take in becomes a line that
says what it was: a resource link names its URI, an embedded text resource is given with
its URI, a binary one (an image excepted) and audio are described, not inlined. A result
with only `structuredContent` shows it as JSON. Text is capped like the built-in tools'
output (50 KB); `details` keep the server, the tool and the structured content.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from mcp import types as mcp_types

from ..agent.types import AgentToolResult
from ..ai.types import ImageContent, TextContent
from ..tools.truncate import DEFAULT_MAX_BYTES, append_notices, format_size, truncate_head

Block = TextContent | ImageContent


def tool_result(result: mcp_types.CallToolResult, server: str, tool: str) -> AgentToolResult:
    blocks: list[Block] = [block for item in result.content for block in _blocks(item)]
    if not blocks and result.structured_content is not None:
        blocks.append(TextContent(text=json.dumps(result.structured_content, ensure_ascii=False, indent=2)))
    details: dict[str, Any] = {"server": server, "tool": tool}
    if result.structured_content is not None:
        details["structuredContent"] = result.structured_content
    capped = [_capped(block) for block in blocks] or [TextContent(text="(no output)")]
    return AgentToolResult(content=capped, details=details)


def result_text(result: AgentToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def _blocks(item: Any) -> list[Block]:
    if isinstance(item, mcp_types.TextContent):
        return [TextContent(text=item.text)]
    if isinstance(item, mcp_types.ImageContent):
        return [_image(item.data, item.mime_type, "an image")]
    if isinstance(item, mcp_types.AudioContent):
        return [TextContent(text=f"[audio ({item.mime_type}, {format_size(_decoded_size(item.data))}): not shown]")]
    if isinstance(item, mcp_types.ResourceLink):
        about = f" ({item.mime_type})" if item.mime_type else ""
        described = f": {item.description}" if item.description else ""
        return [TextContent(text=f"[resource {item.name} <{item.uri}>{about}{described}]")]
    if isinstance(item, mcp_types.EmbeddedResource):
        resource = item.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return [TextContent(text=f"[resource <{resource.uri}>]\n{resource.text}")]
        mime = resource.mime_type or "application/octet-stream"
        if mime.startswith("image/"):
            return [_image(resource.blob, mime, f"the image <{resource.uri}>")]
        return [TextContent(text=f"[binary resource <{resource.uri}> ({mime}, "
                                 f"{format_size(_decoded_size(resource.blob))}): not shown]")]
    return [TextContent(text=f"[content of type {getattr(item, 'type', '?')!r}: not shown]")]


def _image(data: str, mime: str, what: str) -> Block:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return TextContent(text=f"[{what} ({mime}) the server sent is not valid base64: not shown]")
    return ImageContent(data=data, mime_type=mime)


def _decoded_size(data: str) -> int:
    return len(data) * 3 // 4


def _capped(block: Block) -> Block:
    if not isinstance(block, TextContent):
        return block
    truncation = truncate_head(block.text)
    if not truncation.truncated:
        return block
    notice = (f"Showing {truncation.output_lines} of {truncation.total_lines} lines "
              f"({format_size(DEFAULT_MAX_BYTES)} limit)")
    return TextContent(text=append_notices(truncation.content, [notice]))
