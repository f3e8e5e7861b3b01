// The sparse index per owner and under removal: one owner's postings never change another's statistics or scores,
// removal takes postings (and document frequencies) away exactly, and re-adding an older entry (an update) or
// meeting a posting twice (a write racing the start-up prewarm) keeps every list ascending and counted once.
import { describe, expect, it } from "vitest";
import { SparseIndex, type DocumentStatistics, type SparseHit } from "../../src/retrieval/sparse-index.js";

const A = 1;
const B = 2;

type Doc = { seq: number; owner: number; text: string };

function freqs(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const word of text.split(" ")) counts.set(word, (counts.get(word) ?? 0) + 1);
  return counts;
}

function indexOf(docs: readonly Doc[]): SparseIndex {
  const owners = new Map(docs.map((d) => [d.seq, d.owner]));
  const index = new SparseIndex((seq) => owners.get(seq));
  for (const doc of docs) index.add(doc.seq, freqs(doc.text));
  return index;
}

function statsOf(docs: readonly Doc[], owner: number): DocumentStatistics {
  const own = docs.filter((d) => d.owner === owner);
  const lengths = new Map(own.map((d) => [d.seq, d.text.split(" ").length]));
  const total = [...lengths.values()].reduce((a, b) => a + b, 0);
  return { docCount: own.length, avgLength: own.length === 0 ? 0 : total / own.length };
}

function query(index: SparseIndex, docs: readonly Doc[], owner: number, text: string, k = 10): SparseHit[] {
  const terms = [...freqs(text)].map(([term, weight]) => ({ term, weight }));
  return index.search(owner, terms, () => true, k, statsOf(docs, owner));
}

const docsOfA: Doc[] = [
  { seq: 1, owner: A, text: "payments deploy friday" },
  { seq: 3, owner: A, text: "deploy the api gateway" },
  { seq: 5, owner: A, text: "friday standup notes" },
  { seq: 7, owner: A, text: "payments ledger reconciles nightly" },
];

/** Many documents of B sharing A's words: enough to make "deploy" a common term (see COMMON_TERM_MIN). */
function docsOfB(count: number): Doc[] {
  return Array.from({ length: count }, (_, i) => ({ seq: 8 + i * 2, owner: B, text: i % 3 === 0 ? "deploy payments friday" : "deploy anything else" }));
}

describe("SparseIndex per owner", () => {
  it("scores one owner's entries the same whatever another owner holds", () => {
    const solo = indexOf(docsOfA);
    const shared = [...docsOfA, ...docsOfB(2500), { seq: 2, owner: B, text: "payments" }];
    const both = indexOf(shared);
    for (const text of ["payments friday", "deploy", "deploy gateway friday", "ledger", "anything"]) {
      expect(query(both, shared, A, text)).toEqual(query(solo, docsOfA, A, text));
    }
    expect(both.documentFrequency(A, "deploy")).toBe(2);
    expect(both.documentFrequency(B, "deploy")).toBe(2500);
    expect(query(both, shared, A, "anything")).toEqual([]);
  });

  it("never returns another owner's entries", () => {
    const shared = [...docsOfA, ...docsOfB(20)];
    const index = indexOf(shared);
    expect(query(index, shared, A, "deploy payments friday", 100).every((h) => h.seq % 2 === 1)).toBe(true);
    expect(query(index, shared, 99, "deploy")).toEqual([]);
  });
});

describe("SparseIndex.remove", () => {
  it("takes an entry's postings and document frequencies away", () => {
    const index = indexOf(docsOfA);
    const before = index.postingCount;
    index.remove(1, freqs("payments deploy friday"));
    expect(index.postingCount).toBe(before - 3);
    expect(index.documentFrequency(A, "payments")).toBe(1);
    expect(index.documentFrequency(A, "deploy")).toBe(1);
    const remaining = docsOfA.filter((d) => d.seq !== 1);
    expect(query(index, remaining, A, "payments deploy friday")).toEqual(query(indexOf(remaining), remaining, A, "payments deploy friday"));
  });

  it("ignores entries it never indexed and repeated removals", () => {
    const index = indexOf(docsOfA);
    const before = index.postingCount;
    index.remove(999, freqs("payments"));
    index.remove(3, freqs("deploy the api gateway"));
    index.remove(3, freqs("deploy the api gateway"));
    expect(index.postingCount).toBe(before - 4);
  });

  it("removes from the owner the entry was filed under, whatever the lookup says later", () => {
    const owners = new Map([[1, A]]);
    const index = new SparseIndex((seq) => owners.get(seq));
    index.add(1, freqs("payments deploy"));
    owners.delete(1);
    index.remove(1, freqs("payments deploy"));
    expect(index.documentFrequency(A, "payments")).toBe(0);
    expect(index.postingCount).toBe(0);
  });

  it("re-adds an older entry (an update) in order, so common-term lookups still find it", () => {
    const shared = [...docsOfA, ...docsOfB(2500)];
    const index = indexOf(shared);
    // Entry 8 of B (an old one) changes content: remove, then add with the new terms.
    index.remove(8, freqs("deploy payments friday"));
    index.add(8, freqs("deploy rare zebra"));
    const changed = shared.map((d) => (d.seq === 8 ? { ...d, text: "deploy rare zebra" } : d));
    // "zebra" finds entry 8 first; "deploy" (common for B) is then looked up by binary search in its list.
    expect(query(index, changed, B, "zebra deploy")).toEqual(query(indexOf(changed), changed, B, "zebra deploy"));
    expect(query(index, changed, B, "zebra deploy")[0]?.seq).toBe(8);
  });
});
