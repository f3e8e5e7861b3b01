// Per-entry columns in pages released with their last entry: under write-and-delete churn (runs written, then
// deleted), the catalog and the lexical index hold memory for the entries alive, not for every seq ever written, and
// still answer exactly what they held before paging.
import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/retrieval/catalog.js";
import { SeqPages } from "../../src/retrieval/seq-pages.js";
import { SparseIndex } from "../../src/retrieval/sparse-index.js";
import type { EntryRecord } from "../../src/storage/entry-store.js";
import { entryRecord } from "./entry-records.js";

/** A fact whose creation time follows its seq. */
const record = (seq: number, owner: number, runId: string, content: string): EntryRecord => entryRecord(seq, { owner, runId, content, createdAt: 1_700_000_000_000 + seq });

const freqs = (text: string): Map<string, number> => new Map(text.split(" ").map((word) => [word, 1]));

describe("SeqPages", () => {
  it("allocates a page with its first row and releases it with its last", () => {
    const pages = new SeqPages(() => ({ live: 0, value: new Int32Array(1024) }));
    expect(pages.page(5)).toBeUndefined();
    const page = pages.pageFor(5);
    page.live += 2;
    expect(pages.pageFor(1000)).toBe(page);
    expect(pages.allocated).toBe(1);
    pages.emptied(5);
    expect(pages.page(1000)).toBe(page);
    pages.emptied(1000);
    expect(pages.page(1000)).toBeUndefined();
    expect(pages.allocated).toBe(0);
  });
});

describe("catalog and lexical index under churn", () => {
  it("hold memory for the entries alive, not for every seq ever written", () => {
    const owners = new Map<number, number>();
    const catalog = new Catalog();
    const sparse = new SparseIndex((seq) => catalog.presentOwnerOf(seq));
    const kept = Array.from({ length: 500 }, (_, i) => record(i + 1, 1, "kept", `kept entry ${i} about deploys`));
    for (const r of kept) {
      catalog.add(r);
      sparse.add(r.seq, freqs(r.content));
    }
    const afterKept = catalog.memoryBytes + sparse.memoryBytes;
    // 200 runs of 1,000 entries each, every run deleted once the next one is written: 200k seqs, 2k alive at most.
    let seq = 10_000;
    let previous: EntryRecord[] = [];
    for (let run = 0; run < 200; run++) {
      const written = Array.from({ length: 1000 }, () => {
        const r = record(++seq, 1 + (seq % 2), `run-${run}`, `churn entry ${seq} rollback queue`);
        owners.set(r.seq, r.owner);
        catalog.add(r);
        sparse.add(r.seq, freqs(r.content));
        return r;
      });
      catalog.removeAll(previous.map((r) => r.seq));
      for (const r of previous) sparse.remove(r.seq, freqs(r.content));
      previous = written;
    }
    // The columns of 2k entries, not 210k: within a few pages of where the kept entries left them.
    const perEntryBytes = (catalog.memoryBytes + sparse.memoryBytes - afterKept) / seq;
    expect(perEntryBytes).toBeLessThan(2);
    expect(catalog.count).toBe(1500);
    // What is alive still answers: the kept run, the last run, and BM25 over both.
    expect(catalog.runSeqs(1, "kept")).toHaveLength(500);
    expect(catalog.runOf(previous[0]!.seq)).toBe("run-199");
    expect(catalog.createdAt(kept[7]!.seq)).toBe(kept[7]!.createdAt);
    expect(catalog.has(10_001)).toBe(false);
    expect(catalog.ownerOf(10_001)).toBe(0);
    const stats = { docCount: 500, avgLength: 5 };
    const hits = sparse.search(1, [{ term: "deploys", weight: 1 }], (s) => catalog.has(s), 600, stats);
    expect(hits.map((h) => h.seq).sort((a, b) => a - b)).toEqual(kept.map((r) => r.seq));
    const churned = sparse.search(1, [{ term: "rollback", weight: 1 }], (s) => catalog.has(s), 2000, stats);
    expect(churned.map((h) => h.seq).sort((a, b) => a - b)).toEqual(previous.filter((r) => r.owner === 1).map((r) => r.seq));
    // A second query finds the scratch zeroed again: the same scores.
    expect(sparse.search(1, [{ term: "deploys", weight: 1 }], (s) => catalog.has(s), 600, stats)).toEqual(hits);
  });
});
