// agent/listTools as quick pick items: each MCP server (its state, and why it failed) followed
// by its tools, then the built-in tools. No `vscode` import: pure, tested in plain Node.
import type { ListToolsResult } from "./protocol/types";

export interface ToolItem {
  label: string;
  description?: string;
  detail?: string;
}

export function toolItems(listed: ListToolsResult): ToolItem[] {
  const items: ToolItem[] = [];
  for (const server of listed.mcpServers) {
    // The server's own row heads its tools; a failed server's message says what went wrong.
    items.push({
      label: `$(${server.state === "failed" ? "error" : server.state === "ready" ? "pass" : "sync"}) ${server.name}: ${server.state}`,
      description: `MCP server (${server.transport}, ${server.source}) · ${server.tools.length} tool${server.tools.length === 1 ? "" : "s"}`,
      detail: server.message ?? undefined,
    });
    for (const tool of server.tools) {
      items.push({
        label: tool.name,
        description: [`${server.name} tool`, tool.title, tool.readOnly ? "read-only" : ""].filter(Boolean).join(" · "),
        detail: tool.description,
      });
    }
  }
  for (const tool of listed.tools.filter((t) => !t.server)) {
    items.push({ label: tool.name, description: tool.readOnly ? "built-in · read-only" : "built-in", detail: tool.description });
  }
  return items;
}
