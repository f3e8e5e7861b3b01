// Knowledge reaching a question from the owner's other runs (global lessons and rules, and lessons auditioning for
// that scope) must bear on the question, or it misleads: a lesson about another pitfall of a similar task is worse
// than no lesson. Such candidates are kept only when the question's distinctive words are largely theirs, the
// question meets one of their conditions (the situations they were learned in, e.g. `while <task>`), they score close
// to the best of them, and only the best few. Weights are IDF among the owner's entries, so words every run of a kind
// shares count little and the words naming the situation count most.
import type { Catalog } from "../catalog.js";
import type { Scored } from "./hit.js";

export interface CrossRunRules {
  /** Share of the question's term weight (IDF) the lesson's index terms (text and conditions) must hold. */
  readonly minCoverage: number;
  /** Share of the question's term weight that admits a lesson whatever its conditions: it speaks to the question. */
  readonly sufficientCoverage: number;
  /**
   * IDF-weighted share of the lesson's best-met condition (when it has conditions) the question holds: the situation
   * the lesson was learned in must be the question's, not only its topic.
   */
  readonly minConditionCoverage: number;
  /**
   * A word says a condition is met only when it is rare among the owner's entries: its IDF at least this share of
   * the IDF of a word in one entry — or it is in at most two entries (the task that taught the lesson and the lesson
   * itself), which in a small store the share cannot tell.
   */
  readonly distinctiveIdf: number;
  /** Share of the best cross-run candidate's score a candidate must reach. */
  readonly relativeFloor: number;
  /** Cross-run candidates kept at most. */
  readonly maximum: number;
}

export interface CrossRunInput {
  readonly catalog: Catalog;
  readonly scores: Map<number, Scored>;
  /** Whether a candidate is knowledge from a run outside the question's scope. */
  readonly isCrossRun: (seq: number) => boolean;
  /** The question's index terms. */
  readonly queryTerms: ReadonlySet<string>;
  /** A candidate's stored index terms. */
  readonly termsOf: (seq: number) => ReadonlySet<string>;
  /** The index terms of each of a candidate's conditions; empty when it has none. */
  readonly conditionsOf: (seq: number) => readonly ReadonlySet<string>[];
  /** How many of the owner's entries hold a term, and how many entries the owner has. */
  readonly documentFrequency: (owner: number, term: string) => number;
  readonly documentCount: (owner: number) => number;
  readonly rules: CrossRunRules;
}

/** Removes the cross-run candidates that do not bear on the question from `scores`. */
export function admitCrossRunKnowledge(input: CrossRunInput): void {
  const { scores, rules } = input;
  const crossRun = [...scores].filter(([seq]) => input.isCrossRun(seq));
  if (crossRun.length === 0) return;
  const admitted = crossRun
    .filter(([seq]) => {
      const covered = coverage(input, seq);
      return covered >= rules.minCoverage && (covered >= rules.sufficientCoverage || conditionCoverage(input, seq) >= rules.minConditionCoverage);
    })
    .sort((a, b) => b[1].score - a[1].score || b[0] - a[0]);
  const best = admitted[0]?.[1].score ?? 0;
  const kept = new Set(admitted.filter(([, s]) => s.score >= rules.relativeFloor * best).slice(0, rules.maximum).map(([seq]) => seq));
  for (const [seq] of crossRun) if (!kept.has(seq)) scores.delete(seq);
}

/** IDF-weighted share of the question's terms the candidate holds. */
function coverage(input: CrossRunInput, seq: number): number {
  const owner = input.catalog.ownerOf(seq);
  const held = input.termsOf(seq);
  let total = 0;
  let shared = 0;
  for (const term of input.queryTerms) {
    const weight = idf(input, owner, term);
    total += weight;
    if (held.has(term)) shared += weight;
  }
  return total === 0 ? 0 : shared / total;
}

/**
 * The best IDF-weighted share of one of the candidate's conditions that the question holds; 1 without conditions. A
 * condition counts only when the question shares a rare word of it (see CrossRunRules.distinctiveIdf): words every
 * task of a kind uses ("the billing API") do not say the lesson's situation is the question's.
 */
function conditionCoverage(input: CrossRunInput, seq: number): number {
  const conditions = input.conditionsOf(seq);
  if (conditions.length === 0) return 1;
  const owner = input.catalog.ownerOf(seq);
  const rareIdf = input.rules.distinctiveIdf * inverseFrequency(input.documentCount(owner), 1);
  let best = 0;
  for (const condition of conditions) {
    let total = 0;
    let held = 0;
    let distinctive = false;
    for (const term of condition) {
      const weight = idf(input, owner, term);
      total += weight;
      if (!input.queryTerms.has(term)) continue;
      held += weight;
      if (weight >= rareIdf || input.documentFrequency(owner, term) <= 2) distinctive = true;
    }
    if (total > 0 && distinctive) best = Math.max(best, held / total);
  }
  return best;
}

/** BM25's inverse document frequency of a term among the owner's entries. */
function idf(input: CrossRunInput, owner: number, term: string): number {
  return inverseFrequency(input.documentCount(owner), input.documentFrequency(owner, term));
}

function inverseFrequency(count: number, df: number): number {
  return Math.log(1 + (count - df + 0.5) / (df + 0.5));
}
