// Lexical candidate generation, per owner: the query as that owner's entries read it (an author they carry, named
// in the query, leaves the lexical terms), BM25 over the owner's postings with the owner's statistics, and RM3
// feedback drawn from the owner's own top results.
import type { Catalog } from "../catalog.js";
import { rm3Expansion, weightedTerms } from "../feedback.js";
import { COMMON_TERM_SHARE, type SparseHit, type SparseIndex, type WeightedTerm } from "../sparse-index.js";
import { terms } from "../text.js";
import type { SearchTuning } from "./tuning.js";

/** The query as one owner's entries read it. */
export interface QueryReading {
  /** Ids of the owner's authors the query names. */
  readonly authors: ReadonlySet<number>;
  /** The query's weighted index terms, without the named authors' names. */
  readonly terms: readonly WeightedTerm[];
  /** The same terms, as a set. */
  readonly termSet: ReadonlySet<string>;
}

export interface LexicalInput {
  readonly catalog: Catalog;
  readonly sparse: SparseIndex;
  readonly text: string;
  /** The owners whose entries are candidates, ascending. */
  readonly owners: readonly number[];
  readonly accept: (seq: number) => boolean;
  readonly depth: number;
  /** Whether RM3 feedback expands the query. */
  readonly feedback: boolean;
  readonly tuning: SearchTuning;
  /** Index terms of an entry's content, in order. */
  readonly termsOf: (seq: number) => string[];
}

export interface LexicalCandidates {
  /** The best `depth` candidates of every owner, by BM25 (first pass plus expansion). */
  readonly hits: SparseHit[];
  /** The query as an owner's entries read it. */
  readonly readingOf: (owner: number) => QueryReading;
}

/** Names the query might give an author: each word and each pair of words, lowercase, without a trailing 's. */
function candidateNames(text: string): { name: string; terms: string[] }[] {
  const tokens = text.match(/[\p{L}\p{N}'.-]+/gu) ?? [];
  const names: { name: string; terms: string[] }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    for (const span of [1, 2]) {
      if (i + span > tokens.length) continue;
      const name = tokens.slice(i, i + span).join(" ").replace(/'s$/i, "").toLowerCase();
      names.push({ name, terms: terms(name) });
    }
  }
  return names;
}

export function lexicalCandidates(input: LexicalInput): LexicalCandidates {
  const { catalog, sparse, tuning } = input;
  const queryTerms = weightedTerms(input.text);
  const names = candidateNames(input.text);
  const readings = new Map<number, QueryReading>();
  const readingOf = (owner: number): QueryReading => {
    let reading = readings.get(owner);
    if (reading === undefined) {
      const authors = new Set<number>();
      const nameTerms = new Set<string>();
      for (const { name, terms: namedTerms } of names) {
        const id = catalog.authorId(owner, name);
        if (id === undefined) continue;
        authors.add(id);
        for (const term of namedTerms) nameTerms.add(term);
      }
      // A named author is matched through authorship, not as a word that most of their entries happen to contain.
      const kept = queryTerms.filter((t) => !nameTerms.has(t.term));
      reading = { authors, terms: kept, termSet: new Set(kept.map((t) => t.term)) };
      readings.set(owner, reading);
    }
    return reading;
  };

  const hits: SparseHit[] = [];
  for (const owner of input.owners) {
    const reading = readingOf(owner);
    const documents = catalog.documentStats(owner);
    const stats = { docCount: documents.count, avgLength: documents.averageTermCount };
    let ownerHits = sparse.search(owner, reading.terms, input.accept, input.depth, stats);
    if (input.feedback && ownerHits.length > 0) {
      // Only the expansion terms are searched again; their scores add to the first pass's, and an entry the first
      // pass did not find joins only if the expansion alone could lift it into the top `depth`.
      const expansion = rm3Expansion(ownerHits.slice(0, tuning.feedbackDocs), reading.terms, {
        termsOf: input.termsOf,
        documentFrequency: (term) => sparse.documentFrequency(owner, term),
        // A term common enough to rank rather than recall in the index is not an expansion term either: walking its
        // long list to recall entries cost most of a query at 1M entries (BENCHMARKS.md). Up to 2,500 entries the
        // floor of 50 decides, as before.
        maxDocumentFrequency: Math.max(50, COMMON_TERM_SHARE * documents.count),
        count: tuning.feedbackTerms,
        weight: tuning.feedbackWeight,
      });
      if (expansion.length > 0) ownerHits = sparse.searchFrom(owner, ownerHits, expansion, input.accept, input.depth, stats);
    }
    hits.push(...ownerHits);
  }
  if (input.owners.length > 1) {
    hits.sort((a, b) => b.score - a.score || b.seq - a.seq);
    hits.length = Math.min(hits.length, input.depth);
  }
  return { hits, readingOf };
}
