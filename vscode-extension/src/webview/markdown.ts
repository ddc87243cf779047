// Markdown for model output. Model text must never become live HTML, script or a remote
// request: markdown-it with `html: false` escapes every tag, links are limited to http(s),
// mailto and in-page anchors (clicks go to the extension, which opens them outside), and
// images are shown as their alt text (the CSP would block remote images anyway).
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: true, breaks: false, typographer: false });
// Only explicit URLs become links ("greet.py" is a file name, not a domain).
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false });

const SAFE_LINK = /^(https?:|mailto:|#)/i;
md.validateLink = (url: string) => SAFE_LINK.test(url.trim());

md.renderer.rules.image = (tokens, index) => {
  const token = tokens[index];
  const alt = token.children ? md.renderer.renderInlineAsText(token.children, md.options, {}) : token.content;
  return `<span class="md-image" title="Image not loaded">[image${alt ? `: ${md.utils.escapeHtml(alt)}` : ""}]</span>`;
};

const defaultLinkOpen =
  md.renderer.rules.link_open ?? ((tokens, index, options, _env, self) => self.renderToken(tokens, index, options));
md.renderer.rules.link_open = (tokens, index, options, env, self) => {
  const href = tokens[index].attrGet("href") ?? "";
  tokens[index].attrSet("title", href);
  return defaultLinkOpen(tokens, index, options, env, self);
};

/** Safe HTML for a markdown text (every raw tag escaped). */
export function renderMarkdown(text: string): string {
  return md.render(text);
}
