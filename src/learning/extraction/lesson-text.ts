// The words lesson extraction looks for (errors, fixes, rules, preferences, high stakes) and the small text shaping it
// does: clipping, clean sentence ends, past tense to imperative, so a lesson reads as an instruction in the evidence's words.
import { sentences, terms, words } from "../../retrieval/text.js";
import type { CandidateLesson, Extraction } from "../evidence.js";
import { IMPORTANCE_LEVELS, type Importance, type LessonType } from "../../storage/entry-record.js";

// The vocabularies run on every sentence of every item, so they are plain case-insensitive patterns: the unicode flag
// makes these alternations several times slower and nothing in them needs it.

/** Error vocabulary: words, error codes (ECONNREFUSED, npm's ERR!) and HTTP 4xx/5xx statuses in context. */
const ERROR_WORDS =
  /\b(?:errors?|errored|erroring|err|fail(?:s|ed|ing|ures?)?|exceptions?|timed?[ -]?out|timeouts?|refused|denied|forbidden|unauthori[sz]ed|crash(?:ed|es|ing)?|panic(?:ked|s)?|broken|unable to|could ?n[o'’]t|cannot|can[o'’]?t|not found|rejected|invalid|traceback|segfault|segmentation fault|out of memory|oom(?:killed)?|deadlock(?:ed|s)?|abort(?:ed|s)?|outage|corrupt(?:ed|ion)?|e(?:conn[a-z]+|timedout|noent|acces|perm|addrinuse|pipe|notfound|hostunreach|netunreach|mfile))\b/i;
const HTTP_ERROR =
  /\b(?:http|status|code|returned|got|error|response|with)\s*:?\s*[45]\d\d\b|\b[45]\d\d\s+(?:error|bad request|unauthori[sz]ed|forbidden|not found|conflict|too many requests|internal server error|bad gateway|service unavailable|gateway time-?out)\b/i;
