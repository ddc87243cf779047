// A hand-written stand-in for the `vscode` module, with only the surface the extension's glue
// uses (controller, proposals, applyEdit, chat view). Glue tests are bundled with
// `--alias:vscode=./test/vscode-stub.ts`; `stub` records what the extension asked VS Code
// to do and scripts VS Code's answers.
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

type Listener<T> = (value: T) => unknown;

export class EventEmitter<T> {
  private listeners = new Set<Listener<T>>();
  event = (listener: Listener<T>) => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly authority: string,
    readonly path: string,
    readonly query: string,
    readonly fragment: string,
  ) {}

  static file(fsPath: string): Uri {
    return new Uri("file", "", fsPath.split(path.sep).join("/"), "", "");
  }

  static parse(value: string): Uri {
    if (value.startsWith("file:")) return Uri.file(fileURLToPath(value));
    const match = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(value);
    if (!match) throw new Error(`not a URI: ${value}`);
    return new Uri(match[1], match[2] ?? "", decodeURIComponent(match[3] ?? ""), match[4] ?? "", match[5] ?? "");
  }

  static from(parts: { scheme: string; authority?: string; path?: string; query?: string; fragment?: string }): Uri {
    return new Uri(parts.scheme, parts.authority ?? "", parts.path ?? "", parts.query ?? "", parts.fragment ?? "");
  }

  static joinPath(base: Uri, ...segments: string[]): Uri {
    return new Uri(base.scheme, base.authority, path.posix.join(base.path, ...segments), base.query, base.fragment);
  }

  get fsPath(): string {
    return this.scheme === "file" ? this.path : "";
  }

  with(change: { scheme?: string; path?: string; query?: string }): Uri {
    return new Uri(change.scheme ?? this.scheme, this.authority, change.path ?? this.path, change.query ?? this.query, this.fragment);
  }

  toString(): string {
    if (this.scheme === "file") return pathToFileURL(this.path).href;
    return `${this.scheme}:${this.authority ? `//${this.authority}` : ""}${this.path}${this.query ? `?${this.query}` : ""}${this.fragment ? `#${this.fragment}` : ""}`;
  }

  toJSON(): unknown {
    return { scheme: this.scheme, path: this.path, query: this.query };
  }
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Selection {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
}

export interface FakeDocument {
  uri: Uri;
  isDirty: boolean;
  getText(): string;
  save(): Promise<boolean>;
  languageId?: string;
}

/** What the tests script and inspect. */
export const stub = {
  commands: [] as { command: string; args: unknown[] }[],
  infoMessages: [] as { message: string; items: unknown[] }[],
  errorMessages: [] as { message: string; items: unknown[] }[],
  /** Answers for showErrorMessage (a button, or undefined: dismissed). */
  answerError: (_message: string, _items: string[]): string | undefined => undefined,
  /** Progress notifications: their title, and whether their task has ended (closed). */
  progress: [] as { title: string; closed: boolean }[],
  /** Command handlers registered through commands.registerCommand (executeCommand runs them). */
  handlers: new Map<string, (...args: unknown[]) => unknown>(),
  remoteName: undefined as string | undefined,
  /** Answers for showInformationMessage, by message (a function of the buttons, or a button). */
  answerInfo: (_message: string, _items: string[]): string | undefined => undefined,
  /** Modal confirmations (showWarningMessage), and their answer (a button, or undefined). */
  warningMessages: [] as { message: string; items: string[] }[],
  answerWarning: (_message: string, _items: string[]): string | undefined => undefined,
  answerInputBox: (): string | undefined => undefined,
  answerQuickPick: <T>(items: T[]): T | undefined => items[0],
  quickPicks: [] as unknown[][],
  textDocuments: [] as FakeDocument[],
  files: new Map<string, string>(),
  saved: [] as string[],
  opened: [] as unknown[],
  shownDocuments: [] as unknown[],
  closedTabs: [] as unknown[],
  tabs: [] as { input: { original?: Uri; modified?: Uri } }[],
  externalOpened: [] as string[],
  statusBarItems: [] as { text: string; tooltip: string; show(): void; dispose(): void }[],
  workspaceFolders: undefined as { uri: Uri; name: string; index: number }[] | undefined,
  activeTextEditor: undefined as { document: FakeDocument; selection: Selection } | undefined,
  /** Settings, by full name ("tiller.pythonPath"). */
  config: {} as Record<string, unknown>,
  reset(): void {
    this.config = {};
    this.commands = [];
    this.infoMessages = [];
    this.errorMessages = [];
    this.answerError = () => undefined;
    this.progress = [];
    this.handlers = new Map();
    this.remoteName = undefined;
    this.answerInfo = () => undefined;
    this.answerInputBox = () => undefined;
    this.warningMessages = [];
    this.answerWarning = () => undefined;
    this.answerQuickPick = (items) => items[0];
    this.quickPicks = [];
    this.textDocuments = [];
    this.files = new Map();
    this.saved = [];
    this.opened = [];
    this.shownDocuments = [];
    this.closedTabs = [];
    this.tabs = [];
    this.externalOpened = [];
    this.statusBarItems = [];
    this.workspaceFolders = undefined;
    this.activeTextEditor = undefined;
  },
  /** An open document with `text` (saving writes it to `files`). */
  openDocument(uri: Uri, text: string, isDirty = false): FakeDocument {
    const doc: FakeDocument = {
      uri,
      isDirty,
      getText: () => text,
      save: async () => {
        stub.saved.push(uri.toString());
        stub.files.set(uri.toString(), text);
        doc.isDirty = false;
        return true;
      },
    };
    this.textDocuments.push(doc);
    return doc;
  },
};

