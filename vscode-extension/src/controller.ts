// The extension's state and behaviour between the server connection (any RpcConnection: the
// LanguageClient in VS Code, a fake in tests), the chat panel, the status bar and the commands.
import * as path from "node:path";
import * as vscode from "vscode";

import { ApprovalNotices, type NoticeLink } from "./approvalNotices";
import { removableRules, rulesWithout, type RuleItem } from "./commandRules";
import { toolItems } from "./toolList";
import { DiffApplyError } from "./diff";
import { HunkChoices } from "./hunkChoices";
import { TillerClient, type RpcConnection } from "./protocol/client";
import type { SessionView } from "./protocol/reducer";
import { SessionSync } from "./protocol/sync";
import {
  ErrorCodes,
  type ApprovalMode,
  type ToolExecution,
  type ApprovalOptionId,
  type ApprovalRequestEvent,
  type EditorContext,
  type RewindParams,
  type ThinkingLevel,
} from "./protocol/types";
import { closeProposalTabs, proposalDocuments, ProposalProvider } from "./proposals";
import type { ContextChip, FromWebview, ServerStatus, ToWebview } from "./webview/messages";

export const SESSION_KEY = "tiller.sessionId";

const REWIND_CHOICES: { label: string; description: string; restore: RewindParams["restore"] }[] = [
  { label: "Files and conversation", description: "Back to before this message ran", restore: "both" },
  { label: "Files only", description: "Undo the changes to files since this message; keep the conversation", restore: "files" },
  { label: "Conversation only", description: "Drop this message and what followed; keep the files", restore: "conversation" },
];

/** Where the controller posts panel messages (the WebviewView's webview, or a test double). */
export interface PanelSink {
  postMessage(message: ToWebview): Thenable<boolean> | boolean;
  readonly visible: boolean;
  reveal?(): void;
}

export interface ControllerOptions {
  workspaceState: vscode.Memento;
  log(message: string): void;
}

interface ContextItem {
  chip: ContextChip;
  context: EditorContext;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : typeof error === "object" && error && "message" in error ? String((error as { message: unknown }).message) : String(error);
}

function errorCode(error: unknown): number | undefined {
  return typeof error === "object" && error && "code" in error ? Number((error as { code: unknown }).code) : undefined;
}

export class TillerController implements vscode.Disposable {
  client: TillerClient | null = null;
  sync: SessionSync | null = null;
  status: ServerStatus = "starting";
  statusMessage = "";
  readonly proposals = new ProposalProvider();
  /** Notifications about pending approvals; each goes when its approval is answered. */
  readonly notices = new ApprovalNotices();
  /** Review per hunk: the hunks dropped from pending approvals (panel and diff editor). */
  readonly hunks = new HunkChoices();
  private panel: PanelSink | null = null;
  private contextItems: ContextItem[] = [];
  private statusItem: vscode.StatusBarItem;
  private disposables: vscode.Disposable[] = [];
  private notifiedApprovals = new Set<string>();
  private sessionChanges = new vscode.EventEmitter<SessionView | null>();
  /** Fires when the followed session's view changes (status bar, tests). */
  readonly onDidChangeSession = this.sessionChanges.event;

  constructor(private options: ControllerOptions) {
    this.statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
    this.statusItem.name = "tiller";
    this.statusItem.command = "tiller.chat.focus";
    this.disposables.push(
      this.statusItem,
      this.proposals,
      this.notices,
      this.hunks,
      this.sessionChanges,
      this.hunks.onDidChange((approvalId) => this.post({ type: "hunks", approvalId, dropped: this.hunks.droppedOf(approvalId) })),
      // The links of the approval notices (not in the palette: they need an approval).
      vscode.commands.registerCommand("tiller.approval.viewDiff", (approvalId: string) => this.ifPending(approvalId, () => this.viewDiff(approvalId))),
      vscode.commands.registerCommand("tiller.approval.answer", (approvalId: string, optionId: ApprovalOptionId) =>
        this.ifPending(approvalId, () => this.respondApproval(approvalId, optionId)),
      ),
      vscode.commands.registerCommand("tiller.approval.rejectWithMessage", (approvalId: string) =>
        this.ifPending(approvalId, () => this.rejectWithMessage(approvalId)),
      ),
      vscode.commands.registerCommand("tiller.approval.toggleHunk", (approvalId: string, hunkId: string, keep: boolean) =>
        this.ifPending(approvalId, async () => this.hunks.set(approvalId, hunkId, keep)),
      ),
    );
    this.updateStatusBar();
    this.statusItem.show();
  }

