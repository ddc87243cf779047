// "View diff" for an approval: VS Code's diff editor between the file (as the editor has it,
// unsaved changes included) and the proposed text, served by a TextDocumentContentProvider
// on a private scheme. The proposed text is the approval's unified diff applied to the
// current text (src/diff.ts); a new file is diffed against an empty virtual document.
import * as vscode from "vscode";

import { applyUnifiedDiff, isNewFileDiff } from "./diff";
import type { ApprovalRequestEvent } from "./protocol/types";

export const PROPOSAL_SCHEME = "tiller-proposal";

export class ProposalProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private texts = new Map<string, string>();
  private changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.query) ?? "";
  }

  /** A URI with the file's path (so the language and highlighting match) and the text's key. */
  set(key: string, filePath: string, text: string): vscode.Uri {
    this.texts.set(key, text);
    const uri = vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: filePath, query: key });
    this.changed.fire(uri);
    return uri;
  }

  delete(key: string): void {
    this.texts.delete(key);
  }

  has(key: string): boolean {
    return this.texts.has(key);
  }

  dispose(): void {
    this.texts.clear();
    this.changed.dispose();
  }
}

/** The text the editor has for `uri`: the open document's (unsaved changes included), else the file's. */
export async function currentText(uri: vscode.Uri): Promise<string | undefined> {
  const open = vscode.workspace.textDocuments.find((doc) => doc.uri.toString() === uri.toString());
  if (open) return open.getText();
  try {
    return new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
  } catch {
    return undefined; // no such file
  }
}

export interface DiffDocuments {
  original: vscode.Uri;
  proposed: vscode.Uri;
  title: string;
}

/** Builds the two sides of the diff for an edit/write approval; throws if the diff does not apply. */
export async function proposalDocuments(provider: ProposalProvider, approval: ApprovalRequestEvent): Promise<DiffDocuments> {
  if (!approval.path || !approval.diff) throw new Error(`${approval.title}: nothing to compare`);
  const fileUri = vscode.Uri.file(approval.path);
  const current = await currentText(fileUri);
  const creating = current === undefined || isNewFileDiff(approval.diff);
  // The server may one day send the full proposed text (`newText`); use it when it does.
  const sent = (approval as { newText?: unknown }).newText;
  const proposedText = typeof sent === "string" ? sent : applyUnifiedDiff(creating ? "" : current!, approval.diff);
  const proposed = provider.set(`approval=${approval.approvalId}`, approval.path, proposedText);
  const original = creating ? provider.set(`empty=${approval.approvalId}`, approval.path, "") : fileUri;
  const name = approval.path.split(/[\\/]/).pop() ?? approval.path;
  const title = `${name} ${creating ? "(new file)" : "(current)"} ↔ proposed by tiller`;
  return { original, proposed, title };
}

/** Closes the diff tabs of an approval that was answered (VS Code 1.67+ tab API). */
export async function closeProposalTabs(provider: ProposalProvider, approvalId: string): Promise<void> {
  const key = `approval=${approvalId}`;
  provider.delete(key);
  provider.delete(`empty=${approvalId}`);
  const groups = vscode.window.tabGroups;
  if (!groups) return;
  const tabs = groups.all.flatMap((group) =>
    group.tabs.filter((tab) => {
      const input = tab.input as { modified?: vscode.Uri } | undefined;
      return input?.modified?.scheme === PROPOSAL_SCHEME && input.modified.query === key;
    }),
  );
  if (tabs.length) await groups.close(tabs, true);
}
