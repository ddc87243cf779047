// The protocol client (src/protocol) against the REAL server: `python -m tiller serve` over
// stdio, driven through vscode-jsonrpc, with the faux model. Covers a full tool-calling run
// with an approval accepted and one rejected (edits answered as VS Code answers
// workspace/applyEdit), steering and follow-ups, abort, and rebuilding the view from
// agent/getState (a fresh client, a gap in seq, a restarted server).
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

import { applyUnifiedDiff } from "../src/diff";
import { TillerClient, type RpcConnection } from "../src/protocol/client";
import { comparableView, viewFromState } from "../src/protocol/reducer";
import { SessionSync } from "../src/protocol/sync";
import { toolItems } from "../src/toolList";
import type { AgentEventParams, ApprovalRequestEvent, AssistantMessage, ToolResultMessage } from "../src/protocol/types";
import { reply, startServer, tempDir, text, thinking, toolCall, withTimeout, type RunningServer } from "./helpers/server";

function approvals(server: RunningServer, sessionId: string): ApprovalRequestEvent[] {
  return server.events
    .filter((n) => n.sessionId === sessionId && n.event.type === "approval_request")
    .map((n) => n.event as ApprovalRequestEvent);
}

/** Answers each approval_request by toolCallId, as a user would. */
function answerApprovals(
  server: RunningServer,
  sessionId: string,
  answers: Record<string, { optionId: "allow_once" | "allow_always" | "reject_once" | "reject_always"; message?: string; before?: () => Promise<unknown> }>,
) {
  const done: Promise<unknown>[] = [];
  const subscription = server.client.onEvent((n) => {
    if (n.sessionId !== sessionId || n.event.type !== "approval_request") return;
    const request = n.event;
    const answer = answers[request.toolCallId];
    if (!answer) return;
    done.push(
      (async () => {
        await answer.before?.();
        await server.client.respondApproval({
          sessionId,
          approvalId: request.approvalId,
          optionId: answer.optionId,
          message: answer.message,
        });
      })(),
    );
  });
  return { subscription, done };
}

async function sessionFollowed(server: RunningServer, sessionId: string): Promise<SessionSync> {
  const sync = new SessionSync(server.client, sessionId);
  await sync.resync();
  return sync;
}