  get view(): SessionView | null {
    return this.sync?.view ?? null;
  }

  get sessionId(): string | undefined {
    return this.sync?.sessionId;
  }

  // --- the server connection ----------------------------------------------------------------

  setStatus(status: ServerStatus, message = ""): void {
    this.status = status;
    this.statusMessage = message;
    this.post({ type: "status", status, message });
    this.updateStatusBar();
  }

  /** The server is up: use `connection` and open (or reopen) the session. */
  async attach(connection: RpcConnection): Promise<void> {
    this.detachClient();
    this.client = new TillerClient(connection);
    this.setStatus("ready");
    await this.openInitialSession();
  }

  /** The server went away (stopped, crashed, failed to start). */
  detach(status: ServerStatus, message = ""): void {
    this.detachClient();
    this.setStatus(status, message);
  }

  private detachClient(): void {
    this.notices.retain(() => false);
    this.sync?.dispose();
    this.sync = null;
    this.client?.dispose();
    this.client = null;
  }

  private async openInitialSession(): Promise<void> {
    const client = this.client!;
    const stored = this.options.workspaceState.get<string>(SESSION_KEY);
    if (stored) {
      try {
        await client.loadSession(stored);
        await this.follow(stored);
        return;
      } catch (error) {
        if (errorCode(error) !== ErrorCodes.SESSION_NOT_FOUND) this.options.log(`Could not reopen session ${stored}: ${errorMessage(error)}`);
      }
    }
    await this.newSession();
  }

  private async follow(sessionId: string): Promise<void> {
    const client = this.client;
    if (!client) throw new Error("The tiller server is not running.");
    this.sync?.dispose();
    this.notifiedApprovals.clear();
    this.notices.retain(() => false);
    const sync = new SessionSync(client, sessionId, {
      onReset: (view, state) => {
        this.post({ type: "reset", state });
        for (const approval of view.pendingApprovals) {
          const dropped = this.hunks.droppedOf(approval.approvalId);
          if (dropped.length) this.post({ type: "hunks", approvalId: approval.approvalId, dropped });
        }
        this.sessionChanges.fire(view);
        this.updateStatusBar();
        this.notices.retain((approvalId) => view.pendingApprovals.some((a) => a.approvalId === approvalId));
        for (const approval of view.pendingApprovals) this.announceApproval(approval);
      },
      onEvent: (view, notification) => {
        this.post({ type: "event", notification });
        const event = notification.event;
        if (event.type === "approval_request") this.announceApproval(event);
        if (event.type === "approval_resolved") {
          this.notices.close(event.approvalId);
          this.hunks.forget(event.approvalId);
          void closeProposalTabs(this.proposals, event.approvalId);
        }
        if (event.type === "persistence_error") this.options.log(`Session ${sessionId} could not be saved: ${event.message}`);
        if (["agent_start", "agent_end", "session_state"].includes(event.type)) this.updateStatusBar();
        this.sessionChanges.fire(view);
      },
      onSyncError: (error) => {
        this.options.log(`agent/getState failed for ${sessionId}: ${errorMessage(error)}`);
        this.notice("error", `Could not load the session: ${errorMessage(error)}`);
      },
    });
    this.sync = sync;
    await this.options.workspaceState.update(SESSION_KEY, sessionId);
    await sync.resync();
  }

