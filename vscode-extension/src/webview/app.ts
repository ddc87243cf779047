// The chat panel: renders a session view (src/protocol/reducer.ts) rebuilt from the events the
// extension forwards, and posts the user's actions back. Updates are batched per animation
// frame and only what changed is re-rendered (the streaming block, the tool cards touched).
import { applyEvent, findToolResult, summarizeRun, viewFromState, type SessionView, type ToolRun } from "../protocol/reducer";
import type {
  AgentEventParams,
  AgentMessage,
  AgentToolResult,
  ApprovalRequestEvent,
  AssistantBlock,
  AssistantMessage,
  PartialAssistantMessage,
  SessionState,
  ToolResultMessage,
  Usage,
  UserMessage,
  WireEvent,
} from "../protocol/types";
import { append, clear, h, icon, spinner } from "./dom";
import { renderMarkdown } from "./markdown";
import type { ContextChip, FromWebview, ServerStatus, ToWebview } from "./messages";

export interface HostApi {
  postMessage(message: FromWebview): void;
  getState(): unknown;
  setState(state: unknown): void;
}

type ToolCallBlock = Extract<AssistantBlock, { type: "toolCall" }>;

interface PersistedState {
  draft?: string;
  behavior?: "steer" | "followUp";
}

const EDIT_TOOLS = new Set(["edit", "write"]);

function textOf(content: AgentToolResult["content"] | UserMessage["content"] | undefined): string {
  if (!content) return "";
  if (typeof content === "string") return content;
  return content.map((block) => (block.type === "text" ? block.text : `[${block.type}]`)).join("\n");
}

function str(value: unknown): string {
  return typeof value === "string" ? value : value === undefined ? "" : JSON.stringify(value);
}

export function formatTokens(n: number): string {
  return n >= 10000 ? `${(n / 1000).toFixed(1)}k` : n.toLocaleString("en-US");
}

export function formatCost(cost: number): string {
  return `$${cost > 0 && cost < 0.01 ? cost.toFixed(4) : cost.toFixed(2)}`;
}

export function formatUsage(usage: Usage): string {
  const parts = [`${formatTokens(usage.input)} in`, `${formatTokens(usage.output)} out`];
  if (usage.cacheRead) parts.push(`${formatTokens(usage.cacheRead)} cached`);
  if (usage.cost.total > 0) parts.push(formatCost(usage.cost.total));
  return parts.join(" · ");
}

/** The context meter's text: how full the window is, compaction, and the session's cost. */
export function formatContextMeter(view: SessionView): string {
  const parts: string[] = [];
  if (view.compacting) parts.push("compacting…");
  else if (view.context) {
    const { tokens, contextWindow, percent } = view.context;
    parts.push(`context ${formatTokens(tokens)}/${formatTokens(contextWindow)} (${Math.round(percent)}%)`);
  }
  if (view.compactions.length && !view.compacting) parts.push("compacted");
  if (view.sessionUsage) parts.push(formatCost(view.sessionUsage.cost.total));
  return parts.join(" · ");
}

/** The meter's tooltip: the threshold, where the count comes from, the latest compaction. */
function contextMeterTitle(view: SessionView): string {
  const lines: string[] = [];
  if (view.context) {
    const { tokens, compactAt, source } = view.context;
    lines.push(`The next request carries about ${tokens.toLocaleString("en-US")} tokens (${source === "provider" ? "from the provider's count" : "estimated"}).`);
    lines.push(`The context is compacted at ${compactAt.toLocaleString("en-US")} tokens.`);
  }
  const last = view.compactions[view.compactions.length - 1];
  if (last) {
    lines.push(`Compacted (${last.reason}) ${new Date(last.timestamp).toLocaleTimeString()}: ${last.tokensBefore.toLocaleString("en-US")} → ${last.tokensAfter.toLocaleString("en-US")} tokens.`);
    lines.push(last.summary);
  }
  if (view.sessionUsage) lines.push(`This session so far: ${formatUsage(view.sessionUsage)}`);
  return lines.join("\n");
}

function toolSummary(name: string, args: Record<string, unknown>): string {
  switch (name) {
    case "bash":
      return str(args.command);
    case "read": {
      const range = args.offset ? `:${args.offset}${args.limit ? `+${args.limit}` : ""}` : "";
      return `${str(args.path)}${range}`;
    }
    case "edit":
    case "write":
    case "ls":
      return str(args.path ?? (name === "ls" ? "." : ""));
    case "grep":
    case "find":
      return `${str(args.pattern)}${args.path ? ` in ${str(args.path)}` : ""}`;
    default:
      return Object.keys(args).length ? JSON.stringify(args) : "";
  }
}

function toolIcon(name: string): string {
  if (name === "bash") return "terminal";
  if (name === "grep" || name === "find") return "search";
  if (name === "read" || name === "ls" || EDIT_TOOLS.has(name)) return "file";
  return "tool";
}

