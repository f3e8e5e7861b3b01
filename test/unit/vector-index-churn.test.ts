// VectorIndex under steady writes and deletes at a size that no longer grows (write runs deleted after a while, as in
// the soak): every removal leaves the graph, the server's thread never spins in USearch, and search through the graph
// still finds what is there.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/platform/logger.js";
import { VectorIndex } from "../../src/retrieval/vector-index.js";
import { seededUnitVector } from "./seeded-vectors.js";

const DIMS = 8;
/** Above the index's exact-search limit, so that the partition has a graph and searches go through it. */
const LIVE = 7000;
const BATCH = 500;
/**
 * Churn well past the point where USearch 2.25's key lookup runs out of empty slots for a graph of this size (about
 * 9,400 insertions after its last growth): there, before the fix, `remove` first failed silently and then never returned.
 */
const CHURN = 15_000;

const unit = (seed: number): Float32Array => seededUnitVector(seed, DIMS);

describe("VectorIndex under write and delete churn", () => {
  it("removes every deleted vector from the graph and keeps finding live ones", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-vi-churn-"));
    const index = new VectorIndex(dir, "test", DIMS, createLogger("silent"));
    const live: number[] = [];
    let next = 1;
    for (; next <= LIVE; next++) {
      index.add(next, unit(next));
      live.push(next);
    }
    await index.indexPending();
    expect(index.size).toBe(LIVE);

    // Deterministic removal order: a mix of old and recent vectors, like runs deleted at different ages.
    let x = 12345;
    const pick = (): number => {
      x = (x * 1103515245 + 12345) % 2147483648;
      return Math.floor((x / 2147483648) * live.length);
    };
    for (let churned = 0; churned < CHURN; churned += BATCH) {
      for (let i = 0; i < BATCH; i++, next++) {
        index.add(next, unit(next));
        live.push(next);
      }
      await index.indexPending();
      for (let i = 0; i < BATCH; i++) {
        const j = pick();
        index.remove(live[j] as number);
        live[j] = live[live.length - 1] as number;
        live.pop();
      }
      await index.indexPending();
      // The graphs hold exactly the live vectors: none of the removed ones stays behind.
      expect(index.size).toBe(live.length);
    }

    const sorted = [...live].sort((a, b) => a - b);
    const alive = new Set(live);
    let found = 0;
    for (let i = 0; i < 100; i++) {
      const seq = sorted[(i * 67) % sorted.length] as number;
      const hits = index.search(unit(seq), [sorted], (s) => alive.has(s), 10);
      if (hits.some((h) => h.seq === seq)) found++;
    }
    expect(found).toBeGreaterThanOrEqual(95);
    index.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }, 120_000);
});