  // --- the panel ----------------------------------------------------------------------------

  setPanel(panel: PanelSink | null): void {
    this.panel = panel;
  }

  private post(message: ToWebview): void {
    void this.panel?.postMessage(message);
  }

  private notice(level: "error" | "info", message: string): void {
    this.post({ type: "notice", level, message });
  }

  /** A panel (re)loaded: give it everything it shows. */
  private async panelReady(): Promise<void> {
    this.post({ type: "status", status: this.status, message: this.statusMessage });
    this.postContext();
    if (this.sync) await this.sync.resync();
    else this.post({ type: "reset", state: null });
  }

  async handleWebviewMessage(message: FromWebview): Promise<void> {
    try {
      switch (message.type) {
        case "ready":
        case "resync":
          await this.panelReady();
          break;
        case "send":
          await this.send(message.text, message.behavior);
          break;
        case "stop":
          await this.stop();
          break;
        case "respondApproval":
          await this.respondApproval(message.approvalId, message.optionId, message.message);
          break;
        case "viewDiff":
          await this.viewDiff(message.approvalId);
          break;
        case "toggleHunk":
          if (this.pendingApproval(message.approvalId)) this.hunks.set(message.approvalId, message.hunkId, message.keep);
          break;
        case "removeContext":
          this.contextItems.splice(message.index, 1);
          this.postContext();
          break;
        case "rewindTo":
          await this.rewindTo(message.messageIndex);
          break;
        case "clearQueue":
          if (this.sessionId) await this.requireClient().clearQueue(this.sessionId);
          break;
        case "command":
          await vscode.commands.executeCommand(
            message.command === "openSettings" ? "workbench.action.openSettings" : `tiller.${message.command}`,
            ...(message.command === "openSettings" ? ["@ext:tiller.tiller tiller."] : []),
          );
          break;
        case "openLink":
          if (/^(https?:|mailto:)/i.test(message.href)) await vscode.env.openExternal(vscode.Uri.parse(message.href));
          break;
      }
    } catch (error) {
      this.options.log(`${message.type} failed: ${errorMessage(error)}`);
      this.notice("error", errorMessage(error));
    }
  }

  // --- the session --------------------------------------------------------------------------

  private requireClient(): TillerClient {
    if (!this.client) throw new Error("The tiller server is not running. Run “tiller: Restart Server”.");
    return this.client;
  }

  private workspaceCwd(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  }

  /** Sends the text as a prompt; while a run streams, as steering or a follow-up. */
  async send(text: string, behavior?: "steer" | "followUp"): Promise<void> {
    const client = this.requireClient();
    if (!this.sessionId) await this.newSession();
    const sessionId = this.sessionId!;
    const context = this.contextItems.map((item) => item.context);
    this.contextItems = [];
    this.postContext();
    const streaming = this.view?.isStreaming ?? false;
    try {
      await client.prompt({
        sessionId,
        text,
        ...(context.length ? { context } : {}),
        ...(streaming || behavior ? { streamingBehavior: behavior ?? "steer" } : {}),
      });
    } catch (error) {
      if (errorCode(error) === ErrorCodes.REQUEST_CANCELLED) return;
      throw error;
    }
  }

  async stop(): Promise<void> {
    if (!this.sessionId || !this.client) return;
    await this.client.abort(this.sessionId);
  }

  async respondApproval(approvalId: string, optionId: ApprovalOptionId, message?: string): Promise<void> {
    const sessionId = this.sessionId;
    if (!sessionId) return;
    // Allowed with hunks dropped (in the panel or the diff editor): only the others apply.
    const approval = this.pendingApproval(approvalId);
    const acceptedHunks = approval && optionId.startsWith("allow") ? this.hunks.accepted(approval) : undefined;
    try {
      await this.requireClient().respondApproval({
        sessionId,
        approvalId,
        optionId,
        ...(message ? { message } : {}),
        ...(acceptedHunks ? { acceptedHunks } : {}),
      });
    } catch (error) {
      // Answered elsewhere (the panel and the diff's notification both offer it) or cancelled.
      if (errorCode(error) === ErrorCodes.APPROVAL_NOT_FOUND) return;
      throw error;
    }
  }

