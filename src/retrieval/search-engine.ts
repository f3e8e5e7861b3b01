// Hybrid retrieval over the caller's scope, in stages (see ranking/): candidates from BM25 and dense search (filters
// applied before any cut), each owner's entries read with that owner's statistics (ranking/owner-scope.ts); a fused
// first-phase score with neighbour smoothing; then exact references and the scope's rules and lessons placed.
import type { EntryRecord, EntryStore } from "../storage/entry-store.js";
import { isUnfiltered, type Catalog, type EntryFilter, type RunScope } from "./catalog.js";
import { postingListHolds, type SparseIndex } from "./sparse-index.js";
import type { DenseSource, VectorIndex } from "./vector-index.js";
import { terms } from "./text.js";
import { modeOf, type Hit, type Scored, type ScoreParts, type ToHit } from "./ranking/hit.js";
import { candidateLists, ownerScopes, type OwnerScope } from "./ranking/owner-scope.js";
import { lexicalCandidates } from "./ranking/lexical-stage.js";
import { fuse, smoothNeighbours } from "./ranking/fusion.js";
import { overlayKnowledge, placeReferences, referencedSeqs } from "./ranking/overlays.js";
import { admitCrossRunKnowledge } from "./ranking/cross-run.js";
import { DEFAULT_TUNING, type Budget, type RankBy, type SearchTuning } from "./ranking/tuning.js";
import { SituationVectors } from "./ranking/situation-match.js";
import { rewardPhrases } from "./ranking/phrase-match.js";
import { rewardTimes } from "./ranking/time-match.js";
import type { LessonSituationIndex } from "./lesson-situation-index.js";
import { hasHardError } from "./error-words.js";
import { failureTerms } from "./situations.js";

export { modeOf, type Hit, type RetrievalMode, type ScoreParts } from "./ranking/hit.js";
export { DEFAULT_TUNING, type Budget, type RankBy, type SearchTuning } from "./ranking/tuning.js";

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
  /**
   * Where `queryVector` is compared: a caller vector space (memory/vector-spaces.ts); undefined for the server
   * embedder's vectors. Only the similarities' source changes, the fusion does not.
   */
  readonly dense?: DenseSource | undefined;
  readonly filter: EntryFilter;
  readonly includeWorkingMemory: boolean;
  readonly limit: number;
  readonly budget: Budget;
  readonly rankBy: RankBy;
}

export interface SearchResult {
  readonly hits: Hit[];
  /** Candidates scored before the cut to `limit`. */
  readonly candidatesConsidered: number;
  readonly sparseCandidates: number;
  readonly denseCandidates: number;
}

/** Lessons and rules of a scope compared by meaning at most (see knowledgeByMeaning). */
const MAX_KNOWLEDGE_BY_MEANING = 500;

export class SearchEngine {
  readonly #entries: EntryStore;
  readonly #catalog: Catalog;
  readonly #sparse: SparseIndex;
  readonly #dense: VectorIndex;
  readonly #tuning: SearchTuning;
  readonly #situations: SituationVectors;
  readonly #lessonSituations: LessonSituationIndex;

  constructor(
    entries: EntryStore,
    catalog: Catalog,
    sparse: SparseIndex,
    dense: VectorIndex,
    situations: SituationVectors,
    lessonSituations: LessonSituationIndex,
    tuning: SearchTuning = DEFAULT_TUNING,
  ) {
    this.#tuning = tuning;
    this.#situations = situations;
    this.#lessonSituations = lessonSituations;
    this.#entries = entries;
    this.#catalog = catalog;
    this.#sparse = sparse;
    this.#dense = dense;
  }