/** A unified diff cut at its @@ lines: the ---/+++ header, then each hunk's text. */
export function splitDiff(diff: string): { header: string; hunks: string[] } {
  const [header, ...hunks] = diff.split(/^(?=@@ )/m);
  return header.startsWith("@@ ") ? { header: "", hunks: [header, ...hunks] } : { header, hunks };
}

export function renderDiff(diff: string): HTMLElement {
  const pre = h("pre", { className: "diff" });
  const lines = diff.replace(/\n$/, "").split("\n");
  for (const line of lines) {
    let cls = "ctx";
    if (line.startsWith("+++") || line.startsWith("---")) cls = "meta";
    else if (line.startsWith("@@")) cls = "hunk";
    else if (line.startsWith("+")) cls = "add";
    else if (line.startsWith("-")) cls = "del";
    else if (line.startsWith("\\")) cls = "meta";
    pre.appendChild(h("span", { className: `line ${cls}` }, line + "\n"));
  }
  return pre;
}

/** One content block of an assistant message, re-rendered only when its text changed. */
class BlockNode {
  el: HTMLElement;
  private key = "";
  private body: HTMLElement | null = null;

  constructor(
    private app: ChatApp,
    private block: AssistantBlock,
  ) {
    this.el = h("div", { className: `block block-${block.type}` });
  }

  get type(): string {
    return this.block.type;
  }

  update(block: AssistantBlock, streaming: boolean): void {
    this.block = block;
    if (block.type === "text") {
      const key = `t${block.text.length}:${streaming}`;
      if (key === this.key) return;
      this.key = key;
      this.el.className = `block block-text markdown${streaming ? " streaming" : ""}`;
      this.el.innerHTML = renderMarkdown(block.text); // markdown-it, html: false (markdown.ts)
    } else if (block.type === "thinking") {
      const key = `k${block.thinking.length}:${streaming}`;
      if (key === this.key) return;
      this.key = key;
      if (!this.body) {
        this.body = h("div", { className: "thinking-body" });
        const summary = h("summary", null, h("span", { className: "thinking-label" }, "Thinking"));
        this.el.appendChild(h("details", { className: "thinking" }, summary, this.body));
      }
      const label = this.el.querySelector(".thinking-label")!;
      label.textContent = block.redacted ? "Thinking (redacted)" : streaming ? "Thinking…" : "Thinking";
      this.body.textContent = block.thinking;
    } else if (block.type === "toolCall") {
      const card = this.app.toolCard(block.id, block);
      card.setCall(block);
      if (card.el.parentElement !== this.el) {
        clear(this.el);
        this.el.appendChild(card.el);
      }
    }
  }
}

class AssistantNode {
  el: HTMLElement;
  private blocks: BlockNode[] = [];
  private footer: HTMLElement;

  constructor(private app: ChatApp) {
    this.el = h("div", { className: "message assistant" });
    this.footer = h("div", { className: "message-footer" });
    this.el.appendChild(this.footer);
  }

  update(message: PartialAssistantMessage, streaming: boolean, run?: ReturnType<typeof summarizeRun>): void {
    const content = message.content;
    content.forEach((block, i) => {
      let node = this.blocks[i];
      if (!node || node.type !== block.type) {
        const fresh = new BlockNode(this.app, block);
        if (node) node.el.replaceWith(fresh.el);
        else this.el.insertBefore(fresh.el, this.footer);
        this.blocks[i] = node = fresh;
      }
      node.update(block, streaming);
    });
    for (const extra of this.blocks.splice(content.length)) extra.el.remove();

    clear(this.footer);
    this.el.classList.toggle("streaming", streaming);
    if (streaming) {
      if (!content.length) this.footer.appendChild(h("div", { className: "working" }, spinner(), "Working…"));
      return;
    }
    if (message.stopReason === "error") {
      this.footer.appendChild(
        h("div", { className: "error-box", role: "alert" }, icon("error"), h("span", null, message.errorMessage || "The model failed.")),
      );
    } else if (message.stopReason === "aborted") {
      this.footer.appendChild(h("div", { className: "stopped" }, "Stopped."));
    } else if (message.stopReason === "length") {
      this.footer.appendChild(h("div", { className: "warning-box" }, "The reply hit the model's output limit."));
    }
    if (run && message.stopReason !== "toolUse") {
      this.footer.appendChild(h("div", { className: "usage", title: "Tokens and cost of this run" }, formatUsage(run.usage)));
    }
  }
}

/** A tool call: arguments, live output, result, and its approval when one is pending. */
class ToolCard {
  el: HTMLDetailsElement;
  private header: HTMLElement;
  private body: HTMLElement;
  private call: ToolCallBlock | null = null;
  private key = "";
  private userToggled = false;
  private autoOpen: boolean | null = null;
  private approvalBusy = new Set<string>();
  private rejectMessage = "";

