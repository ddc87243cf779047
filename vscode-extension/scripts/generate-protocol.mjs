#!/usr/bin/env node
// Generates src/protocol/generated.ts from ../schema/tiller.schema.json (itself generated from
// the server's pydantic classes, the single source of truth) with json-schema-to-typescript.
//
//   node scripts/generate-protocol.mjs           # rewrite src/protocol/generated.ts
//   node scripts/generate-protocol.mjs --check   # exit 1 when the checked-in file is stale
//
// The schema's `x-tiller` object (protocol version, error codes, the method table) becomes
// constants after the types, so the client copies none of them by hand.
//
// Two mechanical transforms before compiling, so the output is usable:
// - `title` is dropped from property schemas (pydantic titles every field, "Sessionid",
//   "Model", ...; json-schema-to-typescript would emit one alias per title and rename
//   clashes to Model1, Model2...). The titles of the $defs, the type names, stay.
// - a property with a `const` value (the `type` / `role` discriminators) is required: the
//   server always sends it, and TypeScript narrows unions only on required members.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { compile } from "json-schema-to-typescript";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
export const SCHEMA = path.resolve(root, "..", "schema", "tiller.schema.json");
export const OUTPUT = path.join(root, "src", "protocol", "generated.ts");

function prepare(node, isPropertySchema) {
  if (Array.isArray(node)) return node.map((item) => prepare(item, isPropertySchema));
  if (node === null || typeof node !== "object") return node;
  const out = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "title" && isPropertySchema) continue;
    if (key === "properties") {
      out.properties = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, prepare(schema, true)]));
    } else if (key === "$defs") {
      out.$defs = Object.fromEntries(Object.entries(value).map(([name, schema]) => [name, prepare(schema, false)]));
    } else {
      out[key] = prepare(value, isPropertySchema);
    }
  }
  if (out.properties) {
    const consts = Object.entries(out.properties)
      .filter(([, schema]) => schema && typeof schema === "object" && "const" in schema)
      .map(([name]) => name);
    if (consts.length) out.required = [...new Set([...(out.required ?? []), ...consts])];
  }
  return out;
}

function constants(tiller) {
  const json = (value) => JSON.stringify(value, null, 2);
  return [
    "",
    "/** The protocol version this client speaks (initialize's experimental.tiller.protocolVersion). */",
    `export const PROTOCOL_VERSION = ${tiller.protocolVersion};`,
    "",
    "/** The error codes of protocol.md section 4, by name. */",
    `export const ERROR_CODES = ${json(tiller.errorCodes)} as const;`,
    "",
    "/** Every agent/* method: the names of its params and result types (null: no params). */",
    `export const METHODS = ${json(tiller.methods)} as const;`,
    "",
  ].join("\n");
}

export async function generate() {
  const raw = JSON.parse(readFileSync(SCHEMA, "utf8"));
  const schema = prepare(raw, false);
  const types = await compile(schema, "TillerWireTypes", {
    bannerComment:
      "/* eslint-disable */\n/**\n * GENERATED from schema/tiller.schema.json by scripts/generate-protocol.mjs\n" +
      " * (`npm run generate`). Do not edit: change the server's pydantic classes, run `tiller schema`,\n" +
      " * then regenerate.\n */",
    unreachableDefinitions: true,
    additionalProperties: false,
    cwd: path.dirname(SCHEMA),
    format: true,
    style: { printWidth: 110, singleQuote: false, trailingComma: "all" },
  });
  return types + constants(raw["x-tiller"]);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const text = await generate();
  if (process.argv.includes("--check")) {
    let current = "";
    try {
      current = readFileSync(OUTPUT, "utf8");
    } catch {}
    if (current !== text) {
      console.error(`${path.relative(process.cwd(), OUTPUT)} is stale: run \`npm run generate\` in vscode-extension/`);
      process.exit(1);
    }
    console.log("src/protocol/generated.ts is up to date");
  } else {
    writeFileSync(OUTPUT, text);
    console.log(`wrote ${path.relative(process.cwd(), OUTPUT)}`);
  }
}
