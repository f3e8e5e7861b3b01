// VectorIndex while a graph is rebuilt after many removals: the graph it replaces keeps answering until the new one
// has caught up, so searches stay correct (removed vectors never found, changed vectors found by their new value,
// live ones found) without falling back to comparing the query with every vector of the partition.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/platform/logger.js";
import { VectorIndex } from "../../src/retrieval/vector-index.js";
import { seededUnitVector } from "./seeded-vectors.js";

const DIMS = 16;
/** Above the index's exact-search limit, so the partition has a graph and searches go through it. */
const LIVE = 9000;
/** More than a quarter of the graph: the removals that trigger a rebuild. */
const REMOVED = 3000;

const unit = (seed: number): Float32Array => seededUnitVector(seed, DIMS);

describe("VectorIndex during a graph rebuild", () => {
  it("answers from the retiring graph: live found, removed never, changed by their new vector", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-vi-rebuild-"));
    const index = new VectorIndex(dir, "test", DIMS, createLogger("silent"));
    try {
      for (let seq = 1; seq <= LIVE; seq++) index.add(seq, unit(seq));
      await index.indexPending();

      for (let seq = 1; seq <= REMOVED; seq++) index.remove(seq);
      // The rebuild started and has not caught up: nothing awaited the indexing.
      const changed = REMOVED + 10;
      index.add(changed, unit(1_000_000));
      const fresh = LIVE + 1;
      index.add(fresh, unit(2_000_000));

      const all = Array.from({ length: LIVE + 1 }, (_, i) => i + 1);
      const search = (seed: number, k = 5): number[] => index.search(unit(seed), [all], () => true, k).map((hit) => hit.seq);
      for (const seq of [REMOVED + 1, 5000, LIVE]) expect(search(seq)[0]).toBe(seq);
      for (const seq of [1, 1500, REMOVED]) expect(search(seq, 20)).not.toContain(seq);
      expect(search(1_000_000)[0]).toBe(changed);
      expect(search(2_000_000)[0]).toBe(fresh);
      expect(index.search(unit(changed), [all], () => true, 1)[0]?.similarity ?? 1).toBeLessThan(0.99);

      // Once the new graph has caught up it alone answers, with the same results.
      await index.indexPending();
      for (const seq of [REMOVED + 1, 5000, LIVE]) expect(search(seq)[0]).toBe(seq);
      for (const seq of [1, 1500, REMOVED]) expect(search(seq, 20)).not.toContain(seq);
      expect(search(1_000_000)[0]).toBe(changed);
      expect(search(2_000_000)[0]).toBe(fresh);
    } finally {
      index.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
