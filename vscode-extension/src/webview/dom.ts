// A tiny DOM builder. Text always goes in as text nodes (never parsed as HTML); the only
// HTML this webview inserts is markdown-it's output for model text (see markdown.ts).

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | boolean | number | undefined | ((event: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === false) continue;
      if (typeof value === "function") el.addEventListener(key.replace(/^on/, "").toLowerCase(), value);
      else if (key === "className") el.className = String(value);
      else if (value === true) el.setAttribute(key, "");
      else el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

// Icons: static SVG built with DOM calls (16x16, currentColor), in the spirit of codicons.
const SVG = "http://www.w3.org/2000/svg";
const PATHS: Record<string, string> = {
  check: "M6.27 10.87 3.4 8l-.7.7 3.57 3.58 7.07-7.07-.7-.7z",
  error:
    "M8 1a7 7 0 1 0 0 14A7 7 0 0 0 8 1zm0 13A6 6 0 1 1 8 2a6 6 0 0 1 0 12zm2.65-9.35L8 7.29 5.35 4.65l-.7.7L7.29 8l-2.64 2.65.7.7L8 8.71l2.65 2.64.7-.7L8.71 8l2.64-2.65z",
  shield:
    "M8 1 2.5 3v4.5C2.5 11 5 13.8 8 15c3-1.2 5.5-4 5.5-7.5V3zm4.5 6.5c0 2.9-2 5.2-4.5 6.4-2.5-1.2-4.5-3.5-4.5-6.4V3.7L8 2.1l4.5 1.6z",
  terminal: "M1 3v10h14V3zm13 9H2V4h12zM3.6 6.3l.7-.7L7 8.3 4.3 11l-.7-.7 2-2zM8 10h4v1H8z",
  file: "M9.5 1H3v14h10V4.5zM12 14H4V2h5v3h3zm-2-10V2.2L11.8 4z",
  search: "M10.5 1a4.5 4.5 0 0 0-3.5 7.3L1.6 13.7l.7.7L7.7 9a4.5 4.5 0 1 0 2.8-8zm0 8a3.5 3.5 0 1 1 0-7 3.5 3.5 0 0 1 0 7z",
  tool: "M13.6 2.4a3.5 3.5 0 0 0-4.7 4.2L2 13.5 2.5 14l.1.1.4.4L9.9 7.6a3.5 3.5 0 0 0 4.2-4.7l-2 2-1.5-.4-.4-1.5z",
  stop: "M4 4h8v8H4z",
  send: "M1.7 1.6 15 8 1.7 14.4l1.6-5.9L10 8 3.3 7.5z",
  sparkle: "M8 1l1.4 4.6L14 7l-4.6 1.4L8 13l-1.4-4.6L2 7l4.6-1.4z",
  close: "M8 8.7 4.4 12.3l-.7-.7L7.3 8 3.7 4.4l.7-.7L8 7.3l3.6-3.6.7.7L8.7 8l3.6 3.6-.7.7z",
  rewind: "M3 2h1v3.3A5.5 5.5 0 1 1 2.5 9h1A4.5 4.5 0 1 0 4.7 6H8v1H3z",
  diff: "M2 2h5v1H3v10h4v1H2zm7 0h5v12H9v-1h4V3H9zm-2 5.5H5.5V6h-1v1.5H3v1h1.5V10h1V8.5H7zM9 8.5h4v-1H9z",
};

export function icon(name: keyof typeof PATHS | string, className = "icon"): SVGSVGElement {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("width", "16");
  svg.setAttribute("height", "16");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", className);
  const path = document.createElementNS(SVG, "path");
  path.setAttribute("d", PATHS[name] ?? PATHS.tool);
  path.setAttribute("fill", "currentColor");
  path.setAttribute("fill-rule", "evenodd");
  svg.appendChild(path);
  return svg;
}

export function spinner(): HTMLElement {
  return h("span", { className: "spinner", "aria-label": "running" });
}
