// The chat panel: a WebviewView in the "tiller" activity-bar container.
import * as vscode from "vscode";

import type { TillerController } from "./controller";
import { makeNonce, renderWebviewHtml } from "./webview/html";
import type { FromWebview, ToWebview } from "./webview/messages";

export const CHAT_VIEW_ID = "tiller.chat";

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private disposables: vscode.Disposable[] = [];

  constructor(
    private extensionUri: vscode.Uri,
    private controller: TillerController,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const webview = view.webview;
    webview.options = {
      enableScripts: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, "dist"), vscode.Uri.joinPath(this.extensionUri, "media")],
    };
    webview.html = renderWebviewHtml({
      cspSource: webview.cspSource,
      nonce: makeNonce(),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "dist", "webview.js")).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", "chat.css")).toString(),
    });
    this.controller.setPanel({
      postMessage: (message: ToWebview) => webview.postMessage(message),
      get visible() {
        return view.visible;
      },
      reveal: () => view.show(true),
    });
    this.disposables.push(
      webview.onDidReceiveMessage((message: FromWebview) => this.controller.handleWebviewMessage(message)),
      view.onDidDispose(() => {
        if (this.view === view) {
          this.view = undefined;
          this.controller.setPanel(null);
        }
      }),
    );
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
