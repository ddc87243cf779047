// The wire types the client uses, built from the generated ones (generated.ts, from
// schema/tiller.schema.json). Nothing here may import `vscode`: this module runs in plain
// Node (tests) and in the webview (browser) as well.
import type * as g from "./generated";

export type * from "./generated";

export type AgentMessage = g.TillerWireTypes["agent_message"];
export type StopReason = g.TillerWireTypes["stop_reason"];
export type ThinkingLevel = g.TillerWireTypes["thinking_level"];
export type ApprovalMode = g.SessionState["approvalMode"];
export type QueueMode = g.SessionState["steeringMode"];
export type ApprovalOptionId = g.ApprovalOption["optionId"];
export type AssistantBlock = NonNullable<g.AssistantMessage["content"]>[number];

// --- Not (yet) in schema/tiller.schema.json -------------------------------------------------
// These pydantic classes exist in server/tiller/server/protocol.py but the schema's holder
// class (server/tiller/schema.py) does not list them, so nothing is generated for them. They
// are written here exactly as the pydantic classes declare them; once the schema lists them,
// replace each with the generated type.

/** protocol.py ApprovalResolvedEvent */
export interface ApprovalResolvedEvent {
  type: "approval_resolved";
  approvalId: string;
  toolCallId: string;
  outcome: "selected" | "cancelled";
  optionId?: ApprovalOptionId | null;
}

/** The `persistence_error` event (protocol.md section 3). */
export interface PersistenceErrorEvent {
  type: "persistence_error";
  message: string;
}

/** protocol.py RespondApprovalParams */
export interface RespondApprovalParams {
  sessionId: string;
  approvalId: string;
  optionId: ApprovalOptionId;
  message?: string | null;
}

/** protocol.py SetApprovalModeParams */
export interface SetApprovalModeParams {
  sessionId: string;
  mode: ApprovalMode;
}

/** protocol.py ListSessionsParams */
export interface ListSessionsParams {
  cwd?: string | null;
}

/** The answer of agent/setModel, setThinkingLevel, setQueueModes and setApprovalMode. */
export type SessionSettings = Omit<g.SessionStateEvent, "type">;

// --- The events of `agent/event` as they are on the wire ------------------------------------
// `message_update` carries a delta (MessageUpdateDelta), never the whole partial message.

export type WireEvent =
  | g.AgentStartEvent
  | g.AgentEndEvent
  | g.TurnStartEvent
  | g.TurnEndEvent
  | g.MessageStartEvent
  | g.MessageUpdateDelta
  | g.MessageEndEvent
  | g.ToolExecutionStartEvent
  | g.ToolExecutionUpdateEvent
  | g.ToolExecutionEndEvent
  | g.QueueUpdateEvent
  | g.SessionStateEvent
  | g.ApprovalRequestEvent
  | ApprovalResolvedEvent
  | PersistenceErrorEvent;

/** An `agent/event` notification's params, with the event typed. */
export interface AgentEventParams {
  sessionId: string;
  seq: number;
  event: WireEvent;
}

/** The protocol version this client speaks (initialize's experimental.tiller.protocolVersion). */
export const PROTOCOL_VERSION = 1;

/** Error codes of protocol.md section 4. */
export const ErrorCodes = {
  UnknownSession: -32001,
  SessionBusy: -32002,
  UnknownModel: -32003,
  UnknownApproval: -32004,
  RequestCancelled: -32800,
  MethodNotFound: -32601,
  InvalidParams: -32602,
} as const;
