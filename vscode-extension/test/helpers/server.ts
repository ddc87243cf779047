// Starts the real `python -m tiller serve` (TILLER_PYTHON, default python3) with the faux
// model and speaks to it over vscode-jsonrpc, the JSON-RPC layer of vscode-languageclient.
// A FakeEditor answers `workspace/applyEdit` as VS Code does (versioned TextDocumentEdits,
// CreateFile) and, like the extension, saves what it applied.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from "vscode-jsonrpc/node";

import { TillerClient } from "../../src/protocol/client";
import type { AgentEventParams } from "../../src/protocol/types";

export const WAIT_MS = 15000;

export function withTimeout<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface FauxScript {
  responses: unknown[];
  chunkChars?: number;
  delayMs?: number;
}

interface Position {
  line: number;
  character: number;
}
interface TextEdit {
  range: { start: Position; end: Position };
  newText: string;
}

function offsetAt(text: string, position: Position): number {
  let offset = 0;
  for (let line = 0; line < position.line; line++) {
    const next = text.indexOf("\n", offset);
    if (next < 0) return text.length;
    offset = next + 1;
  }
  return Math.min(text.length, offset + position.character);
}

export function applyTextEdits(text: string, edits: TextEdit[]): string {
  const sorted = [...edits].sort((a, b) => offsetAt(text, b.range.start) - offsetAt(text, a.range.start));
  for (const edit of sorted) {
    text = text.slice(0, offsetAt(text, edit.range.start)) + edit.newText + text.slice(offsetAt(text, edit.range.end));
  }
  return text;
}

/** What VS Code does with open documents, as far as the server can tell. */
export class FakeEditor {
  documents = new Map<string, { text: string; version: number }>();
  applyEdits: unknown[] = [];
  saved: string[] = [];
  /** The answer to give to the next applyEdit (to test a refusal), else apply. */
  refuseNext = false;

  constructor(private connection: MessageConnection) {}

  async open(file: string, text: string): Promise<string> {
    const uri = pathToFileURL(file).href;
    this.documents.set(uri, { text, version: 1 });
    await this.connection.sendNotification("textDocument/didOpen", {
      textDocument: { uri, languageId: "plaintext", version: 1, text },
    });
    return uri;
  }

