import type { CrossRunRules } from "./cross-run.js";
import type { PhraseStage } from "./phrase-match.js";
import type { TimeStage } from "./time-match.js";

// The knobs of ranking, with the values measured best on LoCoMo (see BENCHMARKS.md); benches may vary them.

export type Budget = "low" | "mid" | "high";
export type RankBy = "relevance" | "freshness" | "balanced";

export interface SearchTuning {
  /** Candidates each source contributes, by budget. */
  readonly depth: Readonly<Record<Budget, number>>;
  /** Weights of normalised BM25 and cosine in the fused score (before recency). */
  readonly lexicalWeight: number;
  readonly semanticWeight: number;
  /** Score multiplier of superseded entries. */
  readonly stalePenalty: number;
  /** Score multipliers of importance low, medium, high, critical. */
  readonly importanceWeight: readonly number[];
  readonly recencyWeight: Readonly<Record<RankBy, number>>;
  /** Pseudo-relevance feedback (RM3-style): top results whose terms expand the query, how many terms, their weight. */
  readonly feedbackDocs: number;
  readonly feedbackTerms: number;
  readonly feedbackWeight: number;
  /** Share of a neighbour's score (previous and next entry of the same run) added to an entry. */
  readonly neighbourShare: number;
  /** Added to entries whose author (speaker label or agent) the query names; the name leaves the lexical match. */
  readonly authorBonus: number;
  /** Score multiplier of a lesson auditioning for a wider scope, outside the run it was learned in. */
  readonly auditionPenalty: number;
  /** Which lessons and rules of the owner's other runs may join an answer (see ranking/cross-run.ts). */
  readonly crossRun: CrossRunRules;
  /** The bonus of candidates holding the query's words in its order (see ranking/phrase-match.ts). */
  readonly phrase: PhraseStage;
  /** The bonus of candidates that occurred in a period the query names (see ranking/time-match.ts). */
  readonly time: TimeStage;
}

export const DEFAULT_TUNING: SearchTuning = {
  depth: { low: 40, mid: 150, high: 400 },
  lexicalWeight: 0.6,
  semanticWeight: 0.4,
  stalePenalty: 0.5,
  importanceWeight: [0.92, 1, 1.08, 1.15],
  recencyWeight: { relevance: 0.03, freshness: 0.4, balanced: 0.2 },
  feedbackDocs: 3,
  feedbackTerms: 10,
  feedbackWeight: 0.4,
  neighbourShare: 0.15,
  authorBonus: 0.2,
  auditionPenalty: 0.5,
  // Measured with `make bench-learning` (BENCHMARKS.md): stricter conditions mislead less and miss more.
  crossRun: {
    minCoverage: 0.3,
    sufficientCoverage: 0.6,
    minConditionCoverage: 0.5,
    distinctiveIdf: 0.55,
    relativeFloor: 0.6,
    maximum: 3,
    minSituationFit: 0.8,
    minFailureCoverage: 0.35,
    minSharedFailureTerms: 3,
  },
  phrase: { depth: 100, weight: 1, floor: 0.25 },
  time: { weight: 0.2, lagDays: 14 },
};
