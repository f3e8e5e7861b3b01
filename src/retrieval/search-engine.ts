// Hybrid retrieval: BM25 and dense candidates from the caller's scope (filters applied before any cut),
// fused by normalised scores with pseudo-relevance feedback, importance, recency and a stale penalty, then
// overlaid with exact references and the scope's active rules and lessons.
import type { EntryRecord, EntryStore } from "../storage/entry-store.js";
import { isUnfiltered, type Catalog, type EntryFilter, type RunScope } from "./catalog.js";
import type { SparseIndex } from "./sparse-index.js";
import type { VectorIndex } from "./vector-index.js";
import { terms } from "./text.js";
import { addScores, rm3Expansion, weightedTerms } from "./feedback.js";

export type RetrievalMode = "semantic" | "exact_reference" | "checkpoint" | "rule_overlay" | "lesson_overlay" | "working_memory";
export type Budget = "low" | "mid" | "high";
export type RankBy = "relevance" | "freshness" | "balanced";

export interface SearchRequest {
  /** The reader's user id, whose global lessons may join the candidates. */
  readonly owner: number;
  /** Runs to search, with whose entries: the reader's own, other owners' it holds grants on, or all (admins). */
  readonly scopes: readonly RunScope[];
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

/** The knobs of ranking, with the values measured best on LoCoMo (see BENCHMARKS.md); benches may vary them. */
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
};

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

export class SearchEngine {
  readonly #entries: EntryStore;
  readonly #catalog: Catalog;
  readonly #sparse: SparseIndex;
  readonly #dense: VectorIndex;
  readonly #tuning: SearchTuning;

  constructor(entries: EntryStore, catalog: Catalog, sparse: SparseIndex, dense: VectorIndex, tuning: SearchTuning = DEFAULT_TUNING) {
    this.#tuning = tuning;
    this.#entries = entries;
    this.#catalog = catalog;
    this.#sparse = sparse;
    this.#dense = dense;
  }

