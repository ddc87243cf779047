#!/usr/bin/env node
// Bundles the extension (Node, CommonJS, `vscode` external) and the webview script (browser,
// IIFE) with esbuild into dist/; with --tests, also each test/**/*.test.ts into out/test/.
// Tests under test/glue/ see `vscode` as the stand-in test/vscode-stub.ts; the others get no
// `vscode` at all, so the protocol client and the webview code cannot come to depend on it.
//
//   node scripts/build.mjs [--tests] [--production]
import { readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const production = process.argv.includes("--production");
const withTests = process.argv.includes("--tests");

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

function testEntries(dir) {
  const out = [];
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...testEntries(rel));
    else if (entry.name.endsWith(".test.ts")) out.push(rel);
  }
  return out;
}

if (withTests) {
  rmSync(path.join(root, "out", "test"), { recursive: true, force: true });
  for (const entry of testEntries("test")) {
    const glue = entry.split(path.sep).includes("glue");
    builds.push(
      esbuild.build({
        ...common,
        sourcemap: "inline",
        minify: false,
        entryPoints: [entry],
        outfile: path.join("out", entry.replace(/\.ts$/, ".cjs")),
        platform: "node",
        format: "cjs",
        target: "node20",
        // Test tooling stays outside the bundle (native parts, large packages).
        external: ["playwright-core", "vscode-jsonrpc", "vscode-jsonrpc/*", "json-schema-to-typescript", "esbuild"],
        alias: glue ? { vscode: "./test/vscode-stub.ts" } : {},
      }),
    );
  }
}

await Promise.all(builds);
