// PagedVectors: vectors by seq in pages that are released when their last vector leaves, so memory follows the
// vectors alive, not the highest seq ever written.
import { describe, expect, it } from "vitest";
import { PagedVectors } from "../../src/retrieval/paged-vectors.js";

const DIMS = 100;
const unitAxis = (axis: number): Float32Array => Float32Array.from({ length: DIMS }, (_, i) => (i === axis % DIMS ? 1 : 0));

describe("PagedVectors", () => {
  it("stores, replaces, compares and forgets vectors by seq", () => {
    const vectors = new PagedVectors(DIMS);
    expect(vectors.set(5, unitAxis(1), 7)).toBe(false);
    expect(vectors.set(5, unitAxis(2), 7)).toBe(true);
    expect(vectors.has(5)).toBe(true);
    expect(vectors.has(6)).toBe(false);
    expect(vectors.partitionOf(5)).toBe(7);
    expect(vectors.dot(5, unitAxis(2))).toBe(1);
    expect(vectors.dot(5, unitAxis(1))).toBe(0);
    expect(vectors.dot(1_000_000, unitAxis(2))).toBe(0);
    expect(vectors.delete(5)).toBe(7);
    expect(vectors.delete(5)).toBeUndefined();
    expect(vectors.has(5)).toBe(false);
  });

  it("visits present seqs in ascending order", () => {
    const vectors = new PagedVectors(DIMS);
    for (const seq of [900, 3, 70_000, 64, 65]) vectors.set(seq, unitAxis(seq), seq % 3);
    const seen: [number, number][] = [];
    vectors.forEach((seq, partition) => seen.push([seq, partition]));
    expect(seen).toEqual([3, 64, 65, 900, 70_000].map((seq) => [seq, seq % 3]));
  });

  it("holds memory for the vectors alive, not for every seq ever written", () => {
    const vectors = new PagedVectors(DIMS);
    const live = 2_000;
    // Churn: write runs of seqs and delete each one once newer ones exist, as deleted runs do.
    for (let seq = 1; seq <= 200_000; seq++) {
      vectors.set(seq, unitAxis(seq), 0);
      if (seq > live) vectors.delete(seq - live);
    }
    const perVector = DIMS * 4;
    // A seq-indexed matrix would hold 200,000 × 400 bytes (80 MB); the pages hold about the live 2,000.
    expect(vectors.byteLength).toBeLessThan(3 * live * perVector);
    expect(vectors.byteLength).toBeGreaterThan(live * perVector);
    for (let seq = 200_000 - live + 1; seq <= 200_000; seq++) expect(vectors.has(seq)).toBe(true);
  });
});
