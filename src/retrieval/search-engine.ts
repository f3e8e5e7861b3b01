// Hybrid retrieval: BM25 and dense candidates from the caller's scope (filters applied before any cut),
// fused by normalised scores with pseudo-relevance feedback, importance, recency and a stale penalty, then
// overlaid with exact references and the scope's active rules and lessons.
import type { EntryRecord, EntryStore } from "../storage/entry-store.js";
import type { Catalog, EntryFilter } from "./catalog.js";
import type { SparseIndex, WeightedTerm } from "./sparse-index.js";
import type { VectorIndex } from "./vector-index.js";
import { terms } from "./text.js";

export type RetrievalMode = "semantic" | "exact_reference" | "checkpoint" | "rule_overlay" | "lesson_overlay" | "working_memory";
export type Budget = "low" | "mid" | "high";
export type RankBy = "relevance" | "freshness" | "balanced";

export interface SearchRequest {
  /** The reader's user id; `admin` readers see every owner's entries of the runs. */
  readonly owner: number;
  readonly admin: boolean;
  /** Runs to search: the requested run first, then linked runs. */
  readonly runIds: readonly string[];
  /** Whether the owner's global lessons from other runs join the candidates. */
  readonly includeGlobalLessons: boolean;
  readonly text: string;
  /** The query vector (the caller's, or the embedding of `text`). */
  readonly queryVector: Float32Array | undefined;
  readonly filter: EntryFilter;
  readonly includeWorkingMemory: boolean;
  readonly limit: number;
  readonly budget: Budget;
  readonly rankBy: RankBy;
}

export interface ScoreParts {
  readonly semantic: number;
  readonly lexical: number;
  readonly recency: number;
  readonly stalePenalty: boolean;
  readonly weights: Readonly<Record<string, number>>;
}

export interface Hit {
  readonly entry: EntryRecord;
  readonly score: number;
  readonly mode: RetrievalMode;
  /** Share of the query's terms the entry contains, in [0, 1]. */
  readonly overlap: number;
  readonly similarity: number;
  readonly parts: ScoreParts;
}

export interface SearchResult {
  readonly hits: Hit[];
  /** Candidates scored before the cut to `limit`. */
  readonly candidatesConsidered: number;
  readonly sparseCandidates: number;
  readonly denseCandidates: number;
}

/** Candidates each source contributes, by budget. */
const DEPTH: Readonly<Record<Budget, number>> = { low: 40, mid: 150, high: 400 };
const STALE_PENALTY = 0.5;
const IMPORTANCE_WEIGHT = [0.92, 1, 1.08, 1.15];
const RECENCY_WEIGHT: Readonly<Record<RankBy, number>> = { relevance: 0.03, freshness: 0.4, balanced: 0.2 };
/** Pseudo-relevance feedback: expansion terms from the top results, weighted down (RM3-style). */
const FEEDBACK_DOCS = 3;
const FEEDBACK_TERMS = 10;
const FEEDBACK_WEIGHT = 0.4;
/** Share of a neighbour's score (previous and next entry of the same run) added to an entry. */
const NEIGHBOUR_SHARE = 0.15;
const REFERENCE_PATTERN = /\b((?:arc|chk)_[0-9a-z]{1,12}|ent_[0-9a-z]{1,12})\b/g;
const MAX_OVERLAYS = 3;

/** How an entry of each type is presented when it is found by relevance rather than named. */
export function modeOf(entry: Pick<EntryRecord, "entryType">): RetrievalMode {
  switch (entry.entryType) {
    case "rule":
      return "rule_overlay";
    case "lesson":
      return "lesson_overlay";
    case "checkpoint":
      return "checkpoint";
    case "working_memory":
      return "working_memory";
    default:
      return "semantic";
  }
}

function weightedTerms(text: string): WeightedTerm[] {
  const counts = new Map<string, number>();
  for (const term of terms(text)) counts.set(term, (counts.get(term) ?? 0) + 1);
  return [...counts].map(([term, weight]) => ({ term, weight }));
}

export class SearchEngine {
  readonly #entries: EntryStore;
  readonly #catalog: Catalog;
  readonly #sparse: SparseIndex;
  readonly #dense: VectorIndex;

  constructor(entries: EntryStore, catalog: Catalog, sparse: SparseIndex, dense: VectorIndex) {
    this.#entries = entries;
    this.#catalog = catalog;
    this.#sparse = sparse;
    this.#dense = dense;
  }

