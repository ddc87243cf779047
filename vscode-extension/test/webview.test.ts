// The chat webview (dist/webview.js + media/chat.css, in the page the extension serves, CSP
// included) in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core),
// fed an event stream recorded from the real server (test/fixtures/session-events.json).
// Saves screenshots to test-artifacts/ (the README's media/screenshot.png comes from the
// real-VS-Code suite, test/e2e/).
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { pathToFileURL } from "node:url";

import { chromium, type BrowserContext, type Page } from "playwright-core";

import { zeroUsage } from "../src/protocol/reducer";
import type { AgentEventParams, SessionState } from "../src/protocol/types";
import { makeNonce, renderWebviewHtml } from "../src/webview/html";
import type { FromWebview, ToWebview } from "../src/webview/messages";

const root = path.resolve(__dirname, "..", ".."); // out/test/ -> vscode-extension/
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const ARTIFACTS = path.join(root, "test-artifacts");
const fixture = JSON.parse(readFileSync(path.join(root, "test", "fixtures", "session-events.json"), "utf8")) as {
  initialState: SessionState;
  notifications: AgentEventParams[];
};

let context: BrowserContext;
let userDataDir: string;
let pageDir: string;

before(async () => {
  assert.ok(
    existsSync(CHROMIUM),
    `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) or set CHROMIUM_PATH`,
  );
  userDataDir = mkdtempSync(path.join(tmpdir(), "tiller-chromium-"));
  pageDir = mkdtempSync(path.join(tmpdir(), "tiller-webview-"));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
    viewport: { width: 420, height: 900 },
    deviceScaleFactor: 2,
    colorScheme: "dark",
  });
  mkdirSync(ARTIFACTS, { recursive: true });
});

after(async () => {
  await context?.close();
  rmSync(userDataDir, { recursive: true, force: true });
  rmSync(pageDir, { recursive: true, force: true });
});

interface Harness {
  page: Page;
  posted(): Promise<FromWebview[]>;
  send(message: ToWebview): Promise<void>;
  feed(notifications: AgentEventParams[]): Promise<void>;
  problems: string[];
}

async function openPanel(name: string): Promise<Harness> {
  const nonce = makeNonce();
  const html = renderWebviewHtml({
    cspSource: "file:",
    nonce,
    scriptUri: pathToFileURL(path.join(root, "dist", "webview.js")).href,
    styleUri: pathToFileURL(path.join(root, "media", "chat.css")).href,
  });
  const file = path.join(pageDir, `${name}.html`);
  writeFileSync(file, html);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  page.on("dialog", (dialog) => {
    problems.push(`a dialog opened: ${dialog.message()}`);
    void dialog.dismiss();
  });
  page.on("request", (request) => {
    if (!request.url().startsWith("file:")) problems.push(`a request left the page: ${request.url()}`);
  });
  // What VS Code gives a webview: acquireVsCodeApi (here recording what the page posts).
  await page.addInitScript(() => {
    const w = window as unknown as { __posted: unknown[]; __state: unknown; acquireVsCodeApi: () => unknown };
    w.__posted = [];
    w.__state = undefined;
    w.acquireVsCodeApi = () => ({
      postMessage: (message: unknown) => w.__posted.push(JSON.parse(JSON.stringify(message))),
      getState: () => w.__state,
      setState: (state: unknown) => (w.__state = state),
    });
  });
  await page.goto(pathToFileURL(file).href);
  // VS Code sets its theme's variables on <html>; a few, as the Dark Modern theme has them.
  await page.evaluate(() => {
    const style = document.documentElement.style;
    style.setProperty("--vscode-font-size", "13px");
    style.setProperty("--vscode-editor-font-size", "12px");
  });
  const harness: Harness = {
    page,
    problems,
    posted: () => page.evaluate(() => (window as unknown as { __posted: FromWebview[] }).__posted),
    async send(message) {
      await page.evaluate((m) => {
        window.postMessage(m, "*");
      }, message);
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0))));
    },
    async feed(notifications) {
      await page.evaluate((list) => {
        for (const notification of list) window.postMessage({ type: "event", notification }, "*");
      }, notifications);
      // Messages are delivered as tasks; then one frame renders the batch.
      await page.evaluate(() => new Promise((resolve) => setTimeout(() => requestAnimationFrame(() => resolve(null)), 0)));
    },
  };
  await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "ready"));
  return harness;
}

