// The saved command rules (agent/getRules) as a flat list the user can pick one from to remove
// it, and the rule set to send back without it (agent/setRules replaces a scope's four lists).
// No `vscode` import: pure, tested in plain Node.
import type { CommandRules, RulesResult } from "./protocol/types";

export type RuleScope = "session" | "project" | "user";
export type RuleList = keyof CommandRules;

export interface RuleItem {
  /** Quick pick label: the pattern as saved. */
  label: string;
  /** Quick pick description: the list and the scope. */
  description: string;
  /** Quick pick detail: where it is kept. */
  detail: string;
  pattern: string;
  scope: RuleScope;
  list: RuleList;
}

const LISTS: RuleList[] = ["deny", "ask", "allow", "readOnly"];
const LIST_NAMES: Record<RuleList, string> = { deny: "deny", ask: "ask", allow: "allow", readOnly: "read-only (plan mode)" };

/** Every rule the user saved (not tiller's built-in read-only list), strictest first. */
export function removableRules(rules: RulesResult): RuleItem[] {
  const scopes: { scope: RuleScope; rules: CommandRules; detail: string }[] = [
    { scope: "session", rules: rules.session, detail: "this session only" },
    {
      scope: "project",
      rules: rules.project.rules,
      detail: `${rules.project.path}${rules.project.trusted ? "" : " (allow and read-only rules not trusted)"}`,
    },
    { scope: "user", rules: rules.user.rules, detail: rules.user.path },
  ];
  const items: RuleItem[] = [];
  for (const list of LISTS) {
    for (const { scope, rules: set, detail } of scopes) {
      for (const pattern of set[list]) {
        items.push({ label: pattern, description: `${LIST_NAMES[list]} · ${scope}`, detail, pattern, scope, list });
      }
    }
  }
  return items;
}

/** The rules of `item`'s scope with `item` left out, as agent/setRules takes them. */
export function rulesWithout(rules: RulesResult, item: RuleItem): CommandRules {
  const current = item.scope === "session" ? rules.session : item.scope === "project" ? rules.project.rules : rules.user.rules;
  return {
    allow: [...current.allow],
    ask: [...current.ask],
    deny: [...current.deny],
    readOnly: [...current.readOnly],
    [item.list]: current[item.list].filter((pattern) => pattern !== item.pattern),
  };
}
