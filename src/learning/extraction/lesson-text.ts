// The words lesson extraction looks for, and what they tell about a sentence: an error, a fix (or one that did not
// work), a rule, a preference, high stakes, a reason, a condition, what was tried and the symptom it met.
import { sentences } from "../../retrieval/text.js";
import { clip, collapse, lowerFirst, statementBody, stripEnd, stripLabel, stripSubject } from "./phrasing.js";
import { attemptPhrase } from "./verb-forms.js";
import { withoutLogPrefix } from "../../retrieval/situations.js";
import { hasHardError } from "../../retrieval/error-words.js";

// The vocabularies run on every sentence of every item, so they are plain case-insensitive patterns: the unicode flag
// makes these alternations several times slower and nothing in them needs it. Error vocabulary: retrieval/error-words.ts.

/** A fix that did not happen: "did not work", "still failing", "didn't help". */
const NEGATED_FIX =
  /\b(?:did ?n[o'’]t|does ?n[o'’]t|do ?n[o'’]t|not|never|no longer|still not)\s+(?:\w+\s+)?(?:fix|fixes|fixed|resolve|resolves|resolved|solve|solves|solved|help|helps|helped|work|works|worked|working|succeed|succeeds|succeeded|pass|passes|passed)\b|\bstill\s+(?:fail(?:s|ed|ing)?|broken|erroring|timing out)\b|\bunresolved\b/i;
const FIX_WORDS =
  /\b(?:fixed|fixes|resolved|resolves|solved|solves|worked|works|working now|succeeded|succeeds|successful(?:ly)?|did the trick|workaround|recovered|the fix|solution)\b|\bfix\s*:|\b(?:tests?|build|checks?|ci|it|step|deploy(?:ment)?)\s+(?:now\s+)?pass(?:ed|es)?\b/i;
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

/** Error vocabulary, including a fix that did not work. */
export function hasError(text: string): boolean {
  return hasHardError(text) || NEGATED_FIX.test(text);
}

/** Says something was fixed or worked, and does not say it did not. */
export function hasFix(text: string): boolean {
  return FIX_WORDS.test(text) && !NEGATED_FIX.test(text);
}

/** Uses the words of fixing, whether or not it says the fix failed. */
export function mentionsFix(text: string): boolean {
  return FIX_WORDS.test(text);
}

/** Says a fix did not happen: "did not work", "still failing". */
export function deniesFix(text: string): boolean {
  return NEGATED_FIX.test(text);
}

export function isPreference(sentence: string): boolean {
  return !sentence.endsWith("?") && PREFERENCE.test(sentence);
}

/** An imperative a later run should obey: "Never …", "Always …", "Do not …", "X must …". */
export function isRule(sentence: string): boolean {
  if (sentence.endsWith("?")) return false;
  const body = stripLabel(sentence);
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

const TRIED_BUT = /^(?:.*?\b)?(?:tried|attempted)\s+(?:to\s+)?(.+?)\s*,?\s+but\s+(?:it\s+|that\s+|this\s+)?(.+)$/i;

/** A symptom as it follows "When …": no reporting verb, no trailing punctuation, bounded; "tried X but it Y" → "X-ing Y". */
export function symptomOf(text: string): string {
  const tried = TRIED_BUT.exec(collapse(text));
  const told = tried?.[1] !== undefined && tried[2] !== undefined ? `${attemptPhrase(tried[1])} ${tried[2]}` : text;
  const body = withoutLogPrefix(stripLabel(collapse(told)))
    .replace(/^(?:(?:we|i|the agent|agent)\s+)?(?:got|hit|saw|see|encountered|received|ran into|noticed|observed)\s+/i, "")
    .replace(/^when\s+/i, "");
  return clip(lowerFirst(stripEnd(body)), 160);
}
