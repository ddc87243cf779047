// src/server.ts when the server cannot start: one clear error message that says how to fix
// it, and the panel shows the failure. (Starting the real server under vscode-languageclient
// needs VS Code itself; the protocol tests cover the server over the same JSON-RPC layer.)
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, test } from "node:test";

import type * as vscode from "vscode";

import { TillerController } from "../../src/controller";
import { buildInitializationOptions, TillerCapabilities, TillerServer } from "../../src/server";
import type { ToWebview } from "../../src/webview/messages";
import { stub } from "../vscode-stub";

let dir: string;
let savedPath: string | undefined;

beforeEach(() => {
  stub.reset();
  dir = mkdtempSync(path.join(tmpdir(), "tiller-start-"));
  // No `tiller` on PATH, whatever this machine has.
  savedPath = process.env.PATH;
  process.env.PATH = dir;
});

afterEach(() => {
  process.env.PATH = savedPath;
  rmSync(dir, { recursive: true, force: true });
});

function start() {
  const logged: string[] = [];
  const output = {
    info: (m: string) => logged.push(m),
    warn: (m: string) => logged.push(m),
    error: (m: string) => logged.push(m),
    show: () => undefined,
  } as unknown as vscode.LogOutputChannel;
  const controller = new TillerController({ workspaceState: { get: () => undefined, update: async () => undefined } as never, log: () => undefined });
  const posted: ToWebview[] = [];
  controller.setPanel({ visible: true, postMessage: (m) => (posted.push(m), true) });
  const server = new TillerServer(controller, output);
  return { controller, server, posted, logged };
}

test("tiller not installed in the interpreter: the message names the error and the fix", async () => {
  const python = path.join(dir, "python3");
  writeFileSync(python, "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'tiller'\" >&2\nexit 1\n");
  chmodSync(python, 0o755);
  stub.config["tiller.pythonPath"] = python;
  const { controller, server, posted } = start();
  await server.start();
  const expected = `tiller: could not start the server (\`${python} -m tiller serve\`): ModuleNotFoundError: No module named 'tiller'. Install tiller (\`uv tool install <your tiller checkout>\` puts \`tiller\` on PATH), set tiller.serverCommand, or pick a tiller.pythonPath that has tiller.`;
  assert.deepEqual(stub.errorMessages, [{ message: expected, items: ["Open Settings", "Show Log", "Retry"] }]);
  assert.equal(controller.status, "error");
  assert.deepEqual(posted.at(-1), { type: "status", status: "error", message: expected });
  assert.equal(controller.statusBarText, "$(error) tiller");
  controller.dispose();
});

test("no interpreter, or a wrong tiller.serverCommand: said so, with the setting to fix", async () => {
  stub.config["tiller.pythonPath"] = path.join(dir, "no-such-python");
  let { controller, server } = start();
  await server.start();
  assert.match(stub.errorMessages[0].message, /the Python interpreter was not found\. Install tiller \(`uv tool install <your tiller checkout>`/);
  controller.dispose();

  stub.reset();
  stub.config["tiller.serverCommand"] = [path.join(dir, "bin", "tiller"), "--log-level", "DEBUG"];
  ({ controller, server } = start());
  await server.start();
  assert.equal(
    stub.errorMessages[0].message,
    `tiller: could not start the server (\`${path.join(dir, "bin", "tiller")} --log-level DEBUG serve\`): the command was not found. Check the tiller.serverCommand setting (set in your User settings).`,
  );
  controller.dispose();

  // In a remote window (code-server, Remote-SSH...) the User value applies too; say where it may come from.
  stub.errorMessages = [];
  stub.remoteName = "ssh-remote";
  ({ controller, server } = start());
  await server.start();
  assert.match(stub.errorMessages[0].message, /Check the tiller\.serverCommand setting \(set in your User or Remote settings\)\.$/);
  controller.dispose();
});

test("Retry in the start failure's notification starts again (the failed start does not wait for the answer)", async () => {
  stub.config["tiller.serverCommand"] = [path.join(dir, "missing-tiller")];
  let retries = 1;
  stub.answerError = (_message, items) => (items.includes("Retry") && retries-- > 0 ? "Retry" : undefined);
  const { controller, server } = start();
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise((resolve) => (timer = setTimeout(() => resolve("stuck"), 10000)));
  assert.equal(await Promise.race([server.start().then(() => "done"), stuck]), "done");
  // The Retry's start runs after the answer; the second failure is answered "dismiss".
  while (stub.errorMessages.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(await Promise.race([server.start().then(() => "done"), stuck]), "done", "later starts are not blocked either");
  clearTimeout(timer);
  assert.equal(stub.errorMessages.length, 3);
  assert.equal(controller.status, "error");
  controller.dispose();
});

test("initialize declares approvals and savesEditedDocuments, and passes the settings", () => {
  const capabilities: { experimental?: unknown } = { experimental: { other: 1 } };
  new TillerCapabilities().fillClientCapabilities(capabilities);
  assert.deepEqual(capabilities.experimental, { other: 1, tiller: { approvals: true, savesEditedDocuments: true } });
  assert.deepEqual(
    buildInitializationOptions({ defaultModel: " openai/gpt-4.1-mini ", approvalMode: "acceptEdits", toolExecution: "sequential" }),
    { defaultModel: "openai/gpt-4.1-mini", approvalMode: "acceptEdits", toolExecution: "sequential" },
  );
  assert.deepEqual(buildInitializationOptions({ defaultModel: "", approvalMode: undefined }), {});
});
