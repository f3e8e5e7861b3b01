// Knowledge reaching a question from the owner's other runs (global lessons and rules, and lessons auditioning for
// that scope) must bear on the question, or it misleads: a lesson about another pitfall of a similar task is worse
// than no lesson. A candidate bears on the question in one of three ways:
// - by words: the question's distinctive words are largely its own, and the question meets one of its conditions
//   (the situations it was learned in, e.g. `while <task>`). Weights are IDF among the owner's entries, so words
//   every run of a kind shares count little and the words naming the situation count most;
// - by meaning: a line of the question, reduced to its failure signature, is close to one of the situations the
//   lesson is for (ranking/situation-match.ts), whatever words it uses. Every cross-run lesson of the owner is
//   considered this way, not only those the first phase found;
// - by its failure: a line of the question that reports an error, reduced to its failure signature (what failed and
//   how, without the times, ids, hosts and numbers that differ from one occurrence to the next), has its distinctive
//   words largely in the lesson — its text, the failures it was seen with and the conditions it was learned under. A
//   failure is told in few words, so a question that holds other lines (the task) would dilute them; and a lesson is
//   about its failure in all of its text (its remedy names the component, its diagnosis the cause), not only in the
//   symptom it was learned from. Considered for every cross-run lesson too.
// Any way, a lesson is left out where the question is closer to a situation it was surfaced in and did not apply
// to than to any it is for; only those close to the best are kept, and only the best few.
import type { Catalog } from "../catalog.js";
import type { Scored, ScoreParts } from "./hit.js";
import { NO_PARTS } from "./hit.js";
import type { SituationFit } from "./situation-match.js";
import { inverseDocumentFrequency } from "../sparse-index.js";

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
  /**
   * Similarity (cosine of failure signatures) at which a question part meets a lesson's situation by meaning; also
   * the least similarity to a situation it did not apply to that keeps it out.
   */
  readonly minSituationFit: number;
  /**
   * IDF-weighted share of the terms of a failure line's signature a lesson must hold to bear on it by its failure;
   * also the least share of them a situation it did not apply to holds that keeps it out.
   */
  readonly minFailureCoverage: number;
  /** Terms of a failure line's signature a lesson must hold, at least, to bear on it by its failure. */
  readonly minSharedFailureTerms: number;
}

export interface CrossRunInput {
  readonly catalog: Catalog;
  readonly scores: Map<number, Scored>;
  /** Whether a candidate is knowledge from a run outside the question's scope. */
  readonly isCrossRun: (seq: number) => boolean;
  /**
   * The index terms of the question's parts: the whole question, and each of its lines when it has several (a task
   * and the log lines an agent met read as separate facets; a lesson may bear on one of them).
   */
  readonly questionTerms: readonly ReadonlySet<string>[];
  /** The index terms of the failure signatures of the question's parts that report an error; empty when none does. */
  readonly failureTerms: readonly ReadonlySet<string>[];
  /** A candidate's stored index terms. */
  readonly termsOf: (seq: number) => ReadonlySet<string>;
  /**
   * Whether a candidate's index terms hold a term, without reading them whole: every cross-run lesson is compared
   * with the question's failure lines, and most share no term with them.
   */
  readonly holds: (seq: number, term: string) => boolean;
  /** The index terms of each of a candidate's conditions; empty when it has none. */
  readonly conditionsOf: (seq: number) => readonly ReadonlySet<string>[];
  /** How many of the owner's entries hold a term, and how many entries the owner has. */
  readonly documentFrequency: (owner: number, term: string) => number;
  readonly documentCount: (owner: number) => number;
  /** The owner's cross-run knowledge in the reader's view, candidates or not: each may bear on the question by meaning. */
  readonly knowledge: readonly number[];
  /** The index terms of each situation a candidate was surfaced in and did not apply to. */
  readonly notForTermsOf: (seq: number) => readonly ReadonlySet<string>[];
  /** How a candidate's situations fit the question. */
  readonly situationFit: (seq: number) => SituationFit;
  readonly rules: CrossRunRules;
}

/**
 * Removes the cross-run candidates that do not bear on the question from `scores`, and adds the knowledge that bears on
 * it by meaning alone, scored by that fit relative to the best candidate.
 */
export function admitCrossRunKnowledge(input: CrossRunInput): void {
  const { scores, rules } = input;
  const considered = new Set([...scores.keys()].filter((seq) => input.isCrossRun(seq)));
  for (const seq of input.knowledge) if (input.isCrossRun(seq)) considered.add(seq);
  if (considered.size === 0) return;
  const admitted: { seq: number; strength: number; failureBearing: number }[] = [];
  const failures = new FailureLines(input);
  for (const seq of considered) {
    const fit = input.situationFit(seq);
    if (fit.against >= rules.minSituationFit && fit.against >= fit.bearing) continue;
    const failureBearing = failures.bearing(seq);
    const byMeaning = fit.bearing >= rules.minSituationFit ? fit.bearing : 0;
    const byFailure = failureBearing >= rules.minFailureCoverage ? failureBearing : 0;
    let byWords = 0;
    if (scores.has(seq)) {
      for (const queryTerms of input.questionTerms) {
        const covered = coverage(input, queryTerms, seq);
        if (covered >= rules.minCoverage && (covered >= rules.sufficientCoverage || conditionCoverage(input, queryTerms, seq) >= rules.minConditionCoverage)) byWords = Math.max(byWords, covered);
      }
    }
    const strength = Math.max(byMeaning, byWords, byFailure);
    if (strength > 0) admitted.push({ seq, strength, failureBearing });
  }
  admitted.sort((a, b) => b.strength - a.strength || b.seq - a.seq);
  const kept: { seq: number; strength: number }[] = [];
  for (const candidate of admitted) {
    if (kept.length >= rules.maximum || candidate.strength < rules.relativeFloor * (kept[0]?.strength ?? 0)) break;
    // Surfaced for a failure that reads like this one and reported as not applying there: it stays out. Judged only
    // for the few that would be kept, in order, as the not_for situations of every candidate would cost too much.
    const against = failures.against(candidate.seq);
    if (against >= rules.minFailureCoverage && against >= candidate.failureBearing) continue;
    kept.push(candidate);
  }
  const keptSeqs = new Set(kept.map((a) => a.seq));
  for (const seq of considered) if (!keptSeqs.has(seq)) scores.delete(seq);
  // Found by meaning, a lesson may have scored little or not at all in the first phase: it ranks by its fit, against
  // the best score of what was found.
  const top = Math.max(0, ...[...scores.values()].map((s) => s.score));
  for (const { seq, strength } of kept) {
    const scored = scores.get(seq);
    const floor = strength * (top > 0 ? top : 1);
    if (scored === undefined || scored.score < floor) scores.set(seq, { score: floor, parts: scored?.parts ?? situationalParts(strength) });
  }
}

