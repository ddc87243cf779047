// How the extension finds `tiller serve` (pure: no `vscode`, testable in Node):
//   1. the `tiller.serverCommand` setting (an array, or a string split on spaces), + `serve`;
//   2. else `tiller` on PATH, + `serve`;
//   3. else `<tiller.pythonPath or python3> -m tiller serve`.
import { accessSync, constants, statSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";

export interface ServerCommandSettings {
  serverCommand?: string | string[];
  pythonPath?: string;
}

export interface ServerCommand {
  command: string;
  args: string[];
  /** Where it came from, for the error message when it does not start. */
  source: "setting" | "path" | "python";
}

export interface Environment {
  PATH?: string;
  PATHEXT?: string;
  platform?: NodeJS.Platform;
  workspaceFolder?: string;
}

/** Expands `${workspaceFolder}`, `${userHome}` and a leading `~`. */
export function expandVariables(value: string, env: Environment = {}): string {
  let out = value.replace(/\$\{userHome\}/g, homedir());
  if (env.workspaceFolder) out = out.replace(/\$\{workspaceFolder\}/g, env.workspaceFolder);
  if (out === "~" || out.startsWith("~/")) out = path.join(homedir(), out.slice(1));
  return out;
}

function isExecutable(file: string, platform: NodeJS.Platform): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    if (platform !== "win32") accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first `name` on PATH (with PATHEXT on Windows), like `which`. */
export function which(name: string, env: Environment = {}): string | undefined {
  const platform = env.platform ?? process.platform;
  const pathValue = env.PATH ?? process.env.PATH ?? "";
  const separator = platform === "win32" ? ";" : ":";
  const extensions = platform === "win32" ? ["", ...(env.PATHEXT ?? process.env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";")] : [""];
  for (const dir of pathValue.split(separator)) {
    if (!dir) continue;
    for (const ext of extensions) {
      const candidate = path.join(dir, name + ext);
      if (isExecutable(candidate, platform)) return candidate;
    }
  }
  return undefined;
}

export function splitCommand(value: string): string[] {
  // Double-quoted parts keep their spaces: "C:\Program Files\tiller\tiller.exe" --flag
  const parts: string[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  let match: RegExpExecArray | null;
  while ((match = re.exec(value))) parts.push(match[1] ?? match[2]);
  return parts;
}

export function resolveServerCommand(settings: ServerCommandSettings, env: Environment = {}): ServerCommand {
  const platform = env.platform ?? process.platform;
  const configured = Array.isArray(settings.serverCommand)
    ? settings.serverCommand.filter((part) => part.trim() !== "")
    : splitCommand(settings.serverCommand ?? "");
  if (configured.length) {
    const [command, ...args] = configured.map((part) => expandVariables(part, env));
    return { command, args: [...args, "serve"], source: "setting" };
  }
  const onPath = which("tiller", env);
  if (onPath) return { command: onPath, args: ["serve"], source: "path" };
  const python = settings.pythonPath?.trim() ? expandVariables(settings.pythonPath.trim(), env) : platform === "win32" ? "python" : "python3";
  return { command: python, args: ["-m", "tiller", "serve"], source: "python" };
}

export function describeCommand(command: ServerCommand): string {
  return [command.command, ...command.args].map((part) => (/\s/.test(part) ? `"${part}"` : part)).join(" ");
}

/** How to get the server, for error messages (the README's "Install the server" says more). */
export const INSTALL_COMMAND = "uv tool install <your tiller checkout>";

/**
 * The message shown when the server does not start, with how to fix it. `origin` says where
 * tiller.serverCommand was set ("your User settings"), so the user is not told to set a
 * setting they already set.
 */
export function startFailureMessage(command: ServerCommand, reason: string, origin?: string): string {
  const what = `tiller: could not start the server (\`${describeCommand(command)}\`): ${reason.trim() || "it exited"}.`;
  switch (command.source) {
    case "setting":
      return `${what} Check the tiller.serverCommand setting${origin ? ` (set in ${origin})` : ""}.`;
    case "path":
      return `${what} Reinstall tiller (\`${INSTALL_COMMAND} --reinstall\`) or set tiller.serverCommand.`;
    case "python":
      return `${what} Install tiller (\`${INSTALL_COMMAND}\` puts \`tiller\` on PATH), set tiller.serverCommand, or pick a tiller.pythonPath that has tiller.`;
  }
}
