// The wire types the client uses, built from the generated ones (generated.ts, from
// schema/tiller.schema.json). Nothing here may import `vscode`: this module runs in plain
// Node (tests) and in the webview (browser) as well.
import type * as g from "./generated";

export type * from "./generated";

export type AgentMessage = g.TillerWireTypes["agent_message"];
export type StopReason = g.TillerWireTypes["stop_reason"];
export type ThinkingLevel = g.TillerWireTypes["thinking_level"];
export type ApprovalMode = g.SessionState["approvalMode"];
export type ToolExecution = g.SessionState["toolExecution"];
export type QueueMode = g.SessionState["steeringMode"];
export type ApprovalOptionId = g.ApprovalOption["optionId"];
export type AssistantBlock = g.AssistantMessage["content"][number];

/** The answer of agent/setModel, setThinkingLevel, setQueueModes and setApprovalMode: the
 * `session_state` event the change emitted (protocol.py SessionStateEvent). */
export type SessionSettings = g.SessionStateEvent;

/** Every event of `agent/event` as it is on the wire (protocol.py WireEvent): `message_update`
 * carries a delta (MessageUpdateDelta), never the whole partial message. */
export type WireEvent = g.TillerWireTypes["wire_event"];

/** An `agent/event` notification's params (protocol.py EventNotification). */
export type AgentEventParams = g.EventNotification;

// --- Client-side only: not wire types, so not in schema/tiller.schema.json -----------------

/**
 * The assistant message the reducer holds while it streams. It starts as `message_start`'s
 * message (a whole AssistantMessage); but when `message_update` deltas come without a
 * `message_start` the reducer has seen, it rebuilds the message from the deltas alone, and
 * has no stopReason, timestamp or usage for it until `message_end` brings the final message.
 */
export type PartialAssistantMessage = Omit<g.AssistantMessage, "stopReason" | "timestamp" | "usage"> &
  Partial<Pick<g.AssistantMessage, "stopReason" | "timestamp" | "usage">>;

// The protocol version and the error codes come with the schema (its x-tiller object).
export { ERROR_CODES as ErrorCodes, PROTOCOL_VERSION } from "./generated";
