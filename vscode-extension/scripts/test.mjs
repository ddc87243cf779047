#!/usr/bin/env node
// `npm test`: build, type-check, then every test under node's test runner (protocol client
// against the real server, extension glue with a `vscode` stand-in, the webview in headless
// Chromium, the generated-types check and the .vsix packaging).
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const node = process.execPath;

function run(args, what) {
  const started = Date.now();
  const result = spawnSync(node, args, { cwd: root, stdio: "inherit" });
  console.log(`# ${what}: ${((Date.now() - started) / 1000).toFixed(1)}s`);
  if (result.status !== 0) process.exit(result.status ?? 1);
}

function tests(dir) {
  const out = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...tests(rel));
    else if (entry.name.endsWith(".test.cjs")) out.push(rel);
  }
  return out.sort();
}

run(["scripts/build.mjs", "--tests"], "build");
run(["node_modules/typescript/bin/tsc", "--noEmit", "-p", "."], "typecheck");
const only = process.argv.slice(2);
const files = tests("out/test").filter((f) => !only.length || only.some((o) => f.includes(o)));
const packaging = files.filter((f) => f.includes(`${path.sep}package${path.sep}`));
const others = files.filter((f) => !packaging.includes(f));
if (others.length) run(["--test", "--test-concurrency=2", ...others], "tests");
// Last: vsce's prepublish step rebuilds dist/ minified, under the tests' feet otherwise.
if (packaging.length) run(["--test", ...packaging], "packaging");
