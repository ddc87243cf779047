// The `agent/*` methods of protocol.md as typed calls over any JSON-RPC connection that has
// vscode-jsonrpc's shape: a `vscode-languageclient` LanguageClient in the extension, a raw
// `MessageConnection` in the tests. No `vscode` import here: it runs in plain Node.
import type {
  AgentEventParams,
  ApprovalMode,
  ToolExecution,
  EditorContext,
  ImageContent,
  ListCheckpointsResult,
  ListToolsResult,
  ListModelsParams,
  ListModelsResult,
  ListSessionsParams,
  ListSessionsResult,
  NewSessionParams,
  NewSessionResult,
  PromptResult,
  QueueMode,
  QueueState,
  RespondApprovalParams,
  RewindParams,
  RewindResult,
  RulesResult,
  SessionSettings,
  SessionState,
  SetRulesParams,
  ThinkingLevel,
} from "./types";

export interface Disposable {
  dispose(): void;
}

/** The part of vscode-jsonrpc's MessageConnection (and of LanguageClient) the client needs. */
export interface RpcConnection {
  sendRequest<R>(method: string, params?: unknown): Promise<R>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  onNotification(method: string, handler: (params: any) => void): Disposable;
}

export interface PromptRequest {
  sessionId: string;
  text: string;
  images?: ImageContent[];
  context?: EditorContext[];
  streamingBehavior?: "steer" | "followUp";
}

export const EVENT_NOTIFICATION = "agent/event";

/** Drops `undefined` members, so optional params are absent on the wire (protocol.md). */
function clean<T extends object>(params: T): T {
  return Object.fromEntries(Object.entries(params).filter(([, value]) => value !== undefined)) as T;
}

export class TillerClient implements Disposable {
  private listeners = new Set<(params: AgentEventParams) => void>();
  private subscription: Disposable;

  /**
   * Takes over the connection's `agent/event` notifications (a JSON-RPC connection has one
   * handler per method): subscribe through `onEvent`, as often as needed.
   */
  constructor(readonly connection: RpcConnection) {
    this.subscription = connection.onNotification(EVENT_NOTIFICATION, (params: AgentEventParams) => {
      for (const listener of [...this.listeners]) listener(params);
    });
  }

  /** Every `agent/event` notification, of every session. */
  onEvent(handler: (params: AgentEventParams) => void): Disposable {
    this.listeners.add(handler);
    return { dispose: () => this.listeners.delete(handler) };
  }

  dispose(): void {
    this.listeners.clear();
    this.subscription.dispose();
  }

  private request<R>(method: string, params?: object): Promise<R> {
    return params === undefined
      ? this.connection.sendRequest<R>(method)
      : this.connection.sendRequest<R>(method, clean(params));
  }

  newSession(params: NewSessionParams = {}): Promise<NewSessionResult> {
    return this.request("agent/newSession", params);
  }
  /** Answered when the run ends (or at once with stopReason "queued" when it was queued). */
  prompt(params: PromptRequest): Promise<PromptResult> {
    return this.request("agent/prompt", params);
  }
  steer(sessionId: string, text: string): Promise<QueueState> {
    return this.request("agent/steer", { sessionId, text });
  }
  followUp(sessionId: string, text: string): Promise<QueueState> {
    return this.request("agent/followUp", { sessionId, text });
  }
  /** Answered after the run has ended (its agent_end was sent). */
  abort(sessionId: string): Promise<Record<string, never>> {
    return this.request("agent/abort", { sessionId });
  }
  clearQueue(sessionId: string): Promise<QueueState> {
    return this.request("agent/clearQueue", { sessionId });
  }
  getState(sessionId: string): Promise<SessionState> {
    return this.request("agent/getState", { sessionId });
  }
  setModel(sessionId: string, model: string): Promise<SessionSettings> {
    return this.request("agent/setModel", { sessionId, model });
  }
  setThinkingLevel(sessionId: string, level: ThinkingLevel): Promise<SessionSettings> {
    return this.request("agent/setThinkingLevel", { sessionId, level });
  }
  setQueueModes(sessionId: string, modes: { steeringMode?: QueueMode; followUpMode?: QueueMode }): Promise<SessionSettings> {
    return this.request("agent/setQueueModes", { sessionId, ...modes });
  }
  setApprovalMode(sessionId: string, mode: ApprovalMode): Promise<SessionSettings> {
    return this.request("agent/setApprovalMode", { sessionId, mode });
  }
  setToolExecution(sessionId: string, mode: ToolExecution): Promise<SessionSettings> {
    return this.request("agent/setToolExecution", { sessionId, mode });
  }
  respondApproval(params: RespondApprovalParams): Promise<Record<string, never>> {
    return this.request("agent/respondApproval", params);
  }
  listModels(params: ListModelsParams = {}): Promise<ListModelsResult> {
    return this.request("agent/listModels", params);
  }
  listSessions(params: ListSessionsParams = {}): Promise<ListSessionsResult> {
    return this.request("agent/listSessions", params);
  }
  loadSession(sessionId: string): Promise<NewSessionResult> {
    return this.request("agent/loadSession", { sessionId });
  }
  closeSession(sessionId: string): Promise<Record<string, never>> {
    return this.request("agent/closeSession", { sessionId });
  }
  deleteSession(sessionId: string): Promise<Record<string, never>> {
    return this.request("agent/deleteSession", { sessionId });
  }
  /** The command rules of the session, the project and the user (protocol.md 5.1). */
  /** The session's tools, built-in and MCP, and each MCP server's state. */
  listTools(sessionId: string): Promise<ListToolsResult> {
    return this.request("agent/listTools", { sessionId });
  }
  getRules(sessionId: string): Promise<RulesResult> {
    return this.request("agent/getRules", { sessionId });
  }
  /** Replaces one scope's rules (all four lists) and/or trusts the project's file. */
  setRules(params: SetRulesParams): Promise<RulesResult> {
    return this.request("agent/setRules", params);
  }
  listCheckpoints(sessionId: string): Promise<ListCheckpointsResult> {
    return this.request("agent/listCheckpoints", { sessionId });
  }
  rewind(params: RewindParams): Promise<RewindResult> {
    return this.request("agent/rewind", params);
  }
}
