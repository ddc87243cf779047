// Runs code-server (the real VS Code workbench and Node extension host, from the npm package)
// for the end-to-end tests: its own user-data, extensions and config folders, the packaged
// .vsix installed, settings written where a user would put them, a free loopback port, and
// every process it starts (extension hosts, `tiller serve`) stopped with it.
//
// code-server is installed by .ci/install-code-server; TILLER_CODE_SERVER_DIR names the
// folder (node/bin/node + lib/node_modules/code-server).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

export interface CodeServerInstall {
  node: string;
  entry: string;
}

export function codeServerInstall(dir = process.env.TILLER_CODE_SERVER_DIR): CodeServerInstall {
  if (!dir) throw new Error("TILLER_CODE_SERVER_DIR is not set: run .ci/install-code-server and pass the folder it prints");
  const install = { node: path.join(dir, "node", "bin", "node"), entry: path.join(dir, "lib", "node_modules", "code-server", "out", "node", "entry.js") };
  for (const file of Object.values(install)) if (!existsSync(file)) throw new Error(`${file} is missing: run .ci/install-code-server`);
  return install;
}

/** Settings every test window gets: no welcome page, no update or gallery checks, no AI
 * side panel of VS Code's own, the dark theme of the README screenshot. */
export const QUIET_SETTINGS = {
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.colorTheme": "Default Dark Modern",
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "chat.disableAIFeatures": true,
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "update.mode": "none",
  "git.enabled": false,
  "files.autoSave": "off",
  "github.gitAuthentication": false,
};

export interface CodeServerOptions {
  /** A fresh folder for this instance's user data, extensions, config and logs. */
  home: string;
  vsix: string;
  /** <user-data-dir>/User/settings.json (merged over QUIET_SETTINGS). */
  userSettings?: Record<string, unknown>;
  /** <user-data-dir>/Machine/settings.json: in code-server's (remote) windows, the settings of the machine. */
  machineSettings?: Record<string, unknown>;
  /** The environment of code-server, and so of its extension hosts and of `tiller serve`. */
  env: NodeJS.ProcessEnv;
}

export class CodeServer {
  private log = "";

  private constructor(
    private child: ChildProcess,
    readonly url: string,
    readonly userDataDir: string,
  ) {}

  static async start(options: CodeServerOptions): Promise<CodeServer> {
    const install = codeServerInstall();
    const dirs = {
      userData: path.join(options.home, "user-data"),
      extensions: path.join(options.home, "extensions"),
      xdgConfig: path.join(options.home, "xdg-config"),
      xdgData: path.join(options.home, "xdg-data"),
    };
    for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true });
    mkdirSync(path.join(dirs.userData, "User"), { recursive: true });
    mkdirSync(path.join(dirs.userData, "Machine"), { recursive: true });
    writeFileSync(path.join(dirs.userData, "User", "settings.json"), JSON.stringify({ ...QUIET_SETTINGS, ...options.userSettings }, null, 2));
    writeFileSync(path.join(dirs.userData, "Machine", "settings.json"), JSON.stringify(options.machineSettings ?? {}, null, 2));
    // Its own config file (code-server would otherwise write one, with a password, to ~/.config).
    const config = path.join(options.home, "config.yaml");
    writeFileSync(config, "bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n");
    const env = { ...options.env, XDG_CONFIG_HOME: dirs.xdgConfig, XDG_DATA_HOME: dirs.xdgData };
    const common = ["--config", config, "--user-data-dir", dirs.userData, "--extensions-dir", dirs.extensions];

    const installed = spawnSync(install.node, [install.entry, ...common, "--install-extension", options.vsix], { env, encoding: "utf8", timeout: 60000 });
    if (installed.status !== 0 || !/successfully installed/.test(installed.stdout)) {
      throw new Error(`code-server --install-extension failed:\n${installed.stdout}${installed.stderr}`);
    }

    const child = spawn(
      install.node,
      [
        install.entry,
        ...common,
        "--bind-addr", "127.0.0.1:0", // a free port, printed in the log
        "--auth", "none",
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        "--disable-getting-started-override",
        // A reloaded window gets a new extension host; let the old one go soon.
        "--reconnection-grace-time", "5",
      ],
      // Its own process group: stop() ends code-server and everything under it at once.
      { env, detached: true, stdio: ["ignore", "pipe", "pipe"] },
    );
    running.add(child);
    child.once("exit", () => running.delete(child));
    let log = "";
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`code-server did not start in 60 s:\n${log}`)), 60000);
      const onData = (chunk: Buffer) => {
        log += chunk.toString();
        const match = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+)\//.exec(log);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", onData);
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`code-server exited (${code}):\n${log}`));
      });
    });
    const server = new CodeServer(child, url, dirs.userData);
    server.log = log;
    child.stdout!.on("data", (chunk: Buffer) => (server.log += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (server.log += chunk.toString()));
    return server;
  }

  /** The workbench URL with `folder` open. */
  folderUrl(folder: string): string {
    return `${this.url}/?folder=${encodeURIComponent(folder)}`;
  }

  get output(): string {
    return this.log;
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    killGroup(child, "SIGTERM");
    const timer = setTimeout(() => killGroup(child, "SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
    // Whatever outlived code-server in its group (an extension host, `tiller serve`).
    killGroup(child, "SIGKILL");
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // the group is gone already
  }
}

// If the test process is stopped (Ctrl-C, a timeout's SIGTERM), code-server goes with it.
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) killGroup(child, "SIGKILL");
});
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    for (const child of running) killGroup(child, "SIGKILL");
    process.exit(130);
  });
}
