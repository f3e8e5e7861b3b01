// Query terms and pseudo-relevance feedback (RM3): the expansion drawn from the top lexical results.
import type { SparseHit, WeightedTerm } from "./sparse-index.js";
import { terms } from "./text.js";

/** A query's index terms, each weighted by how often it occurs. */
export function weightedTerms(text: string): WeightedTerm[] {
  const counts = new Map<string, number>();
  for (const term of terms(text)) counts.set(term, (counts.get(term) ?? 0) + 1);
  return [...counts].map(([term, weight]) => ({ term, weight }));
}

export interface FeedbackSource {
  /** Index terms of an entry, in order. */
  readonly termsOf: (seq: number) => string[];
  readonly documentFrequency: (term: string) => number;
  /** Terms in more entries than this say little about the question and are not added. */
  readonly maxDocumentFrequency: number;
  /** How many expansion terms to add. */
  readonly count: number;
  /** Share of the whole query's weight the expansion carries, in [0, 1). */
  readonly weight: number;
}

/**
 * RM3 expansion: terms weighted by their share of each top result, weighted by the result's score; the expansion
 * carries `weight` of the query's total weight and the original terms the rest.
 */
export function rm3Expansion(top: readonly SparseHit[], queryTerms: readonly WeightedTerm[], source: FeedbackSource): WeightedTerm[] {
  const known = new Set(queryTerms.map((t) => t.term));
  const total = top.reduce((sum, h) => sum + h.score, 0) || 1;
  const model = new Map<string, number>();
  for (const { seq, score } of top) {
    const entryTerms = source.termsOf(seq);
    for (const term of entryTerms) {
      if (known.has(term) || source.documentFrequency(term) > source.maxDocumentFrequency) continue;
      model.set(term, (model.get(term) ?? 0) + score / total / entryTerms.length);
    }
  }
  const chosen = [...model].sort((a, b) => b[1] - a[1]).slice(0, source.count);
  const mass = chosen.reduce((sum, [, w]) => sum + w, 0) || 1;
  const queryMass = queryTerms.reduce((sum, t) => sum + t.weight, 0) || 1;
  // Scaled so the original terms keep their weights and the expansion is `weight` of the whole.
  const scale = (queryMass * source.weight) / (1 - source.weight) / mass;
  return chosen.map(([term, w]) => ({ term, weight: w * scale }));
}