  search(req: SearchRequest): SearchResult {
    const catalog = this.#catalog;
    const inScope = catalog.scopeMatcher(req.scopes, req.includeGlobalLessons ? req.owner : undefined);
    const passes = catalog.matcher(req.filter);
    const unfiltered = isUnfiltered(req.filter) && req.includeWorkingMemory;
    const accept = unfiltered
      ? inScope
      : (seq: number): boolean => inScope(seq) && passes(seq) && (req.includeWorkingMemory || catalog.entryType(seq) !== "working_memory");

    const tuning = this.#tuning;
    const depth = tuning.depth[req.budget];
    const authors = this.#namedAuthors(req.text);
    // A named author is matched through authorship, not as a word that most of their entries happen to contain.
    const queryTerms = weightedTerms(req.text).filter((t) => !authors.terms.has(t.term));
    const sparseArgs = [accept, depth, catalog.count, catalog.averageTermCount, (seq: number) => catalog.termCount(seq)] as const;
    let sparseHits = this.#sparse.search(queryTerms, ...sparseArgs);
    if (req.budget !== "low" && sparseHits.length > 0) {
      // Only the expansion terms are searched again; their scores add to the first pass's.
      const expansion = rm3Expansion(sparseHits.slice(0, tuning.feedbackDocs), queryTerms, {
        termsOf: (seq) => terms(this.#entries.get(seq)?.content ?? ""),
        documentFrequency: (term) => this.#sparse.documentFrequency(term),
        maxDocumentFrequency: Math.max(50, 0.1 * catalog.count),
        count: tuning.feedbackTerms,
        weight: tuning.feedbackWeight,
      });
      if (expansion.length > 0) sparseHits = addScores(sparseHits, this.#sparse.search(expansion, ...sparseArgs), depth);
    }

    const denseHits = req.queryVector === undefined ? [] : this.#dense.search(req.queryVector, this.#scopeLists(req), accept, depth);

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
    const recencyWeight = tuning.recencyWeight[req.rankBy];
    const weights = {
      lexical: tuning.lexicalWeight * (1 - recencyWeight),
      semantic: tuning.semanticWeight * (1 - recencyWeight),
      recency: recencyWeight,
    };

    const fused = new Map<number, { score: number; parts: ScoreParts }>();
    for (const seq of union) {
      const lex = maxLexical > 0 ? (lexical.get(seq) ?? 0) / maxLexical : 0;
      const sem = semanticSpan > 0 ? ((semantic.get(seq) ?? minSemantic) - minSemantic) / semanticSpan : semantic.has(seq) ? 1 : 0;
      // Recency halves for every 30 days an entry is older than the newest candidate.
      const recency = Math.pow(0.5, Math.max(0, newest - catalog.occurrence(seq)) / (30 * 86400));
      const stale = catalog.isStale(seq);
      let score = weights.lexical * lex + weights.semantic * sem + weights.recency * recency;
      if (authors.ids.has(catalog.authorOf(seq))) score += tuning.authorBonus;
      score *= tuning.importanceWeight[catalog.importanceLevel(seq)] ?? 1;
      if (stale) score *= tuning.stalePenalty;
      fused.set(seq, { score, parts: { semantic: sem, lexical: lex, recency, stalePenalty: stale, weights } });
    }
    this.#smoothNeighbours(fused, req.scopes, accept);

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
    this.#overlay(hits, taken, this.#knowledgeLists(req), accept, fused, req.limit, toHit);
    return {
      hits,
      candidatesConsidered: union.size,
      sparseCandidates: sparseHits.length,
      denseCandidates: denseHits.length,
    };
  }

  /** Authors the query names (a word or two-word name matching a known author), and their index terms. */
  #namedAuthors(text: string): { ids: Set<number>; terms: Set<string> } {
    const ids = new Set<number>();
    const nameTerms = new Set<string>();
    const tokens = text.match(/[\p{L}\p{N}'.-]+/gu) ?? [];
    for (let i = 0; i < tokens.length; i++) {
      for (const span of [1, 2]) {
        if (i + span > tokens.length) continue;
        const name = tokens.slice(i, i + span).join(" ").replace(/'s$/i, "").toLowerCase();
        const id = this.#catalog.authorId(name);
        if (id === undefined) continue;
        ids.add(id);
        for (const term of terms(name)) nameTerms.add(term);
      }
    }
    return { ids, terms: nameTerms };
  }

  /** The scope's seqs, as ascending lists (not copied): its runs' entries plus the owner's global lessons. */
  #scopeLists(req: SearchRequest): (readonly number[])[] {
    const lists = req.scopes.map((scope) => this.#catalog.runSeqs(scope.owner, scope.runId));
    if (req.includeGlobalLessons) lists.push(this.#catalog.globalLessonSeqs(req.owner));
    return lists.filter((list) => list.length > 0);
  }

  /** The scope's rules and lessons, as ascending lists: the candidates of overlays. */
  #knowledgeLists(req: SearchRequest): (readonly number[])[] {
    const lists = req.scopes.map((scope) => this.#catalog.knowledgeSeqs(scope.owner, scope.runId));
    if (req.includeGlobalLessons) lists.push(this.#catalog.globalLessonSeqs(req.owner));
    return lists.filter((list) => list.length > 0);
  }

  /**
   * Adds a share of each candidate's score to its neighbours (the previous and next entry of its run), admitting
   * them as candidates: in a run, what was said just before or after an answer often belongs to it.
   */
  #smoothNeighbours(
    fused: Map<number, { score: number; parts: ScoreParts }>,
    scopes: readonly RunScope[],
    accept: (seq: number) => boolean,
  ): void {
    const boosts = new Map<number, number>();
    for (const scope of scopes) {
      const seqs = this.#catalog.runSeqs(scope.owner, scope.runId);
      if (seqs.length < 2) continue;
      for (const [seq, { score }] of fused) {
        const at = binarySearch(seqs, seq);
        if (at < 0) continue;
        for (const neighbour of [seqs[at - 1], seqs[at + 1]]) {
          if (neighbour === undefined || !accept(neighbour)) continue;
          boosts.set(neighbour, (boosts.get(neighbour) ?? 0) + this.#tuning.neighbourShare * score);
        }
      }
    }
    const none: ScoreParts = { semantic: 0, lexical: 0, recency: 0, stalePenalty: false, weights: {} };
    for (const [seq, boost] of boosts) {
      const current = fused.get(seq) ?? { score: 0, parts: none };
      fused.set(seq, { ...current, score: current.score + boost });
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
   * Overlays the scope's standing knowledge on the answer: the run's active rules always (each missing one replaces
   * the lowest-ranked plain hit), and lessons when they bear on the query (they share a term with it or score at
   * least half the top score), up to MAX_OVERLAYS in all. Unrelated lessons never displace relevant evidence.
   */
  #overlay(
    hits: Hit[],
    taken: Set<number>,
    knowledge: readonly (readonly number[])[],
    accept: (seq: number) => boolean,
    fused: ReadonlyMap<number, { score: number; parts: ScoreParts }>,
    limit: number,
    toHit: (seq: number, score: number, parts: ScoreParts, mode?: RetrievalMode) => Hit | undefined,
  ): void {
    const budget = Math.min(MAX_OVERLAYS, Math.floor(limit / 3));
    if (budget === 0) return;
    const topScore = hits.find((h) => h.mode !== "exact_reference")?.score ?? 0;
    const overlays: { seq: number; score: number; type: "rule" | "lesson" }[] = [];
    for (const seq of knowledge.flat()) {
      if (taken.has(seq) || this.#catalog.isStale(seq) || !accept(seq)) continue;
      const type = this.#catalog.entryType(seq);
      if (type !== "rule" && type !== "lesson") continue;
      const candidate = fused.get(seq);
      const relevant = candidate !== undefined && (candidate.parts.lexical > 0 || candidate.score >= 0.5 * topScore);
      if (type === "lesson" && !relevant) continue;
      overlays.push({ seq, score: candidate?.score ?? 0, type });
    }
    // Rules first (standing instructions), then lessons; each best-scored, then newest.
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