  constructor(
    private app: ChatApp,
    readonly toolCallId: string,
  ) {
    this.header = h("summary", { className: "tool-header" });
    this.body = h("div", { className: "tool-body" });
    this.el = h("details", { className: "tool-card", "data-tool-call-id": toolCallId }, this.header, this.body);
    this.header.addEventListener("click", () => (this.userToggled = true));
  }

  setCall(call: ToolCallBlock): void {
    this.call = call;
    this.update();
  }

  update(): void {
    const view = this.app.view;
    if (!view) return;
    const run: ToolRun | undefined = view.tools[this.toolCallId];
    const resultMessage = findToolResult(view, this.toolCallId);
    const approval = view.pendingApprovals.find((a) => a.toolCallId === this.toolCallId);
    const name = this.call?.name ?? run?.toolName ?? resultMessage?.toolName ?? "tool";
    const args = (run?.args && Object.keys(run.args).length ? run.args : this.call?.arguments) ?? {};
    const result: AgentToolResult | undefined =
      run?.result ?? (resultMessage ? { content: resultMessage.content, details: resultMessage.details } : undefined);
    const isError = run?.status === "error" || !!resultMessage?.isError;
    const status: "streaming" | "approval" | "running" | "done" | "error" = approval
      ? "approval"
      : result || run?.status === "done" || run?.status === "error"
        ? isError
          ? "error"
          : "done"
        : run
          ? "running"
          : view.isStreaming
            ? "streaming"
            : "error";
    const outcome = view.approvalOutcomes[this.toolCallId];
    const partial = run?.partial ? textOf(run.partial.content) : "";
    const dropped = approval ? [...this.app.droppedHunks(approval.approvalId)] : [];
    const key = JSON.stringify([name, args, status, partial.length, result ? textOf(result.content).length : -1, approval?.approvalId, outcome, [...this.approvalBusy], dropped]);
    if (key === this.key) return;
    this.key = key;

    this.el.className = `tool-card status-${status}`;
    // Open while something is to be seen or decided; the user's own toggling wins after that.
    const open = status === "approval" || status === "error" || name === "bash" || (EDIT_TOOLS.has(name) && status !== "streaming");
    if (!this.userToggled && open !== this.autoOpen) {
      this.el.open = open;
      this.autoOpen = open;
    }
    if (status === "approval") this.el.open = true;

    clear(this.header);
    const statusIcon =
      status === "running" || status === "streaming"
        ? spinner()
        : status === "approval"
          ? icon("shield", "icon status-icon")
          : status === "error"
            ? icon("error", "icon status-icon")
            : icon("check", "icon status-icon");
    append(this.header, [
      statusIcon,
      icon(toolIcon(name), "icon tool-icon"),
      h("span", { className: "tool-name" }, name),
      h("span", { className: "tool-summary", title: toolSummary(name, args) }, toolSummary(name, args)),
      outcome && outcome !== "allow_once"
        ? h("span", { className: `badge outcome-${outcome}` }, outcome === "partial" ? "some hunks" : outcome.replace("_", " "))
        : null,
    ]);

    clear(this.body);
    // A pending approval shows what the call would do (its diff or command): no need for both.
    if (!approval || (!approval.diff && !approval.command)) this.body.appendChild(this.renderArgs(name, args, result));
    if (approval) this.body.appendChild(this.renderApproval(approval));
    if (status === "running" && partial) {
      this.body.appendChild(h("pre", { className: "tool-output live" }, partial));
    } else if (status === "running" && name === "bash") {
      this.body.appendChild(h("div", { className: "tool-waiting" }, spinner(), "Running…"));
    }
    if (result) this.body.appendChild(this.renderResult(name, result, isError));
  }

  private renderArgs(name: string, args: Record<string, unknown>, result?: AgentToolResult): HTMLElement {
    if (name === "bash") {
      return h("pre", { className: "tool-args command" }, h("span", { className: "prompt" }, "$ "), str(args.command));
    }
    if (name === "edit" || name === "write") {
      const diff = (result?.details as { diff?: string } | undefined)?.diff;
      if (diff) return renderDiff(diff);
      if (name === "write" && typeof args.content === "string") {
        return h("pre", { className: "tool-args" }, args.content);
      }
    }
    const entries = Object.entries(args);
    if (!entries.length) return h("div", { className: "tool-args empty" });
    return h(
      "div",
      { className: "tool-args kv" },
      entries.map(([key, value]) =>
        h("div", { className: "kv-row" }, h("span", { className: "kv-key" }, key), h("span", { className: "kv-value" }, str(value))),
      ),
    );
  }

