// The extension's glue (controller, chat view, diff view, applyEdit middleware) with the
// `vscode` stand-in (test/vscode-stub.ts) and a scripted server connection. Approval events
// come from the recording of the real server (test/fixtures/session-events.json).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { beforeEach, test } from "node:test";

import * as vscode from "vscode";

import { applyEditAndSave, type ApplyWorkspaceEditParams } from "../../src/applyEdit";
import { ChatViewProvider } from "../../src/chatView";
import { SESSION_KEY, TillerController } from "../../src/controller";
import type { RpcConnection } from "../../src/protocol/client";
import type { AgentEventParams, ApprovalRequestEvent, SessionState, WireEvent } from "../../src/protocol/types";
import { PROPOSAL_SCHEME } from "../../src/proposals";
import type { FromWebview, ToWebview } from "../../src/webview/messages";
import { Position, Selection, stub, Uri } from "../vscode-stub";

const root = path.resolve(__dirname, "..", "..", ".."); // out/test/glue/ -> vscode-extension/
const fixture = JSON.parse(readFileSync(path.join(root, "test", "fixtures", "session-events.json"), "utf8")) as {
  initialState: SessionState;
  notifications: AgentEventParams[];
};
const approvalOf = (toolCallId: string) =>
  fixture.notifications.map((n) => n.event).find((e) => e.type === "approval_request" && e.toolCallId === toolCallId) as ApprovalRequestEvent;
const GREET = `def greet(name):\n    return "hi " + name\n\n\nif __name__ == "__main__":\n    print(greet("world"))\n`;

/** A server connection whose answers the test scripts, recording every request. */
class FakeServer implements RpcConnection {
  requests: { method: string; params: unknown }[] = [];
  private handler: ((params: AgentEventParams) => void) | null = null;
  seq = 0;
  sessionId = "s1";
  state: SessionState = { ...fixture.initialState, sessionId: "s1", seq: 0 };
  known = new Set<string>();

  async sendRequest<R>(method: string, params?: unknown): Promise<R> {
    this.requests.push({ method, params });
    const p = params as Record<string, string> | undefined;
    switch (method) {
      case "agent/newSession":
        this.known.add(this.sessionId);
        return { sessionId: this.sessionId, model: "faux/faux-1", tools: [], cwd: "/home/ada/project", approvalMode: "ask" } as R;
      case "agent/loadSession":
        if (!this.known.has(p!.sessionId)) throw Object.assign(new Error(`Unknown session: ${p!.sessionId}`), { code: -32001 });
        return { sessionId: p!.sessionId, model: "faux/faux-1", tools: [], cwd: "/home/ada/project", approvalMode: "ask" } as R;
      case "agent/getState":
        return { ...this.state, sessionId: p!.sessionId, seq: this.seq } as R;
      case "agent/prompt":
        return { stopReason: "queued", newMessages: [], usage: {} } as R;
      default:
        return {} as R;
    }
  }

  onNotification(_method: string, handler: (params: AgentEventParams) => void) {
    this.handler = handler;
    return { dispose: () => (this.handler = null) };
  }

  emit(event: WireEvent): void {
    this.seq++;
    this.handler?.({ sessionId: this.sessionId, seq: this.seq, event });
  }

  last(method: string): unknown {
    return [...this.requests].reverse().find((r) => r.method === method)?.params;
  }
}

class Memento {
  values = new Map<string, unknown>();
  get<T>(key: string): T | undefined {
    return this.values.get(key) as T | undefined;
  }
  async update(key: string, value: unknown): Promise<void> {
    this.values.set(key, value);
  }
  keys(): string[] {
    return [...this.values.keys()];
  }
}

interface Setup {
  controller: TillerController;
  server: FakeServer;
  posted: ToWebview[];
  panel: { visible: boolean };
  state: Memento;
}

