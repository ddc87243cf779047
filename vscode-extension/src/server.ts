// Starts `tiller serve` under vscode-languageclient (stdio) and hands the connection to the
// controller; restarts on request; explains how to fix a server that does not start.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  State,
  type LanguageClientOptions,
  type StaticFeature,
} from "vscode-languageclient/node";

import { applyEditAndSave, type ApplyWorkspaceEditParams } from "./applyEdit";
import type { TillerController } from "./controller";
import { PROTOCOL_VERSION } from "./protocol/types";
import { describeCommand, resolveServerCommand, startFailureMessage, which, type ServerCommand } from "./serverCommand";

/** Declares what this client does beyond LSP (protocol.md 1.1). */
export class TillerCapabilities implements StaticFeature {
  fillClientCapabilities(capabilities: { experimental?: unknown }): void {
    capabilities.experimental = {
      ...((capabilities.experimental as object | undefined) ?? {}),
      tiller: { approvals: true, savesEditedDocuments: true },
    };
  }
  initialize(): void {}
  getState() {
    return { kind: "static" as const };
  }
  clear(): void {}
}

/** initializationOptions from the settings (protocol.md 1.1); unset ones are left out. */
export function buildInitializationOptions(settings: {
  defaultModel?: string;
  approvalMode?: string;
  toolExecution?: string;
}): Record<string, string> {
  const options: Record<string, string> = {};
  if (settings.defaultModel?.trim()) options.defaultModel = settings.defaultModel.trim();
  if (settings.approvalMode) options.approvalMode = settings.approvalMode;
  if (settings.toolExecution) options.toolExecution = settings.toolExecution;
  return options;
}

