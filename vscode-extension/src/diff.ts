// Applies a unified diff (the `diff` of an approval_request, protocol.md section 5, made by
// Python's difflib with "\ No newline at end of file" markers) to a text, to show the proposed
// file in VS Code's diff editor. Pure: no `vscode`.

export class DiffApplyError extends Error {}

interface Hunk {
  oldStart: number;
  lines: string[]; // with their ' ', '-', '+' or '\' prefix
}

function parseHunks(diff: string): Hunk[] {
  const hunks: Hunk[] = [];
  let current: Hunk | null = null;
  for (const line of diff.split("\n")) {
    const header = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (header) {
      current = { oldStart: Number(header[1]), lines: [] };
      hunks.push(current);
      continue;
    }
    if (!current) continue; // ---, +++ and anything before the first hunk
    if (line.startsWith(" ") || line.startsWith("-") || line.startsWith("+") || line.startsWith("\\")) {
      current.lines.push(line);
    } else if (line === "") {
      // An empty context line whose space was stripped, or the end of the diff: a trailing
      // empty string from split("\n") is dropped below.
      current.lines.push("");
    }
  }
  for (const hunk of hunks) while (hunk.lines.length && hunk.lines[hunk.lines.length - 1] === "") hunk.lines.pop();
  return hunks;
}

/** Whether the diff creates a file (`--- /dev/null`). */
export function isNewFileDiff(diff: string): boolean {
  return /^--- \/dev\/null$/m.test(diff);
}

/**
 * The text after applying `diff` to `original`. Line endings of `original` are kept (CRLF
 * files stay CRLF: the server diffs with LF endings). Throws DiffApplyError when a context or
 * removed line does not match.
 */
export function applyUnifiedDiff(original: string, diff: string): string {
  const eol = original.includes("\r\n") ? "\r\n" : "\n";
  const bom = original.startsWith("\ufeff") ? "\ufeff" : "";
  const text = (bom ? original.slice(1) : original).replace(/\r\n/g, "\n");
  const oldLines = text === "" ? [] : text.split("\n");
  // split() leaves a last "" when the text ends with a newline; remember it separately.
  let endsWithNewline = text.endsWith("\n");
  if (endsWithNewline) oldLines.pop();

  const out: string[] = [];
  let cursor = 0; // index into oldLines
  let newNoEol = false; // a "\ No newline" marker followed the last new-file line seen
  for (const hunk of parseHunks(diff)) {
    const start = Math.max(0, hunk.oldStart - 1);
    if (start < cursor) throw new DiffApplyError(`overlapping hunk at line ${hunk.oldStart}`);
    out.push(...oldLines.slice(cursor, start));
    cursor = start;
    let lastKind = "";
    for (const line of hunk.lines) {
      const kind = line[0] ?? " ";
      const body = line.slice(1);
      if (kind === "\\") {
        // "\ No newline at end of file" is about the line before it.
        if (lastKind === " " || lastKind === "+") newNoEol = true;
        continue;
      }
      lastKind = kind;
      if (kind === " " || kind === "-") {
        if (oldLines[cursor] !== body) {
          throw new DiffApplyError(
            `line ${cursor + 1} does not match the diff: expected ${JSON.stringify(body)}, found ${JSON.stringify(oldLines[cursor])}`,
          );
        }
        cursor++;
        if (kind === " ") {
          out.push(body);
          newNoEol = false;
        }
      } else {
        out.push(body);
        newNoEol = false;
      }
    }
  }
  // The new text's last line is in the last hunk when that hunk reached the end of the old
  // text; otherwise the end is unchanged.
  if (cursor >= oldLines.length && out.length) endsWithNewline = !newNoEol;
  out.push(...oldLines.slice(cursor));
  const result = out.join("\n") + (out.length && endsWithNewline ? "\n" : "");
  return bom + (eol === "\r\n" ? result.replace(/\n/g, "\r\n") : result);
}
