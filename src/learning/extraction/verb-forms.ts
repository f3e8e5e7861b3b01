// Verb forms of the phrases agents report what they did with: past tense to imperative ("Raised the timeout" → "raise
// the timeout") and imperative to gerund ("use" → "using"), so a lesson reads as an instruction in the evidence's words.
import { collapse, lowerFirst, stripEnd, stripSubject } from "./phrasing.js";

/** Past tense of verbs agents report fixes with, to turn "Raised the timeout" into "raise the timeout". */
const PAST_TO_BASE: Readonly<Record<string, string>> = {
  added: "add", adjusted: "adjust", applied: "apply", batched: "batch", bumped: "bump", cached: "cache", called: "call",
  changed: "change", checked: "check", cleared: "clear", closed: "close", configured: "configure", created: "create",
  deleted: "delete", deployed: "deploy", disabled: "disable", downgraded: "downgrade", enabled: "enable", escaped: "escape",
  excluded: "exclude", exported: "export", extended: "extend", fetched: "fetch", forced: "force", granted: "grant",
  imported: "import", included: "include", increased: "increase", installed: "install", killed: "kill", limited: "limit",
  lowered: "lower", marked: "mark", merged: "merge", migrated: "migrate", mounted: "mount", moved: "move", opened: "open",
  passed: "pass", patched: "patch", pinned: "pin", provided: "provide", pulled: "pull", pushed: "push", quoted: "quote",
  raised: "raise", ran: "run", "re-ran": "re-run", rebuilt: "rebuild", reduced: "reduce", refreshed: "refresh", regenerated: "regenerate",
  reinstalled: "reinstall", removed: "remove", renamed: "rename", replaced: "replace", reran: "rerun", restarted: "restart",
  retried: "retry", reverted: "revert", rotated: "rotate", skipped: "skip", specified: "specify", split: "split",
  started: "start", stopped: "stop", supplied: "supply", switched: "switch", tagged: "tag", updated: "update",
  upgraded: "upgrade", used: "use", verified: "verify", waited: "wait", wrapped: "wrap", converted: "convert",
  decoded: "decode", encoded: "encode", filtered: "filter", freed: "free", locked: "lock", mocked: "mock",
  normalised: "normalise", normalized: "normalize", paginated: "paginate", parsed: "parse", rebased: "rebase",
  restored: "restore", scaled: "scale", seeded: "seed", sorted: "sort", streamed: "stream", synced: "sync",
  throttled: "throttle", unlocked: "unlock", validated: "validate", chunked: "chunk", emptied: "empty", flushed: "flush",
};
const BASE_VERBS = new Set([
  ...Object.values(PAST_TO_BASE),
  "avoid", "build", "clean", "disable", "ensure", "keep", "lock", "prefer", "reset", "run", "send", "set", "try",
]);
const NOT_GERUNDS = new Set(["during", "nothing", "something", "everything", "anything", "string", "thing", "spring", "morning", "evening", "ceiling"]);

function isGerund(word: string): boolean {
  return /^[a-z]{3,}ing$/.test(word) && !NOT_GERUNDS.has(word);
}

/** "use" → "using", "pin" → "pinning", "retry" → "retrying". */
function gerundOfVerb(verb: string): string {
  if (verb.endsWith("ie")) return `${verb.slice(0, -2)}ying`;
  if (verb.endsWith("e") && !verb.endsWith("ee")) return `${verb.slice(0, -1)}ing`;
  if (verb.length <= 4 && /[^aeiou][aeiou][bdgklmnprt]$/.test(verb)) return `${verb}${verb.slice(-1)}ing`;
  return `${verb}ing`;
}

/** "rotate the token and re-ran" → "rotate the token and re-run": past-tense verbs after "and" or "then" too. */
function laterVerbsToBase(phrase: string): string {
  return phrase.replace(/\b(and|then|,)(\s+)([a-z-]+)\b/gi, (whole, joint: string, space: string, word: string) => {
    const base = PAST_TO_BASE[word.toLowerCase()];
    return base === undefined ? whole : `${joint}${space}${base}`;
  });
}

export type VerbForm = { readonly form: "base" | "gerund"; readonly phrase: string } | { readonly form: "other"; readonly phrase: string };

/** Reads a phrase's leading verb: imperative (past tense converted), gerund, or something else. */
export function verbForm(text: string): VerbForm {
  const phrase = lowerFirst(stripSubject(stripEnd(collapse(text))));
  const first = (/^\S+/.exec(phrase)?.[0] ?? "").toLowerCase();
  if (isGerund(first)) return { form: "gerund", phrase };
  const base = PAST_TO_BASE[first];
  if (base !== undefined) return { form: "base", phrase: laterVerbsToBase(`${base}${phrase.slice(first.length)}`) };
  if (BASE_VERBS.has(first)) return { form: "base", phrase: laterVerbsToBase(phrase) };
  return { form: "other", phrase };
}

/** A fix as an instruction: "fix it by raising …", "switch to …", or "apply what worked: …". */
export function fixClause(fix: string): string {
  const { form, phrase } = verbForm(fix);
  if (form === "gerund") return `fix it by ${phrase}`;
  return form === "base" ? phrase : `apply what worked: ${phrase}`;
}

/** An approach that succeeded, as an instruction: "use …", "keep using …", or "what worked: …". */
export function approachClause(text: string): string {
  const { form, phrase } = verbForm(text);
  if (form === "gerund") return `keep ${phrase}`;
  return form === "base" ? phrase : `what worked: ${phrase}`;
}

/** An attempt as the object of "instead of" / "avoid": "used the default registry" → "using the default registry". */
export function attemptPhrase(text: string): string {
  const { form, phrase } = verbForm(text);
  if (form !== "base") return phrase;
  const first = /^\S+/.exec(phrase)?.[0] ?? "";
  return `${gerundOfVerb(first)}${phrase.slice(first.length)}`;
}
