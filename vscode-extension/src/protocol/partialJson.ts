// A lenient parse of a JSON prefix, for the live preview of a streaming tool call's arguments
// (protocol.md 3.1: `toolcall_delta` carries raw JSON fragments). Returns undefined when the
// prefix cannot be completed into something sensible yet.

export function parsePartialJson(text: string): unknown {
  const source = text.trim();
  if (!source) return undefined;
  try {
    return JSON.parse(source);
  } catch {
    // complete it below
  }
  const closers: string[] = [];
  let inString = false;
  let escaped = false;
  for (const ch of source) {
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === "\\") escaped = true;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === "{") closers.push("}");
    else if (ch === "[") closers.push("]");
    else if (ch === "}" || ch === "]") closers.pop();
  }
  let body = source;
  if (inString) {
    if (escaped) body = body.slice(0, -1); // a dangling backslash
    body = body.replace(/\\u[0-9a-fA-F]{0,3}$/, "") + '"';
  }
  // Try progressively shorter cuts, one at a time: a trailing comma, a partial literal or
  // number, a dangling `"key":` or `"key"`.
  const cuts: [RegExp, string][] = [
    [/,\s*$/, ""],
    [/:\s*(?:t(?:r(?:u)?)?|f(?:a(?:l(?:s)?)?)?|n(?:u(?:l)?)?|-|-?[0-9]+\.|-?[0-9.]+[eE][+-]?)$/, ":"],
    [/([{,])\s*"(?:[^"\\]|\\.)*"\s*:?\s*$/, "$1"],
  ];
  for (let attempt = 0; attempt < 6; attempt++) {
    try {
      return JSON.parse(body + closers.slice().reverse().join(""));
    } catch {
      const cut = cuts.find(([re]) => re.test(body));
      if (!cut) break;
      body = body.replace(cut[0], cut[1]).replace(/,\s*$/, "");
      if (body.endsWith(":")) body = body.replace(/([{,])\s*"(?:[^"\\]|\\.)*"\s*:$/, "$1").replace(/,\s*$/, "");
    }
  }
  return undefined;
}