test("a tool-calling run: streaming, an approval accepted and one rejected, edits land in the editor", async (t) => {
  const server = await startServer(t, {
    responses: [
      reply(thinking("The user wants TWO."), text("I'll **edit** `a.txt`."), toolCall("edit", { path: "a.txt", oldText: "two", newText: "TWO" }, "e1")),
      reply(toolCall("write", { path: "sub/b.txt", content: "new\nfile\n" }, "w1")),
      reply(toolCall("write", { path: "c.txt", content: "nope\n" }, "w2")),
      reply(text("Done: edited a.txt and created sub/b.txt.")),
    ],
  });
  const { client, editor, workspace } = server;
  const aPath = path.join(workspace, "a.txt");
  writeFileSync(aPath, "one\ntwo\nthree\n");
  // Open in the editor with an unsaved change: the server edits the buffer, not the disk.
  const aUri = await editor.open(aPath, "one\ntwo\nthree\nunsaved\n");

  const session = await client.newSession({ cwd: workspace });
  assert.equal(session.model, "faux/faux-1");
  assert.equal(session.approvalMode, "ask");
  const sync = await sessionFollowed(server, session.sessionId);
  assert.equal(sync.view!.messages.length, 0);

  // What the extension's "View diff" shows: the diff applied to the editor's text.
  const proposed: Record<string, string> = {};
  server.client.onEvent((n) => {
    if (n.event.type !== "approval_request" || !n.event.diff) return;
    const uri = pathToFileURL(n.event.path!).href;
    const current = editor.documents.get(uri)?.text ?? (existsSync(n.event.path!) ? readFileSync(n.event.path!, "utf8") : "");
    proposed[n.event.toolCallId] = applyUnifiedDiff(current, n.event.diff);
  });
  const answers = answerApprovals(server, session.sessionId, {
    e1: { optionId: "allow_once" },
    w1: { optionId: "allow_once" },
    w2: { optionId: "reject_once", message: "Not that file" },
  });

  const answer = await withTimeout(client.prompt({ sessionId: session.sessionId, text: "Make two loud" }), "the run");
  await Promise.all(answers.done);
  assert.equal(answer.stopReason, "stop");
  assert.ok(answer.usage.totalTokens > 0);

  // The edit went to the open buffer as a versioned TextDocumentEdit, then was saved.
  assert.equal(editor.documents.get(aUri)!.text, "one\nTWO\nthree\nunsaved\n");
  assert.equal(readFileSync(aPath, "utf8"), "one\nTWO\nthree\nunsaved\n");
  assert.equal(proposed.e1, "one\nTWO\nthree\nunsaved\n", "the client-side diff application matches the edit");
  assert.ok(editor.saved.includes(aUri));
  // The new file was created in the editor (CreateFile + text) and is on disk.
  assert.equal(readFileSync(path.join(workspace, "sub", "b.txt"), "utf8"), "new\nfile\n");
  assert.equal(proposed.w1, "new\nfile\n");
  // The rejected write changed nothing, and the model was told why.
  assert.equal(existsSync(path.join(workspace, "c.txt")), false);

  const view = sync.view!;
  assert.equal(sync.gapsSeen, 0);
  assert.equal(view.isStreaming, false);
  assert.equal(view.streamMessage, null);
  assert.deepEqual(
    view.messages.map((m) => m.role),
    ["user", "assistant", "toolResult", "assistant", "toolResult", "assistant", "toolResult", "assistant"],
  );
  // The messages rebuilt from deltas equal the final ones the run answered with.
  assert.deepEqual(view.messages, answer.newMessages);
  const first = view.messages[1] as AssistantMessage;
  assert.deepEqual(first.content?.map((b) => b.type), ["thinking", "text", "toolCall"]);
  const rejected = view.messages[6] as ToolResultMessage;
  assert.equal(rejected.isError, true);
  assert.match(JSON.stringify(rejected.content), /rejected this (edit|write|change)?.*Not that file/);
  assert.equal(view.tools.e1.status, "done");
  assert.equal(view.tools.w2.status, "error");
  assert.deepEqual(view.approvalOutcomes, { e1: "allow_once", w1: "allow_once", w2: "reject_once" });
  assert.deepEqual(view.pendingApprovals, []);
  assert.equal(view.lastRun?.stopReason, "stop");
  assert.equal(view.lastRun?.usage.totalTokens, answer.usage.totalTokens);

  // A client rebuilt from getState sees the same.
  const state = await client.getState(session.sessionId);
  assert.equal(state.seq, view.seq);
  assert.deepEqual(comparableView(viewFromState(state)), comparableView(view));
  assert.equal(approvals(server, session.sessionId).length, 3);
});

test("steering mid-run skips the rest of the batch; a queued follow-up runs after", async (t) => {
  const server = await startServer(t, {
    responses: [
      reply(text("Two files."), toolCall("write", { path: "x.txt", content: "x\n" }, "s1"), toolCall("write", { path: "y.txt", content: "y\n" }, "s2")),
      reply(text("OK, only x then.")),
      reply(text("Follow-up done.")),
    ],
  });
  const { client, workspace } = server;
  // One call at a time: the skip applies to the calls after the one that saw the steering.
  const { sessionId } = await client.newSession({ cwd: workspace, toolExecution: "sequential" });
  const sync = await sessionFollowed(server, sessionId);
  const queued: unknown[] = [];
  const answers = answerApprovals(server, sessionId, {
    s1: {
      optionId: "allow_once",
      // While the first tool waits: steer, and queue a follow-up through prompt's streamingBehavior.
      before: async () => {
        queued.push(await client.steer(sessionId, "Skip y."));
        queued.push(await client.prompt({ sessionId, text: "Then say done.", streamingBehavior: "followUp" }));
        assert.equal(sync.view!.isStreaming, true);
      },
    },
  });
  const answer = await withTimeout(client.prompt({ sessionId, text: "write x and y" }), "the run");
  await Promise.all(answers.done);

  assert.deepEqual(queued[0], { steering: ["Skip y."], followUp: [] });
  assert.equal((queued[1] as { stopReason: string }).stopReason, "queued");
  assert.equal(answer.stopReason, "stop");
  assert.equal(readFileSync(path.join(workspace, "x.txt"), "utf8"), "x\n");
  assert.equal(existsSync(path.join(workspace, "y.txt")), false);

  const view = sync.view!;
  const skipped = view.messages.find((m) => m.role === "toolResult" && (m as ToolResultMessage).toolCallId === "s2") as ToolResultMessage;
  assert.equal(skipped.isError, true);
  assert.match(JSON.stringify(skipped.content), /Skipped due to queued user message/);
  const userTexts = view.messages
    .filter((m) => m.role === "user")
    .map((m) => JSON.stringify((m as { content: unknown }).content));
  assert.equal(userTexts.length, 3);
  assert.match(userTexts[1], /Skip y\./);
  assert.match(userTexts[2], /Then say done\./);
  assert.deepEqual(view.queue, { steering: [], followUp: [] });
  const texts = view.messages
    .filter((m): m is AssistantMessage => m.role === "assistant")
    .flatMap((m) => m.content)
    .filter((b) => b.type === "text")
    .map((b) => (b as { text: string }).text);
  assert.deepEqual(texts, ["Two files.", "OK, only x then.", "Follow-up done."]);
  assert.equal(approvals(server, sessionId).length, 1, "the skipped call never asked");
});

