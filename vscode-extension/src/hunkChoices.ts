// Review per hunk: which hunks of each pending edit or write the user has dropped. One store
// for the panel's checkboxes and the diff editor's per-hunk actions, so both always show the
// same choice, and an Allow answered from anywhere carries it (`acceptedHunks`).
import * as vscode from "vscode";

import type { ApprovalRequestEvent, DiffHunk } from "./protocol/types";

export class HunkChoices implements vscode.Disposable {
  private dropped = new Map<string, Set<string>>();
  private changes = new vscode.EventEmitter<string>();
  /** Fires with the approvalId whose choice changed. */
  readonly onDidChange = this.changes.event;

  droppedOf(approvalId: string): string[] {
    return [...(this.dropped.get(approvalId) ?? [])].sort();
  }

  set(approvalId: string, hunkId: string, keep: boolean): void {
    const dropped = this.dropped.get(approvalId) ?? new Set<string>();
    if (keep === !dropped.has(hunkId)) return;
    if (keep) dropped.delete(hunkId);
    else dropped.add(hunkId);
    this.dropped.set(approvalId, dropped);
    this.changes.fire(approvalId);
  }

  forget(approvalId: string): void {
    if (this.dropped.delete(approvalId)) this.changes.fire(approvalId);
  }

  /** The ids to send as `acceptedHunks`: undefined when the whole change is kept. */
  accepted(approval: ApprovalRequestEvent): string[] | undefined {
    const dropped = this.dropped.get(approval.approvalId);
    if (!dropped?.size || !approval.hunks) return undefined;
    return approval.hunks.map((hunk) => hunk.id).filter((id) => !dropped.has(id));
  }

  dispose(): void {
    this.dropped.clear();
    this.changes.dispose();
  }
}

/** The hunk whose lines in the proposed text (1-based `line`) include `line`. */
export function hunkAtLine(hunks: DiffHunk[], line: number): DiffHunk | undefined {
  return hunks.find((hunk) => line >= hunk.newStart && line <= hunk.newStart + Math.max(hunk.newLines, 1) - 1);
}
