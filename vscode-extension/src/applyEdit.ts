// `workspace/applyEdit` from the server: vscode-languageclient applies the edit to the open
// documents (so the user can undo it), then the extension saves what was edited, which is
// what `savesEditedDocuments: true` promises the server (protocol.md section 6).
import * as vscode from "vscode";

/** The LSP shapes involved (structurally the vscode-languageclient ones). */
export interface ApplyWorkspaceEditParams {
  label?: string;
  edit: {
    changes?: Record<string, unknown[]>;
    documentChanges?: ({ textDocument: { uri: string }; edits: unknown[] } | { kind: "create" | "rename" | "delete"; uri?: string; newUri?: string })[];
  };
}

export interface ApplyWorkspaceEditResult {
  applied: boolean;
  failureReason?: string;
  failedChange?: number;
}

/** The documents an edit changes text in, or creates. */
export function editedUris(params: ApplyWorkspaceEditParams): string[] {
  const uris = new Set<string>();
  for (const change of params.edit.documentChanges ?? []) {
    if ("textDocument" in change) uris.add(change.textDocument.uri);
    else if (change.kind === "create" && change.uri) uris.add(change.uri);
    else if (change.kind === "rename" && change.newUri) uris.add(change.newUri);
  }
  for (const uri of Object.keys(params.edit.changes ?? {})) uris.add(uri);
  return [...uris];
}

export type ApplyEditNext = (params: ApplyWorkspaceEditParams) => Promise<ApplyWorkspaceEditResult> | ApplyWorkspaceEditResult;

/**
 * Middleware for `workspace.handleApplyEdit`: lets the client apply the edit, then saves every
 * edited document. A failed save is logged (the server then sees the file unchanged on disk).
 */
export async function applyEditAndSave(
  params: ApplyWorkspaceEditParams,
  next: ApplyEditNext,
  log: (message: string) => void = () => undefined,
): Promise<ApplyWorkspaceEditResult> {
  const result = await next(params);
  if (!result.applied) {
    log(`Edit not applied${params.label ? ` (${params.label})` : ""}: ${result.failureReason ?? "refused"}`);
    return result;
  }
  for (const uri of editedUris(params)) {
    try {
      const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
      if (document.isDirty && !(await document.save())) log(`Could not save ${uri} after the agent's edit`);
    } catch (error) {
      log(`Could not save ${uri} after the agent's edit: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return result;
}