async function setup(options: { visible?: boolean; state?: Memento } = {}): Promise<Setup> {
  const state = options.state ?? new Memento();
  const controller = new TillerController({ workspaceState: state as unknown as vscode.Memento, log: () => undefined });
  const posted: ToWebview[] = [];
  const panel = { visible: options.visible ?? true, postMessage: (m: ToWebview) => (posted.push(JSON.parse(JSON.stringify(m))), true) };
  controller.setPanel(panel);
  const server = new FakeServer();
  await controller.attach(server);
  return { controller, server, posted, panel, state };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

beforeEach(() => stub.reset());

test("attach opens a session, follows its events, and the status bar shows the model and the run", async () => {
  const { controller, server, posted, state } = await setup();
  assert.deepEqual(server.requests.map((r) => r.method), ["agent/newSession", "agent/getState"]);
  assert.equal(state.get(SESSION_KEY), "s1");
  assert.deepEqual(posted.map((m) => m.type), ["status", "reset"]);
  assert.equal(controller.statusBarText, "$(sparkle) faux/faux-1");

  server.emit({ type: "agent_start" });
  assert.equal(controller.statusBarText, "$(loading~spin) faux/faux-1");
  assert.deepEqual(posted.at(-1), { type: "event", notification: { sessionId: "s1", seq: 1, event: { type: "agent_start" } } });
  server.emit({ type: "session_state", model: "openai/gpt-4.1-mini", thinkingLevel: "off", steeringMode: "one_at_a_time", followUpMode: "one_at_a_time", approvalMode: "ask", toolExecution: "parallel" });
  assert.equal(controller.statusBarText, "$(loading~spin) openai/gpt-4.1-mini");

  // A reconnect (server restarted): the stored session is loaded again and the panel reset.
  controller.detach("stopped", "The tiller server stopped.");
  assert.deepEqual(posted.at(-1), { type: "status", status: "stopped", message: "The tiller server stopped." });
  assert.equal(controller.statusBarText, "$(error) tiller");
  const again = new FakeServer();
  again.known.add("s1");
  await controller.attach(again);
  assert.deepEqual(again.requests.map((r) => r.method), ["agent/loadSession", "agent/getState"]);
  assert.equal(posted.at(-1)!.type, "reset");
  controller.dispose();
});

test("Stop in the panel sends agent/abort; Send steers or queues while a run streams, with the editor context", async () => {
  const { controller, server } = await setup();
  await controller.handleWebviewMessage({ type: "send", text: "hello" });
  assert.deepEqual(server.last("agent/prompt"), { sessionId: "s1", text: "hello" });

  server.emit({ type: "agent_start" });
  const file = Uri.file("/home/ada/project/greet.py");
  stub.activeTextEditor = { document: stub.openDocument(file, GREET), selection: new Selection(new Position(0, 0), new Position(2, 0)) };
  controller.addSelectionToContext();
  assert.deepEqual(controller.pendingContext, [{ uri: file.toString(), range: { start: { line: 0, character: 0 }, end: { line: 2, character: 0 } } }]);
  await controller.handleWebviewMessage({ type: "send", text: "use f-strings", behavior: "steer" });
  assert.deepEqual(server.last("agent/prompt"), {
    sessionId: "s1",
    text: "use f-strings",
    context: [{ uri: file.toString(), range: { start: { line: 0, character: 0 }, end: { line: 2, character: 0 } } }],
    streamingBehavior: "steer",
  });
  assert.deepEqual(controller.pendingContext, [], "the context goes with one prompt");
  await controller.handleWebviewMessage({ type: "send", text: "then a test", behavior: "followUp" });
  assert.deepEqual(server.last("agent/prompt"), { sessionId: "s1", text: "then a test", streamingBehavior: "followUp" });

  await controller.handleWebviewMessage({ type: "stop" });
  assert.deepEqual(server.last("agent/abort"), { sessionId: "s1" });
  await controller.handleWebviewMessage({ type: "clearQueue" });
  assert.deepEqual(server.last("agent/clearQueue"), { sessionId: "s1" });
  controller.dispose();
});

/** The links of a notice's text ([label](command:id?args)), as VS Code renders them. */
function noticeLinks(title: string): { label: string; command: string; args: unknown[] }[] {
  return [...title.matchAll(/\[([^\]]+)\]\(command:([^?)]+)\?([^)]*)\)/g)].map((m) => ({
    label: m[1],
    command: m[2],
    args: JSON.parse(decodeURIComponent(m[3])) as unknown[],
  }));
}

/** Clicks the link `label` of a notice: VS Code runs its command with its arguments. */
async function clickLink(notice: { title: string }, label: string): Promise<void> {
  const link = noticeLinks(notice.title).find((l) => l.label === label);
  assert.ok(link, `no link ${label} in ${notice.title}`);
  await vscode.commands.executeCommand(link.command, ...link.args);
}