  search(req: SearchRequest): SearchResult {
    const catalog = this.#catalog;
    const ownerScope = req.admin ? undefined : req.owner;
    const inScope = catalog.scopeMatcher(ownerScope, req.runIds, req.includeGlobalLessons ? req.owner : undefined);
    const passes = catalog.matcher(req.filter);
    const accept = (seq: number): boolean =>
      inScope(seq) && passes(seq) && (req.includeWorkingMemory || catalog.entryType(seq) !== "working_memory");

    const depth = DEPTH[req.budget];
    const queryTerms = weightedTerms(req.text);
    const sparseArgs = [accept, depth, catalog.count, catalog.averageTermCount, (seq: number) => catalog.termCount(seq)] as const;
    let sparseHits = this.#sparse.search(queryTerms, ...sparseArgs);
    if (req.budget !== "low" && sparseHits.length > 0) {
      const expansion = this.#feedbackTerms(sparseHits.slice(0, FEEDBACK_DOCS).map((h) => h.seq), queryTerms);
      if (expansion.length > 0) sparseHits = this.#sparse.search([...queryTerms, ...expansion], ...sparseArgs);
    }

    const scopeSeqs = this.#scopeSeqs(req, ownerScope);
    const denseHits = req.queryVector === undefined ? [] : this.#dense.search(req.queryVector, scopeSeqs, accept, depth);

    const lexical = new Map<number, number>(sparseHits.map((h) => [h.seq, h.score]));
    const semantic = new Map<number, number>(denseHits.map((h) => [h.seq, h.similarity]));
    const union = new Set<number>([...lexical.keys(), ...semantic.keys()]);
    if (req.queryVector !== undefined) {
      for (const seq of union) if (!semantic.has(seq)) semantic.set(seq, this.#dense.similarity(seq, req.queryVector));
    }
    const maxLexical = Math.max(0, ...lexical.values());
    const semanticValues = [...semantic.values()];
    const minSemantic = Math.min(...semanticValues, 1);
    const maxSemantic = Math.max(...semanticValues, 0);
    const semanticSpan = maxSemantic - minSemantic;
    const newest = Math.max(0, ...[...union].map((seq) => catalog.occurrence(seq)));
    const recencyWeight = RECENCY_WEIGHT[req.rankBy];
    const weights = { lexical: 0.6 * (1 - recencyWeight), semantic: 0.4 * (1 - recencyWeight), recency: recencyWeight };

    const fused = new Map<number, { score: number; parts: ScoreParts }>();
    for (const seq of union) {
      const lex = maxLexical > 0 ? (lexical.get(seq) ?? 0) / maxLexical : 0;
      const sem = semanticSpan > 0 ? ((semantic.get(seq) ?? minSemantic) - minSemantic) / semanticSpan : semantic.has(seq) ? 1 : 0;
      // Recency halves for every 30 days an entry is older than the newest candidate.
      const recency = Math.pow(0.5, Math.max(0, newest - catalog.occurrence(seq)) / (30 * 86400));
      const stale = catalog.isStale(seq);
      let score = weights.lexical * lex + weights.semantic * sem + weights.recency * recency;
      score *= IMPORTANCE_WEIGHT[catalog.importanceLevel(seq)] ?? 1;
      if (stale) score *= STALE_PENALTY;
      fused.set(seq, { score, parts: { semantic: sem, lexical: lex, recency, stalePenalty: stale, weights } });
    }
    this.#smoothNeighbours(fused, req.runIds, ownerScope);

    const ranked = [...fused].sort((a, b) => b[1].score - a[1].score || b[0] - a[0]);
    const querySet = new Set(queryTerms.map((t) => t.term));
    const toHit = (seq: number, score: number, parts: ScoreParts, mode?: RetrievalMode): Hit | undefined => {
      const entry = this.#entries.get(seq);
      if (entry === undefined) return undefined;
      const entryTerms = new Set(terms(entry.content));
      let shared = 0;
      for (const term of querySet) if (entryTerms.has(term)) shared++;
      return {
        entry,
        score,
        mode: mode ?? modeOf(entry),
        overlap: querySet.size === 0 ? 0 : shared / querySet.size,
        similarity: req.queryVector === undefined ? 0 : this.#dense.similarity(seq, req.queryVector),
        parts,
      };
    };

    const hits: Hit[] = [];
    const taken = new Set<number>();
    const topScore = ranked[0]?.[1].score ?? 0;
    for (const seq of this.#referencedSeqs(req.text)) {
      if (taken.has(seq) || !accept(seq)) continue;
      const hit = toHit(seq, topScore + 1, { semantic: 0, lexical: 0, recency: 0, stalePenalty: false, weights }, "exact_reference");
      if (hit) {
        hits.push(hit);
        taken.add(seq);
      }
    }
    for (const [seq, { score, parts }] of ranked) {
      if (hits.length >= req.limit) break;
      if (taken.has(seq)) continue;
      const hit = toHit(seq, score, parts);
      if (hit) {
        hits.push(hit);
        taken.add(seq);
      }
    }
    this.#overlay(hits, taken, scopeSeqs, accept, fused, req.limit, toHit);
    return {
      hits,
      candidatesConsidered: union.size,
      sparseCandidates: sparseHits.length,
      denseCandidates: denseHits.length,
    };
  }

  /** The scope's seqs: its runs' entries plus the owner's global lessons. */
  #scopeSeqs(req: SearchRequest, ownerScope: number | undefined): number[] {
    const seqs: number[] = [];
    for (const runId of req.runIds) seqs.push(...this.#catalog.runSeqs(ownerScope, runId));
    if (req.includeGlobalLessons) seqs.push(...this.#catalog.globalLessonSeqs(req.owner));
    return seqs;
  }

  /** Terms that best characterise the top results and are not in the query yet. */
  #feedbackTerms(seqs: readonly number[], queryTerms: readonly WeightedTerm[]): WeightedTerm[] {
    const known = new Set(queryTerms.map((t) => t.term));
    const scores = new Map<string, number>();
    for (const seq of seqs) {
      const entry = this.#entries.get(seq);
      if (entry === undefined) continue;
      const entryTerms = terms(entry.content);
      for (const term of new Set(entryTerms)) {
        if (known.has(term)) continue;
        // Rarer terms characterise the result better than common ones.
        const df = this.#sparse.documentFrequency(term);
        scores.set(term, (scores.get(term) ?? 0) + 1 / Math.log(2 + df));
      }
    }
    return [...scores]
      .sort((a, b) => b[1] - a[1])
      .slice(0, FEEDBACK_TERMS)
      .map(([term, score]) => ({ term, weight: FEEDBACK_WEIGHT * Math.min(1, score) }));
  }

  /** Adds a share of each neighbour's score: in a run, what was said just before or after often answers too. */
  #smoothNeighbours(fused: Map<number, { score: number; parts: ScoreParts }>, runIds: readonly string[], owner: number | undefined): void {
    const boosts = new Map<number, number>();
    for (const runId of runIds) {
      const seqs = this.#catalog.runSeqs(owner, runId);
      if (seqs.length < 2) continue;
      for (const [seq, { score }] of fused) {
        const at = binarySearch(seqs, seq);
        if (at < 0) continue;
        for (const neighbour of [seqs[at - 1], seqs[at + 1]]) {
          if (neighbour === undefined) continue;
          const current = fused.get(neighbour);
          if (current !== undefined) boosts.set(neighbour, (boosts.get(neighbour) ?? 0) + NEIGHBOUR_SHARE * score);
        }
      }
    }
    for (const [seq, boost] of boosts) {
      const current = fused.get(seq);
      if (current !== undefined) fused.set(seq, { ...current, score: current.score + boost });
    }
  }