  /** A pending approval of the followed session. */
  pendingApproval(approvalId: string): ApprovalRequestEvent | undefined {
    return this.view?.pendingApprovals.find((a) => a.approvalId === approvalId);
  }

  /** Runs `action` if the approval still waits; a notice clicked too late says so instead. */
  private async ifPending(approvalId: string, action: () => Promise<void>): Promise<void> {
    if (!this.pendingApproval(approvalId)) {
      this.notices.close(approvalId);
      void vscode.window.showInformationMessage("tiller: that approval was already answered.");
      return;
    }
    await action();
  }

  /** Opens VS Code's diff editor for an edit/write approval and offers the same choices. */
  async viewDiff(approvalId: string): Promise<void> {
    const approval = this.pendingApproval(approvalId);
    if (!approval) return;
    let documents;
    try {
      documents = await proposalDocuments(this.proposals, approval);
    } catch (error) {
      if (!(error instanceof DiffApplyError)) throw error;
      // The file changed since the server read it: show the diff as the server sent it.
      this.options.log(`The proposed diff does not apply to the current text of ${approval.path}: ${error.message}`);
      const doc = await vscode.workspace.openTextDocument({ language: "diff", content: approval.diff ?? "" });
      await vscode.window.showTextDocument(doc, { preview: true });
      this.askInNotification(approval);
      return;
    }
    await vscode.commands.executeCommand("vscode.diff", documents.original, documents.proposed, documents.title, { preview: true });
    this.askInNotification(approval);
  }

  /**
   * The approval's choices in a notification next to its diff, until it is answered: the
   * one-off ones (a notification shows one line), and the panel for the "always" ones.
   */
  private askInNotification(approval: ApprovalRequestEvent): void {
    if (!this.pendingApproval(approval.approvalId)) return; // answered while the diff opened
    const links: NoticeLink[] = approval.options
      .filter((option) => option.kind === "allow_once" || option.kind === "reject_once")
      .map((option) => ({ label: option.name, command: "tiller.approval.answer", args: [approval.approvalId, option.optionId] }));
    links.push(
      { label: "Reject with Message…", command: "tiller.approval.rejectWithMessage", args: [approval.approvalId] },
      { label: "More…", command: "tiller.chat.focus", args: [] },
    );
    this.notices.show(approval.approvalId, "diff", `${approval.title}:`, links);
  }

  private async rejectWithMessage(approvalId: string): Promise<void> {
    const approval = this.pendingApproval(approvalId);
    if (!approval) return;
    const message = await vscode.window.showInputBox({
      title: approval.title,
      prompt: "Why not? The agent sees this message.",
      placeHolder: "e.g. keep the old name",
    });
    if (message === undefined) return;
    await this.respondApproval(approvalId, "reject_once", message);
  }

  /** When the panel is hidden, an approval would go unnoticed: say so, until it is answered. */
  private announceApproval(approval: ApprovalRequestEvent): void {
    if (this.notifiedApprovals.has(approval.approvalId) || this.panel?.visible) return;
    this.notifiedApprovals.add(approval.approvalId);
    const links: NoticeLink[] = [{ label: "Show", command: "tiller.chat.focus", args: [] }];
    if (approval.diff) links.push({ label: "View Diff", command: "tiller.approval.viewDiff", args: [approval.approvalId] });
    this.notices.show(approval.approvalId, "announce", `tiller needs your approval: ${approval.title}.`, links);
  }

  // --- commands -----------------------------------------------------------------------------

