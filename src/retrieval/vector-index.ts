// Dense retrieval: exact vectors in memory (for filtered and not-yet-indexed candidates) plus a USearch HNSW graph
// (f16, cosine) for wide scopes. The graph is derived data: saved beside LMDB, repaired from LMDB at start-up.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import type * as Usearch from "usearch";
import type { Logger } from "../platform/logger.js";

export interface DenseHit {
  readonly seq: number;
  readonly similarity: number;
}

// usearch's ES module cannot locate its prebuilt binary (it looks for __dirname); its CommonJS entry can.
const usearch = createRequire(import.meta.url)("usearch") as typeof Usearch;

/** Below this many admissible candidates, exact search over them is cheaper and exact. */
const EXACT_SEARCH_LIMIT = 6000;
/**
 * The graph is saved at most this often while writes arrive, and on close. Saving blocks the event loop (tens of
 * milliseconds at 100k vectors), so it is rare; after a crash the unsaved tail is re-added from LMDB in the
 * background while exact search covers it.
 */
const SAVE_INTERVAL_MS = 5 * 60_000;
/** Graph additions are made in slices so that queries are never blocked for long. */
const INDEX_SLICE = 64;

interface Sidecar {
  readonly embedderId: string;
  readonly dimensions: number;
  readonly indexedUpTo: number;
  /** The owner's `generation` when the graph was saved; absent for owners that do not track one. */
  readonly generation?: number;
}

function dot(a: Float32Array, aOffset: number, b: Float32Array, dims: number): number {
  let sum = 0;
  for (let i = 0; i < dims; i++) sum += (a[aOffset + i] as number) * (b[i] as number);
  return sum;
}

export class VectorIndex {
  readonly dimensions: number;
  readonly embedderId: string;
  readonly #dir: string;
  readonly #logger: Logger;
  #matrix: Float32Array;
  #present: Uint8Array;
  readonly #graph: Usearch.Index;
  /** Every seq at or below this is in the graph; the rest are searched exactly. */
  #indexedUpTo = 0;
  #maxSeq = 0;
  #pending: number[] = [];
  /** Set when a seq is queued below the last queued one, so the queue is sorted before the next slice. */
  #pendingUnsorted = false;
  #indexing = false;
  #dirty = false;
  #closed = false;
  #saveTimer: NodeJS.Timeout | undefined;
  /**
   * Set by owners whose vectors change in place (updates, deletes) or arrive out of seq order: a count of the
   * writes the vectors reflect. A saved graph with another generation is stale and is rebuilt instead of loaded.
   */
  generation: number | undefined;