const events = fixture.notifications;
const indexOf = (predicate: (n: AgentEventParams) => boolean, from = 0) => {
  const i = events.findIndex((n, k) => k >= from && predicate(n));
  assert.ok(i >= 0, "the fixture has the expected event");
  return i;
};

test("the recorded stream renders: markdown while streaming, thinking, tool cards, approvals, usage", async () => {
  const panel = await openPanel("stream");
  const { page } = panel;
  await panel.send({ type: "status", status: "ready" });
  await panel.send({ type: "reset", state: fixture.initialState });
  assert.equal(await page.locator(".empty").isVisible(), true, "an empty session shows the welcome text");
  assert.equal(await page.locator("button.model").textContent(), "faux/faux-1");

  // Up to the middle of the first text block: it streams as markdown, with a cursor.
  const firstText = indexOf((n) => n.event.type === "message_update" && n.event.assistantMessageEvent.type === "text_delta");
  await panel.feed(events.slice(0, firstText + 1));
  assert.equal(await page.locator(".message.user .user-text").first().textContent(), "Make `greet` say hello politely and check that it works");
  assert.equal(await page.locator(".block-text.streaming").count(), 1);
  assert.equal(await page.locator("details.thinking").count(), 1);
  assert.equal(await page.locator("details.thinking").getAttribute("open"), null, "thinking is collapsed");
  assert.match((await page.locator("details.thinking .thinking-body").textContent()) ?? "", /polite greeting/);
  assert.equal(await page.locator("#app").evaluate((el) => el.classList.contains("is-streaming")), true);
  assert.equal(await page.locator("button.stop").isVisible(), true);

  // Up to the edit's approval: a card with the server's options and View diff.
  const editApproval = indexOf((n) => n.event.type === "approval_request" && n.event.toolCallId === "call_edit");
  await panel.feed(events.slice(firstText + 1, editApproval + 1));
  const firstInline = page.locator(".message.assistant .block-text code").first();
  assert.equal(await firstInline.textContent(), "greet.py", "inline code rendered as markdown");
  const readCard = page.locator('.tool-card[data-tool-call-id="call_read"]');
  assert.equal(await readCard.getAttribute("class"), "tool-card status-done");
  assert.match((await readCard.locator(".tool-summary").textContent()) ?? "", /greet\.py/);
  const approval = page.locator('.tool-card[data-tool-call-id="call_edit"] .approval');
  assert.equal(await approval.count(), 1);
  assert.deepEqual(await approval.locator(".approval-buttons button[data-option-id]").allTextContents(), [
    "Allow once",
    "Always allow edit in this session",
    "Reject",
    "Always reject edit in this session",
  ]);
  assert.equal(await approval.locator("pre.diff .add").textContent(), '+    return f"Hello, {name}!"\n');
  await approval.locator("button.view-diff").click();
  const approvalId = (events[editApproval].event as { approvalId: string }).approvalId;
  await approval.locator("input.reject-message").fill("Keep it short");
  await approval.locator('button[data-option-id="reject_once"]').click();
  const posted = await panel.posted();
  assert.deepEqual(posted.slice(-2), [
    { type: "viewDiff", approvalId },
    { type: "respondApproval", approvalId, optionId: "reject_once", message: "Keep it short" },
  ]);
  assert.equal(await approval.locator('button[data-option-id="allow_once"]').isDisabled(), true, "answered once");

  // The bash call streams its output live.
  const secondUpdate = indexOf((n) => n.event.type === "tool_execution_update" && JSON.stringify(n.event).includes("check 2"));
  await panel.feed(events.slice(editApproval + 1, secondUpdate + 1));
  const bashCard = page.locator('.tool-card[data-tool-call-id="call_bash"]');
  assert.equal(await bashCard.getAttribute("class"), "tool-card status-running");
  assert.equal(await bashCard.locator(".tool-output.live").textContent(), "check 1: Hello, world!\ncheck 2: Hello, world!\n");
  assert.match((await bashCard.locator(".tool-args.command").textContent()) ?? "", /^\$ for i in 1 2 3/);
  const editCard = page.locator('.tool-card[data-tool-call-id="call_edit"]');
  assert.equal(await editCard.locator(".approval").count(), 0, "the approval was resolved");
  assert.equal(await editCard.locator("pre.diff .del").textContent(), '-    return "hi " + name\n');

  // The end of the first run: the answer as markdown, model HTML escaped, usage.
  const end = indexOf((n) => n.event.type === "agent_end");
  await panel.feed(events.slice(secondUpdate + 1, end + 1));
  assert.equal(await bashCard.getAttribute("class"), "tool-card status-done");
  assert.equal(await bashCard.locator(".tool-output").textContent(), "check 1: Hello, world!\ncheck 2: Hello, world!\ncheck 3: Hello, world!\n");
  const answer = page.locator(".message.assistant").last();
  assert.equal(await answer.locator("h2").textContent(), "What changed");
  assert.equal(await answer.locator("li").count(), 2);
  assert.match((await answer.locator("pre code.language-python").textContent()) ?? "", /return f"Hello, \{name\}!"/);
  const answerText = (await answer.locator(".block-text").textContent()) ?? "";
  assert.ok(answerText.includes("<img src=x onerror=alert(1)>"), "the HTML is shown as text");
  assert.ok(answerText.includes('<script>alert("xss")</script>'));
  assert.equal(await page.locator(".transcript img, .transcript script, .transcript iframe").count(), 0);
  assert.equal(await page.locator("script").count(), 1, "only the extension's own script");
  assert.match((await answer.locator(".usage").textContent()) ?? "", /\d+ in · \d+ out/);
  assert.equal(await page.locator("#app").evaluate((el) => el.classList.contains("is-streaming")), false);
  assert.equal(await page.locator("button.stop").isVisible(), false);
  await answer.locator("a", { hasText: "Python docs" }).click();
  assert.deepEqual((await panel.posted()).at(-1), { type: "openLink", href: "https://docs.python.org/3/" });

  // The second run, waiting for the write approval: the state of the README screenshot.
  await panel.feed(events.slice(end + 1));
  const write = page.locator('.tool-card[data-tool-call-id="call_write"] .approval');
  assert.equal(await write.count(), 1);
  assert.match((await write.locator(".approval-title").textContent()) ?? "", /Create test_greet\.py/);
  assert.equal(await write.locator("pre.diff .add").count(), 5);
  await page.screenshot({ path: path.join(ARTIFACTS, "webview-approval.png") });
  // The whole transcript: a viewport as tall as it (the transcript scrolls inside the page).
  const height = await page.evaluate(() => document.querySelector(".transcript")!.scrollHeight + 200);
  await page.setViewportSize({ width: 420, height: Math.min(height, 6000) });
  await page.screenshot({ path: path.join(ARTIFACTS, "webview-full.png") });
  await page.setViewportSize({ width: 420, height: 900 });
  await write.locator('button[data-option-id="allow_once"]').click();
  const writeId = (events.at(-1)!.event as { approvalId: string }).approvalId;
  assert.deepEqual((await panel.posted()).at(-1), { type: "respondApproval", approvalId: writeId, optionId: "allow_once" });
  assert.deepEqual(panel.problems, []);
  await page.close();
});

