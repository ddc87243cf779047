#!/usr/bin/env node
// Bundles the extension (Node, CommonJS, `vscode` external) and the webview script (browser,
// IIFE) with esbuild into dist/; with --tests, also each test/**/*.test.ts into out/test/;
// with --e2e, the real-VS-Code suite test/e2e/*.e2e.ts into out/e2e/ (scripts/test-vscode.mjs).
// Tests under test/glue/ see `vscode` as the stand-in test/vscode-stub.ts; the others get no
// `vscode` at all, so the protocol client and the webview code cannot come to depend on it.
//
//   node scripts/build.mjs [--tests] [--e2e] [--production]
import { readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const production = process.argv.includes("--production");
const withTests = process.argv.includes("--tests");
const withE2e = process.argv.includes("--e2e");

const common = {
  bundle: true,
  sourcemap: production ? false : "linked",
  minify: production,
  logLevel: "warning",
  absWorkingDir: root,
  legalComments: "none",
};

const builds = [
  esbuild.build({
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],
  }),
  esbuild.build({
    ...common,
    entryPoints: ["src/webview/main.ts"],
    outfile: "dist/webview.js",
    platform: "browser",
    format: "iife",
    target: "chrome114",
  }),
];

function testEntries(dir, suffix) {
  const out = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...testEntries(rel, suffix));
    else if (entry.name.endsWith(suffix)) out.push(rel);
  }
  return out;
}

function testBuild(entry, outfile, alias = {}) {
  return esbuild.build({
    ...common,
    sourcemap: "inline",
    minify: false,
    entryPoints: [entry],
    outfile,
    platform: "node",
    format: "cjs",
    target: "node20",
    // Test tooling stays outside the bundle (native parts, large packages).
    external: ["playwright-core", "vscode-jsonrpc", "vscode-jsonrpc/*", "json-schema-to-typescript", "esbuild"],
    alias,
  });
}

if (withTests) {
  rmSync(path.join(root, "out", "test"), { recursive: true, force: true });
  for (const entry of testEntries("test", ".test.ts")) {
    const glue = entry.split(path.sep).includes("glue");
    builds.push(testBuild(entry, path.join("out", entry.replace(/\.ts$/, ".cjs")), glue ? { vscode: "./test/vscode-stub.ts" } : {}));
  }
}

if (withE2e) {
  for (const entry of testEntries(path.join("test", "e2e"), ".e2e.ts")) {
    builds.push(testBuild(entry, path.join("out", "e2e", path.basename(entry).replace(/\.ts$/, ".cjs"))));
  }
}

await Promise.all(builds);