  search(req: SearchRequest): SearchResult {
    const catalog = this.#catalog;
    const tuning = this.#tuning;
    const globalLessonOwner = req.includeGlobalLessons ? req.owner : undefined;
    const accept = this.#acceptor(req, globalLessonOwner);
    const scopes = ownerScopes(catalog, req.scopes, globalLessonOwner);
    const depth = tuning.depth[req.budget];
    const dense = req.dense ?? this.#dense;

    // Candidates: lexical per owner, dense per owner's partition, both limited to the scope before any cut.
    const lexicalStage = lexicalCandidates({
      catalog,
      sparse: this.#sparse,
      text: req.text,
      owners: scopes.map((scope) => scope.owner),
      accept,
      depth,
      feedback: req.budget !== "low",
      tuning,
      termsOf: (seq) => terms(this.#entries.get(seq)?.content ?? ""),
    });
    const sparseHits = lexicalStage.hits;
    const denseHits = req.queryVector === undefined ? [] : dense.search(req.queryVector, candidateLists(scopes), accept, depth);

    // First phase: fused scores, then neighbour smoothing within each run.
    const lexical = new Map<number, number>(sparseHits.map((h) => [h.seq, h.score]));
    const semantic = new Map<number, number>(denseHits.map((h) => [h.seq, h.similarity]));
    const candidates = new Set<number>([...lexical.keys(), ...semantic.keys()]);
    if (req.queryVector !== undefined) {
      for (const seq of candidates) if (!semantic.has(seq)) semantic.set(seq, dense.similarity(seq, req.queryVector));
    }
    const { scores, weights } = fuse({
      catalog,
      tuning,
      rankBy: req.rankBy,
      lexical,
      semantic,
      candidates,
      namesAuthorOf: (seq) => lexicalStage.readingOf(catalog.ownerOf(seq)).authors.has(catalog.authorOf(seq)),
    });
    smoothNeighbours(scores, scopes.flatMap((scope) => scope.runs), accept, tuning.neighbourShare);
    const scopedRuns = new Set(req.scopes.map((scope) => scope.runId));
    penaliseAuditions(catalog, scores, scopedRuns, tuning.auditionPenalty);
    rewardPhrases(scores, req.text, (seq) => this.#entries.get(seq)?.content, tuning.phrase);
    rewardTimes(scores, req.text, (seq) => catalog.occurrence(seq), tuning.time);
    const questionParts = this.#situations.questionParts(req.text);
    const lines = SituationVectors.partsOf(req.text);
    admitCrossRunKnowledge({
      catalog,
      scores,
      isCrossRun: (seq) => catalog.isGlobalLesson(seq) && !scopedRuns.has(catalog.runOf(seq)),
      questionTerms: lines.map((part) => new Set(terms(part))),
      failureTerms: failureTermsOf(lines, tuning.crossRun.minSharedFailureTerms),
      termsOf: (seq) => new Set(this.#entries.termsOf(seq)?.keys() ?? []),
      conditionsOf: (seq) => this.#lessonSituations.of(seq).conditions.map((c) => new Set(terms(c))),
      documentFrequency: (owner, term) => this.#sparse.documentFrequency(owner, term),
      documentCount: (owner) => catalog.documentStats(owner).count,
      knowledge: knowledgeByMeaning(catalog, scopes, accept),
      holds: termHolder(this.#sparse, catalog),
      notForTermsOf: (seq) => this.#lessonSituations.notForTermsOf(seq),
      situationFit: (seq) => this.#situations.fit(questionParts, this.#lessonSituations.of(seq)),
      rules: tuning.crossRun,
    });

    // Second phase: named references first, the ranked hits, then rules and lessons overlaid.
    const ranked = [...scores].sort((a, b) => b[1].score - a[1].score || b[0] - a[0]);
    const toHit: ToHit = (seq, score, parts, mode) => {
      const entry = this.#entries.get(seq);
      if (entry === undefined) return undefined;
      return {
        entry,
        score,
        mode: mode ?? modeOf(entry),
        overlap: overlap(entry, lexicalStage.readingOf(entry.owner).termSet),
        similarity: req.queryVector === undefined ? 0 : dense.similarity(seq, req.queryVector),
        parts,
      };
    };
    const hits: Hit[] = [];
    const taken = new Set<number>();
    const referenceParts: ScoreParts = { semantic: 0, lexical: 0, recency: 0, stalePenalty: false, weights };
    placeReferences(hits, taken, referencedSeqs(this.#entries, req.text, accept), ranked[0]?.[1].score ?? 0, referenceParts, toHit);
    for (const [seq, { score, parts }] of ranked) {
      if (hits.length >= req.limit) break;
      if (taken.has(seq)) continue;
      const hit = toHit(seq, score, parts);
      if (hit) {
        hits.push(hit);
        taken.add(seq);
      }
    }
    overlayKnowledge(catalog, hits, taken, scopes.flatMap((scope) => scope.knowledge), accept, scores, req.limit, toHit, (seq) => scopedRuns.has(catalog.runOf(seq)));
    return {
      hits,
      candidatesConsidered: candidates.size,
      sparseCandidates: sparseHits.length,
      denseCandidates: denseHits.length,
    };
  }

  /**
   * Embeds, with a remote embedder, the situations a search of `req` will compare by meaning: the question's parts
   * and the situations of the scope's knowledge (ranking is synchronous; see SituationVectors).
   */
  async prepareSituations(req: SearchRequest): Promise<void> {
    if (this.#situations.inProcess) return;
    const globalLessonOwner = req.includeGlobalLessons ? req.owner : undefined;
    const scopes = ownerScopes(this.#catalog, req.scopes, globalLessonOwner);
    const knowledge = knowledgeByMeaning(this.#catalog, scopes, this.#acceptor(req, globalLessonOwner));
    const texts = SituationVectors.partsOf(req.text);
    for (const seq of knowledge) texts.push(...SituationVectors.textsOf(this.#lessonSituations.of(seq)));
    await this.#situations.prepare(texts);
  }

  /** Whether an entry may be a candidate: in the reader's scope and passing the filters. */
  #acceptor(req: SearchRequest, globalLessonOwner: number | undefined): (seq: number) => boolean {
    const catalog = this.#catalog;
    const inScope = catalog.scopeMatcher(req.scopes, globalLessonOwner);
    if (isUnfiltered(req.filter) && req.includeWorkingMemory) return inScope;
    const passes = catalog.matcher(req.filter);
    return (seq) => inScope(seq) && passes(seq) && (req.includeWorkingMemory || catalog.entryType(seq) !== "working_memory");
  }
}

/** A lesson auditioning for a wider scope counts for less outside the run it was learned in. */
function penaliseAuditions(catalog: Catalog, scores: Map<number, Scored>, scopedRuns: ReadonlySet<string>, penalty: number): void {
  for (const [seq, scored] of scores) {
    if (catalog.isAuditioning(seq) && !scopedRuns.has(catalog.runOf(seq))) scores.set(seq, { ...scored, score: scored.score * penalty });
  }
}

/**
 * The scope's knowledge compared by meaning whether or not the first phase found it: the newest MAX_KNOWLEDGE_BY_MEANING
 * that may be guidance, so that a query stays bounded however much an owner has learned.
 */
function knowledgeByMeaning(catalog: Catalog, scopes: readonly OwnerScope[], accept: (seq: number) => boolean): number[] {
  const newestFirst = [...new Set(scopes.flatMap((scope) => scope.knowledge.flat()))].sort((a, b) => b - a);
  const out: number[] = [];
  for (const seq of newestFirst) {
    if (out.length >= MAX_KNOWLEDGE_BY_MEANING) break;
    if (!catalog.isWithheld(seq) && !catalog.isStale(seq) && accept(seq)) out.push(seq);
  }
  return out;
}

/**
 * Whether an entry's index terms hold a term, read from its owner's posting list (binary search), each list looked up
 * once per query.
 */
function termHolder(sparse: SparseIndex, catalog: Catalog): (seq: number, term: string) => boolean {
  const lists = new Map<string, Int32Array | undefined>();
  return (seq, term) => {
    const owner = catalog.ownerOf(seq);
    const key = `${owner}\u0000${term}`;
    let list = lists.get(key);
    if (list === undefined && !lists.has(key)) lists.set(key, (list = sparse.list(owner, term)));
    return list !== undefined && postingListHolds(list, seq);
  };
}

/**
 * The index terms of the failure signatures of a question's parts that report an error; a signature of fewer than
 * `minTerms` terms says too little to tell one failure from another.
 */
function failureTermsOf(parts: readonly string[], minTerms: number): ReadonlySet<string>[] {
  return parts.filter(hasHardError).flatMap((part) => {
    const signature = failureTerms(part);
    return signature.size >= minTerms ? [signature] : [];
  });
}

/** Share of the query's terms the entry contains. */
function overlap(entry: EntryRecord, queryTerms: ReadonlySet<string>): number {
  if (queryTerms.size === 0) return 0;
  const entryTerms = new Set(terms(entry.content));
  let shared = 0;
  for (const term of queryTerms) if (entryTerms.has(term)) shared++;
  return shared / queryTerms.size;
}
