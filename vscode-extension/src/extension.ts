// tiller for VS Code: a chat panel for the tiller agent server (`tiller serve`).
import * as vscode from "vscode";

import { ChatViewProvider, CHAT_VIEW_ID } from "./chatView";
import { TillerController } from "./controller";
import { HunkReview } from "./hunkReview";
import { PROPOSAL_SCHEME } from "./proposals";
import { TillerServer } from "./server";

let server: TillerServer | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel("tiller", { log: true });
  const controller = new TillerController({
    workspaceState: context.workspaceState,
    log: (message) => output.warn(message),
  });
  server = new TillerServer(controller, output);
  const chat = new ChatViewProvider(context.extensionUri, controller);
  const hunkReview = new HunkReview(controller.hunks, (approvalId) => controller.pendingApproval(approvalId));

  const run = (fn: () => unknown) => async () => {
    try {
      await fn();
    } catch (error) {
      void vscode.window.showErrorMessage(`tiller: ${error instanceof Error ? error.message : String(error)}`);
    }
  };

  context.subscriptions.push(
    output,
    controller,
    chat,
    hunkReview,
    { dispose: () => void server?.dispose() },
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chat, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, controller.proposals),
    vscode.commands.registerCommand("tiller.newSession", run(() => controller.newSession())),
    vscode.commands.registerCommand("tiller.resumeSession", run(() => controller.resumeSession())),
    vscode.commands.registerCommand("tiller.selectModel", run(() => controller.selectModel())),
    vscode.commands.registerCommand("tiller.setApprovalMode", run(() => controller.setApprovalMode())),
    vscode.commands.registerCommand("tiller.setThinkingLevel", run(() => controller.setThinkingLevel())),
    vscode.commands.registerCommand("tiller.setToolExecution", run(() => controller.setToolExecution())),
    vscode.commands.registerCommand("tiller.manageRules", run(() => controller.manageRules())),
    vscode.commands.registerCommand("tiller.showTools", run(() => controller.showTools())),
    vscode.commands.registerCommand("tiller.stop", run(() => controller.stop())),
    vscode.commands.registerCommand("tiller.addSelectionToContext", () => controller.addSelectionToContext()),
    vscode.commands.registerCommand("tiller.addFileToContext", (uri?: vscode.Uri, uris?: vscode.Uri[]) =>
      controller.addFileToContext(uri instanceof vscode.Uri ? uri : undefined, Array.isArray(uris) ? uris : undefined),
    ),
    vscode.commands.registerCommand("tiller.keepHunk", () => hunkReview.setHunkAtCursor(true)),
    vscode.commands.registerCommand("tiller.dropHunk", () => hunkReview.setHunkAtCursor(false)),
    vscode.commands.registerCommand("tiller.showLog", () => output.show()),
    vscode.commands.registerCommand("tiller.restartServer", run(() => server?.restart())),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!["serverCommand", "pythonPath", "defaultModel", "approvalMode", "toolExecution"].some((key) => event.affectsConfiguration(`tiller.${key}`))) return;
      void vscode.window.showInformationMessage("tiller: restart the server to use the new settings?", "Restart Server").then((choice) => {
        if (choice) void server?.restart();
      });
    }),
  );
  void server.start();
}

export async function deactivate(): Promise<void> {
  await server?.dispose();
  server = undefined;
}
