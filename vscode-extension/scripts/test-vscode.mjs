#!/usr/bin/env node
// The extension in real VS Code (code-server): builds test/e2e/, packages the .vsix users
// install (vsce, production bundles), then runs test/e2e/*.e2e.ts under node's test runner.
// Needs TILLER_CODE_SERVER_DIR (.ci/install-code-server prints it), TILLER_PYTHON (a Python
// with tiller importable) and Debian's Chromium; tests/vscode/test_real_vscode.py runs this.
//
//   node scripts/test-vscode.mjs [name filter...]
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const node = process.execPath;
const vsix = path.join(root, "out", "e2e", "tiller.vsix");

function run(args, what) {
  const started = Date.now();
  const result = spawnSync(node, args, { cwd: root, stdio: "inherit", env: { ...process.env, TILLER_VSIX: vsix } });
  console.log(`# ${what}: ${((Date.now() - started) / 1000).toFixed(1)}s`);
  if (result.status !== 0) process.exit(result.status ?? 1);
}

rmSync(path.join(root, "out", "e2e"), { recursive: true, force: true });
mkdirSync(path.join(root, "out", "e2e"), { recursive: true });
run(["scripts/build.mjs", "--e2e"], "build");
run(
  [path.join("node_modules", "@vscode", "vsce", "vsce"), "package", "--no-dependencies", "--allow-missing-repository", "--no-rewrite-relative-links", "--out", vsix],
  "package",
);
const only = process.argv.slice(2);
const files = readdirSync(path.join(root, "out", "e2e"))
  .filter((name) => name.endsWith(".e2e.cjs") && (!only.length || only.some((o) => name.includes(o))))
  .map((name) => path.join("out", "e2e", name));
// One at a time: each file starts code-server and Chromium.
run(["--test", "--test-concurrency=1", ...files], "real VS Code");