test("the input: Enter sends, Shift+Enter is a new line, steer or queue while running, Stop, resync on a gap", async () => {
  const panel = await openPanel("input");
  const { page } = panel;
  await panel.send({ type: "status", status: "ready" });
  await panel.send({ type: "reset", state: fixture.initialState });
  const input = page.locator("textarea.input");
  await input.click();
  await page.keyboard.type("first line");
  await page.keyboard.press("Shift+Enter");
  await page.keyboard.type("second line");
  assert.equal(await input.inputValue(), "first line\nsecond line");
  await page.keyboard.press("Enter");
  assert.deepEqual((await panel.posted()).at(-1), { type: "send", text: "first line\nsecond line" });
  assert.equal(await input.inputValue(), "");

  // While a run streams: the same box steers (default) or queues a follow-up; Stop aborts.
  const firstDelta = indexOf((n) => n.event.type === "message_update");
  await panel.feed(events.slice(0, firstDelta + 1));
  assert.equal(await page.locator("select.behavior").isVisible(), true);
  assert.equal(await page.locator("select.behavior").inputValue(), "steer");
  await input.fill("use f-strings");
  await page.keyboard.press("Enter");
  assert.deepEqual((await panel.posted()).at(-1), { type: "send", text: "use f-strings", behavior: "steer" });
  await page.locator("select.behavior").selectOption("followUp");
  await input.fill("then add a test");
  await page.locator("button.send").click();
  assert.deepEqual((await panel.posted()).at(-1), { type: "send", text: "then add a test", behavior: "followUp" });
  await page.locator("button.stop").click();
  assert.deepEqual((await panel.posted()).at(-1), { type: "stop" });

  // In a sidebar as narrow as VS Code's default, the run's controls wrap below; the model and
  // mode links keep their text.
  await page.setViewportSize({ width: 300, height: 900 });
  for (const link of ["button.model", "button.mode"]) {
    const size = await page.locator(link).evaluate((el) => ({ client: el.clientWidth, scroll: el.scrollWidth, text: el.textContent }));
    assert.ok(size.scroll <= size.client && size.client > 30, `${link} is cut: ${JSON.stringify(size)}`);
  }
  assert.equal(await page.locator("button.stop").isVisible(), true);
  await page.screenshot({ path: path.join(ARTIFACTS, "webview-narrow-running.png") });
  await page.setViewportSize({ width: 420, height: 900 });

  // Queued messages and context chips are shown with their controls.
  const seq = events[firstDelta].seq;
  await panel.feed([{ sessionId: fixture.initialState.sessionId, seq: seq + 1, event: { type: "queue_update", steering: [], followUp: ["then add a test"] } }]);
  assert.match((await page.locator(".queue").textContent()) ?? "", /follow-up\s*then add a test/);
  await page.locator(".queue button.link").click();
  assert.deepEqual((await panel.posted()).at(-1), { type: "clearQueue" });
  await panel.send({ type: "context", items: [{ label: "greet.py:1-2", detail: "/home/ada/project/greet.py" }] });
  assert.equal(await page.locator(".chips .chip").textContent(), "greet.py:1-2");
  await page.locator(".chips .chip button").click();
  assert.deepEqual((await panel.posted()).at(-1), { type: "removeContext", index: 0 });

  // A gap in seq: the panel asks for a reset instead of showing a wrong transcript.
  await panel.feed([{ ...events[firstDelta + 5], seq: seq + 3 }]);
  assert.deepEqual((await panel.posted()).at(-1), { type: "resync" });

  // Errors are red: a failed tool, a failed model call.
  const timestamp = Date.UTC(2025, 0, 1);
  await panel.send({
    type: "reset",
    state: {
      ...fixture.initialState,
      seq: 4,
      messages: [
        { role: "user", timestamp, content: [{ type: "text", text: "run it" }] },
        { role: "assistant", timestamp, usage: zeroUsage(), api: "faux", provider: "faux", model: "faux-1", stopReason: "toolUse", content: [{ type: "toolCall", id: "b1", name: "bash", arguments: { command: "false" } }] },
        { role: "toolResult", timestamp, toolCallId: "b1", toolName: "bash", isError: true, content: [{ type: "text", text: "Command exited with code 1" }] },
        { role: "assistant", timestamp, usage: zeroUsage(), api: "faux", provider: "faux", model: "faux-1", stopReason: "error", errorMessage: "429 Too Many Requests", content: [] },
      ],
    },
  });
  assert.equal(await page.locator('.tool-card[data-tool-call-id="b1"]').getAttribute("class"), "tool-card status-error");
  assert.equal(await page.locator(".tool-output.error").textContent(), "Command exited with code 1");
  assert.equal(await page.locator(".error-box").textContent(), "429 Too Many Requests");
  const red = await page.locator(".error-box .icon").evaluate((el) => getComputedStyle(el).color);
  assert.equal(red, "rgb(248, 81, 73)");

  // The server is down: a red banner with the fixes, and nothing can be sent.
  await panel.send({ type: "status", status: "error", message: "tiller could not start: python3: No module named tiller." });
  assert.match((await page.locator(".banner.error").textContent()) ?? "", /No module named tiller/);
  await page.locator(".banner button", { hasText: "Restart server" }).click();
  assert.deepEqual((await panel.posted()).at(-1), { type: "command", command: "restartServer" });
  await input.fill("hello?");
  assert.equal(await page.locator("button.send").isDisabled(), true);
  assert.equal(await page.locator("button.stop").isVisible(), false, "nothing runs without a server");
  await page.screenshot({ path: path.join(ARTIFACTS, "webview-error.png") });
  assert.deepEqual(panel.problems, []);
  await page.close();
});

