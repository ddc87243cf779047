// Packages the extension with @vscode/vsce (`vsce package --no-dependencies`: the bundles
// hold the dependencies, so this works offline) and checks what went into the .vsix. Runs
// after the other tests: vsce's vscode:prepublish rebuilds dist/ minified.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

const root = path.resolve(__dirname, "..", "..", ".."); // out/test/package/ -> vscode-extension/

/** The names in a zip file's central directory. */
function zipEntries(file: string): string[] {
  const zip = readFileSync(file);
  let end = zip.length - 22;
  while (end >= 0 && zip.readUInt32LE(end) !== 0x06054b50) end--;
  assert.ok(end >= 0, "a zip file");
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  const names: string[] = [];
  for (let i = 0; i < count; i++) {
    assert.equal(zip.readUInt32LE(at), 0x02014b50);
    const nameLength = zip.readUInt16LE(at + 28);
    const extra = zip.readUInt16LE(at + 30);
    const comment = zip.readUInt16LE(at + 32);
    names.push(zip.toString("utf8", at + 46, at + 46 + nameLength));
    at += 46 + nameLength + extra + comment;
  }
  return names;
}

test("vsce packages a .vsix with the bundles, the media and the manifest only", () => {
  const out = path.join(root, "out", "tiller.vsix");
  rmSync(out, { force: true });
  const vsce = path.join(root, "node_modules", "@vscode", "vsce", "vsce");
  const packaged = spawnSync(
    process.execPath,
    [vsce, "package", "--no-dependencies", "--allow-missing-repository", "--no-rewrite-relative-links", "--out", out],
    { cwd: root, encoding: "utf8" },
  );
  assert.equal(packaged.status, 0, `${packaged.stdout}${packaged.stderr}`);
  const entries = zipEntries(out).sort();
  assert.deepEqual(entries, [
    "[Content_Types].xml",
    "extension.vsixmanifest",
    "extension/LICENSE.txt",
    "extension/dist/extension.js",
    "extension/dist/webview.js",
    "extension/media/chat.css",
    "extension/media/screenshot.png",
    "extension/media/tiller.svg",
    "extension/package.json",
    "extension/readme.md",
  ]);
  const manifest = readFileSync(path.join(root, "package.json"), "utf8");
  assert.equal(JSON.parse(manifest).engines.vscode, "^1.91.0");
});
