// Drives the real `python -m tiller serve` with vscode-jsonrpc, the JSON-RPC layer under VS
// Code's language client. Its reader is strict where pygls's is lenient: a stray byte on the
// server's stdout fails it with "Header must provide a Content-Length property".
//
//   TILLER_PYTHON=/path/to/python node --test tests/node/
//
// The interpreter (default python3) must be able to import tiller.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

import { createMessageConnection, ResponseError, StreamMessageReader, StreamMessageWriter } from "vscode-jsonrpc/node";

const WAIT_MS = 15000;

function withTimeout(promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), WAIT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function startServer(t, responses) {
  const dir = mkdtempSync(path.join(tmpdir(), "tiller-node-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const script = path.join(dir, "faux.json");
  writeFileSync(script, JSON.stringify({ chunkChars: 4, responses }));

  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) => !key.endsWith("_API_KEY") && !key.endsWith("_BASE_URL") && !key.startsWith("TILLER_"),
    ),
  );
  Object.assign(env, {
    TILLER_MODEL: "faux/faux-1",
    TILLER_FAUX_SCRIPT: script,
    XDG_CONFIG_HOME: dir, // no user models.toml
    TILLER_DATA_DIR: path.join(dir, "data"), // saved sessions stay in the temporary directory
  });
  const python = process.env.TILLER_PYTHON || "python3";
  const proc = spawn(python, ["-m", "tiller", "serve"], { cwd: dir, env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => proc.on("exit", (code) => resolve(code)));
  t.after(() => {
    if (proc.exitCode === null) proc.kill();
  });

  const connection = createMessageConnection(new StreamMessageReader(proc.stdout), new StreamMessageWriter(proc.stdin));
  const problems = [];
  connection.onError(([error]) => problems.push(String(error)));
  const events = [];
  connection.onNotification("agent/event", (params) => events.push(params));
  connection.listen();
  t.after(() => connection.dispose());
  return { connection, events, problems, exited, dir, stderr: () => stderr };
}

test("a VS Code-style client runs a prompt through tiller serve", async (t) => {
  const server = startServer(t, [{ content: [{ type: "text", text: "Hello from faux." }] }]);
  const { connection, events } = server;
  t.after(() => {
    if (server.problems.length) console.error(server.stderr());
  });

  const init = await withTimeout(
    connection.sendRequest("initialize", {
      processId: process.pid,
      rootUri: pathToFileURL(server.dir).href,
      capabilities: { experimental: { tiller: { approvals: false } } },
      clientInfo: { name: "node-interop-test" },
    }),
    "initialize",
  );
  assert.equal(init.serverInfo.name, "tiller");
  assert.equal(init.capabilities.experimental.tiller.protocolVersion, 1);
  await connection.sendNotification("initialized", {});

  // No params at all: vscode-jsonrpc then omits the member, as JSON-RPC allows.
  const models = await withTimeout(connection.sendRequest("agent/listModels"), "agent/listModels");
  assert.equal(models.default, "faux/faux-1");

  const { sessionId } = await withTimeout(connection.sendRequest("agent/newSession", { tools: [] }), "newSession");
  const answer = await withTimeout(connection.sendRequest("agent/prompt", { sessionId, text: "hi" }), "prompt");
  const atAnswer = events.length;

  const mine = events.slice(0, atAnswer).filter((e) => e.sessionId === sessionId);
  assert.deepEqual(
    mine.map((e) => e.seq),
    mine.map((_, i) => i + 1),
  );
  const shapes = mine.map(({ event }) =>
    event.type === "message_update" ? `update:${event.assistantMessageEvent.type}` : event.type,
  );
  assert.deepEqual(shapes, [
    "agent_start",
    "turn_start",
    "message_start",
    "message_end",
    "message_start",
    "update:text_start",
    ...Array(4).fill("update:text_delta"), // "Hello from faux." in chunks of 4
    "update:text_end",
    "message_end",
    "turn_end",
    "context_usage",
    "agent_end",
  ]);
  const deltas = mine
    .filter(({ event }) => event.assistantMessageEvent?.type === "text_delta")
    .map(({ event }) => event.assistantMessageEvent.delta)
    .join("");
  assert.equal(deltas, "Hello from faux.");

  assert.equal(answer.stopReason, "stop");
  assert.deepEqual(answer.newMessages, mine.at(-1).event.messages);
  assert.deepEqual(answer.newMessages[1].content, [{ type: "text", text: "Hello from faux." }]);
  assert.ok(answer.usage.totalTokens > 0);

  await assert.rejects(connection.sendRequest("agent/noSuchMethod", {}), (error) => {
    assert.ok(error instanceof ResponseError);
    assert.equal(error.code, -32601);
    return true;
  });
  await assert.rejects(connection.sendRequest("agent/getState", { sessionId: "nope" }), { code: -32001 });

  assert.equal(await withTimeout(connection.sendRequest("shutdown"), "shutdown"), null);
  await connection.sendNotification("exit");
  assert.equal(await withTimeout(server.exited, "the server to exit"), 0);
  assert.deepEqual(server.problems, [], "the connection saw a malformed stream");
});
