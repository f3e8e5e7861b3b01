// The phrase stage: an entry that holds the query's words in the query's order ranks above one that only holds them
// scattered. Agents mostly search for text they saw — a command, an error line, a few words of a message — and BM25,
// which counts words wherever they stand, cannot tell the message that says "it might be an issue in" from the long
// log that holds each of those words somewhere. Word pairs, read as written (no stemming), and the whole query as
// written are the cheapest order signal that needs no positions in the index; only the best few candidates are read.
// Measured on real agent messages and LoCoMo with bench/tune-known-item.mjs and bench/tune-retrieval.mjs (BENCHMARKS.md).
import { isStopword, words } from "../text.js";
import type { Scored } from "./hit.js";

export interface PhraseStage {
  /** Candidates read, best first-phase scores first. */
  readonly depth: number;
  /** Added to a candidate's score at a full order share (see orderShare), in proportion above `floor`. */
  readonly weight: number;
  /**
   * Shares up to this earn nothing: a question in natural words shares a pair or two with many entries ("the
   * support group"), a piece of text typed back shares most of its pairs with the one it came from.
   */
  readonly floor: number;
}

/** Characters of an entry the stage reads: a phrase a user types back is rarely past the start of a huge output. */
const MAX_READ_CHARS = 16_000;

/**
 * A query's consecutive word pairs (lowercase, as `words` splits them) but those of two stopwords: "be an" says
 * little about which entry is meant, and every long text holds it.
 */
export function wordPairs(text: string): [string, string][] {
  const seen = words(text);
  const pairs = new Map<string, [string, string]>();
  for (let i = 0; i + 1 < seen.length; i++) {
    const first = seen[i] as string;
    const second = seen[i + 1] as string;
    if (!(isStopword(first) && isStopword(second))) pairs.set(`${first} ${second}`, [first, second]);
  }
  return [...pairs.values()];
}

const WORD_CHAR = /[\p{L}\p{N}]/u;

/** Whether the character at `at` is one `words` keeps (letters and digits of any script); false outside the text. */
function isWordChar(text: string, at: number): boolean {
  if (at < 0 || at >= text.length) return false;
  const code = text.charCodeAt(at);
  if (code < 128) return (code >= 48 && code <= 57) || (code >= 97 && code <= 122) || (code >= 65 && code <= 90);
  return WORD_CHAR.test(text.charAt(at));
}

/**
 * Whether `lower` (lowercase text) holds `first` and then `second` as whole words with only non-word characters
 * between them: what `words` would read as two consecutive words. Native substring search for the longer word of
 * the two (the rarer, usually), then a look at its neighbour: no tokenizing, as an entry can be a long log.
 */
function holdsPair(lower: string, first: string, second: string): boolean {
  // The anchor: a word that is not a stopword (wordPairs keeps no pair of two), the longer when both are not.
  const anchor = isStopword(first) || (!isStopword(second) && second.length > first.length) ? second : first;
  for (let at = lower.indexOf(anchor); at >= 0; at = lower.indexOf(anchor, at + 1)) {
    const end = at + anchor.length;
    if (isWordChar(lower, at - 1) || isWordChar(lower, end)) continue;
    if (anchor === first) {
      let next = end;
      while (next < lower.length && !isWordChar(lower, next)) next++;
      if (next > end && lower.startsWith(second, next) && !isWordChar(lower, next + second.length)) return true;
    } else {
      let before = at;
      while (before > 0 && !isWordChar(lower, before - 1)) before--;
      const start = before - first.length;
      if (before < at && start >= 0 && lower.startsWith(first, start) && !isWordChar(lower, start - 1)) return true;
    }
  }
  return false;
}

/**
 * How much of a query's order an entry holds: its word pairs held as consecutive words, plus one more when it holds
 * the whole query as written (case aside) — what tells `separability_matrix` from "separability matrix". In [0, 1].
 */
export function orderShare(query: string, pairs: readonly (readonly [string, string])[], content: string): number {
  if (pairs.length === 0) return 0;
  const lower = (content.length > MAX_READ_CHARS ? content.slice(0, MAX_READ_CHARS) : content).toLowerCase();
  let held = lower.includes(query) ? 1 : 0;
  for (const [first, second] of pairs) if (holdsPair(lower, first, second)) held++;
  return held / (pairs.length + 1);
}

/**
 * Adds the phrase bonus to the `stage.depth` best-scored candidates (in place). A one-word query has no pairs and
 * changes nothing.
 */
export function rewardPhrases(scores: Map<number, Scored>, query: string, contentOf: (seq: number) => string | undefined, stage: PhraseStage): void {
  const pairs = wordPairs(query);
  if (pairs.length === 0 || stage.weight <= 0 || stage.depth <= 0) return;
  const asWritten = query.trim().toLowerCase();
  const best = [...scores].sort((a, b) => b[1].score - a[1].score || b[0] - a[0]).slice(0, stage.depth);
  for (const [seq, scored] of best) {
    const content = contentOf(seq);
    if (content === undefined) continue;
    const share = orderShare(asWritten, pairs, content);
    if (share > stage.floor) scores.set(seq, { ...scored, score: scored.score + (stage.weight * (share - stage.floor)) / (1 - stage.floor) });
  }
}