export class TillerServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  private stopping = false;
  private stderrTail = "";

  constructor(
    private controller: TillerController,
    private output: vscode.LogOutputChannel,
  ) {}

  private settings() {
    const config = vscode.workspace.getConfiguration("tiller");
    return {
      serverCommand: config.get<string | string[]>("serverCommand"),
      pythonPath: config.get<string>("pythonPath"),
      defaultModel: config.get<string>("defaultModel")?.trim(),
      approvalMode: config.get<string>("approvalMode"),
      toolExecution: config.get<string>("toolExecution"),
    };
  }

  private workspaceFolder(): string | undefined {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<void> {
    const settings = this.settings();
    const command = resolveServerCommand(settings, { workspaceFolder: this.workspaceFolder() });
    this.controller.setStatus("starting", `Starting ${describeCommand(command)}…`);
    this.output.info(`Starting the server: ${describeCommand(command)}`);
    this.stderrTail = "";

    const initializationOptions = buildInitializationOptions(settings);

    // The usual failures (no interpreter, tiller not installed, a wrong command) are found
    // here, so the user gets one message that says how to fix it.
    const problem = await this.preflight(command);
    if (problem) {
      await this.failed(command, new Error(problem));
      return;
    }

    const clientOptions: LanguageClientOptions = {
      // Every file and unsaved buffer, so prompts and tools see what the editor shows.
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      outputChannel: this.output,
      initializationOptions,
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => {
          if (!this.stopping) this.serverStopped();
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
      initializationFailedHandler: () => false,
      middleware: {
        workspace: {
          handleApplyEdit: (params, next) =>
            applyEditAndSave(params as ApplyWorkspaceEditParams, next as never, (message) => this.output.warn(message)),
        },
      },
    };
    const client = new LanguageClient("tiller", "tiller", () => this.spawn(command), clientOptions);
    client.registerFeature(new TillerCapabilities());
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      await this.failed(command, error);
      return;
    }
    const version = (client.initializeResult?.capabilities.experimental as { tiller?: { protocolVersion?: number } } | undefined)?.tiller
      ?.protocolVersion;
    if (version !== PROTOCOL_VERSION) {
      const message = `tiller: the server speaks protocol version ${version ?? "(none)"}, this extension version ${PROTOCOL_VERSION}. Update the extension or the server (see the extension's README, "Install the server").`;
      await this.stopClient();
      this.controller.detach("error", message);
      void vscode.window.showErrorMessage(message);
      return;
    }
    this.output.info(`Server ready (${client.initializeResult?.serverInfo?.name ?? "tiller"} ${client.initializeResult?.serverInfo?.version ?? ""})`);
    try {
      await this.controller.attach(client);
    } catch (error) {
      this.output.error(`Could not open a session: ${error instanceof Error ? error.message : String(error)}`);
      this.controller.setStatus("ready");
    }
  }

  /** Why `command` cannot start, if that can be told without starting it. */
  private preflight(command: ServerCommand): Promise<string | undefined> {
    if (command.source !== "python") {
      const found = path.isAbsolute(command.command) ? existsSync(command.command) : !!which(command.command);
      return Promise.resolve(found ? undefined : "the command was not found");
    }
    return new Promise((resolve) => {
      execFile(command.command, ["-c", "import tiller"], { timeout: 20000, cwd: this.workspaceFolder() ?? homedir() }, (error, _stdout, stderr) => {
        if (!error) return resolve(undefined);
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return resolve("the Python interpreter was not found");
        const lines = String(stderr).trim().split(/\r?\n/).filter(Boolean);
        resolve(lines[lines.length - 1] || error.message);
      });
    });
  }

  /** Spawns the server ourselves to keep its stderr (the reason it failed) and report spawn errors. */
  private async spawn(command: ServerCommand): Promise<ChildProcess> {
    const child = spawn(command.command, command.args, {
      cwd: this.workspaceFolder() ?? homedir(),
      env: process.env,
      stdio: ["pipe", "pipe", "pipe"],
      shell: process.platform === "win32" && /\.(cmd|bat)$/i.test(command.command),
    });
    // vscode-languageclient copies stderr into the output channel; keep its tail for messages.
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-4000);
    });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    return child;
  }

  private reason(error: unknown): string {
    const lines = this.stderrTail.trim().split(/\r?\n/).filter(Boolean);
    const last = lines[lines.length - 1];
    const spawnError = error as NodeJS.ErrnoException;
    if (spawnError?.code === "ENOENT") return "the command was not found";
    return last || (error instanceof Error ? error.message : String(error));
  }

  private async failed(command: ServerCommand, error: unknown): Promise<void> {
    const message = startFailureMessage(command, this.reason(error), this.settingOrigin());
    this.output.error(message);
    await this.stopClient();
    this.controller.detach("error", message);
    // Not awaited: this start is over. Waiting here for the user's choice would keep it
    // "starting", and Retry (a restart, which waits for the start in progress) would wait
    // for itself, and so would every later start.
    void this.offerFixes(message);
  }

  private async offerFixes(message: string): Promise<void> {
    const openSettings = "Open Settings";
    const showLog = "Show Log";
    const retry = "Retry";
    const choice = await vscode.window.showErrorMessage(message, openSettings, showLog, retry);
    if (choice === openSettings) await vscode.commands.executeCommand("workbench.action.openSettings", "tiller.");
    if (choice === showLog) this.output.show();
    // A Retry clicked after the server came up by other means (Restart Server) is stale.
    if (choice === retry && this.controller.status !== "ready") await this.restart();
  }

  /** Where tiller.serverCommand is set, for the error message ("your User settings"). */
  private settingOrigin(): string | undefined {
    const inspected = vscode.workspace.getConfiguration("tiller").inspect<string | string[]>("serverCommand");
    if (!inspected) return undefined;
    const set = (value: unknown) => value !== undefined && !(Array.isArray(value) && value.length === 0) && value !== "";
    if (set(inspected.workspaceFolderValue)) return "the folder's settings";
    if (set(inspected.workspaceValue)) return "the workspace settings";
    // In a remote window (code-server, SSH, WSL, containers) this merges User and Remote settings.
    if (set(inspected.globalValue)) return vscode.env.remoteName ? "your User or Remote settings" : "your User settings";
    return undefined;
  }

  private serverStopped(): void {
    const message = `The tiller server stopped${this.stderrTail.trim() ? `: ${this.stderrTail.trim().split(/\r?\n/).pop()}` : ""}.`;
    this.output.error(message);
    this.controller.detach("stopped", message);
    void vscode.window.showErrorMessage(`tiller: ${message}`, "Restart Server", "Show Log").then((choice) => {
      if (choice === "Restart Server") void this.restart();
      if (choice === "Show Log") this.output.show();
    });
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    this.stopping = true;
    try {
      if (client.state === State.Running) await client.stop(5000);
      else await client.dispose(2000).catch(() => undefined);
    } catch (error) {
      this.output.warn(`Stopping the server: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      this.stopping = false;
    }
  }

  async restart(): Promise<void> {
    await this.starting?.catch(() => undefined);
    this.controller.detach("starting", "Restarting…");
    await this.stopClient();
    await this.start();
  }

  async dispose(): Promise<void> {
    await this.stopClient();
  }
}