  private renderResult(name: string, result: AgentToolResult, isError: boolean): HTMLElement {
    const text = textOf(result.content);
    const details = result.details as { diff?: string; rejectedHunks?: string[] } | undefined;
    const hasDiff = EDIT_TOOLS.has(name) && !!details?.diff;
    if (isError) return h("pre", { className: "tool-output error", role: "alert" }, text || "Failed.");
    // The diff says what changed; a change applied in part also says which hunks were left out.
    if (hasDiff && details?.rejectedHunks?.length) return h("div", { className: "tool-result-note" }, text);
    if (hasDiff || !text) return h("div", { className: "tool-result-note" }, text && !hasDiff ? text : "");
    return h("pre", { className: `tool-output${name === "read" ? " file" : ""}` }, text);
  }

  private renderApproval(approval: ApprovalRequestEvent): HTMLElement {
    const busy = this.approvalBusy.has(approval.approvalId);
    const hunks = approval.hunks ?? [];
    const dropped = this.app.droppedHunks(approval.approvalId);
    const keptNone = hunks.length > 0 && hunks.every((hunk) => dropped.has(hunk.id));
    const card = h("div", { className: "approval", "data-approval-id": approval.approvalId, role: "group", "aria-label": approval.title });
    card.appendChild(h("div", { className: "approval-title" }, icon("shield"), h("span", null, approval.title)));
    if (approval.diff && hunks.length > 1) {
      card.appendChild(this.renderHunks(approval, dropped));
    } else if (approval.diff) {
      card.appendChild(renderDiff(approval.diff));
    } else if (approval.command) {
      card.appendChild(h("pre", { className: "tool-args command" }, h("span", { className: "prompt" }, "$ "), approval.command));
    }
    // Why the user is asked where the mode alone would not have (a rule, a line tiller cannot check).
    if (approval.reason) card.appendChild(h("div", { className: "approval-reason" }, approval.reason));
    const message = h("input", {
      type: "text",
      className: "reject-message",
      placeholder: dropped.size ? "Why not the unticked hunks? (optional, sent to the model)" : "Reason for rejecting (optional, sent to the model)",
      "aria-label": "Reason for rejecting",
      value: this.rejectMessage,
    });
    message.addEventListener("input", () => (this.rejectMessage = message.value));
    const buttons = h("div", { className: "approval-buttons" });
    for (const option of approval.options) {
      const primary = option.optionId === "allow_once";
      const allows = option.kind.startsWith("allow");
      const button = h(
        "button",
        {
          className: primary ? "primary" : option.kind.startsWith("reject") ? "secondary reject" : "secondary",
          "data-option-id": option.optionId,
          disabled: busy || (allows && keptNone),
          // An "always allow" for a command names the exact patterns it saves, and where.
          title: allows && keptNone ? "Keep at least one hunk, or reject" : option.rule?.path ? `${option.name} (saved in ${option.rule.path})` : option.name,
        },
        option.name,
      );
      button.addEventListener("click", () => {
        const text = message.value.trim();
        this.approvalBusy.add(approval.approvalId);
        // The reason goes with a rejection, and with an Allow that leaves hunks out.
        const explains = !allows || dropped.size > 0;
        this.app.post({
          type: "respondApproval",
          approvalId: approval.approvalId,
          optionId: option.optionId,
          ...(explains && text ? { message: text } : {}),
        });
        this.key = "";
        this.update();
      });
      buttons.appendChild(button);
    }
    if (approval.kind !== "execute" && approval.diff) {
      const view = h("button", { className: "link view-diff", "data-action": "view-diff", disabled: busy }, icon("diff"), "View diff");
      view.addEventListener("click", () => this.app.post({ type: "viewDiff", approvalId: approval.approvalId }));
      buttons.appendChild(view);
    }
    card.appendChild(buttons);
    if (dropped.size && !keptNone) {
      const kept = hunks.length - dropped.size;
      card.appendChild(
        h("div", { className: "hunk-note" }, `Allowing applies ${kept} of the ${hunks.length} hunks; the model is told which were left out, and why if you say so below.`),
      );
    }
    card.appendChild(message);
    return card;
  }

  /** The diff hunk by hunk, each with a checkbox to keep it (review per hunk). */
  private renderHunks(approval: ApprovalRequestEvent, dropped: Set<string>): HTMLElement {
    const hunks = approval.hunks ?? [];
    const parts = splitDiff(approval.diff ?? "").hunks;
    const box = h("div", { className: "hunks" });
    hunks.forEach((hunk, index) => {
      const keep = !dropped.has(hunk.id);
      const checkbox = h("input", { type: "checkbox", className: "hunk-keep", checked: keep, "data-hunk-id": hunk.id });
      checkbox.addEventListener("change", () => this.app.toggleHunk(approval.approvalId, hunk.id, checkbox.checked));
      const label = h("label", { className: "hunk-header" }, checkbox, h("span", null, `Hunk ${index + 1} of ${hunks.length}`), h("code", null, hunk.header));
      // The @@ line is in the label already.
      const body = (parts[index] ?? "").replace(/^@@ [^\n]*\n/, "");
      box.appendChild(h("div", { className: `hunk${keep ? "" : " dropped"}`, "data-hunk-id": hunk.id }, label, renderDiff(body)));
    });
    return box;
  }
}