/** "no errors", "without failures": error words that report their absence. */
const ABSENT_ERROR = /\b(?:no|without|zero|0)\s+(?:errors?|failures?|exceptions?|crash(?:es)?|timeouts?)\b|\berror[- ]free\b/gi;
/** A fix that did not happen: "did not work", "still failing", "didn't help". */
const NEGATED_FIX =
  /\b(?:did ?n[o'’]t|does ?n[o'’]t|do ?n[o'’]t|not|never|no longer|still not)\s+(?:\w+\s+)?(?:fix|fixes|fixed|resolve|resolves|resolved|solve|solves|solved|help|helps|helped|work|works|worked|working|succeed|succeeds|succeeded|pass|passes|passed)\b|\bstill\s+(?:fail(?:s|ed|ing)?|broken|erroring|timing out)\b|\bunresolved\b/i;
const FIX_WORDS =
  /\b(?:fixed|fixes|resolved|resolves|solved|solves|worked|works|working now|succeeded|succeeds|successful(?:ly)?|did the trick|workaround|recovered|the fix|solution)\b|\bfix\s*:|\b(?:tests?|build|checks?|ci|it|step|deploy(?:ment)?)\s+(?:now\s+)?pass(?:ed|es)?\b/i;
/** Labels some agents put before a statement: "Note: never …". */
const STATEMENT_LABEL = /^(?:note|rule|lesson|important|remember|tip|hint|policy|guideline|reminder|nb)\s*[:\-–—]\s*/i;
const RULE_START = /^(?:(?:you|we|agents?|the agent|everyone|one)\s+(?:should\s+)?)?(?:please\s+)?(?:never|always|do not|don['’]?t|must(?: not)?|avoid|make sure|ensure|only ever)\b/i;
const RULE_MODAL =
  /\b(?:must(?!\s+(?:have|'ve|be\s+(?:the|a|an|because|due)))(?:\s+not|n['’]t)?|should\s+(?:never|always)|shall\s+not|(?:is|are)\s+(?:forbidden|not allowed|never allowed|required))\b/i;
const PREFERENCE =
  /\b(?:prefers?|preferred|preferring|preference)\b|\b(?:user|users|customer|client|team|owner|maintainers?|they|he|she|i|we)\s+(?:really\s+|strongly\s+|always\s+|would\s+)?(?:likes?|loves?|wants?|dislikes?|hates?|rather|like)\b|^please\b/i;
/** High stakes: data loss, security, production outages. */
const CRITICAL =
  /\b(?:data loss|lost (?:\w+\s+)?data|data (?:was|were|got) (?:lost|deleted|wiped)|corrupt(?:ed|ion|s)?|security|vulnerab\w*|breach(?:ed|es)?|leak(?:ed|s)?\s+(?:\w+\s+)?(?:secrets?|credentials?|keys?|tokens?|passwords?|data)|credentials? (?:were |was )?(?:leaked|exposed)|production outage|outage|prod(?:uction)? (?:is |was |went )?down|wiped)\b/i;
const CONDITION_CLAUSE = /\b(when|whenever|if|before|after|while|during|unless)\s+([^,.;:!?]{3,120})/i;
const TRIED = /\b(?:tried|attempted|trying|attempting)\s+(?:to\s+)?(.+?)(?=\s*(?:[,;:(]|\bbut\b|\band (?:it|that|this|got)\b|\bwhich\b|$))/i;
const NEGATED_ATTEMPT = /^(.+?)\s+(?:did ?n[o'’]t|does ?n[o'’]t|never|did not)\s+(?:help|work|fix|solve|resolve)/i;

const RULE_WORDS = /\b(?:never|always|do not|don['’]?t|must|avoid|make sure|ensure|should|shall|forbidden|not allowed|required|only ever)\b/i;

/** A cheap first look at a whole item: could any sentence of it teach something? */
export function mayTeach(text: string): boolean {
  return hasError(text) || FIX_WORDS.test(text) || RULE_WORDS.test(text) || PREFERENCE.test(text);
}

/** A statement without its label: "Note: never …" → "never …". */
export function statementBody(sentence: string): string {
  return stripEnd(collapse(sentence.replace(STATEMENT_LABEL, "")));
}

export function hasHardError(text: string): boolean {
  if (!ERROR_WORDS.test(text) && !HTTP_ERROR.test(text)) return false;
  const present = text.replace(ABSENT_ERROR, " ");
  return ERROR_WORDS.test(present) || HTTP_ERROR.test(present);
}

/** Error vocabulary, including a fix that did not work. */
export function hasError(text: string): boolean {
  return hasHardError(text) || NEGATED_FIX.test(text);
}

/** Says something was fixed or worked, and does not say it did not. */
export function hasFix(text: string): boolean {
  return FIX_WORDS.test(text) && !NEGATED_FIX.test(text);
}

export function isPreference(sentence: string): boolean {
  return !sentence.endsWith("?") && PREFERENCE.test(sentence);
}

/** An imperative a later run should obey: "Never …", "Always …", "Do not …", "X must …". */
export function isRule(sentence: string): boolean {
  if (sentence.endsWith("?")) return false;
  const body = sentence.replace(STATEMENT_LABEL, "");
  return RULE_START.test(body) || RULE_MODAL.test(body);
}

export function isCritical(text: string): boolean {
  return CRITICAL.test(text);
}

const REASON = /\b(?:because|since|thanks to|so that|as it|as the)\b/i;

/** Whether a text gives a reason for what worked. */
export function hasReason(text: string): boolean {
  return REASON.test(text);
}

/** The first sentence of a report that gives a reason ("Deploy succeeded because the canary was healthy"), or "". */
export function reasonedSentence(report: string): string {
  const sentence = sentences(collapse(report)).slice(0, 6).find((s) => REASON.test(s) && !NEGATED_FIX.test(s));
  return sentence === undefined ? "" : clip(statementBody(sentence), 240);
}

/** "when the cache is cold", "before deploying": the condition a statement names, or "". */
export function conditionOf(sentence: string): string {
  const match = CONDITION_CLAUSE.exec(sentence);
  if (match?.[1] === undefined || match[2] === undefined) return "";
  return `${match[1].toLowerCase()} ${stripEnd(match[2])}`;
}

/** What was tried, from "tried X but …" or "X did not help"; "" when the text does not say. */
export function attemptOf(text: string): string {
  const match = TRIED.exec(text) ?? NEGATED_ATTEMPT.exec(text);
  return match?.[1] === undefined ? "" : stripSubject(stripEnd(match[1]));
}

const GENERIC_TERMS = new Set(
  terms("error errors failed failure fails exception tried attempted attempt step run got again still issue problem worked works fixed resolved solved succeeded success now then retry"),
);

/** A text's distinctive index terms: stemmed, stopwords and the vocabulary of failing and fixing removed. */
export function keyTerms(text: string, max = 48): Set<string> {
  const out = new Set<string>();
  for (const term of terms(text)) {
    if (GENERIC_TERMS.has(term)) continue;
    out.add(term);
    if (out.size >= max) break;
  }
  return out;
}

/** Words the stopword list drops that flip or bound what a lesson says: "never" vs "always", "before" vs "after". */
const POLARITY = new Set(["never", "always", "must", "should", "not", "no", "don", "doesn", "didn", "isn", "aren", "won", "cannot", "avoid", "before", "after", "without", "only"]);

/**
 * The terms that say what a lesson is, for telling duplicates apart: its index terms plus its polarity words, so that
 * "Never run X" and "Always run X" never merge.
 */
export function identityTerms(text: string): Set<string> {
  const out = new Set(terms(text));
  for (const word of words(text)) if (POLARITY.has(word)) out.add(`!${word}`);
  return out;
}

export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 || b.size === 0) return 0;
  let shared = 0;
  for (const term of a) if (b.has(term)) shared++;
  return shared / (a.size + b.size - shared);
}

export function overlaps(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  for (const term of a) if (b.has(term)) return true;
  return false;
}

export function collapse(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Cuts a text to `max` characters at a word boundary, marking the cut with "…". */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  const space = cut.lastIndexOf(" ");
  return `${(space > max * 0.6 ? cut.slice(0, space) : cut).replace(/[\s,;:.]+$/, "")}…`;
}

/** Drops trailing punctuation and spaces. */
export function stripEnd(text: string): string {
  return text.replace(/[\s.,;:!?\-–—]+$/, "").trim();
}

/** Capitalised and ending in a full stop (or the text's own ! or ?). */
export function asSentence(text: string): string {
  const body = text.trim();
  if (body === "") return "";
  const capital = body.charAt(0).toUpperCase() + body.slice(1);
  return /[.!?…]$/.test(capital) ? capital : `${capital}.`;
}

/** Lowercases an ordinary capitalised first word ("Deploy" → "deploy"), never an acronym or identifier ("ECONNREFUSED"). */
export function lowerFirst(text: string): string {
  const first = /^\S+/.exec(text)?.[0] ?? "";
  return /^\p{Lu}[\p{Ll}'’-]*$/u.test(first) ? text.charAt(0).toLowerCase() + text.slice(1) : text;
}

/** Removes a statement label and a leading subject or filler: "Note: we then switched" → "switched". */
export function stripSubject(text: string): string {
  return text
    .replace(STATEMENT_LABEL, "")
    .replace(/^(?:(?:so|then|finally|eventually|instead|now|next|and)\s*,?\s+)*/i, "")
    .replace(/^(?:we|i|the agent|agent|they|you)\s+(?:then\s+|finally\s+|just\s+)?/i, "")
    .replace(/^to\s+/i, "")
    .trim();
}

const TRIED_BUT = /^(?:.*?\b)?(?:tried|attempted)\s+(?:to\s+)?(.+?)\s*,?\s+but\s+(?:it\s+|that\s+|this\s+)?(.+)$/i;

/** A symptom as it follows "When …": no reporting verb, no trailing punctuation, bounded; "tried X but it Y" → "X-ing Y". */
export function symptomOf(text: string): string {
  const tried = TRIED_BUT.exec(collapse(text));
  const told = tried?.[1] !== undefined && tried[2] !== undefined ? `${attemptPhrase(tried[1])} ${tried[2]}` : text;
  const body = collapse(told)
    .replace(STATEMENT_LABEL, "")
    .replace(/^(?:(?:we|i|the agent|agent)\s+)?(?:got|hit|saw|see|encountered|received|ran into|noticed|observed)\s+/i, "")
    .replace(/^when\s+/i, "");
  return clip(lowerFirst(stripEnd(body)), 160);
}

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

type VerbForm = { readonly form: "base" | "gerund"; readonly phrase: string } | { readonly form: "other"; readonly phrase: string };

/** Reads a phrase's leading verb: imperative (past tense converted), gerund, or something else. */
function verbForm(text: string): VerbForm {
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

export interface FixParts {
  /** What was done; "" when the text says only that something was fixed. */
  readonly fix: string;
  /** What it fixed, when the same sentence says it ("The timeout was fixed by …"); else "". */
  readonly symptom: string;
}

const VAGUE_OBJECT = /^(?:it|this|that|them|the (?:issue|problem|error|bug|failure|build|step|run))$/i;
/** Cuts "…, and now it works" off a fix. */
const TRAILING_SUCCESS =
  /\s*[,;]?\s+(?:and|so|which|then|after which)\s+(?:now\s+)?(?:it|this|that|everything|the\s+\S+)\s+(?:now\s+)?(?:works|worked|passed|passes|succeeded|went through|is fine|was fine)\b.*$/i;
const FIX_SHAPES: readonly (readonly [RegExp, (m: RegExpExecArray) => FixParts])[] = [
  // "The timeout was fixed by raising the limit", "Fixed it by …", "Worked around it with …"
  [
    /^(.*?)\b(?:(?:was|were|got|is|are|has been|have been)\s+)?(?:fixed|resolved|solved|worked around|addressed|avoided)\s+(?:(?:it|this|that|them)\s+)?(?:by|with)\s+(.+)$/i,
    (m) => ({ symptom: m[1] ?? "", fix: m[2] ?? "" }),
  ],
  // "We fixed the ECONNREFUSED error by starting the database first"
  [/^(.*?)\b(?:fixed|resolved|solved|avoided|worked around)\s+(.+?)\s+(?:by|with)\s+(.+)$/i, (m) => ({ symptom: m[2] ?? "", fix: m[3] ?? "" })],
  // "The fix was to pin node 20", "Fix: set NODE_OPTIONS", "Workaround: …"
  [/^(?:the\s+)?(?:fix|solution|workaround|resolution|remedy)(?:\s+(?:was|is))?(?:\s*:\s*|\s+(?=to\s))(.+)$/i, (m) => ({ symptom: "", fix: m[1] ?? "" })],
  [/^(?:fixed|resolved|solved)\s*:\s*(.+)$/i, (m) => ({ symptom: "", fix: m[1] ?? "" })],
  // "After restarting the container, it worked"
  [
    /^after\s+(.+?),?\s+(?:it|that|this|everything|the\s+\S+(?:\s+\S+)?)\s+(?:now\s+)?(?:worked|works|passed|passes|succeeded|went through|ran)\b/i,
    (m) => ({ symptom: "", fix: m[1] ?? "" }),
  ],
  // "Switched to the mirror registry and now it works", "Added a null check; build passes now"
  [
    /^(.+?)\s*(?:,|;|\band\b|—|–|\s-)\s*(?:now\s+)?(?:the\s+)?\S+\s+(?:now\s+)?(?:works|worked|passes|passed|succeeded|is fine|went through)\b/i,
    (m) => ({ symptom: "", fix: m[1] ?? "" }),
  ],
  // "Raising the limit resolved the timeout"
  [/^(.+?)\s+(?:fixed|resolved|solved|cured)\s+(.+)$/i, (m) => ({ symptom: m[2] ?? "", fix: m[1] ?? "" })],
  // "Switching to the mirror registry worked (because …)"
  [/^(.+?)\s+(?:worked|works|did the trick|succeeded|succeeds)\b/i, (m) => ({ symptom: "", fix: m[1] ?? "" })],
];

/** Splits a sentence that reports a fix into what was done and, when it says so, what it fixed. */
export function fixParts(sentence: string): FixParts {
  const body = stripEnd(collapse(sentence.replace(STATEMENT_LABEL, "")));
  for (const [shape, read] of FIX_SHAPES) {
    const match = shape.exec(body);
    if (match === null) continue;
    const parts = read(match);
    const fix = stripSubject(stripEnd(parts.fix.replace(TRAILING_SUCCESS, "").replace(/[\s,;]+(?:which|that|and|so|then|this)$/i, "")));
    // "Deploy succeeded": one word before "worked" names what was done only when it is an action ("Rebooting worked").
    const named = keyTerms(fix).size >= 2 || (keyTerms(fix).size === 1 && verbForm(fix).form === "gerund");
    const symptom = stripEnd(parts.symptom.replace(/\b(?:was|were|got|is|are|has been|have been)$/i, "").replace(/^(?:we|i)\s*$/i, ""));
    return {
      fix: named ? clip(fix, 200) : "",
      symptom: VAGUE_OBJECT.test(symptom) || keyTerms(symptom).size === 0 ? "" : symptom,
    };
  }
  return { fix: "", symptom: "" };
}

/**
 * What a report of success says was done: a fix sentence's action ("Fixed by pinning node 20" → "pinning node 20") or
 * the first sentence that starts with an action ("Raised the timeout to 120s."); "" for "Deploy succeeded." or
 * "Compiled 3 modules.", which report a result and not how it was reached.
 */
export function actionOf(report: string): string {
  for (const sentence of sentences(collapse(report)).slice(0, 6)) {
    if (FIX_WORDS.test(sentence)) {
      const { fix } = fixParts(sentence);
      if (fix !== "") return fix;
    } else if (!NEGATED_FIX.test(sentence) && verbForm(sentence).form !== "other") {
      return clip(statementBody(sentence), 200);
    }
  }
  return "";
}

const TYPE_NAMES: readonly (readonly [LessonType, string, string])[] = [
  ["failure", "failure pattern", "failure patterns"],
  ["rule", "rule", "rules"],
  ["success", "success pattern", "success patterns"],
  ["preference", "preference", "preferences"],
  ["observation", "observation", "observations"],
];

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "3 lessons from 42 items: 2 failure patterns (npm install timed out; …), 1 rule."; "" without evidence. */
export function summaryOf(lessons: readonly CandidateLesson[], itemCount: number): string {
  if (itemCount === 0) return "";
  const items = plural(itemCount, "item", "items");
  if (lessons.length === 0) return `No lessons from ${items}: no failures, fixes, rules or preferences were found.`;
  const parts: string[] = [];
  for (const [type, one, many] of TYPE_NAMES) {
    const ofType = lessons.filter((lesson) => lesson.lessonType === type);
    if (ofType.length === 0) continue;
    const about =
      type === "failure"
        ? ofType
            .slice(0, 2)
            .map((lesson) => clip((lesson.conditions.find((c) => c.startsWith("when ")) ?? lesson.content).replace(/^when\s+/i, ""), 48))
            .join("; ")
        : "";
    parts.push(`${plural(ofType.length, one, many)}${about === "" ? "" : ` (${about})`}`);
  }
  return `${plural(lessons.length, "lesson", "lessons")} from ${items}: ${parts.join(", ")}.`;
}

/** Rounds a confidence to two decimals, in [0, 1]. */
export function roundConfidence(value: number): number {
  return Math.round(Math.min(1, Math.max(0, value)) * 100) / 100;
}

/** A lesson being built, with the evidence position it starts at (which keeps the order of equals stable). */
export interface Draft {
  readonly content: string;
  readonly lessonType: LessonType;
  readonly importance: Importance;
  readonly conditions: readonly string[];
  readonly rationale: string;
  readonly confidence: number;
  readonly sourceIds: readonly string[];
  readonly index: number;
}

/** Contents whose term sets overlap this much say the same thing. */
const NEAR_IDENTICAL = 0.8;
/** A lesson found twice is a little more certain. */
const MERGE_BONUS = 0.05;
const MAX_DRAFTS = 200;
const MAX_CONDITIONS = 4;
const MAX_SOURCE_IDS = 32;

/** Most important first, then most confident, then the earliest evidence; content breaks the last ties. */
export function compareDrafts(a: Draft, b: Draft): number {
  const importance = IMPORTANCE_LEVELS.indexOf(b.importance) - IMPORTANCE_LEVELS.indexOf(a.importance);
  if (importance !== 0) return importance;
  if (a.confidence !== b.confidence) return b.confidence - a.confidence;
  if (a.index !== b.index) return a.index - b.index;
  return a.content < b.content ? -1 : a.content > b.content ? 1 : 0;
}

function mergeDrafts(kept: Draft, other: Draft, order: ReadonlyMap<string, number>): Draft {
  const ids = [...new Set([...kept.sourceIds, ...other.sourceIds])];
  const position = (id: string): number => order.get(id) ?? Number.MAX_SAFE_INTEGER;
  ids.sort((a, b) => position(a) - position(b) || (a < b ? -1 : a > b ? 1 : 0));
  const rationale = other.rationale === "" || kept.rationale.includes(other.rationale) || kept.rationale.length > 600 ? kept.rationale : `${kept.rationale} Also: ${other.rationale}`;
  return {
    ...kept,
    importance: IMPORTANCE_LEVELS[Math.max(IMPORTANCE_LEVELS.indexOf(kept.importance), IMPORTANCE_LEVELS.indexOf(other.importance))] ?? kept.importance,
    conditions: [...new Set([...kept.conditions, ...other.conditions])].slice(0, MAX_CONDITIONS),
    rationale,
    confidence: roundConfidence(Math.min(0.95, Math.max(kept.confidence, other.confidence) + MERGE_BONUS)),
    sourceIds: ids.slice(0, MAX_SOURCE_IDS),
    index: Math.min(kept.index, other.index),
  };
}

/**
 * Merges near-identical lessons (the better-supported wording wins; lineage and conditions are united) and returns
 * them in `compareDrafts` order. `order` gives each evidence id's position, so merged lineage stays chronological.
 */
export function dedupeLessons(drafts: readonly Draft[], order: ReadonlyMap<string, number>): Draft[] {
  const kept: { draft: Draft; terms: Set<string> }[] = [];
  const byKey = new Map<string, number>();
  for (const draft of [...drafts].sort(compareDrafts).slice(0, MAX_DRAFTS)) {
    const termSet = identityTerms(draft.content);
    const key = [...termSet].sort().join(" ");
    const at = byKey.get(key) ?? kept.findIndex((k) => jaccard(k.terms, termSet) >= NEAR_IDENTICAL);
    const into = kept[at];
    if (into === undefined) {
      byKey.set(key, kept.length);
      kept.push({ draft, terms: termSet });
    } else {
      into.draft = mergeDrafts(into.draft, draft, order);
      byKey.set(key, at);
    }
  }
  return kept.map((k) => k.draft).sort(compareDrafts);
}

/** A draft as the lesson an extraction returns; every extracted lesson is scoped to its run (promotion widens it later). */
export function candidateOf(draft: Draft): CandidateLesson {
  return {
    content: draft.content,
    lessonType: draft.lessonType,
    scope: "run",
    importance: draft.importance,
    conditions: draft.conditions,
    rationale: draft.rationale,
    confidence: draft.confidence,
    sourceIds: draft.sourceIds,
  };
}

/** An extraction of these lessons: its confidence is their mean, 0 with none. */
export function extractionOf(lessons: readonly CandidateLesson[], summary: string): Extraction {
  const confidence = lessons.length === 0 ? 0 : roundConfidence(lessons.reduce((sum, l) => sum + l.confidence, 0) / lessons.length);
  return { lessons, summary, confidence, degraded: false, fallbackReason: "" };
}
