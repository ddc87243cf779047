// The chat webview's entry point (bundled for the browser into dist/webview.js).
import { ChatApp, type HostApi } from "./app";
import type { ToWebview } from "./messages";

declare function acquireVsCodeApi(): HostApi;

const host = acquireVsCodeApi();
const app = new ChatApp(document.getElementById("app")!, host);
window.addEventListener("message", (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  if (message && typeof message === "object" && typeof message.type === "string") app.receive(message);
});
// For tests and debugging in a plain browser.
(window as unknown as { tillerChat: ChatApp }).tillerChat = app;
host.postMessage({ type: "ready" });