test("View diff opens vscode.diff between the open document and the proposed text, and offers the same choices", async () => {
  const { controller, server } = await setup();
  const approval = approvalOf("call_edit");
  const file = Uri.file(approval.path!);
  stub.openDocument(file, GREET); // the editor's text (what the diff applies to)
  server.emit({ type: "agent_start" });
  server.emit(approval);

  await controller.handleWebviewMessage({ type: "viewDiff", approvalId: approval.approvalId });
  const diff = stub.commands.find((c) => c.command === "vscode.diff")!;
  assert.ok(diff, "vscode.diff was run");
  const [left, right, title] = diff.args as [Uri, Uri, string];
  assert.equal(left.toString(), file.toString(), "the left side is the file itself");
  assert.equal(right.scheme, PROPOSAL_SCHEME);
  assert.equal(right.path, approval.path, "the proposal keeps the file's path (language, icon)");
  assert.equal(title, "greet.py (current) ↔ proposed by tiller");
  assert.equal(
    controller.proposals.provideTextDocumentContent(right as unknown as vscode.Uri),
    GREET.replace('return "hi " + name', 'return f"Hello, {name}!"'),
  );
  // The one-off choices in a notification next to the diff (the panel has the "always" ones).
  const notice = stub.progress.at(-1)!;
  assert.match(notice.title, /^Edit greet\.py: /);
  assert.deepEqual(noticeLinks(notice.title).map((l) => l.label), ["Allow once", "Reject", "Reject with Message…", "More…"]);
  assert.deepEqual(noticeLinks(notice.title).at(-1), { label: "More…", command: "tiller.chat.focus", args: [] });
  await clickLink(notice, "Allow once");
  assert.deepEqual(server.last("agent/respondApproval"), { sessionId: "s1", approvalId: approval.approvalId, optionId: "allow_once" });

  // Once answered, the diff tab is closed, the notification goes and the proposal is forgotten.
  stub.tabs.push({ input: { original: left, modified: right } });
  assert.equal(notice.closed, false);
  server.emit({ type: "approval_resolved", approvalId: approval.approvalId, toolCallId: "call_edit", outcome: "selected", optionId: "allow_once" });
  await settle();
  assert.equal(stub.closedTabs.length, 1);
  assert.equal(notice.closed, true);
  assert.equal(controller.proposals.provideTextDocumentContent(right as unknown as vscode.Uri), "");
  controller.dispose();
});

test("View diff of a new file compares with an empty document; a rejection can carry a message", async () => {
  const { controller, server } = await setup();
  const approval = approvalOf("call_write");
  server.emit({ type: "agent_start" });
  server.emit(approval);
  stub.answerInputBox = () => "Not yet";

  await controller.handleWebviewMessage({ type: "viewDiff", approvalId: approval.approvalId });
  const [left, right] = stub.commands.find((c) => c.command === "vscode.diff")!.args as [Uri, Uri];
  assert.equal(left.scheme, PROPOSAL_SCHEME, "no file yet: the left side is an empty virtual document");
  assert.equal(controller.proposals.provideTextDocumentContent(left as unknown as vscode.Uri), "");
  assert.equal(
    controller.proposals.provideTextDocumentContent(right as unknown as vscode.Uri),
    'from greet import greet\n\n\ndef test_greet():\n    assert greet("Ada") == "Hello, Ada!"\n',
  );
  await clickLink(stub.progress.at(-1)!, "Reject with Message…");
  assert.deepEqual(server.last("agent/respondApproval"), {
    sessionId: "s1",
    approvalId: approval.approvalId,
    optionId: "reject_once",
    message: "Not yet",
  });
  controller.dispose();
});

test("a diff that no longer applies is shown as the raw diff; a notice answered elsewhere goes, and a late click does nothing", async () => {
  const { controller, server } = await setup();
  // Without the full proposed text (`newText`), the panel has only the diff to apply.
  const { newText: _proposed, ...approval } = approvalOf("call_edit");
  stub.openDocument(Uri.file(approval.path!), "the user rewrote everything\n");
  server.emit(approval);
  await controller.handleWebviewMessage({ type: "viewDiff", approvalId: approval.approvalId });
  assert.equal(stub.commands.filter((c) => c.command === "vscode.diff").length, 0);
  assert.deepEqual(stub.shownDocuments.length, 1, "the raw diff opened instead");
  const notice = stub.progress.at(-1)!;
  // Answered in the panel while the notification is on screen.
  server.emit({ type: "approval_resolved", approvalId: approval.approvalId, toolCallId: "call_edit", outcome: "selected", optionId: "reject_once" });
  await settle();
  assert.equal(notice.closed, true, "the notification went with the approval");
  await clickLink(notice, "Allow once");
  assert.equal(server.last("agent/respondApproval"), undefined, "nothing sent for an approval already answered");
  assert.deepEqual(stub.infoMessages.at(-1), { message: "tiller: that approval was already answered.", items: [] });
  controller.dispose();
});