export const commands = {
  async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    stub.commands.push({ command, args });
    return stub.handlers.get(command)?.(...args);
  },
  registerCommand(command: string, fn: (...args: unknown[]) => unknown) {
    stub.handlers.set(command, fn);
    return { dispose: () => stub.handlers.get(command) === fn && stub.handlers.delete(command) };
  },
};

export const window = {
  createStatusBarItem(_alignment?: StatusBarAlignment, _priority?: number) {
    const item = { text: "", tooltip: "", name: "", command: "", show() {}, dispose() {} };
    stub.statusBarItems.push(item);
    return item;
  },
  async showInformationMessage(message: string, ...items: unknown[]): Promise<string | undefined> {
    const buttons = items.filter((i): i is string => typeof i === "string");
    stub.infoMessages.push({ message, items: buttons });
    return stub.answerInfo(message, buttons);
  },
  async showWarningMessage(message: string, ...items: unknown[]): Promise<string | undefined> {
    const buttons = items.filter((i): i is string => typeof i === "string");
    stub.warningMessages.push({ message, items: buttons });
    return stub.answerWarning(message, buttons);
  },
  async showErrorMessage(message: string, ...items: unknown[]): Promise<string | undefined> {
    stub.errorMessages.push({ message, items });
    return stub.answerError(message, items.filter((i): i is string => typeof i === "string"));
  },
  /** A progress notification stays until its task ends (recorded in `stub.progress`). */
  async withProgress<R>(options: { title?: string }, task: (progress: unknown, token: unknown) => Thenable<R>): Promise<R> {
    const entry = { title: options.title ?? "", closed: false };
    stub.progress.push(entry);
    try {
      return await task({ report() {} }, { isCancellationRequested: false, onCancellationRequested: () => ({ dispose() {} }) });
    } finally {
      entry.closed = true;
    }
  },
  async showInputBox(_options?: unknown): Promise<string | undefined> {
    return stub.answerInputBox();
  },
  async showQuickPick<T>(items: T[] | Promise<T[]>, _options?: unknown): Promise<T | undefined> {
    const list = await items;
    stub.quickPicks.push(list);
    return stub.answerQuickPick(list);
  },
  async showTextDocument(document: unknown, _options?: unknown) {
    stub.shownDocuments.push(document);
    return undefined;
  },
  get activeTextEditor() {
    return stub.activeTextEditor;
  },
  tabGroups: {
    get all() {
      return [{ tabs: stub.tabs }];
    },
    async close(tabs: unknown[]) {
      stub.closedTabs.push(...tabs);
      stub.tabs = stub.tabs.filter((t) => !tabs.includes(t));
      return true;
    },
  },
};

export const workspace = {
  get textDocuments() {
    return stub.textDocuments;
  },
  get workspaceFolders() {
    return stub.workspaceFolders;
  },
  fs: {
    async readFile(uri: Uri): Promise<Uint8Array> {
      const text = stub.files.get(uri.toString());
      if (text === undefined) throw Object.assign(new Error(`ENOENT: ${uri.toString()}`), { code: "FileNotFound" });
      return new TextEncoder().encode(text);
    },
  },
  async openTextDocument(target: Uri | { language?: string; content?: string }): Promise<FakeDocument> {
    stub.opened.push(target);
    if (target instanceof Uri) {
      const open = stub.textDocuments.find((d) => d.uri.toString() === target.toString());
      if (open) return open;
      return stub.openDocument(target, stub.files.get(target.toString()) ?? "");
    }
    return { uri: Uri.from({ scheme: "untitled", path: "Untitled-1" }), isDirty: true, getText: () => target.content ?? "", save: async () => false };
  },
  registerTextDocumentContentProvider(_scheme: string, _provider: unknown) {
    return { dispose() {} };
  },
  getConfiguration(section?: string) {
    const full = (key: string) => (section ? `${section}.${key}` : key);
    return {
      get: (key: string, fallback?: unknown) => stub.config[full(key)] ?? fallback,
      // Every stub setting is a User setting.
      inspect: (key: string) => ({ key: full(key), globalValue: stub.config[full(key)] }),
    };
  },
};

export const env = {
  get remoteName() {
    return stub.remoteName;
  },
  async openExternal(uri: Uri): Promise<boolean> {
    stub.externalOpened.push(uri.toString());
    return true;
  },
};

export class Disposable {
  constructor(private fn: () => void) {}
  dispose(): void {
    this.fn();
  }
}

// Classes vscode-languageclient extends when its modules load (only loading is needed: the
// glue tests use the failure path of src/server.ts, which never starts a LanguageClient).
export class CallHierarchyItem {}
export class CodeLens {}
export class CompletionItem {}
export class DocumentLink {}
export class InlayHint {}
export class SymbolInformation {}
export class TypeHierarchyItem {}
export class CodeAction {}
export class Diagnostic {}
export class CancellationError extends Error {}
