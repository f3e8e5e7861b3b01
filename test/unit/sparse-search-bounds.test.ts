// The search bounds (MaxScore) skip work, never results: `search` and `searchFrom` return exactly what scoring every
// posting of every list would, on seeded random corpora below the common-term cut-off (where the index approximates
// nothing), with refused entries and with a first pass's hits carried into an expansion.
import { describe, expect, it } from "vitest";
import { BM25_B, BM25_K1, SparseIndex, type SparseHit, type WeightedTerm } from "../../src/retrieval/sparse-index.js";
import { Rng } from "../fuzz/prng.js";

/** Draws from the fuzzer's seeded generator, so a failure names the seed that reproduces it. */
function rng(seed: number): () => number {
  const generator = new Rng(seed);
  return () => generator.next();
}

const VOCABULARY = Array.from({ length: 80 }, (_, i) => `w${i}`);

/** Word i drawn with weight 1/(i+1): a few very common words and a long tail, as in text. */
function zipf(random: () => number): string {
  const total = VOCABULARY.reduce((sum, _, i) => sum + 1 / (i + 1), 0);
  let x = random() * total;
  for (let i = 0; i < VOCABULARY.length; i++) {
    x -= 1 / (i + 1);
    if (x <= 0) return VOCABULARY[i] as string;
  }
  return VOCABULARY[VOCABULARY.length - 1] as string;
}

interface Corpus {
  readonly index: SparseIndex;
  readonly docs: Map<number, Map<string, number>>;
  readonly stats: { docCount: number; avgLength: number };
}

function corpus(seed: number, size: number): Corpus {
  const random = rng(seed);
  const index = new SparseIndex();
  const docs = new Map<number, Map<string, number>>();
  let terms = 0;
  for (let seq = 1; seq <= size; seq++) {
    const freqs = new Map<string, number>();
    const length = 3 + Math.floor(random() * 10);
    for (let i = 0; i < length; i++) {
      const word = zipf(random);
      freqs.set(word, (freqs.get(word) ?? 0) + 1);
    }
    index.add(seq, freqs);
    docs.set(seq, freqs);
    terms += length;
  }
  return { index, docs, stats: { docCount: size, avgLength: terms / size } };
}

/** Every posting of every list scored, in the index's order of lists (rarest first), `prior` carried in. */
function scoreEverything(c: Corpus, terms: readonly WeightedTerm[], accept: (seq: number) => boolean, k: number, prior: readonly SparseHit[] = []): SparseHit[] {
  const df = (term: string): number => [...c.docs.values()].filter((d) => d.has(term)).length;
  const lists = terms.filter((t) => df(t.term) > 0).sort((a, b) => df(a.term) - df(b.term));
  const scores = new Map(prior.map((h) => [h.seq, h.score]));
  for (const { term, weight } of lists) {
    const n = df(term);
    const idf = Math.log(1 + (c.stats.docCount - n + 0.5) / (n + 0.5));
    for (const [seq, freqs] of c.docs) {
      const tf = freqs.get(term);
      if (tf === undefined || !accept(seq)) continue;
      const length = [...freqs.values()].reduce((a, b) => a + b, 0);
      const part = (tf * (BM25_K1 + 1)) / (tf + BM25_K1 * (1 - BM25_B + (BM25_B * length) / c.stats.avgLength));
      scores.set(seq, (scores.get(seq) ?? 0) + weight * idf * part);
    }
  }
  return [...scores]
    .map(([seq, score]) => ({ seq, score }))
    .sort((a, b) => b.score - a.score || b.seq - a.seq)
    .slice(0, k);
}

function randomTerms(random: () => number, count: number, weight: () => number): WeightedTerm[] {
  const chosen = new Set<string>();
  while (chosen.size < count) chosen.add(random() < 0.5 ? zipf(random) : (VOCABULARY[Math.floor(random() * VOCABULARY.length)] as string));
  return [...chosen].map((term) => ({ term, weight: weight() }));
}

const bySeqs = (hits: readonly SparseHit[]): number[] => hits.map((h) => h.seq);

describe("search bounds", () => {
  const c = corpus(7, 1500);

  it("a first pass returns the top k of scoring every posting, with refused entries left out", () => {
    const random = rng(11);
    for (let q = 0; q < 200; q++) {
      const terms = randomTerms(random, 1 + Math.floor(random() * 6), () => 1 + Math.floor(random() * 2));
      const refused = 2 + Math.floor(random() * 5);
      const accept = (seq: number): boolean => seq % refused !== 0;
      const k = [1, 5, 10, 40][q % 4] as number;
      const hits = c.index.search(0, terms, accept, k, c.stats);
      const expected = scoreEverything(c, terms, accept, k);
      expect(bySeqs(hits), `query ${q}`).toEqual(bySeqs(expected));
      hits.forEach((h, i) => expect(h.score).toBeCloseTo((expected[i] as SparseHit).score, 9));
    }
  });

  it("an expansion adds to the first pass's hits and admits only entries that reach the top k", () => {
    const random = rng(13);
    for (let q = 0; q < 200; q++) {
      const accept = (seq: number): boolean => seq % 5 !== 0;
      const k = [5, 10, 40][q % 3] as number;
      const prior = c.index.search(0, randomTerms(random, 1 + Math.floor(random() * 3), () => 1), accept, k, c.stats);
      const expansion = randomTerms(random, 2 + Math.floor(random() * 8), () => 0.05 + random() * 0.5);
      const hits = c.index.searchFrom(0, prior, expansion, accept, k, c.stats);
      const expected = scoreEverything(c, expansion, accept, k, prior);
      expect(bySeqs(hits), `query ${q}`).toEqual(bySeqs(expected));
      hits.forEach((h, i) => expect(h.score).toBeCloseTo((expected[i] as SparseHit).score, 9));
    }
  });

  it("leaves no score behind: the same query twice answers the same", () => {
    const terms = [{ term: "w3", weight: 1 }, { term: "w40", weight: 1 }];
    const first = c.index.search(0, terms, () => true, 10, c.stats);
    c.index.searchFrom(0, first, [{ term: "w1", weight: 0.3 }, { term: "w70", weight: 0.3 }], () => true, 10, c.stats);
    expect(c.index.search(0, terms, () => true, 10, c.stats)).toEqual(first);
  });
});