interface RenderedMessage {
  message: AgentMessage;
  el: HTMLElement;
  assistant?: AssistantNode;
}

export class ChatApp {
  view: SessionView | null = null;
  readonly root: HTMLElement;
  private status: ServerStatus = "starting";
  private statusMessage = "";
  private notice: { level: string; message: string } | null = null;
  private contextItems: ContextChip[] = [];
  private rendered: RenderedMessage[] = [];
  private streamNode: AssistantNode | null = null;
  private cards = new Map<string, ToolCard>();
  /** Review per hunk: the hunks dropped from each pending approval (kept by the extension). */
  private dropped = new Map<string, Set<string>>();
  private dirtyCards = new Set<string>();
  private allDirty = true;
  private frame = 0;
  private stick = true;

  private banner: HTMLElement;
  private transcript: HTMLElement;
  private messagesEl: HTMLElement;
  private orphanApprovals: HTMLElement;
  private emptyEl: HTMLElement;
  private queueEl: HTMLElement;
  private chipsEl: HTMLElement;
  private input: HTMLTextAreaElement;
  private behavior: HTMLSelectElement;
  private stopButton: HTMLButtonElement;
  private sendButton: HTMLButtonElement;
  private modelButton: HTMLButtonElement;
  private modeButton: HTMLButtonElement;
  private meterEl: HTMLElement;
  private meterBar: HTMLMeterElement;
  private persisted: PersistedState;

  constructor(
    root: HTMLElement,
    private host: HostApi,
  ) {
    this.root = root;
    this.persisted = (host.getState() as PersistedState | undefined) ?? {};
    this.banner = h("div", { className: "banner", role: "status" });
    this.messagesEl = h("div", { className: "messages" });
    this.orphanApprovals = h("div", { className: "orphan-approvals" });
    this.emptyEl = h(
      "div",
      { className: "empty" },
      h("div", { className: "empty-logo" }, icon("sparkle", "icon big")),
      h("h2", null, "tiller"),
      h("p", null, "Ask the agent to read, change and run code in this workspace."),
      h("p", { className: "hint" }, "Add a selection or a file with “tiller: Add to Context”. Edits and commands wait for your approval."),
    );
    this.transcript = h("main", { className: "transcript", "aria-live": "polite" }, this.emptyEl, this.messagesEl, this.orphanApprovals);
    this.transcript.addEventListener("scroll", () => {
      const t = this.transcript;
      this.stick = t.scrollHeight - t.scrollTop - t.clientHeight < 40;
    });
    this.transcript.addEventListener("click", (event) => this.onTranscriptClick(event));

    this.queueEl = h("div", { className: "queue" });
    this.chipsEl = h("div", { className: "chips" });
    this.input = h("textarea", {
      className: "input",
      rows: 1,
      placeholder: "Ask tiller… (Enter to send, Shift+Enter for a new line)",
      "aria-label": "Message",
    });
    this.input.value = this.persisted.draft ?? "";
    this.input.addEventListener("keydown", (event) => this.onKeyDown(event));
    this.input.addEventListener("input", () => {
      this.autosize();
      this.persist({ draft: this.input.value });
      this.updateComposer();
    });
    this.behavior = h(
      "select",
      { className: "behavior", "aria-label": "While the agent works", title: "What a message sent while the agent works does" },
      h("option", { value: "steer" }, "Steer"),
      h("option", { value: "followUp" }, "Queue follow-up"),
    );
    this.behavior.value = this.persisted.behavior ?? "steer";
    this.behavior.addEventListener("change", () => this.persist({ behavior: this.behavior.value as "steer" | "followUp" }));
    this.stopButton = h("button", { className: "stop secondary", title: "Stop the agent (agent/abort)", "aria-label": "Stop" }, icon("stop"), "Stop");
    this.stopButton.addEventListener("click", () => this.post({ type: "stop" }));
    this.sendButton = h("button", { className: "send primary", title: "Send (Enter)", "aria-label": "Send" }, icon("send"));
    this.sendButton.addEventListener("click", () => this.send());
    this.modelButton = h("button", { className: "link model", title: "Select model" });
    this.modelButton.addEventListener("click", () => this.post({ type: "command", command: "selectModel" }));
    this.modeButton = h("button", { className: "link mode", title: "Set approval mode" });
    this.modeButton.addEventListener("click", () => this.post({ type: "command", command: "setApprovalMode" }));
    this.meterBar = h("meter", { className: "context-bar", min: 0, "aria-hidden": "true" });
    this.meterEl = h("span", { className: "context-meter", role: "status" });

    const composer = h(
      "footer",
      { className: "composer" },
      this.queueEl,
      this.chipsEl,
      h("div", { className: "input-box" }, this.input),
      // Two groups that wrap as wholes: in a narrow sidebar the run's controls go to a second
      // line rather than squeezing the model and mode links to a few pixels.
      h(
        "div",
        { className: "composer-bar" },
        h("div", { className: "composer-meta" }, this.modelButton, this.modeButton, h("span", { className: "context-group" }, this.meterBar, this.meterEl)),
        h("div", { className: "composer-actions" }, this.behavior, this.stopButton, this.sendButton),
      ),
    );
    append(root, [this.banner, this.transcript, composer]);
    this.autosize();
    this.render();
  }