  /** Entries the query names by id or reference id. */
  #referencedSeqs(text: string): number[] {
    const seqs: number[] = [];
    for (const match of text.matchAll(REFERENCE_PATTERN)) {
      const token = match[1] as string;
      const entry = token.startsWith("ent_") ? this.#entries.getById(token) : this.#entries.byReference(token);
      if (entry !== undefined) seqs.push(entry.seq);
    }
    return seqs;
  }

  /**
   * Makes sure the scope's best active rules and lessons are present: each missing one replaces the lowest-ranked
   * plain hit, up to MAX_OVERLAYS in all.
   */
  #overlay(
    hits: Hit[],
    taken: Set<number>,
    scopeSeqs: readonly number[],
    accept: (seq: number) => boolean,
    fused: ReadonlyMap<number, { score: number; parts: ScoreParts }>,
    limit: number,
    toHit: (seq: number, score: number, parts: ScoreParts, mode?: RetrievalMode) => Hit | undefined,
  ): void {
    const budget = Math.min(MAX_OVERLAYS, Math.floor(limit / 3));
    if (budget === 0) return;
    const overlays: { seq: number; score: number; type: "rule" | "lesson" }[] = [];
    for (const seq of scopeSeqs) {
      if (taken.has(seq) || this.#catalog.isStale(seq) || !accept(seq)) continue;
      const type = this.#catalog.entryType(seq);
      if (type !== "rule" && type !== "lesson") continue;
      overlays.push({ seq, score: fused.get(seq)?.score ?? 0, type });
    }
    // Rules first (they are standing instructions), then lessons; each best-scored, then newest.
    overlays.sort((a, b) => (a.type === b.type ? b.score - a.score || b.seq - a.seq : a.type === "rule" ? -1 : 1));
    let added = 0;
    for (const overlay of overlays) {
      if (added >= budget) break;
      const parts = fused.get(overlay.seq)?.parts ?? { semantic: 0, lexical: 0, recency: 0, stalePenalty: false, weights: {} };
      const hit = toHit(overlay.seq, overlay.score, parts, overlay.type === "rule" ? "rule_overlay" : "lesson_overlay");
      if (hit === undefined) continue;
      if (hits.length >= limit) {
        const replaceAt = findLastIndex(hits, (h) => h.mode === "semantic");
        if (replaceAt < 0) break;
        taken.delete((hits[replaceAt] as Hit).entry.seq);
        hits.splice(replaceAt, 1);
      }
      hits.push(hit);
      taken.add(overlay.seq);
      added++;
    }
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

function findLastIndex<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (predicate(items[i] as T)) return i;
  return -1;
}
