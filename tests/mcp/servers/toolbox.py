"""A small MCP server built with the MCP SDK's `MCPServer`, for tiller's tests.

    python toolbox.py stdio
    python toolbox.py http PORT_FILE      streamable HTTP on 127.0.0.1 (a free port, written to PORT_FILE)
    python toolbox.py sse PORT_FILE       the older HTTP+SSE transport

Tools: echo (read-only), add, count (progress notifications), note (writes a file: not
read-only), getenv (a variable of its environment, as a result or as an error), picture (an
image), document (resources), fail (isError), pid, header (an HTTP request header), crash
(the process dies mid-call), hang (never answers; records that it was cancelled). `TOOLBOX_DIR` is where note, hang and the start-up record write.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from mcp import types

WORK = Path(os.environ.get("TOOLBOX_DIR", "."))
# One transparent pixel.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

server = MCPServer("toolbox", instructions="Tools for tiller's tests.")


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Repeat the text."""
    return f"echo: {text}"


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@server.tool()
async def count(to: int, ctx: Context) -> str:
    """Count to `to`, reporting progress at each step."""
    for step in range(1, to + 1):
        await ctx.report_progress(step, to, f"step {step}")
        await asyncio.sleep(0.05)
    return f"counted to {to}"


@server.tool(annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False))
def note(name: str, text: str) -> str:
    """Write a note file."""
    (WORK / name).write_text(text)
    return f"wrote {name}"


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def getenv(name: str, as_error: bool = False) -> str:
    """A variable of the server's environment."""
    text = f"{name}={os.environ.get(name, '(not set)')}"
    if as_error:
        raise ToolError(text)
    return text


@server.tool()
def picture() -> list[types.TextContent | types.ImageContent]:
    """A picture with a caption."""
    return [types.TextContent(text="a pixel"), types.ImageContent(data=PNG, mime_type="image/png")]


@server.tool()
def document() -> list[types.EmbeddedResource | types.ResourceLink]:
    """A document and a link."""
    return [
        types.EmbeddedResource(resource=types.TextResourceContents(uri="memo://one", mime_type="text/plain",
                                                                   text="the memo's text")),
        types.ResourceLink(name="manual", uri="https://example.com/manual", mime_type="text/html"),
    ]


@server.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ToolError(f"cannot do it: {reason}")


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
def header(name: str, ctx: Context) -> str:
    """An HTTP header of this request."""
    return (ctx.headers or {}).get(name.lower(), "(none)")


@server.tool()
def crash() -> str:
    """The process dies in the middle of the call."""
    print("toolbox: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answers; when the call is cancelled, writes `cancelled` into TOOLBOX_DIR."""
    (WORK / "hanging").write_text("yes")
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        (WORK / "cancelled").write_text("yes")
        raise
    return "woke up"


def serve_http(transport: str, port_file: str) -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    app = server.streamable_http_app() if transport == "http" else server.sse_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    Path(port_file + ".tmp").write_text(str(sock.getsockname()[1]))
    os.replace(port_file + ".tmp", port_file)
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    print(f"toolbox: starting ({sys.argv[1:]})", file=sys.stderr, flush=True)
    (WORK / f"started-{os.getpid()}").write_text("yes")
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        serve_http(sys.argv[1], sys.argv[2])