  async newSession(): Promise<void> {
    const client = this.requireClient();
    const previous = this.view;
    const result = await client.newSession({ ...(this.workspaceCwd() ? { cwd: this.workspaceCwd() } : {}) });
    await this.follow(result.sessionId);
    // The old one stays saved (Resume Session brings it back); stop hosting it if idle.
    if (previous && !previous.isStreaming && previous.sessionId !== result.sessionId) {
      client.closeSession(previous.sessionId).catch(() => undefined);
    }
  }

  async resumeSession(): Promise<void> {
    const client = this.requireClient();
    const { sessions } = await client.listSessions({ ...(this.workspaceCwd() ? { cwd: this.workspaceCwd() } : {}) });
    if (!sessions.length) {
      void vscode.window.showInformationMessage("tiller: no saved sessions for this workspace yet.");
      return;
    }
    const items = sessions.map((s) => ({
      label: s.title || "(no prompt yet)",
      description: `${s.model} · ${s.messageCount} messages${s.isStreaming ? " · running" : ""}`,
      // A session without a message has no date yet (updatedAt 0), not 1 January 1970.
      detail: [s.updatedAt ? new Date(s.updatedAt).toLocaleString() : "no messages yet", s.sessionId === this.sessionId ? "current" : ""]
        .filter(Boolean)
        .join(" · "),
      sessionId: s.sessionId,
    }));
    const picked = await vscode.window.showQuickPick(items, { title: "Resume a tiller session", matchOnDescription: true });
    if (!picked) return;
    await client.loadSession(picked.sessionId);
    await this.follow(picked.sessionId);
  }

  async selectModel(): Promise<void> {
    const client = this.requireClient();
    const { models, default: fallback } = await client.listModels();
    const current = this.view?.model ?? fallback;
    const items = models.map((m) => {
      const id = `${m.provider}/${m.id}`;
      return {
        label: `${id === current ? "$(check) " : ""}${id}`,
        description: [m.name !== m.id ? m.name : "", m.reasoning ? "reasoning" : ""].filter(Boolean).join(" · "),
        detail: !m.ready ? `$(warning) ${m.setupHint || "not ready"}` : m.hasKey ? undefined : "$(warning) no API key configured for this provider",
        id,
      };
    });
    const picked = await vscode.window.showQuickPick(items, { title: "Select the model of this tiller session", matchOnDescription: true });
    if (!picked || !this.sessionId) return;
    await client.setModel(this.sessionId, picked.id);
  }

  async setApprovalMode(): Promise<void> {
    const client = this.requireClient();
    const modes: { label: string; description: string; mode: ApprovalMode }[] = [
      { label: "ask", description: "Ask before every edit, write and command", mode: "ask" },
      { label: "acceptEdits", description: "Edits and writes go ahead; ask before commands", mode: "acceptEdits" },
      { label: "yolo", description: "Everything goes ahead without asking", mode: "yolo" },
      { label: "plan", description: "Explore and plan: no edits or writes, only read-only commands", mode: "plan" },
    ];
    const current = this.view?.approvalMode;
    const picked = await vscode.window.showQuickPick(
      modes.map((m) => ({ ...m, label: `${m.mode === current ? "$(check) " : ""}${m.label}` })),
      { title: "Approval mode of this tiller session" },
    );
    if (!picked || !this.sessionId) return;
    await client.setApprovalMode(this.sessionId, picked.mode);
  }

  async setToolExecution(): Promise<void> {
    const client = this.requireClient();
    const modes: { label: string; description: string; mode: ToolExecution }[] = [
      { label: "parallel", description: "A reply's tool calls run at once; changes of one file apply in call order", mode: "parallel" },
      { label: "sequential", description: "One tool call at a time", mode: "sequential" },
    ];
    const current = this.view?.toolExecution;
    const picked = await vscode.window.showQuickPick(
      modes.map((m) => ({ ...m, label: `${m.mode === current ? "$(check) " : ""}${m.label}` })),
      { title: "Tool execution of this tiller session" },
    );
    if (!picked || !this.sessionId) return;
    await client.setToolExecution(this.sessionId, picked.mode);
  }

