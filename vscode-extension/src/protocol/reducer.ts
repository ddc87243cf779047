// Rebuilds a session's view from `agent/event` notifications (protocol.md section 3) and from
// `agent/getState` (after a reload or a gap in `seq`). Pure data, no DOM, no `vscode`: the
// extension host, the webview and the Node tests all use it.
import { parsePartialJson } from "./partialJson";
import type {
  AgentMessage,
  AgentToolResult,
  ApprovalMode,
  ToolExecution,
  ApprovalOptionId,
  ApprovalRequestEvent,
  ApprovalResolvedEvent,
  AssistantBlock,
  AssistantMessage,
  CompactionInfo,
  CompactionStartEvent,
  ContextUsage,
  PartialAssistantMessage,
  QueueMode,
  SessionState,
  ThinkingLevel,
  ToolResultMessage,
  Usage,
  WireEvent,
} from "./types";

export interface ToolRun {
  toolCallId: string;
  toolName: string;
  args: Record<string, unknown>;
  status: "running" | "done" | "error";
  /** The latest streamed output (tool_execution_update), e.g. bash's rolling tail. */
  partial?: AgentToolResult;
  result?: AgentToolResult;
}

export interface RunSummary {
  usage: Usage;
  stopReason?: string;
  errorMessage?: string;
}

export type ApprovalOutcome = ApprovalOptionId | "cancelled" | "partial";

export interface SessionView {
  sessionId: string;
  cwd?: string;
  model: string;
  thinkingLevel: ThinkingLevel;
  steeringMode: QueueMode;
  followUpMode: QueueMode;
  approvalMode: ApprovalMode;
  toolExecution: ToolExecution;
  isStreaming: boolean;
  /** Completed messages, in order (user, assistant, toolResult, ...). */
  messages: AgentMessage[];
  /** The assistant message being streamed, rebuilt from deltas. */
  streamMessage: PartialAssistantMessage | null;
  /** Raw JSON of streaming tool-call arguments, by contentIndex. */
  toolJson: Record<number, string>;
  /** Tool executions by toolCallId (live state; completed ones also come from toolResult messages). */
  tools: Record<string, ToolRun>;
  pendingApprovals: ApprovalRequestEvent[];
  /** How each answered approval went, by toolCallId ("allow_once", ..., "cancelled", or
   * "partial": allowed with some hunks left out). */
  approvalOutcomes: Record<string, ApprovalOutcome>;
  queue: { steering: string[]; followUp: string[] };
  /** The `seq` of the last event applied. */
  seq: number;
  error?: string;
  warnings: string[];
  lastRun?: RunSummary;
  /** How full the model's context window is (the next request's size): from `agent/getState`
   * and the `context_usage` event after each turn. An older server leaves it out. */
  context?: ContextUsage;
  /** What the session has been billed so far (every run, summaries included). */
  sessionUsage?: Usage;
  /** The compactions in effect, oldest first. */
  compactions: CompactionInfo[];
  /** Why a compaction is under way, while it is. */
  compacting?: CompactionStartEvent["reason"];
  /** Index in `messages` of a non-assistant message that started but has not ended. */
  openMessage?: number;
}

const clone = <T>(value: T): T => (value === undefined ? value : JSON.parse(JSON.stringify(value)));

export function emptyView(sessionId: string, model = ""): SessionView {
  return {
    sessionId,
    model,
    thinkingLevel: "off",
    steeringMode: "one_at_a_time",
    followUpMode: "one_at_a_time",
    approvalMode: "ask",
    toolExecution: "parallel",
    isStreaming: false,
    messages: [],
    streamMessage: null,
    toolJson: {},
    tools: {},
    pendingApprovals: [],
    approvalOutcomes: {},
    queue: { steering: [], followUp: [] },
    seq: 0,
    warnings: [],
    compactions: [],
  };
}

/** A view rebuilt from `agent/getState`. */
export function viewFromState(state: SessionState): SessionView {
  const view = emptyView(state.sessionId, state.model);
  Object.assign(view, {
    cwd: state.cwd,
    thinkingLevel: state.thinkingLevel,
    steeringMode: state.steeringMode,
    followUpMode: state.followUpMode,
    approvalMode: state.approvalMode,
    toolExecution: state.toolExecution,
    isStreaming: state.isStreaming,
    messages: clone(state.messages),
    pendingApprovals: clone(state.pendingApprovals),
    queue: clone(state.queue),
    seq: state.seq,
  });
  if (state.error) view.error = state.error;
  const stream = state.streamMessage;
  if (stream && stream.role === "assistant") view.streamMessage = clone(stream as AssistantMessage);
  else if (stream) view.messages.push(clone(stream));
  // Tool calls still executing: their arguments come from the assistant message that made them.
  const calls = toolCallsById(view);
  for (const id of state.pendingToolCalls) {
    const call = calls.get(id);
    view.tools[id] = { toolCallId: id, toolName: call?.name ?? "tool", args: call?.arguments ?? {}, status: "running" };
  }
  view.lastRun = lastRunOf(view.messages);
  if (state.contextUsage) view.context = clone(state.contextUsage);
  if (state.usage) view.sessionUsage = clone(state.usage);
  view.compactions = clone(state.compactions ?? []);
  // How the session's answered approvals went (the outcome badges after a reload). An older
  // server leaves the list out.
  for (const event of state.resolvedApprovals ?? []) view.approvalOutcomes[event.toolCallId] = outcomeOf(event);
  return view;
}