  post(message: FromWebview): void {
    this.host.postMessage(message);
  }

  private persist(patch: PersistedState): void {
    this.persisted = { ...this.persisted, ...patch };
    this.host.setState(this.persisted);
  }

  // --- messages from the extension ----------------------------------------------------------

  receive(message: ToWebview): void {
    switch (message.type) {
      case "reset":
        this.reset(message.state);
        break;
      case "event":
        this.event(message.notification);
        break;
      case "status":
        this.status = message.status;
        this.statusMessage = message.message ?? "";
        this.schedule();
        break;
      case "context":
        this.contextItems = message.items;
        this.schedule();
        break;
      case "notice":
        this.notice = { level: message.level, message: message.message };
        this.schedule();
        break;
      case "hunks":
        this.dropped.set(message.approvalId, new Set(message.dropped));
        this.markApprovalDirty(message.approvalId);
        break;
      case "focus":
        this.input.focus();
        break;
    }
  }

  reset(state: SessionState | null): void {
    this.view = state ? viewFromState(state) : null;
    this.rendered = [];
    this.streamNode = null;
    this.cards.clear();
    clear(this.messagesEl);
    this.allDirty = true;
    this.notice = null;
    this.stick = true;
    this.schedule();
  }

  event(notification: AgentEventParams): void {
    const view = this.view;
    if (!view || notification.sessionId !== view.sessionId) return;
    if (notification.seq <= view.seq) return;
    if (notification.seq !== view.seq + 1) {
      this.post({ type: "resync" });
      return;
    }
    applyEvent(view, notification.event);
    view.seq = notification.seq;
    this.markDirty(notification.event);
    this.schedule();
  }

  private markDirty(event: WireEvent): void {
    switch (event.type) {
      case "tool_execution_start":
      case "tool_execution_update":
      case "tool_execution_end":
      case "approval_request":
      case "approval_resolved":
        this.dirtyCards.add(event.toolCallId);
        break;
      case "message_end":
        if (event.message.role === "toolResult") this.dirtyCards.add((event.message as ToolResultMessage).toolCallId);
        break;
      case "agent_end":
        this.allDirty = true;
        break;
    }
  }

  private schedule(): void {
    if (this.frame) return;
    const raf = typeof requestAnimationFrame === "function" ? requestAnimationFrame : (fn: () => void) => setTimeout(fn, 16);
    this.frame = raf(() => {
      this.frame = 0;
      this.render();
    }) as unknown as number;
  }

  /** Renders now (tests call it to skip the frame wait). */
  flush(): void {
    this.render();
  }

  droppedHunks(approvalId: string): Set<string> {
    return this.dropped.get(approvalId) ?? new Set();
  }

  /** The user (un)ticked a hunk: shown at once, and kept by the extension (which echoes it). */
  toggleHunk(approvalId: string, hunkId: string, keep: boolean): void {
    const dropped = new Set(this.droppedHunks(approvalId));
    if (keep) dropped.delete(hunkId);
    else dropped.add(hunkId);
    this.dropped.set(approvalId, dropped);
    this.post({ type: "toggleHunk", approvalId, hunkId, keep });
    this.markApprovalDirty(approvalId);
  }

  private markApprovalDirty(approvalId: string): void {
    const approval = this.view?.pendingApprovals.find((a) => a.approvalId === approvalId);
    if (approval) this.dirtyCards.add(approval.toolCallId);
    this.schedule();
  }

  toolCard(toolCallId: string, call?: ToolCallBlock): ToolCard {
    let card = this.cards.get(toolCallId);
    if (!card) {
      card = new ToolCard(this, toolCallId);
      this.cards.set(toolCallId, card);
      if (call) card.setCall(call);
    }
    return card;
  }

  // --- rendering ----------------------------------------------------------------------------

  private render(): void {
    const view = this.view;
    this.renderBanner();
    this.emptyEl.hidden = !!view && (view.messages.length > 0 || !!view.streamMessage);
    if (view) this.renderMessages(view);
    this.renderComposer();
    if (this.stick) this.transcript.scrollTop = this.transcript.scrollHeight;
  }

