// Notifications about a pending approval ("tiller needs your approval", the choices next to a
// diff) that go away as soon as the approval is answered, wherever it was answered. VS Code
// gives an extension no way to close a message notification, but it closes a progress
// notification when its task ends: each notice is one, ended when its approval resolves. Its
// choices are command links in its text (VS Code runs command links in notifications).
import * as vscode from "vscode";

export interface NoticeLink {
  label: string;
  command: string;
  args: unknown[];
}

export function commandLink(link: NoticeLink): string {
  return `[${link.label}](command:${link.command}?${encodeURIComponent(JSON.stringify(link.args))})`;
}

export class ApprovalNotices implements vscode.Disposable {
  /** The notices on screen, by `<approvalId>#<kind>`, with what ends each. */
  private open = new Map<string, () => void>();

  /** Shows `message` and its links until `close(approvalId)`; once per approval and kind. */
  show(approvalId: string, kind: string, message: string, links: NoticeLink[]): void {
    const key = `${approvalId}#${kind}`;
    if (this.open.has(key)) return;
    const ended = new Promise<void>((resolve) => this.open.set(key, resolve));
    const title = [message, links.map(commandLink).join(" · ")].filter(Boolean).join(" ");
    void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: false }, () => ended);
  }

  isOpen(approvalId: string, kind: string): boolean {
    return this.open.has(`${approvalId}#${kind}`);
  }

  /** The approval was answered or cancelled: its notices go. */
  close(approvalId: string): void {
    for (const [key, end] of this.open) {
      if (key.startsWith(`${approvalId}#`)) {
        end();
        this.open.delete(key);
      }
    }
  }

  /** Closes the notices of every approval `keep` does not name. */
  retain(keep: (approvalId: string) => boolean): void {
    for (const key of [...this.open.keys()]) {
      const approvalId = key.slice(0, key.lastIndexOf("#"));
      if (!keep(approvalId)) this.close(approvalId);
    }
  }

  dispose(): void {
    this.retain(() => false);
  }
}
