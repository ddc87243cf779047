// The chat webview's HTML: no inline script or style, a CSP that allows only the bundled
// script (by nonce) and stylesheet, and nothing remote.

export interface WebviewHtmlOptions {
  /** webview.cspSource */
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
}

export function makeNonce(): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let nonce = "";
  for (let i = 0; i < 32; i++) nonce += alphabet.charAt(Math.floor(Math.random() * alphabet.length));
  return nonce;
}

const attr = (value: string) => value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

export function contentSecurityPolicy({ cspSource, nonce }: Pick<WebviewHtmlOptions, "cspSource" | "nonce">): string {
  return [
    "default-src 'none'",
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `img-src ${cspSource} data:`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
}

export function renderWebviewHtml(options: WebviewHtmlOptions): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="UTF-8">
  <meta http-equiv="Content-Security-Policy" content="${attr(contentSecurityPolicy(options))}">
  <meta name="viewport" content="width=device-width, initial-scale=1.0">
  <link rel="stylesheet" href="${attr(options.styleUri)}">
  <title>tiller</title>
</head>
<body>
  <div id="app"></div>
  <script nonce="${attr(options.nonce)}" src="${attr(options.scriptUri)}"></script>
</body>
</html>
`;
}
