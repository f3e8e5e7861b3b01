// The near-duplicate candidates (src/memory/near-duplicate-candidates.ts) walk posting lists side by side for speed:
// they must be exactly the entries, in the same order, that the plain definition gives (each rare list sorted, each
// window read newest first, each candidate searched in every rare list). Checked on seeded corpora with a small
// vocabulary, so that lists overlap a lot, over several owners and runs, with stale entries, other entry types and
// texts long enough to lack more than one rare term.
import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/retrieval/catalog.js";
import { SparseIndex, postingListHolds, postingListLength, postingSeqAt } from "../../src/retrieval/sparse-index.js";
import { termFrequencies } from "../../src/retrieval/text.js";
import type { EntryRecord, EntryType } from "../../src/storage/entry-record.js";
import { CANDIDATE_WINDOW, NearDuplicateCandidates, RARE_TERMS } from "../../src/memory/near-duplicate-candidates.js";
import { entryRecord } from "./entry-records.js";

/** The definition the module implements, written the plain way. */
function reference(catalog: Catalog, sparse: SparseIndex, fact: EntryRecord, termFreqs: ReadonlyMap<string, number>): number[] {
  const lists: Int32Array[] = [];
  for (const term of termFreqs.keys()) {
    const list = sparse.list(fact.owner, term);
    if (list !== undefined) lists.push(list);
  }
  lists.sort((a, b) => postingListLength(a) - postingListLength(b));
  const rare = lists.slice(0, RARE_TERMS);
  const mayLack = Math.min(rare.length - 1, Math.max(1, Math.floor(0.081 * termFreqs.size)));
  const found: number[] = [];
  for (const list of rare.slice(0, mayLack + 1)) {
    const length = postingListLength(list);
    for (let i = length - 1; i >= 0 && i >= length - CANDIDATE_WINDOW; i--) {
      const seq = postingSeqAt(list, i);
      if (seq === fact.seq || found.includes(seq) || !catalog.has(seq) || catalog.entryType(seq) !== "fact" || catalog.isStale(seq)) continue;
      const terms = catalog.termCount(seq);
      if (terms < fact.termCount * 0.6 || terms > fact.termCount / 0.6 || catalog.runOf(seq) !== fact.runId) continue;
      if (rare.filter((other) => !postingListHolds(other, seq)).length > mayLack) continue;
      found.push(seq);
    }
  }
  return found;
}

function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("near-duplicate candidates", () => {
  for (const seed of [1, 2, 3]) {
    it(`match the plain definition on every write of a seeded corpus (seed ${seed})`, () => {
      const next = random(seed);
      const vocabulary = Array.from({ length: 60 + 40 * seed }, (_, i) => `word${i.toString(36)}x`);
      const catalog = new Catalog();
      const sparse = new SparseIndex((seq) => catalog.presentOwnerOf(seq));
      const candidates = new NearDuplicateCandidates(catalog, sparse);
      const written: EntryRecord[] = [];
      let compared = 0;
      for (let seq = 1; seq <= 4000; seq++) {
        // Mostly fresh texts; some repeat an earlier one with a word or two changed; a few are long.
        const earlier = written.length > 0 && next() < 0.2 ? written[Math.floor(next() * written.length)] : undefined;
        let words: string[];
        if (earlier !== undefined) {
          words = earlier.content.split(" ");
          if (next() < 0.7) words[Math.floor(next() * words.length)] = vocabulary[Math.floor(next() * vocabulary.length)] as string;
        } else {
          const length = next() < 0.1 ? 30 + Math.floor(next() * 40) : 1 + Math.floor(next() * 20);
          // Skewed: low ranks are common, high ranks rare.
          words = Array.from({ length }, () => vocabulary[Math.floor(vocabulary.length * next() ** 2)] as string);
        }
        const owner = next() < 0.8 ? 1 : 2;
        const runId = next() < 0.7 ? "a" : "b";
        const entryType: EntryType = next() < 0.9 ? "fact" : "trace";
        const termFreqs = termFrequencies(words.join(" "));
        const termCount = [...termFreqs.values()].reduce((a, b) => a + b, 0);
        const fact = entryRecord(seq, { owner, runId, entryType, content: words.join(" "), termCount });
        catalog.add(fact);
        sparse.add(seq, termFreqs);
        written.push(fact);
        if (next() < 0.05) catalog.markStale(Math.max(1, seq - Math.floor(next() * 50)));
        // Entries written after the one checked are candidates too (a batch is checked once it is all indexed).
        const checked = written[Math.max(0, written.length - 1 - Math.floor(next() * 3))] as EntryRecord;
        const checkedTerms = termFrequencies(checked.content);
        const expected = reference(catalog, sparse, checked, checkedTerms);
        expect(candidates.of(checked, checkedTerms)).toEqual(expected);
        compared += expected.length;
      }
      // The corpus did produce candidates to compare.
      expect(compared).toBeGreaterThan(500);
    });
  }
});