  async setThinkingLevel(): Promise<void> {
    const client = this.requireClient();
    const levels: ThinkingLevel[] = ["off", "minimal", "low", "medium", "high", "xhigh"];
    const current = this.view?.thinkingLevel;
    const picked = await vscode.window.showQuickPick(
      levels.map((level) => ({ label: `${level === current ? "$(check) " : ""}${level}`, level })),
      { title: "Thinking level of this tiller session" },
    );
    if (!picked || !this.sessionId) return;
    await client.setThinkingLevel(this.sessionId, picked.level);
  }

  /** Shows the saved command rules; the one picked can be removed (agent/setRules). */
  async manageRules(): Promise<void> {
    const client = this.requireClient();
    const sessionId = this.sessionId;
    if (!sessionId) return;
    const rules = await client.getRules(sessionId);
    const items = removableRules(rules);
    if (!items.length) {
      void vscode.window.showInformationMessage("tiller: no command rules saved yet. “Always allow” in a command's approval saves one.");
      return;
    }
    const picked = await vscode.window.showQuickPick<RuleItem>(items, {
      title: "tiller command rules: pick one to remove it",
      matchOnDescription: true,
    });
    if (!picked) return;
    const confirm = `Remove “${picked.pattern}”`;
    const answer = await vscode.window.showWarningMessage(`${picked.label} (${picked.description}): remove this rule?`, { modal: true }, confirm);
    if (answer !== confirm) return;
    await client.setRules({ sessionId, scope: picked.scope, rules: rulesWithout(rules, picked) });
    void vscode.window.showInformationMessage(`tiller: removed the rule “${picked.pattern}”.`);
  }

  /** The session's tools and its MCP servers' states (agent/listTools), to look at. */
  async showTools(): Promise<void> {
    const client = this.requireClient();
    const sessionId = this.sessionId;
    if (!sessionId) return;
    const listed = await client.listTools(sessionId);
    await vscode.window.showQuickPick(toolItems(listed), { title: "tiller tools", matchOnDescription: true, matchOnDetail: true });
  }

  /** "Rewind to here" on the user message at `messageIndex`: back to the checkpoint taken
   * before it ran (files, conversation or both, as the user picks). */
  async rewindTo(messageIndex: number): Promise<void> {
    const client = this.requireClient();
    const sessionId = this.sessionId;
    if (!sessionId) return;
    const listed = await client.listCheckpoints(sessionId);
    const checkpoint = listed.checkpoints.find((c) => c.kind === "turn" && c.onCurrentBranch && c.messageCount === messageIndex);
    if (!checkpoint) {
      void vscode.window.showInformationMessage(
        listed.available ? "tiller: there is no checkpoint before this message (none is taken in plan mode or without tools that change files)." : `tiller: no checkpoints: ${listed.reason ?? "not available"}`,
      );
      return;
    }
    const picked = await vscode.window.showQuickPick(
      REWIND_CHOICES.map((c) => ({ ...c })),
      { title: `Rewind to before “${checkpoint.title}”` },
    );
    if (!picked) return;
    const restore = picked.restore;
    let result;
    try {
      result = await client.rewind({ sessionId, checkpointId: checkpoint.checkpointId, restore });
    } catch (error) {
      if (errorCode(error) !== ErrorCodes.REWIND_CONFLICT) throw error;
      const force = "Rewind Anyway";
      const answer = await vscode.window.showWarningMessage(errorMessage(error), { modal: true }, force);
      if (answer !== force) return;
      result = await client.rewind({ sessionId, checkpointId: checkpoint.checkpointId, restore, force: true });
    }
    const undo = "Undo Rewind";
    const changed = [...result.restored, ...result.deleted].length;
    const skipped = result.skipped.map((s) => `${s.path}: ${s.reason}`).join("; ");
    const answer = await vscode.window.showInformationMessage(
      `tiller: rewound ${restore === "both" ? "files and conversation" : restore}${restore !== "conversation" ? ` (${changed} files)` : ""}.${skipped ? ` Left: ${skipped}` : ""}`,
      undo,
    );
    if (answer === undo) await client.rewind({ sessionId, checkpointId: result.undoCheckpointId, restore });
  }

