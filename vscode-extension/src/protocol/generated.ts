/* eslint-disable */
/**
 * GENERATED from schema/tiller.schema.json by scripts/generate-protocol.mjs
 * (`npm run generate`). Do not edit: change the server's pydantic classes, run `tiller schema`,
 * then regenerate.
 */

/**
 * Not a message itself: a holder whose fields name every top-level wire type.
 */
export interface TillerWireTypes {
  agent_event:
    | AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent;
  agent_message: (UserMessage | AssistantMessage | ToolResultMessage) | CustomMessage;
  agent_tool_result: AgentToolResult;
  approval_request_event: ApprovalRequestEvent;
  approval_resolved_event: ApprovalResolvedEvent;
  assistant_message_event:
    | StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent;
  checkpoint: Checkpoint;
  command_rules: CommandRules;
  compact_params: CompactParams;
  compaction_end_event: CompactionEndEvent;
  compaction_info: CompactionInfo;
  compaction_settings: CompactionSettings;
  compaction_start_event: CompactionStartEvent;
  compaction_undone_event: CompactionUndoneEvent;
  context_usage: ContextUsage;
  context_usage_event: ContextUsageEvent;
  empty: Empty;
  event_notification: EventNotification;
  instructions_event: InstructionsEvent;
  list_checkpoints_result: ListCheckpointsResult;
  list_models_params: ListModelsParams;
  list_models_result: ListModelsResult;
  list_sessions_params: ListSessionsParams;
  list_sessions_result: ListSessionsResult;
  list_tools_result: ListToolsResult;
  load_session_params: LoadSessionParams;
  mcp_server_spec: McpServerSpec;
  mcp_server_state_event: McpServerStateEvent;
  message_update_on_the_wire: MessageUpdateDelta;
  model: Model;
  new_session_params: NewSessionParams;
  new_session_result: NewSessionResult;
  persistence_error_event: PersistenceErrorEvent;
  prompt_params: PromptParams;
  prompt_result: PromptResult;
  queue_params: QueueParams;
  queue_state: QueueState;
  queue_update_event: QueueUpdateEvent;
  respond_approval_params: RespondApprovalParams;
  rewind_event: RewindEvent;
  rewind_params: RewindParams;
  rewind_result: RewindResult;
  rules_result: RulesResult;
  session_ref: SessionRef;
  session_state: SessionState;
  session_state_event: SessionStateEvent;
  set_approval_mode_params: SetApprovalModeParams;
  set_compaction_params: SetCompactionParams;
  set_model_params: SetModelParams;
  set_queue_modes_params: SetQueueModesParams;
  set_rules_params: SetRulesParams;
  set_thinking_level_params: SetThinkingLevelParams;
  set_tool_execution_params: SetToolExecutionParams;
  stop_reason: "stop" | "length" | "toolUse" | "error" | "aborted";
  thinking_level: "off" | "minimal" | "low" | "medium" | "high" | "xhigh";
  undo_compaction_result: UndoCompactionResult;
  usage: Usage;
  wire_event:
    | AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateDelta
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
    | QueueUpdateEvent
    | SessionStateEvent
    | ApprovalRequestEvent
    | ApprovalResolvedEvent
    | PersistenceErrorEvent
    | RewindEvent
    | ContextUsageEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | CompactionUndoneEvent
    | InstructionsEvent
    | McpServerStateEvent;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "AgentStartEvent".
 */
export interface AgentStartEvent {
  type: "agent_start";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "AgentEndEvent".
 */
export interface AgentEndEvent {
  messages: ((UserMessage | AssistantMessage | ToolResultMessage) | CustomMessage)[];
  type: "agent_end";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "UserMessage".
 */
export interface UserMessage {
  content: string | (TextContent | ImageContent)[];
  role: "user";
  timestamp: number;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "TextContent".
 */
export interface TextContent {
  text: string;
  textSignature?: string | null;
  type: "text";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ImageContent".
 */
export interface ImageContent {
  data: string;
  mimeType: string;
  type: "image";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "AssistantMessage".
 */
export interface AssistantMessage {
  api: string;
  content: (TextContent | ThinkingContent | ToolCall)[];
  errorMessage?: string | null;
  model: string;
  provider: string;
  role: "assistant";
  stopReason: "stop" | "length" | "toolUse" | "error" | "aborted";
  timestamp: number;
  usage: Usage;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ThinkingContent".
 */
export interface ThinkingContent {
  redacted?: boolean | null;
  thinking: string;
  thinkingSignature?: string | null;
  type: "thinking";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ToolCall".
 */
export interface ToolCall {
  arguments: {
    [k: string]: unknown;
  };
  id: string;
  name: string;
  thoughtSignature?: string | null;
  type: "toolCall";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "Usage".
 */
export interface Usage {
  cacheRead: number;
  cacheWrite: number;
  cost: Cost;
  input: number;
  output: number;
  totalTokens: number;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "Cost".
 */
export interface Cost {
  cacheRead: number;
  cacheWrite: number;
  input: number;
  output: number;
  total: number;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ToolResultMessage".
 */
export interface ToolResultMessage {
  content: (TextContent | ImageContent)[];
  details?: {
    [k: string]: unknown;
  };
  isError: boolean;
  role: "toolResult";
  timestamp: number;
  toolCallId: string;
  toolName: string;
}
/**
 * An application-defined message (any role the LLM never sees unless converted).
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "CustomMessage".
 */
export interface CustomMessage {
  role: string;
  timestamp: number;
  [k: string]: unknown;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "TurnStartEvent".
 */
export interface TurnStartEvent {
  type: "turn_start";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "TurnEndEvent".
 */
export interface TurnEndEvent {
  message: (UserMessage | AssistantMessage | ToolResultMessage) | CustomMessage;
  toolResults: ToolResultMessage[];
  type: "turn_end";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "MessageStartEvent".
 */
export interface MessageStartEvent {
  message: (UserMessage | AssistantMessage | ToolResultMessage) | CustomMessage;
  type: "message_start";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "MessageUpdateEvent".
 */
export interface MessageUpdateEvent {
  assistantMessageEvent:
    | StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent;
  message: AssistantMessage;
  type: "message_update";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "StartEvent".
 */
export interface StartEvent {
  partial: AssistantMessage;
  type: "start";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "TextStartEvent".
 */
export interface TextStartEvent {
  contentIndex: number;
  partial: AssistantMessage;
  type: "text_start";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "TextDeltaEvent".
 */
export interface TextDeltaEvent {
  contentIndex: number;
  delta: string;
  partial: AssistantMessage;
  type: "text_delta";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "TextEndEvent".
 */
export interface TextEndEvent {
  content: string;
  contentIndex: number;
  partial: AssistantMessage;
  type: "text_end";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ThinkingStartEvent".
 */
export interface ThinkingStartEvent {
  contentIndex: number;
  partial: AssistantMessage;
  type: "thinking_start";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ThinkingDeltaEvent".
 */
export interface ThinkingDeltaEvent {
  contentIndex: number;
  delta: string;
  partial: AssistantMessage;
  type: "thinking_delta";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ThinkingEndEvent".
 */
export interface ThinkingEndEvent {
  content: string;
  contentIndex: number;
  partial: AssistantMessage;
  type: "thinking_end";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ToolCallStartEvent".
 */
export interface ToolCallStartEvent {
  contentIndex: number;
  partial: AssistantMessage;
  type: "toolcall_start";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ToolCallDeltaEvent".
 */
export interface ToolCallDeltaEvent {
  contentIndex: number;
  delta: string;
  partial: AssistantMessage;
  type: "toolcall_delta";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ToolCallEndEvent".
 */
export interface ToolCallEndEvent {
  contentIndex: number;
  partial: AssistantMessage;
  toolCall: ToolCall;
  type: "toolcall_end";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "DoneEvent".
 */
export interface DoneEvent {
  message: AssistantMessage;
  reason: "stop" | "length" | "toolUse";
  type: "done";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ErrorEvent".
 */
export interface ErrorEvent {
  error: AssistantMessage;
  reason: "aborted" | "error";
  type: "error";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "MessageEndEvent".
 */
export interface MessageEndEvent {
  message: (UserMessage | AssistantMessage | ToolResultMessage) | CustomMessage;
  type: "message_end";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ToolExecutionStartEvent".
 */
export interface ToolExecutionStartEvent {
  args: {
    [k: string]: unknown;
  };
  toolCallId: string;
  toolName: string;
  type: "tool_execution_start";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ToolExecutionUpdateEvent".
 */
export interface ToolExecutionUpdateEvent {
  args: {
    [k: string]: unknown;
  };
  partialResult: AgentToolResult;
  toolCallId: string;
  toolName: string;
  type: "tool_execution_update";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "AgentToolResult".
 */
export interface AgentToolResult {
  content: (TextContent | ImageContent)[];
  details?: {
    [k: string]: unknown;
  };
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ToolExecutionEndEvent".
 */
export interface ToolExecutionEndEvent {
  isError: boolean;
  result: AgentToolResult;
  toolCallId: string;
  toolName: string;
  type: "tool_execution_end";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ApprovalRequestEvent".
 */
export interface ApprovalRequestEvent {
  approvalId: string;
  arguments?: {
    [k: string]: unknown;
  } | null;
  command?: string | null;
  diff?: string | null;
  hunks?: DiffHunk[] | null;
  kind: "edit" | "write" | "execute" | "mcp";
  newText?: string | null;
  options: ApprovalOption[];
  path?: string | null;
  reason?: string | null;
  server?: string | null;
  title: string;
  toolCallId: string;
  toolName: string;
  type: "approval_request";
}
/**
 * One hunk of an approval's `diff`: `header` is its @@ line, the numbers are the line
 * ranges it covers in the file before and after (unified diff conventions).
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "DiffHunk".
 */
export interface DiffHunk {
  header: string;
  id: string;
  newLines: number;
  newStart: number;
  oldLines: number;
  oldStart: number;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ApprovalOption".
 */
export interface ApprovalOption {
  kind: "allow_once" | "allow_always" | "reject_once" | "reject_always";
  name: string;
  optionId:
    | "allow_once"
    | "allow_always"
    | "allow_server"
    | "reject_once"
    | "reject_always"
    | "allow_always_project"
    | "allow_always_user";
  rule?: SavedRule | null;
}
/**
 * The command rule an "always allow" option saves, exactly as it will be saved.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "SavedRule".
 */
export interface SavedRule {
  path?: string | null;
  patterns: string[];
  scope: "session" | "project" | "user";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ApprovalResolvedEvent".
 */
export interface ApprovalResolvedEvent {
  acceptedHunks?: string[] | null;
  approvalId: string;
  optionId?:
    | (
        | "allow_once"
        | "allow_always"
        | "allow_server"
        | "reject_once"
        | "reject_always"
        | "allow_always_project"
        | "allow_always_user"
      )
    | null;
  outcome: "selected" | "cancelled";
  toolCallId: string;
  type: "approval_resolved";
}
/**
 * The workspace's files and the conversation as they were at one moment (see
 * protocol.md, "Checkpoints and rewind").
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "Checkpoint".
 */
export interface Checkpoint {
  checkpointId: string;
  createdAt: number;
  kind: "turn" | "rewind";
  messageCount: number;
  onCurrentBranch: boolean;
  title: string;
}
/**
 * Patterns on bash commands (`git diff *`, `npm test`, `rm -rf *`): deny wins over ask,
 * ask over allow; `readOnly` lists what plan mode may run.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "CommandRules".
 */
export interface CommandRules {
  allow: string[];
  ask: string[];
  deny: string[];
  readOnly: string[];
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "CompactParams".
 */
export interface CompactParams {
  instructions?: string | null;
  sessionId: string;
}
/**
 * The compaction is done (`compaction` set), failed (`errorMessage`) or was aborted;
 * when it did not complete nothing changed.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "CompactionEndEvent".
 */
export interface CompactionEndEvent {
  aborted: boolean;
  compaction?: CompactionInfo | null;
  errorMessage?: string | null;
  reason: "threshold" | "overflow" | "manual";
  summary?: string | null;
  tokensAfter?: number | null;
  tokensBefore: number;
  type: "compaction_end";
  willRetry: boolean;
}
/**
 * One compaction: `messages[:firstKeptIndex]` of the session are replaced, in what the
 * model sees, by `summary`; the session file (and `agent/getState`) keep every message.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "CompactionInfo".
 */
export interface CompactionInfo {
  firstKeptIndex: number;
  id: string;
  instructions?: string | null;
  reason: "threshold" | "overflow" | "manual";
  summary: string;
  timestamp: number;
  tokensAfter: number;
  tokensBefore: number;
  usage: Usage;
}
/**
 * A session's compaction settings, as they apply to its current model.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "CompactionSettings".
 */
export interface CompactionSettings {
  auto: boolean;
  compactAt: number;
  compactAtSource: "session" | "model" | "default";
  keepRecentTokens: number;
  toolResultMaxTokens: number;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "CompactionStartEvent".
 */
export interface CompactionStartEvent {
  reason: "threshold" | "overflow" | "manual";
  tokensBefore: number;
  type: "compaction_start";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "CompactionUndoneEvent".
 */
export interface CompactionUndoneEvent {
  compactionId: string;
  type: "compaction_undone";
}
/**
 * How many tokens the next request will carry, against the model's context window.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ContextUsage".
 */
export interface ContextUsage {
  compactAt: number;
  contextWindow: number;
  percent: number;
  source: "provider" | "estimate";
  tokens: number;
}
/**
 * After each turn, and after a compaction or its undo.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ContextUsageEvent".
 */
export interface ContextUsageEvent {
  compactAt: number;
  contextWindow: number;
  percent: number;
  source: "provider" | "estimate";
  tokens: number;
  type: "context_usage";
  usage: Usage;
}
/**
 * The result of a method that only acknowledges (`{}`).
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "Empty".
 */
export interface Empty {}
/**
 * `agent/event`: one event of one session; `seq` rises by one per session.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "EventNotification".
 */
export interface EventNotification {
  event:
    | AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateDelta
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
    | QueueUpdateEvent
    | SessionStateEvent
    | ApprovalRequestEvent
    | ApprovalResolvedEvent
    | PersistenceErrorEvent
    | RewindEvent
    | ContextUsageEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | CompactionUndoneEvent
    | InstructionsEvent
    | McpServerStateEvent;
  seq: number;
  sessionId: string;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "MessageUpdateDelta".
 */
export interface MessageUpdateDelta {
  assistantMessageEvent: AssistantDelta;
  type: "message_update";
}
/**
 * What `message_update` carries on the wire instead of the whole partial message
 * (protocol.md, "Rebuilding a streaming message").
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "AssistantDelta".
 */
export interface AssistantDelta {
  content?: string | null;
  contentIndex: number;
  delta?: string | null;
  id?: string | null;
  redacted?: boolean | null;
  toolCall?: ToolCall | null;
  toolName?: string | null;
  type:
    | "text_start"
    | "text_delta"
    | "text_end"
    | "thinking_start"
    | "thinking_delta"
    | "thinking_end"
    | "toolcall_start"
    | "toolcall_delta"
    | "toolcall_end";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "QueueUpdateEvent".
 */
export interface QueueUpdateEvent {
  followUp: string[];
  steering: string[];
  type: "queue_update";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "SessionStateEvent".
 */
export interface SessionStateEvent {
  approvalMode: "ask" | "acceptEdits" | "yolo" | "plan";
  followUpMode: "all" | "one_at_a_time";
  model: string;
  steeringMode: "all" | "one_at_a_time";
  thinkingLevel: "off" | "minimal" | "low" | "medium" | "high" | "xhigh";
  toolExecution: "sequential" | "parallel";
  type: "session_state";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "PersistenceErrorEvent".
 */
export interface PersistenceErrorEvent {
  message: string;
  type: "persistence_error";
}
/**
 * The files and/or the conversation went back to a checkpoint: a client reloads the
 * messages (agent/getState) when the conversation was restored.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "RewindEvent".
 */
export interface RewindEvent {
  checkpointId: string;
  messageCount: number;
  restore: "files" | "conversation" | "both";
  type: "rewind";
  undoCheckpointId: string;
}
/**
 * The instruction files the session's system prompt holds: at session start, and at
 * the prompt after one changed, appeared or went away.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "InstructionsEvent".
 */
export interface InstructionsEvent {
  files: InstructionFile[];
  type: "instructions_loaded";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "InstructionFile".
 */
export interface InstructionFile {
  path: string;
  scope: "user" | "project";
}
/**
 * One of the session's MCP servers changed: it started, failed, crashed and is being
 * restarted, or its tools changed.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "McpServerStateEvent".
 */
export interface McpServerStateEvent {
  server: McpServerInfo;
  type: "mcp_server_state";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "McpServerInfo".
 */
export interface McpServerInfo {
  message?: string | null;
  name: string;
  source: "config" | "project" | "session";
  state: "pending" | "starting" | "ready" | "restarting" | "failed" | "disabled";
  tools: McpToolInfo[];
  transport: "stdio" | "http" | "sse";
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "McpToolInfo".
 */
export interface McpToolInfo {
  description: string;
  name: string;
  readOnly: boolean;
  title?: string | null;
  tool: string;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ListCheckpointsResult".
 */
export interface ListCheckpointsResult {
  available: boolean;
  checkpoints: Checkpoint[];
  reason?: string | null;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ListModelsParams".
 */
export interface ListModelsParams {
  all?: boolean | null;
  limit?: number | null;
  offset?: number | null;
  query?: string | null;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ListModelsResult".
 */
export interface ListModelsResult {
  default: string;
  models: ModelInfo[];
  total: number;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ModelInfo".
 */
export interface ModelInfo {
  api: string;
  contextWindow: number;
  cost: ModelCost;
  hasKey: boolean;
  id: string;
  input: string[];
  maxTokens: number;
  name: string;
  provider: string;
  ready: boolean;
  reasoning: boolean;
  setupHint?: string | null;
}
/**
 * Prices in dollars per million tokens.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ModelCost".
 */
export interface ModelCost {
  cacheRead: number;
  cacheWrite: number;
  input: number;
  output: number;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ListSessionsParams".
 */
export interface ListSessionsParams {
  cwd?: string | null;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ListSessionsResult".
 */
export interface ListSessionsResult {
  sessions: SessionSummary[];
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "SessionSummary".
 */
export interface SessionSummary {
  cwd: string;
  isStreaming: boolean;
  loaded: boolean;
  messageCount: number;
  model: string;
  sessionId: string;
  title: string;
  updatedAt: number;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ListToolsResult".
 */
export interface ListToolsResult {
  mcpServers: McpServerInfo[];
  tools: ToolInfo[];
}
/**
 * A tool the model may call now.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ToolInfo".
 */
export interface ToolInfo {
  description: string;
  name: string;
  readOnly: boolean;
  server?: string | null;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "LoadSessionParams".
 */
export interface LoadSessionParams {
  mcpServers?: McpServerSpec[] | null;
  sessionId: string;
}
/**
 * One MCP server: a command to run (stdio) or a URL to connect to (http, sse).
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "McpServerSpec".
 */
export interface McpServerSpec {
  args?: string[] | null;
  autoApprove?: string[] | null;
  command?: string | null;
  cwd?: string | null;
  disabled?: boolean | null;
  env?: {
    [k: string]: string;
  } | null;
  headers?: {
    [k: string]: string;
  } | null;
  name: string;
  startupTimeoutMs?: number | null;
  timeoutMs?: number | null;
  type?: ("stdio" | "http" | "sse") | null;
  url?: string | null;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "Model".
 */
export interface Model {
  api: string;
  baseUrl: string;
  compactAt?: number | string | null;
  compat?: OpenAICompat | null;
  contextWindow: number;
  cost: ModelCost;
  headers?: {
    [k: string]: string;
  } | null;
  id: string;
  input: ("text" | "image")[];
  maxTokens: number;
  name: string;
  provider: string;
  reasoning: boolean;
}
/**
 * How a server speaking OpenAI's chat completions differs from OpenAI (pi-ai's compat).
 *
 * Unset switches are detected from the provider and base URL (see
 * `providers/openai_compat.py`); a models.toml `compat` table sets them explicitly.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "OpenAICompat".
 */
export interface OpenAICompat {
  maxTokensField?: ("max_tokens" | "max_completion_tokens") | null;
  requiresAssistantAfterToolResult?: boolean | null;
  requiresMistralToolIds?: boolean | null;
  requiresThinkingAsText?: boolean | null;
  requiresToolResultName?: boolean | null;
  supportsDeveloperRole?: boolean | null;
  supportsReasoningEffort?: boolean | null;
  supportsStore?: boolean | null;
  supportsUsageInStreaming?: boolean | null;
  thinkingFormat?: ("openai" | "openrouter" | "zai" | "qwen") | null;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "NewSessionParams".
 */
export interface NewSessionParams {
  approvalMode?: ("ask" | "acceptEdits" | "yolo" | "plan") | null;
  cwd?: string | null;
  mcpServers?: McpServerSpec[] | null;
  model?: string | null;
  systemPrompt?: string | null;
  thinkingLevel?: ("off" | "minimal" | "low" | "medium" | "high" | "xhigh") | null;
  toolExecution?: ("sequential" | "parallel") | null;
  tools?: string[] | null;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "NewSessionResult".
 */
export interface NewSessionResult {
  approvalMode: "ask" | "acceptEdits" | "yolo" | "plan";
  cwd: string;
  messageCount: number;
  model: string;
  sessionId: string;
  tools: string[];
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "PromptParams".
 */
export interface PromptParams {
  context?: EditorContext[] | null;
  images?: ImageContent[] | null;
  sessionId: string;
  streamingBehavior?: ("steer" | "followUp") | null;
  text: string;
}
/**
 * A file or selection the editor attaches to a prompt.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "EditorContext".
 */
export interface EditorContext {
  range?: Range | null;
  text?: string | null;
  uri: string;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "Range".
 */
export interface Range {
  end: Position;
  start: Position;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "Position".
 */
export interface Position {
  character: number;
  line: number;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "PromptResult".
 */
export interface PromptResult {
  errorMessage?: string | null;
  newMessages: ((UserMessage | AssistantMessage | ToolResultMessage) | CustomMessage)[];
  stopReason: ("stop" | "length" | "toolUse" | "error" | "aborted") | "queued";
  usage: Usage;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "QueueParams".
 */
export interface QueueParams {
  sessionId: string;
  text: string;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "QueueState".
 */
export interface QueueState {
  followUp: string[];
  steering: string[];
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "RespondApprovalParams".
 */
export interface RespondApprovalParams {
  acceptedHunks?: string[] | null;
  approvalId: string;
  message?: string | null;
  optionId:
    | "allow_once"
    | "allow_always"
    | "allow_server"
    | "reject_once"
    | "reject_always"
    | "allow_always_project"
    | "allow_always_user";
  sessionId: string;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "RewindParams".
 */
export interface RewindParams {
  checkpointId: string;
  force?: boolean | null;
  restore: "files" | "conversation" | "both";
  sessionId: string;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "RewindResult".
 */
export interface RewindResult {
  deleted: string[];
  messageCount: number;
  restored: string[];
  skipped: SkippedFile[];
  undoCheckpointId: string;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "SkippedFile".
 */
export interface SkippedFile {
  path: string;
  reason: string;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "RulesResult".
 */
export interface RulesResult {
  builtInReadOnly: string[];
  project: ProjectRulesInfo;
  session: CommandRules;
  user: RuleFileInfo;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "ProjectRulesInfo".
 */
export interface ProjectRulesInfo {
  error?: string | null;
  path: string;
  rules: CommandRules;
  trusted: boolean;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "RuleFileInfo".
 */
export interface RuleFileInfo {
  error?: string | null;
  path: string;
  rules: CommandRules;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "SessionRef".
 */
export interface SessionRef {
  sessionId: string;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "SessionState".
 */
export interface SessionState {
  approvalMode: "ask" | "acceptEdits" | "yolo" | "plan";
  compaction: CompactionSettings;
  compactions: CompactionInfo[];
  contextUsage: ContextUsage;
  cwd: string;
  error?: string | null;
  followUpMode: "all" | "one_at_a_time";
  instructions: InstructionFile[];
  isCompacting: boolean;
  isStreaming: boolean;
  messages: ((UserMessage | AssistantMessage | ToolResultMessage) | CustomMessage)[];
  model: string;
  pendingApprovals: ApprovalRequestEvent[];
  pendingToolCalls: string[];
  queue: QueueState;
  resolvedApprovals: ApprovalResolvedEvent[];
  seq: number;
  sessionId: string;
  steeringMode: "all" | "one_at_a_time";
  streamMessage?: (UserMessage | AssistantMessage | ToolResultMessage) | CustomMessage | null;
  thinkingLevel: "off" | "minimal" | "low" | "medium" | "high" | "xhigh";
  toolExecution: "sequential" | "parallel";
  usage: Usage;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "SetApprovalModeParams".
 */
export interface SetApprovalModeParams {
  mode: "ask" | "acceptEdits" | "yolo" | "plan";
  sessionId: string;
}
/**
 * Absent fields stay as they are.
 *
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "SetCompactionParams".
 */
export interface SetCompactionParams {
  auto?: boolean | null;
  compactAt?: number | string | "default" | null;
  keepRecentTokens?: number | null;
  sessionId: string;
  toolResultMaxTokens?: number | null;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "SetModelParams".
 */
export interface SetModelParams {
  model: string;
  sessionId: string;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "SetQueueModesParams".
 */
export interface SetQueueModesParams {
  followUpMode?: ("all" | "one_at_a_time") | null;
  sessionId: string;
  steeringMode?: ("all" | "one_at_a_time") | null;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "SetRulesParams".
 */
export interface SetRulesParams {
  rules?: CommandRules | null;
  scope: "session" | "project" | "user";
  sessionId: string;
  trust?: boolean | null;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "SetThinkingLevelParams".
 */
export interface SetThinkingLevelParams {
  level: "off" | "minimal" | "low" | "medium" | "high" | "xhigh";
  sessionId: string;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "SetToolExecutionParams".
 */
export interface SetToolExecutionParams {
  mode: "sequential" | "parallel";
  sessionId: string;
}
/**
 * This interface was referenced by `TillerWireTypes`'s JSON-Schema
 * via the `definition` "UndoCompactionResult".
 */
export interface UndoCompactionResult {
  contextUsage: ContextUsage;
  undone: CompactionInfo;
}

/** The protocol version this client speaks (initialize's experimental.tiller.protocolVersion). */
export const PROTOCOL_VERSION = 1;

/** The error codes of protocol.md section 4, by name. */
export const ERROR_CODES = {
  "APPROVAL_NOT_FOUND": -32004,
  "CHECKPOINT_NOT_FOUND": -32006,
  "COMPACTION_FAILED": -32008,
  "INTERNAL_ERROR": -32603,
  "INVALID_PARAMS": -32602,
  "INVALID_REQUEST": -32600,
  "METHOD_NOT_FOUND": -32601,
  "MODEL_NOT_FOUND": -32003,
  "PARSE_ERROR": -32700,
  "REQUEST_CANCELLED": -32800,
  "REWIND_CONFLICT": -32007,
  "SESSION_BUSY": -32002,
  "SESSION_NOT_FOUND": -32001,
  "SESSION_UNREADABLE": -32005
} as const;

/** Every agent/* method: the names of its params and result types (null: no params). */
export const METHODS = {
  "agent/abort": {
    "params": "SessionRef",
    "result": "Empty"
  },
  "agent/clearQueue": {
    "params": "SessionRef",
    "result": "QueueState"
  },
  "agent/closeSession": {
    "params": "SessionRef",
    "result": "Empty"
  },
  "agent/compact": {
    "params": "CompactParams",
    "result": "CompactionInfo"
  },
  "agent/deleteSession": {
    "params": "SessionRef",
    "result": "Empty"
  },
  "agent/followUp": {
    "params": "QueueParams",
    "result": "QueueState"
  },
  "agent/getRules": {
    "params": "SessionRef",
    "result": "RulesResult"
  },
  "agent/getState": {
    "params": "SessionRef",
    "result": "SessionState"
  },
  "agent/listCheckpoints": {
    "params": "SessionRef",
    "result": "ListCheckpointsResult"
  },
  "agent/listModels": {
    "params": "ListModelsParams",
    "result": "ListModelsResult"
  },
  "agent/listSessions": {
    "params": "ListSessionsParams",
    "result": "ListSessionsResult"
  },
  "agent/listTools": {
    "params": "SessionRef",
    "result": "ListToolsResult"
  },
  "agent/loadSession": {
    "params": "LoadSessionParams",
    "result": "NewSessionResult"
  },
  "agent/newSession": {
    "params": "NewSessionParams",
    "result": "NewSessionResult"
  },
  "agent/prompt": {
    "params": "PromptParams",
    "result": "PromptResult"
  },
  "agent/respondApproval": {
    "params": "RespondApprovalParams",
    "result": "Empty"
  },
  "agent/rewind": {
    "params": "RewindParams",
    "result": "RewindResult"
  },
  "agent/setApprovalMode": {
    "params": "SetApprovalModeParams",
    "result": "SessionStateEvent"
  },
  "agent/setCompaction": {
    "params": "SetCompactionParams",
    "result": "CompactionSettings"
  },
  "agent/setModel": {
    "params": "SetModelParams",
    "result": "SessionStateEvent"
  },
  "agent/setQueueModes": {
    "params": "SetQueueModesParams",
    "result": "SessionStateEvent"
  },
  "agent/setRules": {
    "params": "SetRulesParams",
    "result": "RulesResult"
  },
  "agent/setThinkingLevel": {
    "params": "SetThinkingLevelParams",
    "result": "SessionStateEvent"
  },
  "agent/setToolExecution": {
    "params": "SetToolExecutionParams",
    "result": "SessionStateEvent"
  },
  "agent/steer": {
    "params": "QueueParams",
    "result": "QueueState"
  },
  "agent/undoCompaction": {
    "params": "SessionRef",
    "result": "UndoCompactionResult"
  }
} as const;
