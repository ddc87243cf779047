// Review per hunk in VS Code's diff editor: the proposed side (a `tiller-proposal:` document)
// says, on hover, which hunk a line belongs to with a link to keep or drop it; "Keep/Drop Hunk
// at Cursor" (editor title, palette) do the same; dropped hunks are greyed out and labelled.
// The choice lives in HunkChoices, shared with the panel's checkboxes.
import * as vscode from "vscode";

import { hunkAtLine, type HunkChoices } from "./hunkChoices";
import { PROPOSAL_SCHEME } from "./proposals";
import type { ApprovalRequestEvent } from "./protocol/types";

/** The approval a proposal document shows (its URI's query is `approval=<id>`). */
export function approvalIdOf(uri: vscode.Uri): string | undefined {
  if (uri.scheme !== PROPOSAL_SCHEME) return undefined;
  return /^approval=(.+)$/.exec(uri.query)?.[1];
}

export class HunkReview implements vscode.Disposable, vscode.HoverProvider {
  private disposables: vscode.Disposable[] = [];
  private droppedStyle = vscode.window.createTextEditorDecorationType({
    opacity: "0.45",
    isWholeLine: true,
    textDecoration: "line-through",
  });
  private droppedLabel = vscode.window.createTextEditorDecorationType({
    after: { contentText: "  ✗ hunk dropped (tiller)", color: new vscode.ThemeColor("descriptionForeground") },
  });

  constructor(
    private choices: HunkChoices,
    private approval: (approvalId: string) => ApprovalRequestEvent | undefined,
  ) {
    this.disposables.push(
      this.droppedStyle,
      this.droppedLabel,
      vscode.languages.registerHoverProvider({ scheme: PROPOSAL_SCHEME }, this),
      choices.onDidChange(() => this.decorate()),
      vscode.window.onDidChangeVisibleTextEditors(() => this.decorate()),
    );
  }

  provideHover(document: vscode.TextDocument, position: vscode.Position): vscode.Hover | undefined {
    const approvalId = approvalIdOf(document.uri);
    const approval = approvalId ? this.approval(approvalId) : undefined;
    const hunk = approval?.hunks ? hunkAtLine(approval.hunks, position.line + 1) : undefined;
    if (!approval || !hunk || approval.hunks!.length < 2) return undefined;
    const dropped = this.choices.droppedOf(approval.approvalId).includes(hunk.id);
    const args = encodeURIComponent(JSON.stringify([approval.approvalId, hunk.id, dropped]));
    const text = new vscode.MarkdownString(
      `**tiller**: hunk ${hunk.id} \`${hunk.header}\` is ${dropped ? "dropped from" : "kept in"} the change. ` +
        `[${dropped ? "Keep" : "Drop"} this hunk](command:tiller.approval.toggleHunk?${args})`,
    );
    text.isTrusted = { enabledCommands: ["tiller.approval.toggleHunk"] };
    return new vscode.Hover(text);
  }

  /** "Keep/Drop Hunk at Cursor": the hunk under the cursor of the active proposal editor. */
  setHunkAtCursor(keep: boolean): void {
    const editor = vscode.window.activeTextEditor;
    const approvalId = editor ? approvalIdOf(editor.document.uri) : undefined;
    const approval = approvalId ? this.approval(approvalId) : undefined;
    if (!editor || !approval?.hunks?.length) {
      void vscode.window.showInformationMessage("tiller: put the cursor in the proposed side of an approval's diff (View diff).");
      return;
    }
    const hunk = hunkAtLine(approval.hunks, editor.selection.active.line + 1);
    if (!hunk) {
      void vscode.window.showInformationMessage("tiller: the cursor is not in a hunk of the proposed change.");
      return;
    }
    this.choices.set(approval.approvalId, hunk.id, keep);
  }

  private decorate(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const approvalId = approvalIdOf(editor.document.uri);
      if (!approvalId) continue;
      const hunks = this.approval(approvalId)?.hunks ?? [];
      const dropped = new Set(this.choices.droppedOf(approvalId));
      const ranges = hunks
        .filter((hunk) => dropped.has(hunk.id) && hunk.newLines > 0)
        .map((hunk) => new vscode.Range(hunk.newStart - 1, 0, hunk.newStart + hunk.newLines - 2, 0));
      editor.setDecorations(this.droppedStyle, ranges);
      const ends = ranges.map((range) => editor.document.lineAt(range.start.line).range.end);
      editor.setDecorations(this.droppedLabel, ends.map((end) => new vscode.Range(end, end)));
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
