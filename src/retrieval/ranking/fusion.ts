// First-phase scores: normalised BM25 and cosine fused with recency, then author, importance and staleness
// adjustments; and neighbour smoothing, which lends each candidate's score to the entries next to it in its run.
import type { Catalog } from "../catalog.js";
import { NO_PARTS, type Scored } from "./hit.js";
import type { RankBy, SearchTuning } from "./tuning.js";

export interface FusionInput {
  readonly catalog: Catalog;
  readonly tuning: SearchTuning;
  readonly rankBy: RankBy;
  /** BM25 score by seq. */
  readonly lexical: ReadonlyMap<number, number>;
  /** Cosine similarity by seq (every candidate's, when there is a query vector). */
  readonly semantic: ReadonlyMap<number, number>;
  readonly candidates: ReadonlySet<number>;
  /** Whether the query names the author of an entry (as the entry's owner knows its authors). */
  readonly namesAuthorOf: (seq: number) => boolean;
}

export interface Fusion {
  readonly scores: Map<number, Scored>;
  readonly weights: Readonly<Record<string, number>>;
}

export function fuse(input: FusionInput): Fusion {
  const { catalog, tuning, lexical, semantic } = input;
  const maxLexical = Math.max(0, ...lexical.values());
  const semanticValues = [...semantic.values()];
  const minSemantic = Math.min(...semanticValues, 1);
  const maxSemantic = Math.max(...semanticValues, 0);
  const semanticSpan = maxSemantic - minSemantic;
  const newest = Math.max(0, ...[...input.candidates].map((seq) => catalog.occurrence(seq)));
  const recencyWeight = tuning.recencyWeight[input.rankBy];
  const weights = {
    lexical: tuning.lexicalWeight * (1 - recencyWeight),
    semantic: tuning.semanticWeight * (1 - recencyWeight),
    recency: recencyWeight,
  };
  const scores = new Map<number, Scored>();
  for (const seq of input.candidates) {
    const lex = maxLexical > 0 ? (lexical.get(seq) ?? 0) / maxLexical : 0;
    const sem = semanticSpan > 0 ? ((semantic.get(seq) ?? minSemantic) - minSemantic) / semanticSpan : semantic.has(seq) ? 1 : 0;
    // Recency halves for every 30 days an entry is older than the newest candidate.
    const recency = Math.pow(0.5, Math.max(0, newest - catalog.occurrence(seq)) / (30 * 86400));
    const stale = catalog.isStale(seq);
    let score = weights.lexical * lex + weights.semantic * sem + weights.recency * recency;
    if (input.namesAuthorOf(seq)) score += tuning.authorBonus;
    score *= tuning.importanceWeight[catalog.importanceLevel(seq)] ?? 1;
    score *= catalog.learnedWeight(seq);
    if (stale) score *= tuning.stalePenalty;
    scores.set(seq, { score, parts: { semantic: sem, lexical: lex, recency, stalePenalty: stale, weights } });
  }
  return { scores, weights };
}

/**
 * Adds a share of each candidate's score to its neighbours (the previous and next entry of its run), admitting
 * them as candidates: in a run, what was said just before or after an answer often belongs to it. `runs` are the
 * scope's runs, one owner's entries each, ascending.
 */
export function smoothNeighbours(
  scores: Map<number, Scored>,
  runs: readonly (readonly number[])[],
  accept: (seq: number) => boolean,
  share: number,
): void {
  const boosts = new Map<number, number>();
  for (const seqs of runs) {
    if (seqs.length < 2) continue;
    for (const [seq, { score }] of scores) {
      const at = binarySearch(seqs, seq);
      if (at < 0) continue;
      for (const neighbour of [seqs[at - 1], seqs[at + 1]]) {
        if (neighbour === undefined || !accept(neighbour)) continue;
        boosts.set(neighbour, (boosts.get(neighbour) ?? 0) + share * score);
      }
    }
  }
  for (const [seq, boost] of boosts) {
    const current = scores.get(seq) ?? { score: 0, parts: NO_PARTS };
    scores.set(seq, { ...current, score: current.score + boost });
  }
}

function binarySearch(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const at = sorted[mid] as number;
    if (at === value) return mid;
    if (at < value) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
