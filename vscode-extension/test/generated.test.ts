// src/protocol/generated.ts must be what json-schema-to-typescript makes of the current
// schema/tiller.schema.json (itself generated from the server's pydantic classes).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { test } from "node:test";

const root = path.resolve(__dirname, "..", ".."); // out/test/ -> vscode-extension/

test("the generated protocol types are up to date with schema/tiller.schema.json", () => {
  const check = spawnSync(process.execPath, ["scripts/generate-protocol.mjs", "--check"], { cwd: root, encoding: "utf8" });
  assert.equal(check.status, 0, `${check.stdout}${check.stderr}`);
});
