// Ranked search over the caller's scope: filters first, then cosine + term overlap, importance and staleness.
import type { EntryRecord, EntryStore, EntryType, Visibility } from "../storage/entry-store.js";
import { cosine, type Embedder } from "./embedder.js";
import { terms } from "./text.js";

export type RetrievalMode = "semantic" | "lesson_overlay";

export interface SearchQuery {
  readonly visibility: Visibility;
  /** Auth user id whose global lessons join the candidates. */
  readonly owner: number;
  readonly sessionId: string;
  /** Logical user filter; undefined for none. */
  readonly userId: string | undefined;
  readonly text: string;
  readonly entryTypes: ReadonlySet<EntryType> | undefined;
  readonly laneFilter: string;
  readonly minTimestamp: number | undefined;
  readonly maxTimestamp: number | undefined;
  readonly limit: number;
}

export interface Hit {
  readonly entry: EntryRecord;
  readonly score: number;
  readonly mode: RetrievalMode;
  /** Share of the query's terms that the entry contains, in [0, 1]. */
  readonly overlap: number;
  readonly similarity: number;
}

const IMPORTANCE_WEIGHT: Readonly<Record<string, number>> = { low: 0.9, medium: 1, high: 1.1, critical: 1.2 };
const STALE_PENALTY = 0.5;

function passesFilters(entry: EntryRecord, q: SearchQuery): boolean {
  if (q.entryTypes !== undefined && !q.entryTypes.has(entry.entryType)) return false;
  if (q.userId !== undefined && entry.userId !== "" && entry.userId !== q.userId) return false;
  if (entry.lane !== "" && q.laneFilter !== "" && entry.lane !== q.laneFilter) return false;
  const when = entry.occurrenceTime || Math.floor(entry.createdAt / 1000);
  if (q.minTimestamp !== undefined && when < q.minTimestamp) return false;
  if (q.maxTimestamp !== undefined && when > q.maxTimestamp) return false;
  return true;
}

export class RecallSearch {
  readonly #entries: EntryStore;
  readonly #embedder: Embedder;

  constructor(entries: EntryStore, embedder: Embedder) {
    this.#entries = entries;
    this.#embedder = embedder;
  }

  async search(q: SearchQuery): Promise<Hit[]> {
    const [queryVector] = await this.#embedder.embed([q.text]);
    const queryTerms = new Set(terms(q.text));
    const candidates = new Map<number, RetrievalMode>();
    for (const seq of this.#entries.sessionSeqs(q.visibility, q.sessionId)) candidates.set(seq, "semantic");
    for (const seq of this.#entries.globalLessonSeqs(q.owner, q.userId)) {
      if (!candidates.has(seq)) candidates.set(seq, "lesson_overlay");
    }
    const hits: Hit[] = [];
    for (const [seq, mode] of candidates) {
      const entry = this.#entries.get(seq);
      if (entry === undefined || !passesFilters(entry, q)) continue;
      const vector = this.#entries.vector(seq);
      const similarity = vector && queryVector ? Math.max(0, cosine(queryVector, vector)) : 0;
      const entryTerms = new Set(terms(entry.content));
      let shared = 0;
      for (const term of queryTerms) if (entryTerms.has(term)) shared++;
      const overlap = queryTerms.size === 0 ? 0 : shared / queryTerms.size;
      let score = (0.6 * similarity + 0.4 * overlap) * (IMPORTANCE_WEIGHT[entry.importance] ?? 1);
      if (entry.supersededBy !== "") score *= STALE_PENALTY;
      hits.push({ entry, score, mode, overlap, similarity });
    }
    hits.sort((a, b) => b.score - a.score || b.entry.seq - a.entry.seq);
    return hits.slice(0, q.limit);
  }
}