test("an approval while the panel is hidden raises a notification that lasts until it is answered", async () => {
  const { controller, server } = await setup({ visible: false });
  const approval = approvalOf("call_bash");
  server.emit(approval);
  await settle();
  const notice = stub.progress.at(-1)!;
  assert.match(notice.title, /^tiller needs your approval: Run for i in 1 2 3/);
  assert.deepEqual(noticeLinks(notice.title).map((l) => l.label), ["Show"]);
  await clickLink(notice, "Show");
  assert.ok(stub.commands.some((c) => c.command === "tiller.chat.focus"));
  assert.equal(notice.closed, false, "still waiting for an answer");
  server.emit({ type: "approval_resolved", approvalId: approval.approvalId, toolCallId: "call_bash", outcome: "selected", optionId: "allow_once" });
  await settle();
  assert.equal(notice.closed, true);
  controller.dispose();
});

test("review per hunk: the panel and the diff's hover links share the choice, and Allow sends acceptedHunks", async () => {
  const { controller, server, posted } = await setup();
  const approval: ApprovalRequestEvent = {
    ...approvalOf("call_edit"),
    approvalId: "a-hunks",
    hunks: [
      { id: "h1", header: "@@ -1,6 +1,6 @@", oldStart: 1, oldLines: 6, newStart: 1, newLines: 6 },
      { id: "h2", header: "@@ -17,8 +17,9 @@", oldStart: 17, oldLines: 8, newStart: 17, newLines: 9 },
    ],
  };
  server.emit({ type: "agent_start" });
  server.emit(approval);
  await controller.handleWebviewMessage({ type: "toggleHunk", approvalId: "a-hunks", hunkId: "h1", keep: false });
  assert.deepEqual(posted.at(-1), { type: "hunks", approvalId: "a-hunks", dropped: ["h1"] });
  // The diff editor's hover link (a command) changes the same choice, and the panel hears of it.
  await vscode.commands.executeCommand("tiller.approval.toggleHunk", "a-hunks", "h1", true);
  assert.deepEqual(posted.at(-1), { type: "hunks", approvalId: "a-hunks", dropped: [] });
  await vscode.commands.executeCommand("tiller.approval.toggleHunk", "a-hunks", "h2", false);

  // A reloaded panel gets the choice back with the state (which has the approval pending).
  server.state = { ...server.state, isStreaming: true, pendingApprovals: [approval] };
  await controller.handleWebviewMessage({ type: "ready" });
  assert.deepEqual(posted.slice(-2).map((m) => m.type), ["reset", "hunks"]);

  await controller.handleWebviewMessage({ type: "respondApproval", approvalId: "a-hunks", optionId: "allow_once", message: "not the tail" });
  assert.deepEqual(server.last("agent/respondApproval"), {
    sessionId: "s1",
    approvalId: "a-hunks",
    optionId: "allow_once",
    message: "not the tail",
    acceptedHunks: ["h1"],
  });
  server.emit({ type: "approval_resolved", approvalId: "a-hunks", toolCallId: "call_edit", outcome: "selected", optionId: "allow_once", acceptedHunks: ["h1"] });
  assert.deepEqual(controller.hunks.droppedOf("a-hunks"), [], "forgotten once answered");
  assert.equal(controller.view!.approvalOutcomes.call_edit, "partial");
  // A hover link clicked after the answer does nothing but say so.
  await vscode.commands.executeCommand("tiller.approval.toggleHunk", "a-hunks", "h1", false);
  assert.deepEqual(controller.hunks.droppedOf("a-hunks"), []);
  assert.deepEqual(stub.infoMessages.at(-1), { message: "tiller: that approval was already answered.", items: [] });

  // A reject never carries hunks; an approval with nothing dropped is allowed whole.
  server.emit({ ...approval, approvalId: "a-2" });
  await controller.handleWebviewMessage({ type: "toggleHunk", approvalId: "a-2", hunkId: "h2", keep: false });
  await controller.respondApproval("a-2", "reject_once");
  assert.deepEqual(server.last("agent/respondApproval"), { sessionId: "s1", approvalId: "a-2", optionId: "reject_once" });
  controller.dispose();
});

