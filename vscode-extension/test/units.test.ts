// Pure parts: the unified-diff applier (against diffs made by the server's own diff code),
// the lenient JSON preview, server command resolution, and the reducer's delta handling.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";

import { applyUnifiedDiff, DiffApplyError, isNewFileDiff } from "../src/diff";
import { TillerClient, type RpcConnection } from "../src/protocol/client";
import { parsePartialJson } from "../src/protocol/partialJson";
import { applyEvent, emptyView, viewFromState, zeroUsage } from "../src/protocol/reducer";
import { SessionSync } from "../src/protocol/sync";
import type { AgentEventParams, SessionState } from "../src/protocol/types";
import { describeCommand, resolveServerCommand, splitCommand, startFailureMessage, which } from "../src/serverCommand";

function seeded(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

test("the diff applier reproduces the server's edits (diffs made by tiller.tools.diff)", () => {
  const random = seeded(42);
  const words = ["alpha", "beta", "", "gamma", "    indented", "x = 1", "}", "# comment", "tab\there", "ünïcødé ✓"];
  const text = (n: number, eol: boolean) => {
    const lines = Array.from({ length: n }, () => words[Math.floor(random() * words.length)]);
    return lines.join("\n") + (eol && n ? "\n" : "");
  };
  const mutate = (old: string) => {
    const lines = old.split("\n");
    for (let k = 0; k < 1 + Math.floor(random() * 4); k++) {
      const at = Math.floor(random() * (lines.length + 1));
      const r = random();
      if (r < 0.33) lines.splice(at, 1);
      else if (r < 0.66) lines.splice(at, 0, words[Math.floor(random() * words.length)]);
      else lines[at] = `changed ${k}`;
    }
    let out = lines.join("\n");
    if (random() < 0.2) out = out.replace(/\n$/, "");
    else if (random() < 0.2 && !out.endsWith("\n")) out += "\n";
    return out;
  };
  const cases: [string | null, string][] = [
    [null, "new\nfile\n"],
    [null, "no final newline"],
    ["a\nb\n", ""],
    ["a\nb", "a\nb\nc"],
    ["a\nb\n", "a\nB"],
    ["\ufeffbom\nline\n", "\ufeffbom\nLINE\n"],
  ];
  for (let i = 0; i < 60; i++) {
    const old = text(Math.floor(random() * 30), random() < 0.8);
    cases.push([old, mutate(old)]);
  }
  const python = process.env.TILLER_PYTHON || "python3";
  const made = spawnSync(
    python,
    ["-c", "import json,sys\nfrom tiller.tools.diff import unified_diff\nprint(json.dumps([unified_diff(o, n, 'f.txt') for o, n in json.load(sys.stdin)]))"],
    { input: JSON.stringify(cases), encoding: "utf8" },
  );
  assert.equal(made.status, 0, made.stderr);
  const diffs = JSON.parse(made.stdout) as string[];
  cases.forEach(([old, next], i) => {
    if (!diffs[i]) return; // identical
    const display = (s: string) => s.replace(/^\ufeff/, "");
    assert.equal(isNewFileDiff(diffs[i]), old === null);
    // The server diffs the text without its BOM; the applier keeps the original's BOM.
    const expected = old?.startsWith("\ufeff") ? "\ufeff" + display(next) : next;
    assert.equal(applyUnifiedDiff(old ?? "", diffs[i]), expected, `case ${i}: ${JSON.stringify([old, next])}\n${diffs[i]}`);
  });
  // CRLF files stay CRLF (the server diffs with LF endings).
  assert.equal(applyUnifiedDiff("a\r\nb\r\n", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n"), "a\r\nB\r\n");
  assert.throws(() => applyUnifiedDiff("other\n", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-b\n+B\n"), DiffApplyError);
});

test("partial JSON of a streaming tool call parses as far as it goes", () => {
  assert.deepEqual(parsePartialJson('{"path": "a.py", "content": "def f'), { path: "a.py", content: "def f" });
  assert.deepEqual(parsePartialJson('{"path": "a.py", "con'), { path: "a.py" });
  assert.deepEqual(parsePartialJson('{"edits": [{"oldText": "x", "newText": "y"}, {"old'), { edits: [{ oldText: "x", newText: "y" }, {}] });
  assert.deepEqual(parsePartialJson('{"n": 12, "flag": tr'), { n: 12 });
  assert.deepEqual(parsePartialJson('{"s": "a\\'), { s: "a" });
  assert.deepEqual(parsePartialJson('{"a": 1}'), { a: 1 });
  assert.equal(parsePartialJson(""), undefined);
});

test("the reducer turns a failed MCP server into the panel's warning line, and ignores the other states", () => {
  const view = emptyView("s");
  const server = { name: "db", source: "config", transport: "stdio", tools: [] };
  applyEvent(view, { type: "mcp_server_state", server: { ...server, state: "starting" } } as never);
  applyEvent(view, { type: "mcp_server_state", server: { ...server, state: "ready" } } as never);
  assert.deepEqual(view.warnings, []);
  applyEvent(view, { type: "mcp_server_state", server: { ...server, state: "failed", message: "exited with status 1" } } as never);
  assert.deepEqual(view.warnings, ["MCP server db failed: exited with status 1"]);
});

test("the reducer rebuilds interleaved blocks by contentIndex, as protocol.md 3.1 says", () => {
  const view = emptyView("s");
  const update = (assistantMessageEvent: object) =>
    applyEvent(view, { type: "message_update", assistantMessageEvent } as never);
  // message_start's message is a whole AssistantMessage (the server's partial: no content yet).
  const start = { role: "assistant", api: "x", provider: "x", model: "m", content: [], stopReason: "stop", timestamp: 1, usage: zeroUsage() } as const;
  applyEvent(view, { type: "message_start", message: { ...start, content: [] } });
  update({ type: "thinking_start", contentIndex: 0 });
  update({ type: "toolcall_start", contentIndex: 2, id: "c2", toolName: "read" });
  update({ type: "text_start", contentIndex: 1 });
  update({ type: "thinking_delta", contentIndex: 0, delta: "hm" });
  update({ type: "toolcall_delta", contentIndex: 2, delta: '{"path": "a' });
  update({ type: "text_delta", contentIndex: 1, delta: "Hel" });
  update({ type: "text_delta", contentIndex: 1, delta: "lo" });
  update({ type: "toolcall_delta", contentIndex: 2, delta: '.py"}' });
  assert.deepEqual(view.streamMessage!.content, [
    { type: "thinking", thinking: "hm" },
    { type: "text", text: "Hello" },
    { type: "toolCall", id: "c2", name: "read", arguments: { path: "a.py" } },
  ]);
  update({ type: "toolcall_end", contentIndex: 2, toolCall: { type: "toolCall", id: "c2", name: "read", arguments: { path: "a.py" } } });
  applyEvent(view, { type: "message_end", message: { ...start, content: [], stopReason: "toolUse" } });
  assert.equal(view.streamMessage, null);
  assert.equal(view.messages.length, 1);
  // Unknown event types are ignored (a newer server).
  applyEvent(view, { type: "something_new" } as never);
});

test("deltas without a message_start seen: a partial message until message_end brings the whole one", () => {
  const view = emptyView("s", "m");
  applyEvent(view, { type: "message_update", assistantMessageEvent: { type: "text_start", contentIndex: 0 } });
  applyEvent(view, { type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "Hi" } });
  assert.deepEqual(view.streamMessage, { role: "assistant", api: "", provider: "", model: "m", content: [{ type: "text", text: "Hi" }] });
  const final = {
    role: "assistant",
    api: "x",
    provider: "x",
    model: "m",
    content: [{ type: "text", text: "Hi" }],
    stopReason: "stop",
    timestamp: 1,
    usage: zeroUsage(),
  } as const;
  applyEvent(view, { type: "message_end", message: { ...final, content: [...final.content] } });
  assert.equal(view.streamMessage, null);
  assert.deepEqual(view.messages, [final]);
});

test("a view rebuilt from agent/getState keeps the answered approvals' outcomes", () => {
  // The state of a new session as the real server sent it (test/fixtures), with outcomes.
  const recorded = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "test", "fixtures", "session-events.json"), "utf8"));
  const state: SessionState = {
    ...recorded.initialState,
    resolvedApprovals: [
      { type: "approval_resolved", approvalId: "a1", toolCallId: "call_1", outcome: "selected", optionId: "reject_once" },
      { type: "approval_resolved", approvalId: "a2", toolCallId: "call_2", outcome: "cancelled" },
      { type: "approval_resolved", approvalId: "a3", toolCallId: "call_3", outcome: "selected", optionId: "allow_always" },
    ],
  };
  assert.deepEqual(viewFromState(state).approvalOutcomes, { call_1: "reject_once", call_2: "cancelled", call_3: "allow_always" });
  // An older server leaves the list out: no badges, and no error.
  const older: Partial<SessionState> = { ...state };
  delete older.resolvedApprovals;
  assert.deepEqual(viewFromState(older as SessionState).approvalOutcomes, {});
});

test("the server command: the setting, else tiller on PATH, else python -m tiller", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "tiller-path-"));
  try {
    const bin = path.join(dir, "bin");
    mkdirSync(bin);
    const empty = { PATH: path.join(dir, "nothing"), platform: "linux" as const, workspaceFolder: "/ws" };
    assert.deepEqual(resolveServerCommand({}, empty), { command: "python3", args: ["-m", "tiller", "serve"], source: "python" });
    assert.deepEqual(resolveServerCommand({ pythonPath: "${workspaceFolder}/.venv/bin/python" }, empty), {
      command: "/ws/.venv/bin/python",
      args: ["-m", "tiller", "serve"],
      source: "python",
    });
    assert.equal(resolveServerCommand({}, { ...empty, platform: "win32" }).command, "python");

    writeFileSync(path.join(bin, "tiller"), "#!/bin/sh\n");
    chmodSync(path.join(bin, "tiller"), 0o755);
    const withTiller = { ...empty, PATH: `${path.join(dir, "nothing")}:${bin}` };
    assert.equal(which("tiller", withTiller), path.join(bin, "tiller"));
    assert.deepEqual(resolveServerCommand({ pythonPath: "/usr/bin/python3" }, withTiller), {
      command: path.join(bin, "tiller"),
      args: ["serve"],
      source: "path",
    });
    assert.deepEqual(resolveServerCommand({ serverCommand: ["uvx", "tiller"] }, withTiller), { command: "uvx", args: ["tiller", "serve"], source: "setting" });
    assert.deepEqual(resolveServerCommand({ serverCommand: '"/opt/my tools/tiller" --log-level DEBUG' }, withTiller).args, [
      "--log-level",
      "DEBUG",
      "serve",
    ]);
    assert.deepEqual(splitCommand('"/opt/my tools/tiller" x'), ["/opt/my tools/tiller", "x"]);
    const python = resolveServerCommand({}, empty);
    assert.equal(describeCommand(python), "python3 -m tiller serve");
    assert.equal(
      startFailureMessage(python, "No module named tiller"),
      "tiller: could not start the server (`python3 -m tiller serve`): No module named tiller. Install tiller (`uv tool install <your tiller checkout>` puts `tiller` on PATH), set tiller.serverCommand, or pick a tiller.pythonPath that has tiller.",
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the manifest contributes exactly the commands the extension registers, and documents its settings", () => {
  const root = path.resolve(__dirname, "..", "..");
  const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
  const source = readFileSync(path.join(root, "src", "extension.ts"), "utf8");
  const registered = [...source.matchAll(/registerCommand\(\s*"([^"]+)"/g)].map((m) => m[1]).sort();
  const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
  assert.deepEqual(registered, contributed);
  const menus = Object.values(manifest.contributes.menus as Record<string, { command: string }[]>).flat();
  for (const item of menus) assert.ok(contributed.includes(item.command), item.command);
  assert.deepEqual(manifest.contributes.views.tiller.map((v: { id: string; type: string }) => [v.id, v.type]), [["tiller.chat", "webview"]]);
  assert.equal(manifest.contributes.viewsContainers.activitybar[0].id, "tiller");
  assert.equal(manifest.main, "./dist/extension.js");
  // Server paths from User settings apply in remote windows (code-server, SSH, WSL, containers),
  // and a workspace in Restricted Mode cannot pick the command that runs.
  const settings = manifest.contributes.configuration.properties;
  for (const key of ["tiller.serverCommand", "tiller.pythonPath"]) {
    assert.equal(settings[key].scope, "window", key);
    assert.ok(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations.includes(key), key);
  }
  // vscode-languageclient traces only at the output channel's Trace log level: the setting says so.
  assert.match(settings["tiller.trace.server"].markdownDescription, /log level is \*\*Trace\*\*/);
  // @types/vscode is pinned to the oldest VS Code the extension claims to support.
  assert.equal(manifest.devDependencies["@types/vscode"], `~${manifest.engines.vscode.replace("^", "")}`);
});

test("SessionSync: events during getState wait for it; a failed getState is reported and retried later", async () => {
  let handler: ((params: AgentEventParams) => void) | null = null;
  let answer: (state: unknown) => void = () => undefined;
  let fail = false;
  const connection: RpcConnection = {
    sendRequest: <R>(method: string) => {
      assert.equal(method, "agent/getState");
      if (fail) throw new Error("Connection is disposed"); // vscode-jsonrpc throws synchronously
      return new Promise<R>((resolve) => (answer = resolve as (state: unknown) => void));
    },
    onNotification: (_method, fn) => ((handler = fn), { dispose: () => (handler = null) }),
  };
  const errors: unknown[] = [];
  const applied: number[] = [];
  const sync = new SessionSync(new TillerClient(connection), "s", {
    onEvent: (_view, n) => applied.push(n.seq),
    onSyncError: (error) => errors.push(error),
  });
  const event = (seq: number): AgentEventParams => ({ sessionId: "s", seq, event: { type: "turn_start" } });
  handler!(event(1)); // before any sync: dropped (the state will contain it)
  const first = sync.resync();
  handler!(event(2));
  handler!(event(3));
  handler!({ ...event(4), sessionId: "other" });
  await Promise.resolve();
  answer({ sessionId: "s", cwd: "/", model: "m", thinkingLevel: "off", steeringMode: "all", followUpMode: "all", approvalMode: "ask", isStreaming: false, messages: [], pendingToolCalls: [], queue: { steering: [], followUp: [] }, seq: 2 });
  await first;
  assert.deepEqual(applied, [3], "seq 2 was already in the state, seq 3 applied after it");
  assert.equal(sync.view!.seq, 3);

  fail = true;
  handler!(event(5)); // a gap (4 missing): resync, which fails
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(sync.gapsSeen, 1);
  assert.equal(errors.length, 1);
  fail = false;
  const again = sync.resync();
  await Promise.resolve();
  answer({ sessionId: "s", cwd: "/", model: "m", thinkingLevel: "off", steeringMode: "all", followUpMode: "all", approvalMode: "ask", isStreaming: false, messages: [], pendingToolCalls: [], queue: { steering: [], followUp: [] }, seq: 5 });
  await again;
  assert.equal(sync.view!.seq, 5);
  assert.equal(sync.resets, 2);
});
