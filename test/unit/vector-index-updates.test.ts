// VectorIndex with vectors that change in place (node updates and deletes) and seqs that arrive out of order
// (node ids taken when a write is staged, applied at commit): the graph path stays exact about what it returns,
// and a graph saved at another generation is rebuilt rather than loaded.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/platform/logger.js";
import { VectorIndex } from "../../src/retrieval/vector-index.js";

const DIMS = 8;
/** Above the index's exact-search limit, so searches go through the graph. */
const COUNT = 7000;

function unit(seed: number): Float32Array {
  // Deterministic pseudo-random unit vectors.
  const v = new Float32Array(DIMS);
  let x = seed * 2654435761;
  for (let i = 0; i < DIMS; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    v[i] = (x / 2147483648) * 2 - 1;
  }
  const norm = Math.hypot(...v);
  return v.map((c) => c / norm);
}

function axis(i: number): Float32Array {
  const v = new Float32Array(DIMS);
  v[i] = 1;
  return v;
}

async function built(dir: string): Promise<{ index: VectorIndex; seqs: number[] }> {
  const index = new VectorIndex(dir, "test", DIMS, createLogger("silent"));
  const seqs: number[] = [];
  // Leave 3 out: it arrives later, below the indexed mark.
  for (let seq = 1; seq <= COUNT; seq++) {
    if (seq === 3) continue;
    index.add(seq, unit(seq));
    seqs.push(seq);
  }
  await index.indexPending();
  return { index, seqs };
}

describe("VectorIndex with in-place changes", () => {
  it("serves updated vectors, forgets removed ones and indexes late seqs through the graph", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-vi-"));
    const { index, seqs } = await built(dir);
    expect(index.indexedUpTo).toBe(COUNT);
    const all = (): number[] => [...seqs];
    const accept = (seq: number): boolean => seqs.includes(seq);

    index.add(5, axis(0));
    const updated = index.search(axis(0), [all()], accept, 1);
    expect(updated[0]?.seq).toBe(5);
    expect(updated[0]?.similarity).toBeCloseTo(1, 2);

    index.remove(5);
    seqs.splice(seqs.indexOf(5), 1);
    expect(index.search(axis(0), [all()], () => true, 50).map((h) => h.seq)).not.toContain(5);

    index.add(3, axis(1));
    seqs.splice(1, 0, 3);
    expect(index.search(axis(1), [all()], accept, 1)[0]?.seq).toBe(3);
    index.close();
  });

  it("loads a saved graph only at the generation it was saved with", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-vi-"));
    const { index } = await built(dir);
    index.generation = 41;
    index.save();
    index.close();

    const stale = new VectorIndex(dir, "test", DIMS, createLogger("silent"));
    stale.generation = 42;
    stale.loadGraph();
    expect(stale.size).toBe(0);

    const current = new VectorIndex(dir, "test", DIMS, createLogger("silent"));
    current.generation = 41;
    current.loadGraph();
    expect(current.size).toBe(COUNT - 1);
  });
});