function situationalParts(strength: number): ScoreParts {
  return { ...NO_PARTS, semantic: strength };
}

/**
 * The question's failure lines as a candidate is compared with them: the IDF weights of their terms among the
 * candidate owner's entries, computed once per owner, not once per candidate.
 */
class FailureLines {
  readonly #input: CrossRunInput;
  readonly #byOwner = new Map<number, readonly WeightedLine[]>();

  constructor(input: CrossRunInput) {
    this.#input = input;
  }

  /** The best IDF-weighted share of a failure line's terms the candidate holds; 0 without failure lines. */
  bearing(seq: number): number {
    const minShared = this.#input.rules.minSharedFailureTerms;
    let best = 0;
    for (const line of this.#lines(seq)) best = Math.max(best, failureShare(line, (term) => this.#input.holds(seq, term), minShared));
    return best;
  }

  /** The best share of a failure line's terms one of the situations the candidate did not apply to holds. */
  against(seq: number): number {
    const notFor = this.#input.notForTermsOf(seq);
    if (notFor.length === 0) return 0;
    let best = 0;
    const minShared = this.#input.rules.minSharedFailureTerms;
    for (const line of this.#lines(seq)) for (const situation of notFor) best = Math.max(best, failureShare(line, (term) => situation.has(term), minShared));
    return best;
  }

  #lines(seq: number): readonly WeightedLine[] {
    if (this.#input.failureTerms.length === 0) return [];
    const owner = this.#input.catalog.ownerOf(seq);
    let lines = this.#byOwner.get(owner);
    if (lines === undefined) {
      lines = this.#input.failureTerms.map((line) => weighFailureLine(line, (term) => idf(this.#input, owner, term)));
      this.#byOwner.set(owner, lines);
    }
    return lines;
  }
}

/** A failure line's signature terms, each with its weight (IDF among the owner's entries), and their sum. */
export interface WeightedLine {
  readonly terms: readonly { readonly term: string; readonly weight: number }[];
  readonly total: number;
}

/**
 * A failure line's terms weighed (by IDF among the owner's entries). A term no entry holds keeps its weight, the
 * highest: it cannot be matched, and it says the failure may be one memory has not met, so a lesson that holds only
 * the rest is less likely about it.
 */
export function weighFailureLine(terms: Iterable<string>, weight: (term: string) => number): WeightedLine {
  const weighed = [...terms].map((term) => ({ term, weight: weight(term) }));
  return { terms: weighed, total: weighed.reduce((sum, t) => sum + t.weight, 0) };
}

/** Share of a failure line's weight whose terms `held` says are held; 0 when fewer than `minShared` are. */
export function failureShare(line: WeightedLine, held: (term: string) => boolean, minShared: number): number {
  if (line.total === 0) return 0;
  let shared = 0;
  let count = 0;
  for (const { term, weight } of line.terms) {
    if (!held(term)) continue;
    shared += weight;
    count++;
  }
  return count < minShared ? 0 : shared / line.total;
}

/** IDF-weighted share of the question's terms the candidate holds. */
function coverage(input: CrossRunInput, queryTerms: ReadonlySet<string>, seq: number): number {
  const owner = input.catalog.ownerOf(seq);
  const held = input.termsOf(seq);
  let total = 0;
  let shared = 0;
  for (const term of queryTerms) {
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
function conditionCoverage(input: CrossRunInput, queryTerms: ReadonlySet<string>, seq: number): number {
  const conditions = input.conditionsOf(seq);
  if (conditions.length === 0) return 1;
  const owner = input.catalog.ownerOf(seq);
  const rareIdf = input.rules.distinctiveIdf * inverseDocumentFrequency(input.documentCount(owner), 1);
  let best = 0;
  for (const condition of conditions) {
    let total = 0;
    let held = 0;
    let distinctive = false;
    for (const term of condition) {
      const weight = idf(input, owner, term);
      total += weight;
      if (!queryTerms.has(term)) continue;
      held += weight;
      if (weight >= rareIdf || input.documentFrequency(owner, term) <= 2) distinctive = true;
    }
    if (total > 0 && distinctive) best = Math.max(best, held / total);
  }
  return best;
}

/** BM25's inverse document frequency of a term among the owner's entries. */
function idf(input: CrossRunInput, owner: number, term: string): number {
  return inverseDocumentFrequency(input.documentCount(owner), input.documentFrequency(owner, term));
}