test("review per hunk: a checkbox per hunk, the choice shown and sent, Allow needs one hunk kept", async () => {
  const panel = await openPanel("hunks");
  const { page } = panel;
  const diff = [
    "--- a/long.py",
    "+++ b/long.py",
    "@@ -1,5 +1,5 @@",
    "-first = 1",
    "+first = 100",
    " a",
    " b",
    " c",
    " d",
    "@@ -20,5 +20,5 @@",
    " w",
    " x",
    " y",
    " z",
    "-last = 2",
    "+last = 200",
    "",
  ].join("\n");
  const approval = {
    type: "approval_request" as const,
    approvalId: "a1",
    toolCallId: "call_long",
    toolName: "edit",
    kind: "edit" as const,
    title: "Edit long.py",
    path: "/home/ada/project/long.py",
    diff,
    hunks: [
      { id: "h1", header: "@@ -1,5 +1,5 @@", oldStart: 1, oldLines: 5, newStart: 1, newLines: 5 },
      { id: "h2", header: "@@ -20,5 +20,5 @@", oldStart: 20, oldLines: 5, newStart: 20, newLines: 5 },
    ],
    options: [
      { optionId: "allow_once" as const, name: "Allow once", kind: "allow_once" as const },
      { optionId: "reject_once" as const, name: "Reject", kind: "reject_once" as const },
    ],
  };
  const timestamp = Date.UTC(2025, 0, 1);
  await panel.send({ type: "status", status: "ready" });
  await panel.send({
    type: "reset",
    state: {
      ...fixture.initialState,
      isStreaming: true,
      seq: 3,
      messages: [
        { role: "user", timestamp, content: [{ type: "text", text: "bump both" }] },
        { role: "assistant", timestamp, usage: zeroUsage(), api: "faux", provider: "faux", model: "faux-1", stopReason: "toolUse", content: [{ type: "toolCall", id: "call_long", name: "edit", arguments: { path: "long.py" } }] },
      ],
      pendingToolCalls: ["call_long"],
      pendingApprovals: [approval],
    },
  });
  const card = page.locator(".approval");
  assert.deepEqual(await card.locator(".hunk-header span").allTextContents(), ["Hunk 1 of 2", "Hunk 2 of 2"]);
  assert.deepEqual(await card.locator(".hunk-header code").allTextContents(), ["@@ -1,5 +1,5 @@", "@@ -20,5 +20,5 @@"]);
  assert.deepEqual(await card.locator(".hunk pre.diff .add").allTextContents(), ["+first = 100\n", "+last = 200\n"]);
  assert.deepEqual(await card.locator("input.hunk-keep").evaluateAll((boxes) => boxes.map((b) => (b as HTMLInputElement).checked)), [true, true]);

  await card.locator('input.hunk-keep[data-hunk-id="h2"]').uncheck();
  assert.deepEqual((await panel.posted()).at(-1), { type: "toggleHunk", approvalId: "a1", hunkId: "h2", keep: false });
  await page.locator('.hunk.dropped[data-hunk-id="h2"]').waitFor();
  assert.match((await card.locator(".hunk-note").textContent()) ?? "", /applies 1 of the 2 hunks/);
  await page.screenshot({ path: path.join(ARTIFACTS, "webview-hunks.png") });

  // The extension's word on the choice wins (e.g. a hunk dropped in the diff editor).
  await panel.send({ type: "hunks", approvalId: "a1", dropped: ["h1", "h2"] });
  assert.deepEqual(await card.locator("input.hunk-keep").evaluateAll((boxes) => boxes.map((b) => (b as HTMLInputElement).checked)), [false, false]);
  assert.equal(await card.locator('button[data-option-id="allow_once"]').isDisabled(), true, "nothing to allow");
  assert.equal(await card.locator('button[data-option-id="reject_once"]').isDisabled(), false);

  await panel.send({ type: "hunks", approvalId: "a1", dropped: ["h2"] });
  await card.locator("input.reject-message").fill("leave the tail");
  await card.locator('button[data-option-id="allow_once"]').click();
  assert.deepEqual((await panel.posted()).at(-1), { type: "respondApproval", approvalId: "a1", optionId: "allow_once", message: "leave the tail" });
  assert.deepEqual(panel.problems, []);
  await page.close();
});

