// The extension's controls over the REAL server (`python -m tiller serve`, faux model): command
// rules saved by "always allow" exactly as the option showed them, listed and removed the way
// the "Command Rules…" command does (src/commandRules.ts); plan mode chosen as an approval
// mode; "rewind to here" (agent/listCheckpoints + agent/rewind) and its undo, with the followed
// view rebuilt after the rewind event.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";

import { removableRules, rulesWithout } from "../src/commandRules";
import { SessionSync } from "../src/protocol/sync";
import type { ApprovalRequestEvent, ToolResultMessage } from "../src/protocol/types";
import { reply, startServer, text, toolCall, withTimeout, type RunningServer } from "./helpers/server";

function approvalOf(server: RunningServer, sessionId: string, toolCallId: string): Promise<ApprovalRequestEvent> {
  return server
    .waitFor((n) => n.sessionId === sessionId && n.event.type === "approval_request" && n.event.toolCallId === toolCallId, `the approval of ${toolCallId}`)
    .then((n) => n.event as ApprovalRequestEvent);
}

function asked(server: RunningServer, sessionId: string): string[] {
  return server.events
    .filter((n) => n.sessionId === sessionId && n.event.type === "approval_request")
    .map((n) => (n.event as ApprovalRequestEvent).toolCallId);
}

test("always allow saves the pattern the option shows; the rules list shows it and removing it asks again", async (t) => {
  const server = await startServer(t, {
    responses: [
      reply(toolCall("bash", { command: "echo one" }, "b1")),
      reply(toolCall("bash", { command: "echo two" }, "b2")),
      reply(text("both ran")),
      reply(toolCall("bash", { command: "echo three" }, "b3")),
      reply(text("asked again")),
    ],
  });
  const { client } = server;
  const { sessionId } = await client.newSession({ cwd: server.workspace });

  const run = client.prompt({ sessionId, text: "echo things" });
  const approval = await approvalOf(server, sessionId, "b1");
  const forUser = approval.options.find((o) => o.optionId === "allow_always_user")!;
  assert.equal(forUser.kind, "allow_always");
  assert.equal(forUser.rule?.scope, "user");
  const patterns = forUser.rule!.patterns;
  assert.ok(patterns.length > 0);
  // The name the panel's button shows spells out every pattern it saves.
  for (const pattern of patterns) assert.ok(forUser.name.includes(`\`${pattern}\``), `${forUser.name} shows ${pattern}`);
  await client.respondApproval({ sessionId, approvalId: approval.approvalId, optionId: "allow_always_user" });
  await withTimeout(run, "the first run");
  assert.deepEqual(asked(server, sessionId), ["b1"], "echo two ran under the saved rule");

  // What "Command Rules…" lists: exactly the saved patterns, in the user's file.
  const rules = await client.getRules(sessionId);
  assert.deepEqual(rules.user.rules.allow, patterns);
  assert.equal(rules.user.path, forUser.rule!.path);
  assert.deepEqual(JSON.parse(readFileSync(rules.user.path, "utf8")).commands.allow, patterns);
  const items = removableRules(rules);
  assert.deepEqual(
    items.map((i) => [i.pattern, i.scope, i.list]),
    patterns.map((p) => [p, "user", "allow"]),
  );

  // Removing one (as the command does) takes it out of the file; the command asks again.
  for (const item of items) {
    const after = await client.setRules({ sessionId, scope: item.scope, rules: rulesWithout(await client.getRules(sessionId), item) });
    assert.ok(!after.user.rules.allow.includes(item.pattern));
  }
  assert.deepEqual(JSON.parse(readFileSync(rules.user.path, "utf8")).commands.allow, []);
  const again = client.prompt({ sessionId, text: "once more" });
  const third = await approvalOf(server, sessionId, "b3");
  await client.respondApproval({ sessionId, approvalId: third.approvalId, optionId: "reject_once" });
  await withTimeout(again, "the second run");
  assert.deepEqual(asked(server, sessionId), ["b1", "b3"]);
});

test("plan mode from the mode picker refuses a write without asking; rewind to a message and undo it", async (t) => {
  const server = await startServer(t, {
    responses: [
      reply(toolCall("write", { path: "plan.txt", content: "no\n" }, "w1")),
      reply(text("planned")),
      reply(toolCall("write", { path: "made.txt", content: "yes\n" }, "w2")),
      reply(text("made it")),
    ],
  });
  const { client, workspace } = server;
  const { sessionId } = await client.newSession({ cwd: workspace });
  const sync = new SessionSync(client, sessionId);
  await sync.resync();

  const settings = await client.setApprovalMode(sessionId, "plan");
  assert.equal(settings.approvalMode, "plan");
  const planned = await withTimeout(client.prompt({ sessionId, text: "plan it" }), "the plan run");
  const refused = planned.newMessages.find((m) => m.role === "toolResult") as ToolResultMessage;
  assert.equal(refused.isError, true);
  assert.match(JSON.stringify(refused.content), /plan mode/);
  assert.equal(existsSync(path.join(workspace, "plan.txt")), false);
  assert.deepEqual(asked(server, sessionId), [], "plan mode never asks");
  assert.equal(sync.view!.approvalMode, "plan");

  await client.setApprovalMode(sessionId, "yolo");
  await withTimeout(client.prompt({ sessionId, text: "make it" }), "the second run");
  assert.equal(readFileSync(path.join(workspace, "made.txt"), "utf8"), "yes\n");
  const messagesBefore = sync.view!.messages.length;
  const userIndex = messagesBefore - 4; // user, assistant (write), toolResult, assistant
  assert.equal(sync.view!.messages[userIndex].role, "user");

  // "Rewind to here" on that user message: the turn checkpoint whose messageCount is its index.
  const { checkpoints, available } = await client.listCheckpoints(sessionId);
  assert.equal(available, true);
  const checkpoint = checkpoints.find((c) => c.kind === "turn" && c.onCurrentBranch && c.messageCount === userIndex);
  assert.ok(checkpoint, `a checkpoint before message ${userIndex}: ${JSON.stringify(checkpoints)}`);
  const resets = sync.resets;
  const done = await client.rewind({ sessionId, checkpointId: checkpoint.checkpointId, restore: "both" });
  assert.deepEqual(done.deleted, ["made.txt"]);
  assert.equal(done.messageCount, userIndex);
  assert.equal(existsSync(path.join(workspace, "made.txt")), false);
  // The rewind event makes the followed view reload the shorter conversation.
  await withTimeout(
    (async () => {
      while (sync.resets === resets || sync.view!.messages.length !== userIndex) await new Promise((r) => setTimeout(r, 20));
    })(),
    "the view to follow the rewind",
  );

  // Undo: back to the rewind's own checkpoint.
  await client.rewind({ sessionId, checkpointId: done.undoCheckpointId, restore: "both" });
  assert.equal(readFileSync(path.join(workspace, "made.txt"), "utf8"), "yes\n");
  await withTimeout(
    (async () => {
      while (sync.view!.messages.length !== messagesBefore) await new Promise((r) => setTimeout(r, 20));
    })(),
    "the view to follow the undo",
  );
  sync.dispose();
});
