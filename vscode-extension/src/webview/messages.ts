// Messages between the extension host and the chat webview (postMessage both ways).
import type { AgentEventParams, ApprovalOptionId, SessionState } from "../protocol/types";

export type ServerStatus = "starting" | "ready" | "stopped" | "error";

export interface ContextChip {
  label: string;
  detail?: string;
}

export type ToWebview =
  /** Rebuild everything from agent/getState (null: no session yet). */
  | { type: "reset"; state: SessionState | null }
  /** One agent/event of the session the panel shows, in seq order. */
  | { type: "event"; notification: AgentEventParams }
  | { type: "status"; status: ServerStatus; message?: string }
  | { type: "context"; items: ContextChip[] }
  | { type: "notice"; level: "error" | "info"; message: string }
  /** Review per hunk: the hunks of a pending approval the user dropped (panel or diff editor). */
  | { type: "hunks"; approvalId: string; dropped: string[] }
  | { type: "focus" };

export type WebviewCommand =
  | "newSession"
  | "resumeSession"
  | "selectModel"
  | "setApprovalMode"
  | "manageRules"
  | "restartServer"
  | "showLog"
  | "openSettings";

export type FromWebview =
  | { type: "ready" }
  /** The panel missed an event (a gap in seq): send a reset. */
  | { type: "resync" }
  | { type: "send"; text: string; behavior?: "steer" | "followUp" }
  | { type: "stop" }
  | { type: "respondApproval"; approvalId: string; optionId: ApprovalOptionId; message?: string }
  | { type: "viewDiff"; approvalId: string }
  | { type: "toggleHunk"; approvalId: string; hunkId: string; keep: boolean }
  | { type: "removeContext"; index: number }
  | { type: "clearQueue" }
  /** "Rewind to here" on the user message at this index of the conversation. */
  | { type: "rewindTo"; messageIndex: number }
  | { type: "command"; command: WebviewCommand }
  | { type: "openLink"; href: string };