  private renderBanner(): void {
    clear(this.banner);
    const parts: (Node | string)[] = [];
    let kind = "";
    if (this.status === "starting") {
      kind = "info";
      parts.push(spinner(), h("span", null, this.statusMessage || "Starting tiller…"));
    } else if (this.status === "error" || this.status === "stopped") {
      kind = "error";
      const restart = h("button", { className: "link" }, "Restart server");
      restart.addEventListener("click", () => this.post({ type: "command", command: "restartServer" }));
      const log = h("button", { className: "link" }, "Show log");
      log.addEventListener("click", () => this.post({ type: "command", command: "showLog" }));
      const settings = h("button", { className: "link" }, "Settings");
      settings.addEventListener("click", () => this.post({ type: "command", command: "openSettings" }));
      parts.push(icon("error"), h("span", { className: "banner-text" }, this.statusMessage || "The tiller server is not running."), restart, log, settings);
    } else if (this.notice) {
      kind = this.notice.level;
      const close = h("button", { className: "icon-button", title: "Dismiss", "aria-label": "Dismiss" }, icon("close"));
      close.addEventListener("click", () => {
        this.notice = null;
        this.schedule();
      });
      parts.push(this.notice.level === "error" ? icon("error") : icon("sparkle"), h("span", { className: "banner-text" }, this.notice.message), close);
    } else if (this.view?.error && !this.view.isStreaming && !this.lastMessageShowsError()) {
      kind = "error";
      parts.push(icon("error"), h("span", { className: "banner-text" }, this.view.error));
    } else if (this.view?.warnings.length) {
      kind = "warning";
      parts.push(h("span", { className: "banner-text" }, this.view.warnings[this.view.warnings.length - 1]));
    }
    this.banner.className = `banner ${kind}`;
    this.banner.hidden = !kind;
    append(this.banner, parts);
  }

  private lastMessageShowsError(): boolean {
    const last = this.view?.messages[this.view.messages.length - 1];
    return !!last && last.role === "assistant" && (last as AssistantMessage).stopReason === "error";
  }

