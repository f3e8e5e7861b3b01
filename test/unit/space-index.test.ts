// SpaceIndex, a caller vector space in memory: entries far apart in seq (a store-wide counter) cost rows in proportion
// to the vectors held, not to their seqs; searches give entry seqs back, through the graph of a large space and
// exactly for a small one, admitting only what `accept` admits; removals free rows, which a rebuild reclaims.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/platform/logger.js";
import { SpaceIndex } from "../../src/retrieval/space-index.js";

const DIMS = 32;
/** Above the vector index's graph threshold (6,000), so the space gets a graph. */
const LARGE = 6500;
const BASE_SEQ = 5_000_000;

function unit(seed: number): Float32Array {
  const v = Float32Array.from({ length: DIMS }, (_, i) => Math.sin((i + 1) * 12.9898 + seed * 78.233));
  const norm = Math.hypot(...v);
  return v.map((c) => c / norm);
}

const seqAt = (i: number): number => BASE_SEQ + 7 * i;

describe("SpaceIndex", () => {
  it("holds wide-apart seqs in compact rows and finds each vector's own entry, exactly and through the graph", async () => {
    const space = new SpaceIndex(DIMS, createLogger("silent"));
    try {
      space.add(seqAt(0), unit(0));
      space.add(seqAt(1), unit(1));
      expect(space.search(unit(1), [[seqAt(0), seqAt(1)]], () => true, 1)).toEqual([{ seq: seqAt(1), similarity: expect.closeTo(1, 5) }]);
      // A seq-sized matrix would take BASE_SEQ × DIMS × 4 bytes (640 MB); rows keep it to the vectors held.
      expect(space.memoryBytes).toBeLessThan(64 * 1024);
      for (let i = 2; i < LARGE; i++) space.add(seqAt(i), unit(i));
      await space.indexPending();
      expect(space.memoryBytes).toBeLessThan(LARGE * DIMS * 4 * 4);
      const all = Array.from({ length: LARGE }, (_, i) => seqAt(i));
      for (const i of [3, 1234, 6400]) {
        expect(space.search(unit(i), [all], () => true, 5)[0]?.seq).toBe(seqAt(i));
        expect(space.similarity(seqAt(i), unit(i))).toBeCloseTo(1, 5);
      }
      // `accept` filters: the best admissible entry, never a refused one.
      const odd = space.search(unit(10), [all], (seq) => (seq - BASE_SEQ) % 2 === 1, 5);
      expect(odd.length).toBe(5);
      expect(odd.every((hit) => (hit.seq - BASE_SEQ) % 2 === 1)).toBe(true);
      // Seqs without a vector in the space are no candidates, and have no similarity.
      expect(space.search(unit(1), [[seqAt(1) + 1]], () => true, 5)).toEqual([]);
      expect(space.similarity(seqAt(1) + 1, unit(1))).toBe(0);
    } finally {
      space.close();
    }
  });

  it("forgets removed entries and reclaims their rows", async () => {
    const space = new SpaceIndex(DIMS, createLogger("silent"));
    try {
      for (let i = 0; i < LARGE; i++) space.add(seqAt(i), unit(i));
      await space.indexPending();
      const before = space.memoryBytes;
      for (let i = 0; i < LARGE - 500; i++) space.remove(seqAt(i));
      expect(space.size).toBe(500);
      expect(space.memoryBytes).toBeLessThan(before / 2);
      const all = Array.from({ length: LARGE }, (_, i) => seqAt(i));
      const hits = space.search(unit(LARGE - 1), [all], () => true, 10);
      expect(hits[0]?.seq).toBe(seqAt(LARGE - 1));
      expect(hits.every((hit) => hit.seq >= seqAt(LARGE - 500))).toBe(true);
      expect(space.similarity(seqAt(0), unit(0))).toBe(0);
      // A removed entry added again is found again.
      space.add(seqAt(0), unit(0));
      expect(space.search(unit(0), [all], () => true, 1)[0]?.seq).toBe(seqAt(0));
    } finally {
      space.close();
    }
  });
});