test("abort ends a streaming run, cancels nothing else, and the session goes on", async (t) => {
  const server = await startServer(t, {
    chunkChars: 1,
    delayMs: 20,
    responses: [reply(text("slow ".repeat(2000))), reply(text("Hi"))],
  });
  const { client } = server;
  const { sessionId } = await client.newSession();
  const sync = await sessionFollowed(server, sessionId);
  const run = client.prompt({ sessionId, text: "go slowly" });
  await server.waitFor((n) => n.sessionId === sessionId && n.event.type === "message_update", "streaming");
  assert.equal(sync.view!.isStreaming, true);
  assert.ok(sync.view!.streamMessage, "the partial message is being rebuilt");

  // Busy: a plain prompt is refused with -32002.
  await assert.rejects(client.prompt({ sessionId, text: "again" }), { code: -32002 });
  assert.deepEqual(await withTimeout(client.abort(sessionId), "abort"), {});
  const answer = await withTimeout(run, "the aborted run's answer");
  assert.equal(answer.stopReason, "aborted");
  const view = sync.view!;
  assert.equal(view.isStreaming, false);
  const last = view.messages.at(-1) as AssistantMessage;
  assert.equal(last.stopReason, "aborted");
  const partial = (last.content?.[0] as { text: string } | undefined)?.text ?? "";
  assert.ok("slow ".repeat(2000).startsWith(partial) && partial.length < 10000, "the partial text is kept");
  assert.equal(view.lastRun?.stopReason, "aborted");

  // Not running any more: abort is a no-op and a new prompt runs.
  assert.deepEqual(await client.abort(sessionId), {});
  await assert.rejects(
    client.respondApproval({ sessionId, approvalId: "nope", optionId: "allow_once" }),
    { code: -32004 },
  );
});