  async type(uri: string, text: string): Promise<void> {
    const document = this.documents.get(uri)!;
    document.text = text;
    document.version++;
    await this.connection.sendNotification("textDocument/didChange", {
      textDocument: { uri, version: document.version },
      contentChanges: [{ text }],
    });
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async handleApplyEdit(params: any): Promise<{ applied: boolean; failureReason?: string }> {
    this.applyEdits.push(params);
    if (this.refuseNext) {
      this.refuseNext = false;
      return { applied: false, failureReason: "refused by the test" };
    }
    const changes = params.edit.documentChanges ?? [];
    // VS Code rejects the whole edit when a version does not match (textOnlyTransactional).
    for (const change of changes) {
      if (change.kind) continue;
      const document = this.documents.get(change.textDocument.uri);
      if (document && change.textDocument.version != null && change.textDocument.version !== document.version) {
        return { applied: false, failureReason: "the document changed" };
      }
    }
    const touched = new Set<string>();
    for (const change of changes) {
      if (change.kind === "create") {
        if (!this.documents.has(change.uri)) {
          this.documents.set(change.uri, { text: "", version: 1 });
          const file = fileURLToPath(change.uri);
          mkdirSync(path.dirname(file), { recursive: true });
          writeFileSync(file, "");
          await this.connection.sendNotification("textDocument/didOpen", {
            textDocument: { uri: change.uri, languageId: "plaintext", version: 1, text: "" },
          });
        }
        continue;
      }
      if (change.kind) continue;
      const uri = change.textDocument.uri;
      const document = this.documents.get(uri) ?? { text: "", version: 0 };
      document.text = applyTextEdits(document.text, change.edits);
      document.version++;
      this.documents.set(uri, document);
      touched.add(uri);
      await this.connection.sendNotification("textDocument/didChange", {
        textDocument: { uri, version: document.version },
        contentChanges: [{ text: document.text }],
      });
    }
    // savesEditedDocuments: the extension saves what it applied.
    for (const uri of touched) {
      writeFileSync(fileURLToPath(uri), this.documents.get(uri)!.text);
      this.saved.push(uri);
      await this.connection.sendNotification("textDocument/didSave", { textDocument: { uri } });
    }
    return { applied: true };
  }
}

export interface RunningServer {
  connection: MessageConnection;
  client: TillerClient;
  editor: FakeEditor;
  /** Every agent/event notification, in arrival order. */
  events: AgentEventParams[];
  /** The workspace root (a realpath, as the server reports paths). */
  workspace: string;
  dataDir: string;
  process: ChildProcess;
  stderr(): string;
  waitFor(predicate: (n: AgentEventParams) => boolean, what: string): Promise<AgentEventParams>;
  stop(): Promise<void>;
}

export interface StartOptions {
  approvals?: boolean;
  initializationOptions?: Record<string, unknown>;
  /** Reuse a data directory (sessions saved by an earlier server). */
  dataDir?: string;
  workspace?: string;
}

type TestContext = { after(fn: () => unknown): void };

export function tempDir(t: TestContext, prefix = "tiller-ext-"): string {
  const dir = untrackedTempDir(prefix);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function untrackedTempDir(prefix = "tiller-ext-"): string {
  return realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
}

export async function startServer(t: TestContext, script: FauxScript, options: StartOptions = {}): Promise<RunningServer> {
  // Removed only once the server is gone (below): it may still be recording a checkpoint there.
  const home = untrackedTempDir();
  const workspace = options.workspace ?? path.join(home, "workspace");
  mkdirSync(workspace, { recursive: true });
  const scriptPath = path.join(home, "faux.json");
  writeFileSync(scriptPath, JSON.stringify({ chunkChars: 4, ...script }));
  const dataDir = options.dataDir ?? path.join(home, "data");

  const env: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) => !key.endsWith("_API_KEY") && !key.endsWith("_BASE_URL") && !key.startsWith("TILLER_"),
    ),
  );
  Object.assign(env, {
    TILLER_MODEL: "faux/faux-1",
    TILLER_FAUX_SCRIPT: scriptPath,
    XDG_CONFIG_HOME: path.join(home, "config"), // no user models.toml
    TILLER_DATA_DIR: dataDir, // saved sessions stay in the temporary directory
  });
  const python = process.env.TILLER_PYTHON || "python3";
  const proc = spawn(python, ["-m", "tiller", "serve"], { cwd: workspace, env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr!.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));

  const connection = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  const editor = new FakeEditor(connection);
  const events: AgentEventParams[] = [];
  const waiters: { predicate: (n: AgentEventParams) => boolean; resolve: (n: AgentEventParams) => void }[] = [];
  const client = new TillerClient(connection);
  client.onEvent((params: AgentEventParams) => {
    events.push(params);
    for (const waiter of [...waiters]) {
      if (waiter.predicate(params)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(params);
      }
    }
  });
  connection.onRequest("workspace/applyEdit", (params) => editor.handleApplyEdit(params));
  connection.listen();

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (proc.exitCode === null) {
      try {
        await withTimeout(connection.sendRequest("shutdown"), "shutdown", 5000);
        await connection.sendNotification("exit");
        await withTimeout(exited, "the server to exit", 5000);
      } catch {
        proc.kill();
      }
    }
    connection.dispose();
  };
  t.after(async () => {
    await stop();
    if (proc.exitCode === null) proc.kill("SIGKILL");
    await exited;
    rmSync(home, { recursive: true, force: true });
  });

  const init = await withTimeout(
    connection.sendRequest("initialize", {
      processId: process.pid,
      rootUri: pathToFileURL(workspace).href,
      workspaceFolders: [{ uri: pathToFileURL(workspace).href, name: "workspace" }],
      capabilities: {
        workspace: {
          applyEdit: true,
          workspaceEdit: { documentChanges: true, resourceOperations: ["create", "rename", "delete"] },
        },
        experimental: { tiller: { approvals: options.approvals ?? true, savesEditedDocuments: true } },
      },
      initializationOptions: options.initializationOptions,
      clientInfo: { name: "tiller-vscode-tests" },
    }),
    "initialize",
  );
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  if ((init as any).capabilities.experimental.tiller.protocolVersion !== 1) throw new Error("unexpected protocol version");
  await connection.sendNotification("initialized", {});

  return {
    connection,
    client,
    editor,
    events,
    workspace,
    dataDir,
    process: proc,
    stderr: () => stderr,
    waitFor(predicate, what) {
      const found = events.find(predicate);
      if (found) return Promise.resolve(found);
      return withTimeout(
        new Promise<AgentEventParams>((resolve) => waiters.push({ predicate, resolve })),
        what,
      );
    },
    stop,
  };
}

// --- faux script helpers --------------------------------------------------------------------

export const text = (value: string) => ({ type: "text", text: value });
export const thinking = (value: string) => ({ type: "thinking", thinking: value });
export const toolCall = (name: string, args: Record<string, unknown>, id: string) => ({
  type: "toolCall",
  id,
  name,
  arguments: args,
});
export const reply = (...content: unknown[]) => ({ content });