function outcomeOf(event: ApprovalResolvedEvent): ApprovalOutcome {
  if (event.outcome === "cancelled") return "cancelled";
  return event.acceptedHunks ? "partial" : (event.optionId ?? "allow_once");
}

function toolCallsById(view: SessionView): Map<string, Extract<AssistantBlock, { type: "toolCall" }>> {
  const calls = new Map<string, Extract<AssistantBlock, { type: "toolCall" }>>();
  const assistants = [...view.messages, ...(view.streamMessage ? [view.streamMessage] : [])];
  for (const message of assistants) {
    if (message.role !== "assistant") continue;
    for (const block of (message as PartialAssistantMessage).content) if (block.type === "toolCall") calls.set(block.id, block);
  }
  return calls;
}

/** No tokens, no cost: the server's `Usage()`. */
export function zeroUsage(): Usage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    totalTokens: a.totalTokens + b.totalTokens,
    cost: {
      input: a.cost.input + b.cost.input,
      output: a.cost.output + b.cost.output,
      cacheRead: a.cost.cacheRead + b.cost.cacheRead,
      cacheWrite: a.cost.cacheWrite + b.cost.cacheWrite,
      total: a.cost.total + b.cost.total,
    },
  };
}

/** The usage of the assistant messages of one run (from its last user prompt on). */
export function summarizeRun(messages: AgentMessage[]): RunSummary | undefined {
  let usage = zeroUsage();
  let last: AssistantMessage | undefined;
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    last = message as AssistantMessage;
    usage = addUsage(usage, last.usage);
  }
  if (!last) return undefined;
  const summary: RunSummary = { usage, stopReason: last.stopReason };
  if (last.errorMessage) summary.errorMessage = last.errorMessage;
  return summary;
}

function lastRunOf(messages: AgentMessage[]): RunSummary | undefined {
  let start = messages.length;
  while (start > 0 && messages[start - 1].role !== "user") start--;
  return summarizeRun(messages.slice(Math.max(0, start - 1)));
}

function toolResultOf(message: ToolResultMessage): AgentToolResult {
  const result: AgentToolResult = { content: message.content };
  if (message.details !== undefined) result.details = message.details;
  return result;
}

function ensureBlock(message: PartialAssistantMessage, index: number): void {
  const content = message.content;
  while (content.length <= index) content.push({ type: "text", text: "" });
}