test("the view is rebuilt from agent/getState: a new client, a gap in seq, a restarted server", async (t) => {
  const script = {
    responses: [
      reply(text("First answer.")),
      reply(text("Writing."), toolCall("write", { path: "r.txt", content: "r\n" }, "r1")),
      reply(text("Written.")),
    ],
  };
  const server = await startServer(t, script);
  const { client, workspace } = server;
  const { sessionId } = await client.newSession({ cwd: workspace });

  // A client whose connection loses one notification (seq 6) detects the gap and resyncs.
  let dropped: AgentEventParams | undefined;
  const lossy: RpcConnection = {
    sendRequest: (method, params) => server.connection.sendRequest(method, params),
    onNotification: (method, handler) => {
      assert.equal(method, "agent/event");
      return server.client.onEvent((params) => {
        if (params.sessionId === sessionId && params.seq === 6 && !dropped) {
          dropped = params;
          return;
        }
        handler(params);
      });
    },
  };
  const lossyClient = new TillerClient(lossy);
  const lossySync = new SessionSync(lossyClient, sessionId);
  await lossySync.resync();
  const sync = await sessionFollowed(server, sessionId);

  await withTimeout(client.prompt({ sessionId, text: "hello" }), "first run");
  assert.ok(dropped, "an event was dropped");
  // The resync's getState may still be on its way when the run's answer arrives.
  for (let i = 0; i < 200 && (lossySync.resets < 2 || lossySync.view!.seq < sync.view!.seq); i++) {
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(sync.gapsSeen, 0);
  assert.equal(lossySync.gapsSeen, 1);
  assert.equal(lossySync.resets, 2);
  assert.deepEqual(comparableView(lossySync.view!), comparableView(sync.view!));

  // Settings changes arrive as session_state events.
  const models = await client.listModels();
  assert.equal(models.default, "faux/faux-1");
  assert.ok(models.models.some((m) => `${m.provider}/${m.id}` === "faux/faux-1"));
  const settings = await client.setApprovalMode(sessionId, "acceptEdits");
  assert.equal(settings.approvalMode, "acceptEdits");
  await server.waitFor((n) => n.sessionId === sessionId && n.event.type === "session_state", "session_state");
  assert.equal(sync.view!.approvalMode, "acceptEdits");
  await client.setApprovalMode(sessionId, "ask");
  const sequential = await client.setToolExecution(sessionId, "sequential");
  assert.equal(sequential.toolExecution, "sequential");
  await server.waitFor(
    (n) => n.sessionId === sessionId && n.event.type === "session_state" && n.event.toolExecution === "sequential",
    "session_state (toolExecution)",
  );
  assert.equal(sync.view!.toolExecution, "sequential");

  // Mid-run, waiting for an approval: a brand-new client state rebuilt from getState
  // equals the one that followed every event, pending approval included.
  const run = client.prompt({ sessionId, text: "write r" });
  const request = await server.waitFor((n) => n.sessionId === sessionId && n.event.type === "approval_request", "approval");
  await new Promise((r) => setTimeout(r, 50));
  const fresh = await sessionFollowed(server, sessionId);
  assert.equal(fresh.view!.isStreaming, true);
  assert.equal(fresh.view!.pendingApprovals.length, 1);
  assert.deepEqual(comparableView(fresh.view!), comparableView(sync.view!));
  await client.respondApproval({
    sessionId,
    approvalId: (request.event as ApprovalRequestEvent).approvalId,
    optionId: "allow_once",
  });
  const answer = await withTimeout(run, "second run");
  assert.equal(answer.stopReason, "stop");
  assert.deepEqual(comparableView(fresh.view!), comparableView(sync.view!));
  assert.equal(fresh.view!.approvalOutcomes.r1, "allow_once");

  const sessions = await client.listSessions({ cwd: workspace });
  assert.ok(sessions.sessions.some((s) => s.sessionId === sessionId && s.loaded && s.title === "hello"));
  const messagesBefore = sync.view!.messages;

  // The server restarts: the session is loaded from disk and the view rebuilt from getState.
  await server.stop();
  const restarted = await startServer(t, { responses: [reply(text("Back again."))] }, { dataDir: server.dataDir, workspace });
  const saved = await restarted.client.listSessions();
  assert.ok(saved.sessions.some((s) => s.sessionId === sessionId && !s.loaded));
  const loaded = await restarted.client.loadSession(sessionId);
  assert.equal(loaded.messageCount, messagesBefore.length);
  const again = await sessionFollowed(restarted, sessionId);
  assert.deepEqual(again.view!.messages, messagesBefore);
  await withTimeout(restarted.client.prompt({ sessionId, text: "still there?" }), "run after restart");
  assert.equal(again.view!.messages.length, messagesBefore.length + 2);
  assert.equal(again.gapsSeen, 0);
});

test("agent/listTools: a real MCP server's tools and state, a server that cannot start, as MCP Tools… shows them", async (t) => {
  const server = await startServer(t, { responses: [] });
  const { client } = server;
  // The Python tests' MCP server (the official SDK's), over stdio; and one whose command does not exist.
  const toolbox = path.resolve(process.cwd(), "..", "tests", "mcp", "servers", "toolbox.py");
  const python = process.env.TILLER_PYTHON || "python3";
  const { sessionId } = await client.newSession({
    mcpServers: [
      { name: "toolbox", command: python, args: [toolbox, "stdio"], env: { TOOLBOX_DIR: tempDir(t) } },
      { name: "ghost", command: path.join(tempDir(t), "no-such-server") },
    ],
  });
  const settled = (name: string, state: string) =>
    server.waitFor((n) => n.sessionId === sessionId && n.event.type === "mcp_server_state"
      && n.event.server.name === name && n.event.server.state === state, `${name} ${state}`);
  await Promise.all([settled("toolbox", "ready"), settled("ghost", "failed")]);
  const listed = await client.listTools(sessionId);
  const byName = Object.fromEntries(listed.mcpServers.map((s) => [s.name, s]));
  assert.equal(byName.toolbox.state, "ready");
  assert.ok(byName.toolbox.tools.some((tool) => tool.tool === "echo" && tool.readOnly));
  assert.equal(byName.ghost.state, "failed");
  assert.ok(byName.ghost.message, "a failed server says why");

  const labels = toolItems(listed).map((item) => item.label);
  assert.ok(labels.includes("$(pass) toolbox: ready") && labels.includes("$(error) ghost: failed"));
  assert.ok(labels.includes("toolbox__echo") && labels.includes("read"));
});