test("a command's approval shows why it asks and where an always-allow saves; each user message can rewind to there", async () => {
  const panel = await openPanel("controls");
  const { page } = panel;
  await panel.send({ type: "status", status: "ready" });
  await panel.send({ type: "reset", state: fixture.initialState });
  const bashApproval = indexOf((n) => n.event.type === "approval_request" && n.event.toolCallId === "call_bash");
  const recorded = events[bashApproval].event as Extract<AgentEventParams["event"], { type: "approval_request" }>;
  const rule = { scope: "project" as const, patterns: ["python3 *"], path: "/home/ada/project/.tiller/settings.json" };
  const asked = {
    ...events[bashApproval],
    event: {
      ...recorded,
      reason: "The line writes a file by redirection (> out.txt).",
      options: [
        { optionId: "allow_once" as const, name: "Allow once", kind: "allow_once" as const },
        { optionId: "allow_always_project" as const, name: "Always allow `python3 *` in this project", kind: "allow_always" as const, rule },
        { optionId: "reject_once" as const, name: "Reject", kind: "reject_once" as const },
      ],
    },
  };
  await panel.feed([...events.slice(0, bashApproval), asked]);
  const card = page.locator('.tool-card[data-tool-call-id="call_bash"] .approval');
  assert.equal(await card.locator(".approval-reason").textContent(), "The line writes a file by redirection (> out.txt).");
  const always = card.locator('button[data-option-id="allow_always_project"]');
  assert.equal(await always.textContent(), "Always allow `python3 *` in this project");
  assert.equal(await always.getAttribute("title"), "Always allow `python3 *` in this project (saved in /home/ada/project/.tiller/settings.json)");

  // Through the second prompt: two user messages, at 0 and 8 in the conversation.
  const secondApproval = indexOf((n) => n.event.type === "approval_request" && n.event.toolCallId === "call_write");
  await panel.feed(events.slice(bashApproval + 1, secondApproval));
  const users = page.locator(".message.user");
  assert.equal(await users.count(), 2);
  await users.nth(1).hover();
  await users.nth(1).locator("button.rewind").click();
  await users.nth(0).hover();
  await users.nth(0).locator("button.rewind").click();
  const rewinds = (await panel.posted()).filter((m) => m.type === "rewindTo");
  assert.deepEqual(rewinds, [
    { type: "rewindTo", messageIndex: 8 },
    { type: "rewindTo", messageIndex: 0 },
  ]);
  assert.deepEqual(panel.problems, []);
  await page.close();
});

