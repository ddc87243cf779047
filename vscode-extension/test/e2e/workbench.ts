// Drives VS Code's workbench (served by code-server) in Debian's Chromium through
// playwright-core: the command palette, quick picks, notifications, editors, and the tiller
// chat view (a webview: an iframe in the workbench, whose `active-frame` holds the page).
import { mkdirSync } from "node:fs";
import path from "node:path";

import type { Browser, BrowserContext, FrameLocator, Locator, Page } from "playwright-core";

import type { CodeServer } from "./codeServer";

export const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
/** How long one wait on the workbench may take before the test fails (a healthy run takes a
 * fraction; the first start of an extension host and of `tiller serve` takes a few seconds). */
export const WAIT_MS = 30000;

/** Whether a console error or page error is the extension's: its extension host code
 * (extensions/tiller.tiller-…), its webview (extensionId=tiller.tiller), or its log lines. The
 * web workbench's own complaints (offline gallery, GitHub, reloads) are not the test's business. */
function fromTiller(text: string, url = ""): boolean {
  return /tiller/i.test(text) || /tiller\.tiller/.test(url);
}

export class Workbench {
  /** Errors of the extension seen in the browser's console (the workbench's and the webview's). */
  readonly errors: string[] = [];

  private constructor(
    readonly context: BrowserContext,
    readonly page: Page,
    private artifacts: string,
  ) {
    page.on("pageerror", (error) => {
      if (fromTiller(`${error.message}\n${error.stack ?? ""}`)) this.errors.push(`page error: ${error.message}`);
    });
    page.on("console", (message) => {
      if (message.type() === "error" && fromTiller(message.text(), message.location().url)) this.errors.push(`console: ${message.text()}`);
    });
  }

  /** A fresh browser profile (so fresh workspace state) with `folder` open. */
  static async open(browser: Browser, server: CodeServer, folder: string, artifacts: string): Promise<Workbench> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "dark" });
    context.setDefaultTimeout(WAIT_MS);
    const page = await context.newPage();
    const workbench = new Workbench(context, page, artifacts);
    await page.goto(server.folderUrl(folder));
    await workbench.ready();
    return workbench;
  }

  /** Waits for the workbench (after opening or reloading the window). */
  async ready(): Promise<void> {
    await this.page.locator(".monaco-workbench .part.activitybar").waitFor();
    // The extension's view container (from its manifest): the extension is known.
    await this.page.locator('.activitybar [aria-label="tiller"]').first().waitFor();
  }

  /** Runs a command from the palette by its full title ("tiller: Resume Session…"). */
  async runCommand(title: string): Promise<void> {
    await this.page.keyboard.press("F1");
    const input = this.quickInput.locator("input");
    await input.waitFor();
    await input.fill(`>${title}`);
    const row = this.quickRows.filter({ has: this.page.locator(".label-name", { hasText: new RegExp(`^${escapeRegExp(title)}$`) }) }).first();
    await row.waitFor();
    await row.click();
    // Done when the palette is gone or shows what the command opened (a quick pick of its own).
    await eventually(async () => {
      if (!(await input.isVisible())) return true;
      // Gone meanwhile (the window reloads) counts as done too.
      return !(await input.inputValue({ timeout: 1000 }).catch(() => "")).startsWith(">");
    }, `the palette to run ${title}`);
  }

  get quickInput(): Locator {
    return this.page.locator(".quick-input-widget");
  }

  get quickRows(): Locator {
    return this.quickInput.locator(".quick-input-list .monaco-list-row");
  }

  /** The texts of the visible quick pick's rows (label, description and detail). */
  async quickPickTexts(): Promise<string[]> {
    await this.quickRows.first().waitFor();
    return (await this.quickRows.allInnerTexts()).map((text) => text.replace(/\s+/g, " ").trim());
  }

  /** Types `filter` into the visible quick pick and returns the rows it leaves (the list is
   * virtual: only rows on screen exist). */
  async filterQuick(filter: string): Promise<string[]> {
    await this.quickInput.locator("input").fill(filter);
    await eventually(async () => (await this.quickPickTexts()).every((row) => row.toLowerCase().includes(filter.toLowerCase())), `rows matching ${filter}`);
    return this.quickPickTexts();
  }

  async pickQuick(text: string | RegExp): Promise<void> {
    await this.quickRows.filter({ hasText: text }).first().click();
    await eventually(async () => !(await this.quickInput.isVisible()), "the quick pick to close");
  }

  /** Notification toasts on screen whose message matches. */
  toasts(text: string | RegExp): Locator {
    return this.page
      .locator(".notifications-toasts .notification-toast-container")
      .filter({ has: this.page.locator(".notification-list-item-message", { hasText: text }) });
  }

  /** Waits until the toast has finished sliding in (for screenshots). */
  async settledToast(toast: Locator): Promise<void> {
    await toast.locator(".notification-toast.notification-fade-in-done").waitFor();
  }

  /** The tiller chat view (its webview's page). */
  get chat(): FrameLocator {
    return this.page.frameLocator('iframe.webview[src*="extensionId=tiller.tiller"]').frameLocator("iframe#active-frame");
  }

  async openChat(): Promise<void> {
    await this.runCommand("tiller: Focus on Chat View");
    await this.chat.locator("textarea.input").waitFor();
  }

  /** Sends a message from the chat view's input. */
  async send(text: string): Promise<void> {
    const input = this.chat.locator("textarea.input");
    await input.fill(text);
    await input.press("Enter");
  }

  /** Opens a workspace file in an editor (Quick Open). */
  async openFile(name: string): Promise<void> {
    await this.page.keyboard.press("Control+P");
    const input = this.quickInput.locator("input");
    await input.waitFor();
    await input.fill(name);
    await this.quickRows.filter({ hasText: name }).first().waitFor();
    await input.press("Enter");
    await this.editorTab(name).waitFor();
  }

  editorTab(name: string | RegExp): Locator {
    return this.page.locator(".tabs-container .tab").filter({ hasText: name });
  }

  /** The text the active editor shows (its visible lines; enough for small files). */
  async editorText(): Promise<string> {
    const lines = this.page.locator(".editor-group-container.active .monaco-editor .view-lines").first();
    const text = await lines.evaluate((el) =>
      [...el.querySelectorAll<HTMLElement>(".view-line")]
        .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))
        .map((line) => line.textContent ?? "")
        .join("\n"),
    );
    return text.replace(/\u00a0/g, " ");
  }

  /** Focuses the active editor's text (a click at its end) without moving the cursor elsewhere. */
  async focusEditor(): Promise<void> {
    await this.page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
  }

  async screenshot(name: string): Promise<string> {
    mkdirSync(this.artifacts, { recursive: true });
    const file = path.join(this.artifacts, `${name}.png`);
    await this.page.screenshot({ path: file });
    return file;
  }

  /** Reload Window, as the user runs it; resolves when the new workbench is up. */
  async reloadWindow(): Promise<void> {
    const reloaded = this.page.waitForEvent("load", { timeout: WAIT_MS });
    await this.runCommand("Developer: Reload Window");
    await reloaded;
    await this.ready();
  }

  async close(): Promise<void> {
    await this.context.close();
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Polls `probe` until it returns something truthy (what the workbench shows can lag). */
export async function eventually<T>(probe: () => Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
