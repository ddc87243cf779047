"""MCP servers as tool sources, through the official MCP SDK's client.

- `config`: where servers are named (config file, `.mcp.json`, the session) and how each is launched;
- `trust`: the user's remembered answers about projects' `.mcp.json` files;
- `transports`, `stderr`: the SDK transport for a server; a process's stderr into the log;
- `connection`: one running server (start, tools, calls, crash and restart); `manager`: the
  connections shared by sessions;
- `tool`: a server's tool as a session's tool; `results`: its result as the model sees it.

`host/mcp_servers.py` puts them into sessions.
"""