  constructor(dir: string, embedderId: string, dimensions: number, logger: Logger) {
    this.dimensions = dimensions;
    this.embedderId = embedderId;
    this.#dir = dir;
    this.#logger = logger;
    this.#matrix = new Float32Array(1024 * dimensions);
    this.#present = new Uint8Array(1024);
    this.#graph = new usearch.Index({
      dimensions,
      metric: usearch.MetricKind.Cos,
      quantization: usearch.ScalarKind.F16,
      connectivity: 16,
      expansion_add: 64,
      expansion_search: 256,
      multi: false,
    });
  }

  get #graphFile(): string {
    return path.join(this.#dir, `${this.embedderId.replace(/[^A-Za-z0-9._-]/g, "_")}.usearch`);
  }

  get #sidecarFile(): string {
    return `${this.#graphFile}.json`;
  }

  get size(): number {
    return this.#graph.size();
  }

  /**
   * Approximate bytes held in memory: the exact vectors, plus the graph's f16 vectors and its base-layer links
   * (USearch does not report its own footprint). Storage statistics.
   */
  get memoryBytes(): number {
    const graph = this.#graph.size() * (this.dimensions * 2 + this.#graph.connectivity() * 2 * 4);
    return this.#matrix.byteLength + this.#present.byteLength + graph;
  }

  get indexedUpTo(): number {
    return this.#indexedUpTo;
  }

  /**
   * Keeps a vector for exact search and queues it for the graph. Replacing the vector of a seq already in the graph,
   * or adding one at or below the indexed mark (seqs assigned out of order), updates the graph at once.
   */
  add(seq: number, vector: Float32Array): void {
    this.#ensureCapacity(seq + 1);
    const wasPresent = this.#present[seq] === 1;
    this.#matrix.set(vector.subarray(0, this.dimensions), seq * this.dimensions);
    this.#present[seq] = 1;
    this.#maxSeq = Math.max(this.#maxSeq, seq);
    const key = BigInt(seq);
    if (seq <= this.#indexedUpTo || this.#graph.contains(key)) {
      if (this.#graph.contains(key)) this.#graph.remove(key);
      this.#graph.add(key, this.#row(seq));
      this.#dirty = true;
    } else if (!wasPresent) {
      const last = this.#pending[this.#pending.length - 1];
      if (last !== undefined && last > seq) this.#pendingUnsorted = true;
      this.#pending.push(seq);
    }
  }

  /** Forgets a vector: it is no longer searched, and leaves the graph. */
  remove(seq: number): void {
    if (seq >= this.#present.length || this.#present[seq] !== 1) return;
    this.#present[seq] = 0;
    const key = BigInt(seq);
    if (this.#graph.contains(key)) {
      this.#graph.remove(key);
      this.#dirty = true;
    }
  }

  #ensureCapacity(size: number): void {
    if (size <= this.#present.length) return;
    const capacity = Math.max(size, this.#present.length * 2);
    const matrix = new Float32Array(capacity * this.dimensions);
    matrix.set(this.#matrix);
    this.#matrix = matrix;
    const present = new Uint8Array(capacity);
    present.set(this.#present);
    this.#present = present;
  }

  /** Loads the saved graph when it matches this embedder; vectors newer than it are queued for indexing. */
  loadGraph(): void {
    fs.mkdirSync(this.#dir, { recursive: true });
    try {
      const sidecar = JSON.parse(fs.readFileSync(this.#sidecarFile, "utf8")) as Sidecar;
      if (sidecar.embedderId !== this.embedderId || sidecar.dimensions !== this.dimensions) return;
      if (sidecar.generation !== this.generation) return;
      this.#graph.load(this.#graphFile);
      this.#indexedUpTo = sidecar.indexedUpTo;
      this.#pending = this.#pending.filter((seq) => seq > this.#indexedUpTo);
    } catch {
      // Missing or unreadable: the graph is rebuilt from the vectors.
      this.#indexedUpTo = 0;
    }
  }

  /** Adds queued vectors to the graph in slices, yielding between them; resolves when the queue is empty. */
  async indexPending(): Promise<void> {
    if (this.#indexing) return;
    this.#indexing = true;
    try {
      while (this.#pending.length > 0 && !this.#closed) {
        if (this.#pendingUnsorted) {
          this.#pending.sort((a, b) => a - b);
          this.#pendingUnsorted = false;
        }
        // Seqs removed while queued are skipped; one removed and re-added may be queued twice, and is added once.
        const slice = [...new Set(this.#pending.splice(0, INDEX_SLICE))]
          .filter((seq) => this.#present[seq] === 1 && !this.#graph.contains(BigInt(seq)))
          .sort((a, b) => a - b);
        if (slice.length === 0) continue;
        const keys = new BigUint64Array(slice.map((seq) => BigInt(seq)));
        const vectors = new Float32Array(slice.length * this.dimensions);
        slice.forEach((seq, i) => vectors.set(this.#row(seq), i * this.dimensions));
        this.#graph.add(keys, vectors);
        // Pending seqs are ascending across slices except for writes racing the loop; only a contiguous
        // prefix may advance the mark, so exact search keeps covering anything not yet in the graph.
        if (this.#pending.length === 0 || (this.#pending[0] as number) > (slice[slice.length - 1] as number)) {
          this.#indexedUpTo = Math.max(this.#indexedUpTo, slice[slice.length - 1] as number);
        }
        this.#dirty = true;
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      this.#indexing = false;
    }
  }

  #row(seq: number): Float32Array {
    return this.#matrix.subarray(seq * this.dimensions, (seq + 1) * this.dimensions);
  }

  /** Saves the graph and its sidecar when changed. */
  save(): void {
    if (!this.#dirty) return;
    fs.mkdirSync(this.#dir, { recursive: true });
    const tmp = `${this.#graphFile}.tmp`;
    this.#graph.save(tmp);
    fs.renameSync(tmp, this.#graphFile);
    const sidecar: Sidecar = { embedderId: this.embedderId, dimensions: this.dimensions, indexedUpTo: this.#indexedUpTo, generation: this.generation };
    fs.writeFileSync(`${this.#sidecarFile}.tmp`, JSON.stringify(sidecar));
    fs.renameSync(`${this.#sidecarFile}.tmp`, this.#sidecarFile);
    this.#dirty = false;
    this.#logger.debug({ size: this.size, indexed_up_to: this.#indexedUpTo }, "vector graph saved");
  }

  /** Saves within SAVE_INTERVAL_MS, once however many changes arrive meanwhile; close() saves at once. */
  saveSoon(): void {
    if (this.#saveTimer !== undefined || this.#closed) return;
    this.#saveTimer = setTimeout(() => {
      this.#saveTimer = undefined;
      this.save();
    }, SAVE_INTERVAL_MS);
    this.#saveTimer.unref();
  }

  close(): void {
    this.#closed = true;
    if (this.#saveTimer !== undefined) clearTimeout(this.#saveTimer);
    this.save();
  }

  /** Exact cosine similarity of one stored vector (vectors are unit length). */
  similarity(seq: number, query: Float32Array): number {
    return this.#present[seq] ? dot(this.#matrix, seq * this.dimensions, query, this.dimensions) : 0;
  }

  /**
   * Top `k` admissible entries by cosine similarity. `lists` hold the scope's seqs, each list ascending. Small
   * scopes are scored exactly; large ones search the graph with growing over-fetch, keep what `accept` admits, and
   * score exactly the entries newer than the graph. When the graph yields too few admissible entries (a narrow
   * filter), the admissible candidates are scored exactly, so a narrow filter still returns its best k.
   */
  search(query: Float32Array, lists: readonly (readonly number[])[], accept: (seq: number) => boolean, k: number): DenseHit[] {
    const admissible = (): number[] => lists.flatMap((list) => list.filter((seq) => this.#present[seq] && accept(seq)));
    const total = lists.reduce((sum, list) => sum + list.length, 0);
    if (total <= EXACT_SEARCH_LIMIT || this.#graph.size() === 0) return this.#exact(query, admissible(), k);
    const hits = new Map<number, number>();
    // The first fetch assumes the filter admits most of the graph; narrower filters fetch more.
    for (let fetch = k + 16; ; fetch *= 4) {
      const size = this.#graph.size();
      const matches = this.#graph.search(query, Math.min(fetch, size), 0);
      hits.clear();
      for (let i = 0; i < matches.keys.length; i++) {
        const seq = Number(matches.keys[i]);
        if (accept(seq)) hits.set(seq, 1 - (matches.distances[i] as number));
      }
      if (hits.size >= k || fetch >= size) break;
      if (fetch > 4 * EXACT_SEARCH_LIMIT) return this.#exact(query, admissible(), k);
    }
    // Each list is ascending: its entries newer than the graph are a suffix.
    for (const list of lists) {
      for (let i = list.length - 1; i >= 0 && (list[i] as number) > this.#indexedUpTo; i--) {
        const seq = list[i] as number;
        if (this.#present[seq] && accept(seq)) hits.set(seq, this.similarity(seq, query));
      }
    }
    return [...hits]
      .map(([seq, similarity]) => ({ seq, similarity }))
      .sort((a, b) => b.similarity - a.similarity || b.seq - a.seq)
      .slice(0, k);
  }

  #exact(query: Float32Array, seqs: readonly number[], k: number): DenseHit[] {
    const hits = seqs.map((seq) => ({ seq, similarity: this.similarity(seq, query) }));
    hits.sort((a, b) => b.similarity - a.similarity || b.seq - a.seq);
    return hits.length > k ? hits.slice(0, k) : hits;
  }
}