  /** Adds the active editor's selection (or, without one, its whole document) to the next prompt. */
  addSelectionToContext(editor: vscode.TextEditor | undefined = vscode.window.activeTextEditor): void {
    if (!editor) {
      void vscode.window.showInformationMessage("tiller: open a file and select some text first.");
      return;
    }
    const { document, selection } = editor;
    const name = path.basename(document.uri.path) || document.uri.toString();
    if (selection.isEmpty) {
      this.addContext({ label: name, detail: document.uri.fsPath || document.uri.toString() }, { uri: document.uri.toString() });
      return;
    }
    const { start, end } = selection;
    const lastLine = end.character === 0 && end.line > start.line ? end.line : end.line + 1;
    this.addContext(
      { label: `${name}:${start.line + 1}-${lastLine}`, detail: document.uri.fsPath || document.uri.toString() },
      {
        uri: document.uri.toString(),
        range: { start: { line: start.line, character: start.character }, end: { line: end.line, character: end.character } },
      },
    );
  }

  /** Adds files (from the explorer, or the active editor's) to the next prompt. */
  addFileToContext(uri?: vscode.Uri, uris?: vscode.Uri[]): void {
    const targets = uris?.length ? uris : uri ? [uri] : vscode.window.activeTextEditor ? [vscode.window.activeTextEditor.document.uri] : [];
    if (!targets.length) {
      void vscode.window.showInformationMessage("tiller: choose a file in the explorer or open one.");
      return;
    }
    for (const target of targets) {
      this.addContext({ label: path.basename(target.path), detail: target.fsPath || target.toString() }, { uri: target.toString() });
    }
  }

  private addContext(chip: ContextChip, context: EditorContext): void {
    if (this.contextItems.some((item) => JSON.stringify(item.context) === JSON.stringify(context))) return;
    this.contextItems.push({ chip, context });
    this.postContext();
    void vscode.commands.executeCommand("tiller.chat.focus").then(() => this.post({ type: "focus" }), () => undefined);
  }

  private postContext(): void {
    this.post({ type: "context", items: this.contextItems.map((item) => item.chip) });
  }

  /** The context the next prompt carries (tests). */
  get pendingContext(): EditorContext[] {
    return this.contextItems.map((item) => item.context);
  }

  // --- status bar ---------------------------------------------------------------------------

  private updateStatusBar(): void {
    const view = this.view;
    const item = this.statusItem;
    if (this.status === "starting") {
      item.text = "$(loading~spin) tiller";
      item.tooltip = "tiller: starting the server…";
    } else if (this.status !== "ready") {
      item.text = "$(error) tiller";
      item.tooltip = `tiller: ${this.statusMessage || "the server is not running"} (click to open the chat)`;
    } else if (view) {
      item.text = `${view.isStreaming ? "$(loading~spin)" : "$(sparkle)"} ${view.model}`;
      item.tooltip = `tiller ${view.isStreaming ? "is working" : "is idle"}\nModel: ${view.model}\nApprovals: ${view.approvalMode}\nTools: ${view.toolExecution}\nSession: ${view.sessionId}`;
    } else {
      item.text = "$(sparkle) tiller";
      item.tooltip = "tiller";
    }
  }

  /** The status bar's text (tests). */
  get statusBarText(): string {
    return this.statusItem.text;
  }

  dispose(): void {
    this.detachClient();
    for (const d of this.disposables) d.dispose();
  }
}
