// VectorIndex partitioned by owner: a search of one owner's entries gives the same hits whatever another owner holds
// (below and above the graph threshold), small partitions get no graph, removal is per partition, and the graphs
// and their marks survive a save and load.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/platform/logger.js";
import { VectorIndex, type DenseHit } from "../../src/retrieval/vector-index.js";

const DIMS = 8;
/** Above the index's exact-search limit and graph threshold, so the owner's searches go through its graph. */
const LARGE = 6500;
const A = 1;
const B = 2;

function unit(seed: number): Float32Array {
  const v = new Float32Array(DIMS);
  let x = seed * 2654435761;
  for (let i = 0; i < DIMS; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    v[i] = (x / 2147483648) * 2 - 1;
  }
  const norm = Math.hypot(...v);
  return v.map((c) => c / norm);
}

interface Built {
  readonly index: VectorIndex;
  readonly owners: Map<number, number>;
  readonly seqsOf: (owner: number) => number[];
}

/** Owner A's entries take odd seqs; B's (when present) even seqs, clustered near A's query so they would crowd it. */
async function build(dir: string, countA: number, countB: number, query: Float32Array): Promise<Built> {
  const owners = new Map<number, number>();
  const index = new VectorIndex(dir, "test", DIMS, createLogger("silent"), (seq) => owners.get(seq) ?? -1);
  for (let i = 0; i < Math.max(countA, countB); i++) {
    if (i < countA) {
      owners.set(2 * i + 1, A);
      index.add(2 * i + 1, unit(i + 1));
    }
    if (i < countB) {
      owners.set(2 * i + 2, B);
      const near = query.map((c, d) => c + 0.05 * ((unit(i + 99_999)[d] as number) - 0.5));
      const norm = Math.hypot(...near);
      index.add(2 * i + 2, near.map((c) => c / norm));
    }
  }
  await index.indexPending();
  const seqsOf = (owner: number): number[] => [...owners].filter(([, o]) => o === owner).map(([seq]) => seq).sort((a, b) => a - b);
  return { index, owners, seqsOf };
}

function searchOf(built: Built, owner: number, query: Float32Array, k: number): DenseHit[] {
  const seqs = built.seqsOf(owner);
  return built.index.search(query, [seqs], (seq) => built.owners.get(seq) === owner, k);
}

const tmp = (): string => fs.mkdtempSync(path.join(os.tmpdir(), "engram-vp-"));

describe("VectorIndex partitions", () => {
  const query = unit(424242);

  it("gives one owner the same hits with or without another owner's vectors", async () => {
    for (const countA of [50, LARGE]) {
      const solo = await build(tmp(), countA, 0, query);
      const shared = await build(tmp(), countA, LARGE, query);
      expect(searchOf(shared, A, query, 20)).toEqual(searchOf(solo, A, query, 20));
      solo.index.close();
      shared.index.close();
    }
  });

  it("builds graphs only for partitions above the threshold", async () => {
    const built = await build(tmp(), 100, LARGE, query);
    // Only B's partition has a graph; A's 100 vectors are searched exactly.
    expect(built.index.size).toBe(LARGE);
    expect(searchOf(built, A, query, 5)).toHaveLength(5);
    built.index.close();
  });

  it("removes a vector from its own partition's graph only", async () => {
    const built = await build(tmp(), LARGE, LARGE, query);
    const best = searchOf(built, A, query, 1)[0] as DenseHit;
    built.index.remove(best.seq);
    built.owners.delete(best.seq);
    expect(searchOf(built, A, query, 50).map((h) => h.seq)).not.toContain(best.seq);
    expect(built.index.size).toBe(2 * LARGE - 1);
    // An updated vector (removed, then added again) is found in the same partition.
    built.owners.set(best.seq, A);
    built.index.add(best.seq, query);
    expect(searchOf(built, A, query, 1)[0]?.seq).toBe(best.seq);
    built.index.close();
  });

  it("saves every partition's graph and loads them back with their marks", async () => {
    const dir = tmp();
    const built = await build(dir, LARGE, LARGE, query);
    const before = searchOf(built, A, query, 10);
    built.index.close();
    expect(fs.readdirSync(dir).sort()).toEqual(["test.graphs.json", "test.p1.usearch", "test.p2.usearch"]);

    const reloaded = new VectorIndex(dir, "test", DIMS, createLogger("silent"), (seq) => built.owners.get(seq) ?? -1);
    for (const [seq, owner] of built.owners) {
      const i = (seq - owner) / 2;
      if (owner === A) reloaded.add(seq, unit(i + 1));
    }
    reloaded.loadGraph();
    expect(reloaded.size).toBe(2 * LARGE);
    expect(reloaded.indexedUpTo).toBe(2 * LARGE - 1);
    expect(reloaded.search(query, [built.seqsOf(A)], (seq) => built.owners.get(seq) === A, 10)).toEqual(before);
    reloaded.close();
  });

  it("restores stored vectors at start-up: a saved graph takes the newer ones, a partition without one gets a graph", async () => {
    const dir = tmp();
    const built = await build(dir, LARGE, 0, query);
    built.index.close();
    const owners = new Map(built.owners);
    const restored = new VectorIndex(dir, "test", DIMS, createLogger("silent"), (seq) => owners.get(seq) ?? -1);
    for (const [seq] of built.owners) restored.restore(seq, unit((seq - 1) / 2 + 1));
    // Written after the graph was saved: A's newer vectors, and B's partition, large and never graphed.
    const newer = [2 * LARGE + 1, 2 * LARGE + 3];
    for (const seq of newer) {
      owners.set(seq, A);
      restored.restore(seq, query);
    }
    for (let i = 0; i < LARGE; i++) {
      owners.set(2 * i + 2, B);
      restored.restore(2 * i + 2, unit(i + 7));
    }
    restored.loadGraph();
    expect(restored.size).toBe(LARGE);
    // Before the graphs catch up the newer vectors are searched exactly; after it, through the graphs.
    const seqsOfA = [...owners].filter(([, o]) => o === A).map(([seq]) => seq).sort((a, b) => a - b);
    const ofA = (seq: number): boolean => owners.get(seq) === A;
    expect(restored.search(query, [seqsOfA], ofA, 2).map((h) => h.seq).sort()).toEqual(newer);
    await restored.indexPending();
    expect(restored.size).toBe(2 * LARGE + 2);
    expect(restored.search(query, [seqsOfA], ofA, 2).map((h) => h.seq).sort()).toEqual(newer);
    restored.close();
  });
});
