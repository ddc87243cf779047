"""An MCP server (the SDK's low-level `Server`) that gets things wrong, for tiller's tests:
`bad_schema` has an input schema that is not valid JSON Schema, `garbage` answers with
structured content its own output schema refuses; `ping` works."""

from __future__ import annotations

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from mcp import types

TOOLS = [
    types.Tool(name="ping", description="Answers pong.", input_schema={"type": "object", "properties": {}}),
    types.Tool(name="bad_schema", description="Its schema is broken.",
               input_schema={"type": "object", "properties": {"n": {"type": "bogus"}}}),
    types.Tool(name="garbage", description="Answers nonsense.", input_schema={"type": "object", "properties": {}},
               output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
]


async def list_tools(ctx: object, params: object) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "garbage":
        return types.CallToolResult(content=[], structured_content={"n": "not a number"})
    return types.CallToolResult(content=[types.TextContent(text="pong")])


server = Server("broken", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
