// Finding an owner's lessons and rules by a text (an error message, a situation): BM25 over the owner's own
// statistics and cosine similarity, fused, weighted by what outcomes taught. Withheld lessons never come back.
import type { MemoryIndex } from "../memory/memory-index.js";
import { weightedTerms } from "../retrieval/feedback.js";

export interface LessonMatch {
  readonly seq: number;
  readonly score: number;
  /** Normalised BM25 and cosine parts, each in [0, 1]. */
  readonly lexical: number;
  readonly semantic: number;
}

const LEXICAL_WEIGHT = 0.6;
const SEMANTIC_WEIGHT = 0.4;

/**
 * The best `k` of the owner's lessons and rules that `accept` admits, for `text`. `accept` narrows the scope (a run's
 * lessons plus the owner's global ones, or all of them); withheld lessons are left out here whatever it says.
 */
export async function searchLessons(index: MemoryIndex, owner: number, text: string, accept: (seq: number) => boolean, k: number): Promise<LessonMatch[]> {
  const catalog = index.catalog;
  const lessons = catalog.lessonSeqs(owner);
  if (lessons.length === 0 || text.trim() === "") return [];
  const admit = (seq: number): boolean => catalog.has(seq) && !catalog.isWithheld(seq) && catalog.ownerOf(seq) === owner && accept(seq);
  const documents = catalog.documentStats(owner);
  const stats = { docCount: documents.count, avgLength: documents.averageTermCount };
  const depth = Math.max(k * 4, 40);
  const lexical = index.sparse.search(owner, weightedTerms(text), admit, depth, stats);
  const [vector] = await index.embedder.embed([text]);
  const semantic = vector === undefined ? [] : index.dense.search(vector, [lessons], admit, depth);
  const maxLexical = Math.max(0, ...lexical.map((h) => h.score));
  const parts = new Map<number, { lexical: number; semantic: number }>();
  for (const hit of lexical) parts.set(hit.seq, { lexical: maxLexical > 0 ? hit.score / maxLexical : 0, semantic: 0 });
  for (const hit of semantic) {
    const existing = parts.get(hit.seq);
    parts.set(hit.seq, { lexical: existing?.lexical ?? 0, semantic: Math.max(0, hit.similarity) });
  }
  return [...parts]
    .map(([seq, p]) => ({ seq, ...p, score: (LEXICAL_WEIGHT * p.lexical + SEMANTIC_WEIGHT * p.semantic) * catalog.learnedWeight(seq) * (catalog.isStale(seq) ? 0.5 : 1) }))
    .filter((m) => m.lexical > 0 || m.semantic >= 0.5)
    .sort((a, b) => b.score - a.score || b.seq - a.seq)
    .slice(0, k);
}