test("the applyEdit middleware lets the client apply the edit, then saves every edited document", async () => {
  const open = Uri.file("/home/ada/project/greet.py");
  const created = Uri.file("/home/ada/project/test_greet.py");
  stub.openDocument(open, "edited\n", true);
  stub.openDocument(created, "new\n", true);
  const params: ApplyWorkspaceEditParams = {
    label: "tiller: edit greet.py",
    edit: {
      documentChanges: [
        { textDocument: { uri: open.toString() }, edits: [] },
        { kind: "create", uri: created.toString() },
        { textDocument: { uri: created.toString() }, edits: [] },
      ],
    },
  };
  const calls: unknown[] = [];
  const result = await applyEditAndSave(params, async (p) => {
    calls.push(p);
    return { applied: true };
  });
  assert.deepEqual(result, { applied: true });
  assert.deepEqual(calls, [params], "the client's own handling (vscode.workspace.applyEdit) ran first");
  assert.deepEqual(stub.saved.sort(), [created.toString(), open.toString()].sort());

  // A refused edit (the user typed meanwhile: stale version) is not saved.
  stub.saved = [];
  const refused = await applyEditAndSave(params, async () => ({ applied: false, failureReason: "version mismatch" }));
  assert.deepEqual(refused, { applied: false, failureReason: "version mismatch" });
  assert.deepEqual(stub.saved, []);
});