  private renderMessages(view: SessionView): void {
    const messages = view.messages;
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i];
      const existing = this.rendered[i];
      if (existing && existing.message === message) continue;
      let next: RenderedMessage;
      if (message.role === "assistant") {
        // The message that was streaming keeps its DOM (and the user's open <details>).
        const node = !existing && this.streamNode ? this.streamNode : existing?.assistant ?? new AssistantNode(this);
        if (node === this.streamNode) this.streamNode = null;
        node.update(message as AssistantMessage, false, this.runSummaryAt(i));
        next = { message, el: node.el, assistant: node };
      } else {
        next = { message, el: this.renderOther(message, i) };
      }
      if (existing) {
        if (existing.el !== next.el) existing.el.replaceWith(next.el);
      } else if (next.el.parentElement !== this.messagesEl) {
        this.messagesEl.appendChild(next.el);
      }
      this.rendered[i] = next;
      if (message.role === "toolResult") this.dirtyCards.add((message as ToolResultMessage).toolCallId);
    }
    for (const extra of this.rendered.splice(messages.length)) extra.el.remove();

    if (view.streamMessage) {
      if (!this.streamNode) {
        this.streamNode = new AssistantNode(this);
        this.messagesEl.appendChild(this.streamNode.el);
      }
      this.streamNode.update(view.streamMessage, true);
    } else if (this.streamNode) {
      this.streamNode.el.remove();
      this.streamNode = null;
    }

    const cards = this.allDirty ? [...this.cards.keys()] : [...this.dirtyCards];
    for (const id of cards) this.cards.get(id)?.update();
    this.allDirty = false;
    this.dirtyCards.clear();

    // Approvals whose tool call is not on screen (should not happen; never hide one).
    clear(this.orphanApprovals);
    for (const approval of view.pendingApprovals) {
      if (this.cards.has(approval.toolCallId)) continue;
      const card = this.toolCard(approval.toolCallId);
      card.update();
      this.orphanApprovals.appendChild(card.el);
    }
  }

  /** The usage of the run that message `index` ends (from the user message before it). */
  private runSummaryAt(index: number) {
    const messages = this.view!.messages;
    let start = index;
    while (start > 0 && messages[start - 1].role !== "user") start--;
    return summarizeRun(messages.slice(start, index + 1));
  }

  private renderOther(message: AgentMessage, index: number): HTMLElement {
    if (message.role === "user") {
      const user = message as UserMessage;
      const el = h("div", { className: "message user" });
      // The server checkpoints before each prompt; the extension finds the one of this message.
      const rewind = h("button", { className: "icon-button rewind", title: "Rewind to here", "aria-label": "Rewind to here" }, icon("rewind"));
      rewind.addEventListener("click", () => this.post({ type: "rewindTo", messageIndex: index }));
      el.appendChild(rewind);
      const blocks = typeof user.content === "string" ? [{ type: "text" as const, text: user.content }] : user.content;
      for (const block of blocks) {
        if (block.type !== "text") {
          el.appendChild(h("span", { className: "chip" }, "image"));
        } else if (block.text.startsWith("Attached from the editor:")) {
          const [first, ...rest] = block.text.split("\n");
          el.appendChild(
            h(
              "details",
              { className: "attachment" },
              h("summary", null, icon("file"), first.replace("Attached from the editor: ", "")),
              h("pre", null, rest.join("\n")),
            ),
          );
        } else {
          el.appendChild(h("div", { className: "user-text" }, block.text));
        }
      }
      return el;
    }
    if (message.role === "toolResult") {
      // Shown in the card of its tool call.
      const result = message as ToolResultMessage;
      if (this.cards.has(result.toolCallId)) return h("div", { hidden: true, className: "tool-result-anchor" });
      const card = this.toolCard(result.toolCallId);
      card.update();
      return h("div", { className: "message assistant" }, card.el);
    }
    return h("div", { className: "message custom" }, JSON.stringify(message));
  }

  // --- composer -----------------------------------------------------------------------------

  private renderComposer(): void {
    const view = this.view;
    // With the server down nothing streams, whatever the last state said.
    const streaming = !!view?.isStreaming && this.status === "ready";
    this.root.classList.toggle("is-streaming", streaming);
    this.behavior.hidden = !streaming;
    this.stopButton.hidden = !streaming;
    this.modelButton.textContent = view?.model || "no model";
    this.modelButton.hidden = !view;
    this.modeButton.textContent = view ? `approvals: ${view.approvalMode}` : "";
    this.modeButton.hidden = !view;
    this.renderMeter(view);
    this.input.placeholder = streaming
      ? this.behavior.value === "steer"
        ? "Steer the agent… (sent after the current tool)"
        : "Queue a follow-up… (runs when the agent is done)"
      : "Ask tiller… (Enter to send, Shift+Enter for a new line)";

    clear(this.queueEl);
    const queued = [
      ...(view?.queue.steering ?? []).map((text) => ["steer", text]),
      ...(view?.queue.followUp ?? []).map((text) => ["follow-up", text]),
    ];
    this.queueEl.hidden = !queued.length;
    if (queued.length) {
      for (const [kind, text] of queued) {
        this.queueEl.appendChild(h("div", { className: "queued" }, h("span", { className: "badge" }, kind), h("span", { className: "queued-text" }, text)));
      }
      const clearButton = h("button", { className: "link" }, "Clear queue");
      clearButton.addEventListener("click", () => this.post({ type: "clearQueue" }));
      this.queueEl.appendChild(clearButton);
    }

    clear(this.chipsEl);
    this.chipsEl.hidden = !this.contextItems.length;
    this.contextItems.forEach((item, index) => {
      const remove = h("button", { className: "icon-button", title: "Remove", "aria-label": `Remove ${item.label}` }, icon("close"));
      remove.addEventListener("click", () => this.post({ type: "removeContext", index }));
      this.chipsEl.appendChild(h("span", { className: "chip", title: item.detail ?? item.label }, icon("file"), h("span", null, item.label), remove));
    });
    this.updateComposer();
  }

  private renderMeter(view: SessionView | null): void {
    const text = view ? formatContextMeter(view) : "";
    this.meterEl.textContent = text;
    this.meterEl.hidden = !text;
    this.meterEl.title = view ? contextMeterTitle(view) : "";
    const context = view?.context;
    this.meterBar.hidden = !context;
    if (context) {
      // Past `high` (the compaction threshold) the bar changes colour: compaction is near.
      this.meterBar.max = Math.max(1, context.contextWindow);
      this.meterBar.high = context.compactAt;
      this.meterBar.optimum = 0;
      this.meterBar.value = context.tokens;
      this.meterBar.title = this.meterEl.title;
    }
  }

  private updateComposer(): void {
    this.sendButton.disabled = !this.input.value.trim() || this.status !== "ready" || !this.view;
  }

  private onKeyDown(event: KeyboardEvent): void {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      this.send();
    } else if (event.key === "Escape" && this.view?.isStreaming) {
      event.preventDefault();
      this.post({ type: "stop" });
    }
  }

  send(): void {
    const text = this.input.value.trim();
    if (!text || !this.view || this.status !== "ready") return;
    this.post(
      this.view.isStreaming ? { type: "send", text, behavior: this.behavior.value as "steer" | "followUp" } : { type: "send", text },
    );
    this.input.value = "";
    this.persist({ draft: "" });
    this.autosize();
    this.stick = true;
    this.updateComposer();
  }

  private autosize(): void {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight, 200)}px`;
  }

  private onTranscriptClick(event: Event): void {
    const target = event.target as HTMLElement | null;
    const link = target?.closest?.("a[href]") as HTMLAnchorElement | null;
    if (link) {
      event.preventDefault();
      this.post({ type: "openLink", href: link.getAttribute("href") ?? "" });
    }
  }
}