/** Applies one event's changes to `view` (mutating it); `seq` bookkeeping is the caller's. */
export function applyEvent(view: SessionView, event: WireEvent): void {
  switch (event.type) {
    case "agent_start":
      view.isStreaming = true;
      delete view.error;
      break;
    case "agent_end": {
      view.isStreaming = false;
      view.streamMessage = null;
      view.toolJson = {};
      view.lastRun = summarizeRun(event.messages);
      if (view.lastRun?.stopReason === "error" && view.lastRun.errorMessage) view.error = view.lastRun.errorMessage;
      for (const run of Object.values(view.tools)) if (run.status === "running") run.status = "error";
      break;
    }
    case "turn_start":
    case "turn_end":
      break;
    case "message_start": {
      const message = clone(event.message);
      if (message.role === "assistant") {
        view.streamMessage = message as AssistantMessage;
        view.toolJson = {};
      } else {
        view.openMessage = view.messages.length;
        view.messages.push(message);
      }
      break;
    }
    case "message_update": {
      const delta = event.assistantMessageEvent;
      // Deltas without a message_start seen: rebuild from them alone (stopReason, timestamp and
      // usage come with message_end).
      view.streamMessage ??= { role: "assistant", api: "", provider: "", model: view.model, content: [] };
      const message = view.streamMessage;
      const i = delta.contentIndex;
      ensureBlock(message, i);
      const content = message.content;
      const block = content[i];
      switch (delta.type) {
        case "text_start":
          content[i] = { type: "text", text: "" };
          break;
        case "text_delta":
          if (block.type === "text") block.text += delta.delta ?? "";
          break;
        case "text_end":
          content[i] = { type: "text", text: delta.content ?? (block.type === "text" ? block.text : "") };
          break;
        case "thinking_start":
          content[i] = { type: "thinking", thinking: "", ...(delta.redacted ? { redacted: true } : {}) };
          break;
        case "thinking_delta":
          if (block.type === "thinking") block.thinking += delta.delta ?? "";
          break;
        case "thinking_end":
          if (block.type === "thinking") block.thinking = delta.content ?? block.thinking;
          break;
        case "toolcall_start":
          content[i] = { type: "toolCall", id: delta.id ?? "", name: delta.toolName ?? "", arguments: {} };
          view.toolJson[i] = "";
          break;
        case "toolcall_delta": {
          view.toolJson[i] = (view.toolJson[i] ?? "") + (delta.delta ?? "");
          const preview = parsePartialJson(view.toolJson[i]);
          if (block.type === "toolCall" && preview && typeof preview === "object" && !Array.isArray(preview)) {
            block.arguments = preview as Record<string, unknown>;
          }
          break;
        }
        case "toolcall_end":
          if (delta.toolCall) content[i] = clone(delta.toolCall);
          delete view.toolJson[i];
          break;
      }
      break;
    }
    case "message_end": {
      const message = clone(event.message);
      if (message.role === "assistant") {
        view.streamMessage = null;
        view.toolJson = {};
        view.messages.push(message);
      } else {
        if (view.openMessage !== undefined && view.messages[view.openMessage]?.role === message.role) {
          view.messages[view.openMessage] = message;
        } else {
          view.messages.push(message);
        }
        delete view.openMessage;
        if (message.role === "toolResult") {
          const result = message as ToolResultMessage;
          const run = view.tools[result.toolCallId];
          if (run && run.status === "running") {
            run.status = result.isError ? "error" : "done";
            run.result = toolResultOf(result);
          }
        }
      }
      break;
    }
    case "tool_execution_start":
      view.tools[event.toolCallId] = {
        toolCallId: event.toolCallId,
        toolName: event.toolName,
        args: clone(event.args),
        status: "running",
      };
      break;
    case "tool_execution_update": {
      const run = (view.tools[event.toolCallId] ??= {
        toolCallId: event.toolCallId,
        toolName: event.toolName,
        args: clone(event.args),
        status: "running",
      });
      run.partial = clone(event.partialResult);
      break;
    }
    case "tool_execution_end": {
      const run = (view.tools[event.toolCallId] ??= {
        toolCallId: event.toolCallId,
        toolName: event.toolName,
        args: {},
        status: "running",
      });
      run.status = event.isError ? "error" : "done";
      run.result = clone(event.result);
      break;
    }
    case "queue_update":
      view.queue = { steering: [...event.steering], followUp: [...event.followUp] };
      break;
    case "session_state":
      view.model = event.model;
      view.thinkingLevel = event.thinkingLevel;
      view.steeringMode = event.steeringMode;
      view.followUpMode = event.followUpMode;
      view.approvalMode = event.approvalMode;
      view.toolExecution = event.toolExecution;
      break;
    case "approval_request":
      view.pendingApprovals = view.pendingApprovals.filter((a) => a.approvalId !== event.approvalId);
      view.pendingApprovals.push(clone(event));
      break;
    case "approval_resolved":
      view.pendingApprovals = view.pendingApprovals.filter((a) => a.approvalId !== event.approvalId);
      view.approvalOutcomes[event.toolCallId] = outcomeOf(event);
      break;
    case "persistence_error":
      view.warnings.push(event.message);
      break;
    case "mcp_server_state":
      // The session goes on without the server's tools; the panel's warning line says why.
      if (event.server.state === "failed") {
        view.warnings.push(`MCP server ${event.server.name} failed${event.server.message ? `: ${event.server.message}` : ""}`);
      }
      break;
    case "context_usage": {
      const { type: _type, usage, ...context } = event;
      view.context = clone(context);
      view.sessionUsage = clone(usage);
      break;
    }
    case "compaction_start":
      view.compacting = event.reason;
      break;
    case "compaction_end":
      delete view.compacting;
      if (event.compaction) view.compactions.push(clone(event.compaction));
      break;
    case "compaction_undone":
      view.compactions = view.compactions.filter((c) => c.id !== event.compactionId);
      break;
    default:
      break; // an event type this client does not know: ignore it (forward compatible)
  }
}

/** The tool result of a completed call, from the transcript. */
export function findToolResult(view: SessionView, toolCallId: string): ToolResultMessage | undefined {
  for (let i = view.messages.length - 1; i >= 0; i--) {
    const message = view.messages[i];
    if (message.role === "toolResult" && (message as ToolResultMessage).toolCallId === toolCallId) {
      return message as ToolResultMessage;
    }
  }
  return undefined;
}

/**
 * A comparable snapshot of what a view shows: what a client rebuilt from events must equal
 * what it rebuilds from `agent/getState` at the same `seq` (live-only details, like streamed
 * tool output and raw tool-call JSON, left out).
 */
export function comparableView(view: SessionView): unknown {
  return clone({
    sessionId: view.sessionId,
    model: view.model,
    thinkingLevel: view.thinkingLevel,
    approvalMode: view.approvalMode,
    toolExecution: view.toolExecution,
    steeringMode: view.steeringMode,
    followUpMode: view.followUpMode,
    isStreaming: view.isStreaming,
    messages: view.messages,
    streamMessage: view.streamMessage,
    pendingApprovals: view.pendingApprovals,
    approvalOutcomes: view.approvalOutcomes,
    queue: view.queue,
    seq: view.seq,
    runningTools: Object.values(view.tools)
      .filter((t) => t.status === "running")
      .map((t) => t.toolCallId)
      .sort(),
  });
}