test("the chat view serves the page with a CSP nonce and routes its messages", async () => {
  const { controller, server } = await setup();
  const listeners: ((m: FromWebview) => unknown)[] = [];
  const posted: ToWebview[] = [];
  const webview = {
    options: {} as { enableScripts?: boolean; localResourceRoots?: Uri[] },
    html: "",
    cspSource: "vscode-webview://1234",
    asWebviewUri: (uri: Uri) => Uri.from({ scheme: "vscode-webview", authority: "1234", path: uri.path }),
    postMessage: async (m: ToWebview) => (posted.push(m), true),
    onDidReceiveMessage: (fn: (m: FromWebview) => unknown) => (listeners.push(fn), { dispose() {} }),
  };
  const view = { webview, visible: true, show() {}, onDidDispose: () => ({ dispose() {} }) };
  const provider = new ChatViewProvider(Uri.file("/ext") as unknown as vscode.Uri, controller);
  provider.resolveWebviewView(view as unknown as vscode.WebviewView);

  assert.equal(webview.options.enableScripts, true);
  assert.deepEqual(webview.options.localResourceRoots!.map((u) => u.path), ["/ext/dist", "/ext/media"]);
  const nonce = /script-src 'nonce-([A-Za-z0-9]+)'/.exec(webview.html)![1];
  assert.match(webview.html, new RegExp(`<script nonce="${nonce}" src="vscode-webview://1234/ext/dist/webview.js"></script>`));
  assert.match(webview.html, /default-src 'none'; style-src vscode-webview:\/\/1234;/);
  assert.doesNotMatch(webview.html, /https?:\/\//, "nothing remote");

  await listeners[0]({ type: "ready" });
  assert.deepEqual(posted.map((m) => m.type), ["status", "context", "reset"]);
  await listeners[0]({ type: "stop" });
  assert.deepEqual(server.last("agent/abort"), { sessionId: "s1" });
  await listeners[0]({ type: "openLink", href: "javascript:alert(1)" });
  await listeners[0]({ type: "openLink", href: "https://docs.python.org/3/" });
  assert.deepEqual(stub.externalOpened, ["https://docs.python.org/3/"]);
  await listeners[0]({ type: "command", command: "selectModel" });
  assert.equal(stub.commands.at(-1)!.command, "tiller.selectModel");
  provider.dispose();
  controller.dispose();
});

test("commands: select model, approval mode and resume session go through quick picks", async () => {
  const { controller, server } = await setup();
  server.sendRequest = (async (method: string, params?: unknown) => {
    server.requests.push({ method, params });
    if (method === "agent/listModels") {
      return {
        default: "faux/faux-1",
        models: [
          { provider: "faux", id: "faux-1", name: "Faux", api: "faux", reasoning: false, input: ["text"], contextWindow: 1, maxTokens: 1, hasKey: true, ready: true },
          { provider: "openai", id: "gpt-4.1-mini", name: "GPT-4.1 mini", api: "openai", reasoning: false, input: ["text"], contextWindow: 1, maxTokens: 1, hasKey: false, ready: false, setupHint: "set OPENAI_API_KEY" },
        ],
      };
    }
    if (method === "agent/listSessions") {
      return {
        sessions: [
          // The current session, with no message yet: the server knows no date for it (0).
          { sessionId: "s1", cwd: "/p", model: "faux/faux-1", isStreaming: false, messageCount: 0, title: "(new session)", updatedAt: 0, loaded: true },
          { sessionId: "old", cwd: "/p", model: "faux/faux-1", isStreaming: false, messageCount: 4, title: "Fix the bug", updatedAt: Date.UTC(2026, 0, 2), loaded: false },
        ],
      };
    }
    if (method === "agent/getState") return { ...server.state, sessionId: (params as { sessionId: string }).sessionId, seq: 0 };
    return {};
  }) as FakeServer["sendRequest"];

  stub.answerQuickPick = (items) => items[1];
  await controller.selectModel();
  assert.deepEqual(server.last("agent/setModel"), { sessionId: "s1", model: "openai/gpt-4.1-mini" });
  assert.match(JSON.stringify(stub.quickPicks.at(-1)), /set OPENAI_API_KEY/);
  await controller.setApprovalMode();
  assert.deepEqual(server.last("agent/setApprovalMode"), { sessionId: "s1", mode: "acceptEdits" });
  stub.answerQuickPick = (items) => items[1];
  await controller.resumeSession();
  const details = (stub.quickPicks.at(-1) as { detail: string }[]).map((item) => item.detail);
  assert.deepEqual(details, ["no messages yet · current", new Date(Date.UTC(2026, 0, 2)).toLocaleString()]);
  assert.deepEqual(server.last("agent/loadSession"), { sessionId: "old" });
  assert.equal(controller.sessionId, "old");
  controller.dispose();
});

test("Set Approval Mode offers plan; Command Rules… lists the saved rules and removes the one picked", async () => {
  const { controller, server } = await setup();
  const rules = {
    session: { allow: ["git log *"], ask: [], deny: [], readOnly: [] },
    project: { path: "/home/ada/project/.tiller/settings.json", trusted: true, rules: { allow: ["pytest *", "npm test"], ask: [], deny: ["git push *"], readOnly: [] } },
    user: { path: "/home/ada/.config/tiller/settings.json", rules: { allow: [], ask: [], deny: ["rm -rf *"], readOnly: ["make -n *"] } },
    builtInReadOnly: ["ls", "cat *"],
  };
  server.sendRequest = (async (method: string, params?: unknown) => {
    server.requests.push({ method, params });
    if (method === "agent/getRules" || method === "agent/setRules") return rules;
    if (method === "agent/getState") return { ...server.state, sessionId: "s1", seq: 0 };
    return {};
  }) as FakeServer["sendRequest"];

  stub.answerQuickPick = (items) => (items as { mode: string }[]).find((m) => m.mode === "plan") as never;
  await controller.setApprovalMode();
  assert.deepEqual(server.last("agent/setApprovalMode"), { sessionId: "s1", mode: "plan" });

  stub.answerQuickPick = (items) => (items as { label: string }[]).find((i) => i.label === "pytest *") as never;
  stub.answerWarning = (_message, items) => items[0];
  await controller.manageRules();
  // Every saved rule, strictest list first; tiller's built-in read-only list is not the user's to remove.
  const listed = stub.quickPicks.at(-1) as { label: string; description: string; detail: string }[];
  assert.deepEqual(
    listed.map((i) => `${i.label} | ${i.description}`),
    ["git push * | deny · project", "rm -rf * | deny · user", "git log * | allow · session", "pytest * | allow · project", "npm test | allow · project", "make -n * | read-only (plan mode) · user"],
  );
  assert.equal(listed[3].detail, "/home/ada/project/.tiller/settings.json");
  assert.match(stub.warningMessages.at(-1)!.message, /pytest \*/);
  assert.deepEqual(server.last("agent/setRules"), {
    sessionId: "s1",
    scope: "project",
    rules: { allow: ["npm test"], ask: [], deny: ["git push *"], readOnly: [] },
  });

  // Dismissing the confirmation removes nothing.
  const sent = server.requests.filter((r) => r.method === "agent/setRules").length;
  stub.answerWarning = () => undefined;
  await controller.manageRules();
  assert.equal(server.requests.filter((r) => r.method === "agent/setRules").length, sent);
  controller.dispose();
});

test("MCP Tools… lists each MCP server's state, why a failed one failed, its tools, then the built-in tools", async () => {
  const { controller, server } = await setup();
  const listed = {
    tools: [
      { name: "read", description: "Read a file", readOnly: true },
      { name: "bash", description: "Run a command", readOnly: false },
      { name: "toolbox__echo", description: "Echo text", readOnly: true, server: "toolbox" },
    ],
    mcpServers: [
      { name: "toolbox", source: "session", state: "ready", transport: "stdio",
        tools: [{ name: "toolbox__echo", tool: "echo", description: "Echo text", readOnly: true }] },
      { name: "db", source: "config", state: "failed", transport: "http", message: "connection refused", tools: [] },
    ],
  };
  server.sendRequest = (async (method: string, params?: unknown) => {
    server.requests.push({ method, params });
    if (method === "agent/listTools") return listed;
    return {};
  }) as FakeServer["sendRequest"];
  stub.answerQuickPick = () => undefined;
  await controller.showTools();
  assert.deepEqual(server.last("agent/listTools"), { sessionId: "s1" });
  const items = stub.quickPicks.at(-1) as { label: string; description?: string; detail?: string }[];
  assert.deepEqual(
    items.map((i) => `${i.label} | ${i.description}`),
    [
      "$(pass) toolbox: ready | MCP server (stdio, session) · 1 tool",
      "toolbox__echo | toolbox tool · read-only",
      "$(error) db: failed | MCP server (http, config) · 0 tools",
      "read | built-in · read-only",
      "bash | built-in",
    ],
  );
  assert.equal(items[2].detail, "connection refused");
  controller.dispose();
});

test("rewind to here: the panel's action finds the message's checkpoint, rewinds what the user picks, and can undo", async () => {
  const { controller, server, posted } = await setup();
  const checkpoints = [
    { checkpointId: "c0", createdAt: 1, kind: "turn", messageCount: 0, title: "first", onCurrentBranch: true },
    { checkpointId: "c4", createdAt: 2, kind: "turn", messageCount: 4, title: "second", onCurrentBranch: true },
    { checkpointId: "old4", createdAt: 3, kind: "turn", messageCount: 4, title: "dropped", onCurrentBranch: false },
  ];
  server.sendRequest = (async (method: string, params?: unknown) => {
    server.requests.push({ method, params });
    if (method === "agent/listCheckpoints") return { checkpoints, available: true };
    if (method === "agent/rewind") {
      const p = params as { checkpointId: string };
      return { undoCheckpointId: p.checkpointId === "c4" ? "undo1" : "undo2", restored: ["a.txt"], deleted: ["b.txt"], skipped: [], messageCount: 4 };
    }
    if (method === "agent/getState") return { ...server.state, sessionId: "s1", seq: 0 };
    return {};
  }) as FakeServer["sendRequest"];

  stub.answerQuickPick = (items) => (items as { restore: string }[]).find((i) => i.restore === "files") as never;
  stub.answerInfo = (_message, items) => items.find((i) => i === "Undo Rewind");
  await controller.handleWebviewMessage({ type: "rewindTo", messageIndex: 4 });
  const rewinds = server.requests.filter((r) => r.method === "agent/rewind").map((r) => r.params);
  assert.deepEqual(rewinds, [
    { sessionId: "s1", checkpointId: "c4", restore: "files" },
    { sessionId: "s1", checkpointId: "undo1", restore: "files" },
  ]);
  assert.match(stub.infoMessages.at(-1)!.message, /rewound files \(2 files\)/);

  // A message with no checkpoint (taken in plan mode, say) says so and rewinds nothing.
  await controller.handleWebviewMessage({ type: "rewindTo", messageIndex: 2 });
  assert.equal(server.requests.filter((r) => r.method === "agent/rewind").length, 2);
  assert.match(stub.infoMessages.at(-1)!.message, /no checkpoint before this message/);
  assert.ok(!posted.some((m) => m.type === "notice" && m.level === "error"));
  controller.dispose();
});