test("the context meter: the window's fill and the session's cost, from getState and each turn; compactions shown", async () => {
  const panel = await openPanel("meter");
  const { page } = panel;
  const meter = page.locator(".context-meter");
  const bar = page.locator("meter.context-bar");
  await panel.send({ type: "status", status: "ready" });
  const state = { ...fixture.initialState, usage: { ...zeroUsage(), cost: { ...zeroUsage().cost, total: 0.0042 } } };
  await panel.send({ type: "reset", state });
  const start = fixture.initialState.contextUsage;
  assert.equal(await meter.textContent(), `context ${start.tokens.toLocaleString("en-US")}/128.0k (${Math.round(start.percent)}%) · $0.0042`);
  assert.match((await meter.getAttribute("title")) ?? "", /compacted at 105,216 tokens/);
  assert.equal(await bar.evaluate((el) => [(el as HTMLMeterElement).value, (el as HTMLMeterElement).max]).then(String), `${start.tokens},128000`);

  // The recorded run's last context_usage event (the provider's count) replaces the estimate.
  const end = indexOf((n) => n.event.type === "agent_end");
  await panel.feed(events.slice(0, end + 1));
  const last = events.slice(0, end + 1).map((n) => n.event).filter((e) => e.type === "context_usage").at(-1);
  assert.ok(last && last.type === "context_usage", "the recording has context_usage events");
  assert.equal(await meter.textContent(), `context ${last.tokens}/128.0k (${Math.round(last.percent)}%) · $0.00`);
  assert.match((await meter.getAttribute("title")) ?? "", /from the provider's count/);

  // A compaction: "compacting…" while it runs, then the new size, "compacted" and its summary.
  let seq = events[end].seq;
  const note = (event: AgentEventParams["event"]): AgentEventParams => ({ sessionId: fixture.initialState.sessionId, seq: ++seq, event });
  await panel.feed([note({ type: "compaction_start", reason: "manual", tokensBefore: 90_000 })]);
  assert.equal(await meter.textContent(), "compacting… · $0.00");
  const compaction = { id: "c1", reason: "manual" as const, summary: "## Goal\nPolite greetings.", firstKeptIndex: 4, tokensBefore: 90_000, tokensAfter: 12_000, timestamp: Date.now(), usage: zeroUsage() };
  await panel.feed([
    note({ type: "compaction_end", reason: "manual", tokensBefore: 90_000, tokensAfter: 12_000, summary: compaction.summary, compaction, aborted: false, willRetry: false }),
    note({ ...last, tokens: 12_000, percent: 9.4, source: "estimate" }),
  ]);
  assert.equal(await meter.textContent(), "context 12.0k/128.0k (9%) · compacted · $0.00");
  const title = (await meter.getAttribute("title")) ?? "";
  assert.match(title, /Compacted \(manual\) .*: 90,000 → 12,000 tokens\./);
  assert.match(title, /## Goal\nPolite greetings\./);
  await page.screenshot({ path: path.join(ARTIFACTS, "webview-context-meter.png") });

  await panel.feed([note({ type: "compaction_undone", compactionId: "c1" })]);
  assert.doesNotMatch((await meter.textContent()) ?? "", /compacted/);
  assert.deepEqual(panel.problems, []);
  await page.close();
});
