// Dense retrieval: exact vectors in memory (for filtered and not-yet-indexed candidates) plus USearch HNSW graphs
// (f16, cosine), one per partition (owner), for wide scopes. Graphs are derived data: saved beside LMDB, repaired
// from LMDB at start-up.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import type * as Usearch from "usearch";
import type { Logger } from "../platform/logger.js";
import { PagedVectors } from "./paged-vectors.js";
import { TopK } from "./top-k.js";

export interface DenseHit {
  readonly seq: number;
  readonly similarity: number;
}

/** Where the dense branch of a search gets its candidates and similarities: the server's vectors, or a caller space. */
export interface DenseSource {
  search(query: Float32Array, lists: readonly (readonly number[])[], accept: (seq: number) => boolean, k: number): DenseHit[];
  similarity(seq: number, query: Float32Array): number;
}

// usearch's ES module cannot locate its prebuilt binary (it looks for __dirname); its CommonJS entry can.
const usearch = createRequire(import.meta.url)("usearch") as typeof Usearch;

/** Below this many admissible candidates, exact search over them is cheaper and exact. */
const EXACT_SEARCH_LIMIT = 6000;
/**
 * A partition gets a graph once it holds more vectors than this: with fewer, every search of it is exact anyway, so
 * the many small partitions of a multi-tenant store cost no graph.
 */
const GRAPH_MIN_VECTORS = EXACT_SEARCH_LIMIT;
/**
 * Graphs are saved at most this often while writes arrive, and on close. Saving blocks the event loop (tens of
 * milliseconds at 100k vectors), so it is rare; after a crash the unsaved tail is re-added from LMDB in the
 * background while exact search covers it.
 */
const SAVE_INTERVAL_MS = 5 * 60_000;
/**
 * Graph additions are made in slices so that queries are never blocked for long: an insertion costs 60–200 µs at
 * 20k–100k vectors on a shared 2-core machine, so a slice of 64 held the event loop for up to ~13 ms.
 */
const INDEX_SLICE = 32;
/**
 * After writes, graph additions wait until writes pause for this long, or until this many vectors wait: an HNSW
 * insertion costs more than the rest of a write, and exact search covers the waiting vectors meanwhile (a few
 * milliseconds at the cap), so a burst of writes is not slowed by indexing and the graph catches up in the lull.
 */
const IDLE_INDEX_MS = 300;
const MAX_UNINDEXED = 8192;
/**
 * A graph is rebuilt once removals from it exceed this share of the most vectors it has held. USearch (2.25) marks a
 * removed key as a tombstone in its key lookup and clears tombstones only when the lookup grows or the graph is
 * loaded; under steady writes and deletes (deleted runs, replaced vectors) at a size that no longer grows, they fill
 * the lookup until `remove` first fails silently and then never returns, and the server's one thread spins (found by
 * the soak benchmark; test/unit/vector-index-churn.test.ts). The lookup keeps an empty slot while removals stay under
 * half that peak. Removal also leaves the graph's links to the removed node, so recall decays with churn; a rebuilt
 * graph has neither problem.
 */
const REBUILD_AFTER_REMOVED_SHARE = 0.25;

/** What was saved beside the graphs: which embedder made them, and how far each partition's graph reaches. */
interface Manifest {
  readonly embedderId: string;
  readonly dimensions: number;
  readonly graphs: readonly { readonly partition: number; readonly indexedUpTo: number }[];
  /** The owner's `generation` when the graphs were saved; absent for owners that do not track one. */
  readonly generation?: number;
}

function isManifest(value: unknown): value is Manifest {
  if (typeof value !== "object" || value === null) return false;
  const m = value as Record<string, unknown>;
  return typeof m["embedderId"] === "string" && typeof m["dimensions"] === "number" && Array.isArray(m["graphs"]);
}

/** The vectors of one partition (one owner's entries) and the graph over them, once they are many. */
interface Partition {
  graph: Usearch.Index | undefined;
  /** Every seq of the partition at or below this is in its graph; the rest are searched exactly. */
  indexedUpTo: number;
  pending: number[];
  /** Set when a seq is queued below the last queued one, so the queue is sorted before the next slice. */
  pendingUnsorted: boolean;
  /** Set when the graph was made or loaded and the partition's vectors it lacks are not queued yet. */
  needsQueue: boolean;
  /** Vectors present. */
  count: number;
  /** Removals from the graph since it was made or loaded, and the most vectors it has held: see REBUILD_AFTER_REMOVED_SHARE. */
  removed: number;
  peak: number;
  dirty: boolean;
  /** The graph's file matches it as of its last save (or it was loaded from it): the manifest may name it. */
  persisted: boolean;
  /**
   * While a rebuilt graph is being filled, the graph it replaces keeps answering searches (up to its own mark), its
   * removed vectors skipped by the exact vectors' presence rather than removed from it; dropped once the new graph has
   * caught up. Without it every search of the partition would be exact until then, over all of its vectors.
   */
  retiring: { readonly graph: Usearch.Index; readonly indexedUpTo: number; readonly changed: Set<number> } | undefined;
}

/** Which partition a vector belongs to: for memory entries, its owner. */
export type PartitionOf = (seq: number) => number;

export interface VectorIndexOptions {
  /** Whether graphs are saved beside LMDB and loaded at start-up (default true); otherwise rebuilt after a restart. */
  readonly persist?: boolean;
}

/**
 * Exact vectors plus one HNSW graph per partition. Partitioned by owner, a search of one owner's entries meets only
 * that owner's graph: other owners' vectors neither crowd its over-fetch nor slow it.
 */
export class VectorIndex {
  /** Holds on graph additions (holdIndexing), and whether additions were wanted meanwhile. */
  #holds = 0;
  #heldBack = false;
  readonly dimensions: number;
  readonly embedderId: string;
  readonly #dir: string;
  readonly #logger: Logger;
  readonly #partitionOf: PartitionOf;
  readonly #persist: boolean;
  /** The exact vectors, with each one's partition recorded when it is added, so removal needs no lookup. */
  readonly #vectors: PagedVectors;
  readonly #partitions = new Map<number, Partition>();
  /** Some partition has `needsQueue` set. */
  #queueWanted = false;
  #indexing = false;
  #idleTimer: NodeJS.Timeout | undefined;
  #closed = false;
  #saveTimer: NodeJS.Timeout | undefined;
  /**
   * Set by owners whose vectors change in place (updates, deletes) or arrive out of seq order: a count of the
   * writes the vectors reflect. Saved graphs with another generation are stale and are rebuilt instead of loaded.
   */
  generation: number | undefined;

  /** Without `partitionOf`, every vector is in one partition (core nodes: their accept filter scopes the graph). */
  constructor(dir: string, embedderId: string, dimensions: number, logger: Logger, partitionOf: PartitionOf = () => 0, options: VectorIndexOptions = {}) {
    this.dimensions = dimensions;
    this.embedderId = embedderId;
    this.#dir = dir;
    this.#logger = logger;
    this.#partitionOf = partitionOf;
    this.#persist = options.persist ?? true;
    this.#vectors = new PagedVectors(dimensions);
  }

  #newGraph(): Usearch.Index {
    return new usearch.Index({
      dimensions: this.dimensions,
      metric: usearch.MetricKind.Cos,
      quantization: usearch.ScalarKind.F16,
      connectivity: 16,
      expansion_add: 64,
      expansion_search: 256,
      multi: false,
    });
  }

  get #base(): string {
    return path.join(this.#dir, this.embedderId.replace(/[^A-Za-z0-9._-]/g, "_"));
  }

  #graphFile(partition: number): string {
    return `${this.#base}.p${partition}.usearch`;
  }

  get #manifestFile(): string {
    return `${this.#base}.graphs.json`;
  }

  #partition(partition: number): Partition {
    let part = this.#partitions.get(partition);
    if (part === undefined) {
      part = { graph: undefined, indexedUpTo: 0, pending: [], pendingUnsorted: false, needsQueue: false, count: 0, removed: 0, peak: 0, dirty: false, persisted: false, retiring: undefined };
      this.#partitions.set(partition, part);
    }
    return part;
  }

  /** Vectors in the graphs. */
  get size(): number {
    let size = 0;
    for (const part of this.#partitions.values()) size += part.graph?.size() ?? 0;
    return size;
  }

  /**
   * Approximate bytes held in memory: the exact vectors, plus the graphs' f16 vectors and their base-layer links
   * (USearch does not report its own footprint). Storage statistics.
   */
  get memoryBytes(): number {
    let graphs = 0;
    for (const { graph, retiring } of this.#partitions.values()) {
      for (const g of [graph, retiring?.graph]) if (g !== undefined) graphs += g.size() * (this.dimensions * 2 + g.connectivity() * 2 * 4);
    }
    return this.#vectors.byteLength + graphs;
  }

  /** The lowest mark of the graphs: every seq at or below it is in its partition's graph, when it has one. */
  get indexedUpTo(): number {
    let mark: number | undefined;
    for (const part of this.#partitions.values()) if (part.graph !== undefined) mark = Math.min(mark ?? Infinity, part.indexedUpTo);
    return mark ?? 0;
  }

  /**
   * Keeps a vector for exact search and queues it for its partition's graph. Replacing the vector of a seq already
   * in the graph, or adding one at or below the indexed mark (seqs assigned out of order), updates the graph at once.
   */
  add(seq: number, vector: Float32Array): void {
    const partition = this.#partitionOf(seq);
    const before = this.#vectors.partitionOf(seq);
    if (before !== undefined && before !== partition) this.remove(seq);
    const wasPresent = this.#vectors.set(seq, vector, partition);
    const part = this.#partition(partition);
    if (!wasPresent) part.count++;
    // The retiring graph is no longer updated: a vector it holds under its mark that changed is searched exactly.
    if (part.retiring !== undefined && seq <= part.retiring.indexedUpTo) part.retiring.changed.add(seq);
    const graph = part.graph;
    if (graph === undefined) {
      if (part.count > GRAPH_MIN_VECTORS) {
        part.graph = this.#newGraph();
        part.needsQueue = true;
        this.#queueWanted = true;
      }
      return;
    }
    const key = BigInt(seq);
    if (seq <= part.indexedUpTo || graph.contains(key)) {
      // A rebuilt graph is filled from the vectors, this one included.
      if (graph.contains(key) && this.#removeFromGraph(part, graph, key)) return;
      graph.add(key, this.#vectors.row(seq));
      part.peak = Math.max(part.peak, graph.size());
      part.dirty = true;
    } else if (!wasPresent) {
      const last = part.pending[part.pending.length - 1];
      if (last !== undefined && last > seq) part.pendingUnsorted = true;
      part.pending.push(seq);
    }
  }

  /**
   * Start-up: a stored vector (its floats, or the bytes LMDB holds), before `loadGraph`, which queues what the loaded
   * graphs lack and gives every partition large enough without one a new graph. Unlike `add`, it never looks at a
   * graph: at a million vectors the lookups alone held start-up for a second.
   */
  restore(seq: number, vector: Float32Array | Uint8Array): void {
    const partition = this.#partitionOf(seq);
    if (!this.#vectors.set(seq, vector, partition)) this.#partition(partition).count++;
  }

  /** Forgets a vector: it is no longer searched, and leaves its graph. */
  remove(seq: number): void {
    const partition = this.#vectors.delete(seq);
    if (partition === undefined) return;
    const part = this.#partitions.get(partition);
    if (part === undefined) return;
    part.count--;
    const key = BigInt(seq);
    if (part.graph?.contains(key) === true) this.#removeFromGraph(part, part.graph, key);
  }

  /**
   * Removes a key from the partition's graph; once removals pass REBUILD_AFTER_REMOVED_SHARE of its peak, replaces the
   * graph by a new one that is filled from the exact vectors in the background, as a partition's first graph is
   * (exact search covers what it does not hold yet). Returns whether the graph was replaced.
   */
  #removeFromGraph(part: Partition, graph: Usearch.Index, key: bigint): boolean {
    graph.remove(key);
    part.dirty = true;
    part.removed++;
    if (part.removed <= Math.max(part.peak, graph.size()) * REBUILD_AFTER_REMOVED_SHARE) return false;
    this.#logger.debug({ removed: part.removed, size: graph.size() }, "vector graph rebuilt after removals");
    // A rebuild while one is under way keeps the older, complete graph answering.
    part.retiring ??= { graph, indexedUpTo: part.indexedUpTo, changed: new Set() };
    part.graph = this.#newGraph();
    part.removed = 0;
    part.peak = 0;
    part.indexedUpTo = 0;
    part.pending = [];
    part.pendingUnsorted = false;
    part.needsQueue = true;
    this.#queueWanted = true;
    this.scheduleIndexing();
    return true;
  }

  /** Queues, in one pass over the vectors, what new or loaded graphs lack (above their marks). */
  #queueUnindexed(): void {
    if (!this.#queueWanted) return;
    this.#queueWanted = false;
    this.#vectors.forEach((seq, partition) => {
      const part = this.#partitions.get(partition);
      if (part !== undefined && part.needsQueue && seq > part.indexedUpTo) part.pending.push(seq);
    });
    for (const part of this.#partitions.values()) {
      if (!part.needsQueue) continue;
      part.needsQueue = false;
      part.pendingUnsorted = true;
    }
  }

  /** Loads the saved graphs when they match this embedder (and generation); vectors newer than a graph are queued. */
  loadGraph(): void {
    this.#loadSavedGraphs();
    // Partitions restored without a saved graph get a new one, filled in the background as after a write.
    for (const part of this.#partitions.values()) {
      if (part.graph !== undefined || part.count <= GRAPH_MIN_VECTORS) continue;
      part.graph = this.#newGraph();
      part.needsQueue = true;
      this.#queueWanted = true;
    }
  }

  #loadSavedGraphs(): void {
    if (!this.#persist) return;
    fs.mkdirSync(this.#dir, { recursive: true });
    // The single graph of earlier versions, superseded by per-partition graphs.
    for (const legacy of [`${this.#base}.usearch`, `${this.#base}.usearch.json`]) fs.rmSync(legacy, { force: true });
    let manifest: unknown;
    try {
      manifest = JSON.parse(fs.readFileSync(this.#manifestFile, "utf8"));
    } catch {
      // Missing or unreadable: the graphs are rebuilt from the vectors.
      return;
    }
    if (!isManifest(manifest) || manifest.embedderId !== this.embedderId || manifest.dimensions !== this.dimensions) return;
    if (manifest.generation !== this.generation) return;
    for (const { partition, indexedUpTo } of manifest.graphs) {
      const graph = this.#newGraph();
      try {
        graph.load(this.#graphFile(partition));
      } catch {
        continue;
      }
      const part = this.#partition(partition);
      part.graph = graph;
      part.removed = 0;
      part.peak = graph.size();
      part.indexedUpTo = indexedUpTo;
      part.pending = part.pending.filter((seq) => seq > indexedUpTo);
      part.needsQueue = true;
      part.persisted = true;
      this.#queueWanted = true;
    }
  }

  /** After a write: indexes at once when MAX_UNINDEXED vectors wait, else once writes pause (IDLE_INDEX_MS). */
  scheduleIndexing(): void {
    if (this.#closed) return;
    // A partition that just got its graph has every vector waiting for it: count them, so the cap holds.
    this.#queueUnindexed();
    let waiting = 0;
    for (const part of this.#partitions.values()) waiting += part.pending.length;
    if (waiting >= MAX_UNINDEXED) {
      void this.indexPending();
      return;
    }
    if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      void this.indexPending();
    }, IDLE_INDEX_MS);
    this.#idleTimer.unref();
  }

  /**
   * Holds graph additions until the returned function is called: work that yields between its own short slices (the
   * near-duplicate check after a write) then hands its pauses to requests rather than to the graph, which would
   * otherwise fill every pause of a bulk ingest and slow it down (the graph catches up in the lull as it does
   * after any write). A hold lasts one such piece of work, so the vectors waiting meanwhile stay bounded.
   */
  holdIndexing(): () => void {
    this.#holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#holds--;
      if (this.#holds === 0 && this.#heldBack) {
        this.#heldBack = false;
        this.scheduleIndexing();
      }
    };
  }

  /** Adds queued vectors to the graphs in slices, yielding between them; resolves when every queue is empty. */
  async indexPending(): Promise<void> {
    if (this.#indexing) return;
    this.#indexing = true;
    try {
      for (;;) {
        if (this.#holds > 0) {
          this.#heldBack = true;
          break;
        }
        this.#queueUnindexed();
        for (const p of this.#partitions.values()) if (p.retiring !== undefined && p.pending.length === 0 && !p.needsQueue) p.retiring = undefined;
        const part = [...this.#partitions.values()].find((p) => p.graph !== undefined && p.pending.length > 0);
        if (part === undefined || this.#closed) break;
        await this.#indexSlice(part, part.graph as Usearch.Index);
      }
    } finally {
      this.#indexing = false;
    }
  }

  async #indexSlice(part: Partition, graph: Usearch.Index): Promise<void> {
    if (part.pendingUnsorted) {
      part.pending.sort((a, b) => a - b);
      part.pendingUnsorted = false;
    }
    // Seqs removed while queued are skipped; one removed and re-added may be queued twice, and is added once.
    const slice = [...new Set(part.pending.splice(0, INDEX_SLICE))]
      .filter((seq) => this.#vectors.has(seq) && !graph.contains(BigInt(seq)))
      .sort((a, b) => a - b);
    if (slice.length === 0) return;
    const keys = new BigUint64Array(slice.map((seq) => BigInt(seq)));
    const vectors = new Float32Array(slice.length * this.dimensions);
    slice.forEach((seq, i) => vectors.set(this.#vectors.row(seq), i * this.dimensions));
    graph.add(keys, vectors);
    part.peak = Math.max(part.peak, graph.size());
    // Pending seqs are ascending across slices except for writes racing the loop; only a contiguous
    // prefix may advance the mark, so exact search keeps covering anything not yet in the graph.
    if (part.pending.length === 0 || (part.pending[0] as number) > (slice[slice.length - 1] as number)) {
      part.indexedUpTo = Math.max(part.indexedUpTo, slice[slice.length - 1] as number);
    }
    part.dirty = true;
    await new Promise((resolve) => setImmediate(resolve));
  }

  /** Saves the changed graphs, then the manifest naming every graph and its mark. */
  save(): void {
    if (!this.#persist) return;
    const graphs = [...this.#partitions].filter(([, part]) => part.graph !== undefined);
    if (!graphs.some(([, part]) => part.dirty)) return;
    fs.mkdirSync(this.#dir, { recursive: true });
    for (const [partition, part] of graphs) {
      if (!part.dirty) continue;
      const file = this.#graphFile(partition);
      (part.graph as Usearch.Index).save(`${file}.tmp`);
      fs.renameSync(`${file}.tmp`, file);
      part.dirty = false;
      part.persisted = true;
    }
    // A graph not yet written (made, not yet filled) is left out: a file of an earlier process may lie under its name.
    const manifest: Manifest = {
      embedderId: this.embedderId,
      dimensions: this.dimensions,
      graphs: graphs.filter(([, part]) => part.persisted).map(([partition, part]) => ({ partition, indexedUpTo: part.indexedUpTo })),
      generation: this.generation,
    };
    fs.writeFileSync(`${this.#manifestFile}.tmp`, JSON.stringify(manifest));
    fs.renameSync(`${this.#manifestFile}.tmp`, this.#manifestFile);
    this.#logger.debug({ size: this.size, graphs: graphs.length }, "vector graphs saved");
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
    if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer);
    this.save();
  }

  /** A copy of the stored vector, when there is one. */
  vector(seq: number): Float32Array | undefined {
    return this.#vectors.has(seq) ? this.#vectors.row(seq).slice() : undefined;
  }

  /** Exact cosine similarity of one stored vector (vectors are unit length). */
  similarity(seq: number, query: Float32Array): number {
    return this.#vectors.dot(seq, query);
  }

  /**
   * Top `k` admissible entries by cosine similarity. `lists` hold the scope's seqs, each list ascending and within one
   * partition (one owner's seqs). Each partition is searched on its own: small scopes exactly; large ones through
   * the partition's graph with growing over-fetch, keeping what `accept` admits and scoring exactly the entries newer
   * than the graph. When the graph yields too few admissible entries (a narrow filter), the admissible candidates are
   * scored exactly, so a narrow filter still returns its best k.
   */
  search(query: Float32Array, lists: readonly (readonly number[])[], accept: (seq: number) => boolean, k: number): DenseHit[] {
    const byPartition = new Map<number, (readonly number[])[]>();
    for (const list of lists) {
      const first = list[0];
      if (first === undefined) continue;
      const partition = this.#vectors.partitionOf(first) ?? this.#partitionOf(first);
      const group = byPartition.get(partition);
      if (group === undefined) byPartition.set(partition, [list]);
      else group.push(list);
    }
    const found = [...byPartition].flatMap(([partition, group]) => this.#searchPartition(this.#partitions.get(partition), query, group, accept, k));
    if (byPartition.size <= 1) return found;
    return found.sort((a, b) => b.similarity - a.similarity || b.seq - a.seq).slice(0, k);
  }

  #searchPartition(part: Partition | undefined, query: Float32Array, lists: readonly (readonly number[])[], accept: (seq: number) => boolean, k: number): DenseHit[] {
    const admissible = (): number[] => {
      const seqs = lists.flatMap((list) => list.filter((seq) => this.#vectors.has(seq) && accept(seq)));
      // Lists of one partition may overlap (a run's global lessons are also the owner's global lessons).
      return lists.length > 1 ? [...new Set(seqs)] : seqs;
    };
    const total = lists.reduce((sum, list) => sum + list.length, 0);
    const graph = part?.retiring?.graph ?? part?.graph;
    if (part === undefined || graph === undefined || total <= EXACT_SEARCH_LIMIT || graph.size() === 0) return this.#exact(query, admissible(), k);
    const mark = part.retiring?.indexedUpTo ?? part.indexedUpTo;
    const hits = new Map<number, number>();
    // The first fetch assumes the filter admits most of the graph; narrower filters fetch more.
    for (let fetch = k + 16; ; fetch *= 4) {
      const size = graph.size();
      const matches = graph.search(query, Math.min(fetch, size), 0);
      hits.clear();
      for (let i = 0; i < matches.keys.length; i++) {
        const seq = Number(matches.keys[i]);
        if (part.retiring === undefined) {
          if (accept(seq)) hits.set(seq, 1 - (matches.distances[i] as number));
        } else if (this.#vectors.has(seq) && accept(seq)) {
          // The retiring graph still holds removed vectors and the old values of replaced ones.
          hits.set(seq, this.similarity(seq, query));
        }
      }
      if (hits.size >= k || fetch >= size) break;
      if (fetch > 4 * EXACT_SEARCH_LIMIT) return this.#exact(query, admissible(), k);
    }
    // The graph's hits, then what it does not hold: changed vectors (while a retiring graph answers) and the entries
    // newer than its mark. That tail is long while the graph catches up with a bulk load, so only the best k are kept.
    const best = new TopK(k);
    for (const [seq, similarity] of hits) best.offer(seq, similarity);
    // Lists of one partition may overlap (a run's global lessons are also the owner's), as may changed and new seqs.
    const offered = new Set<number>();
    const offerExact = (seq: number): void => {
      if (hits.has(seq) || !this.#vectors.has(seq) || !accept(seq)) return;
      if (lists.length > 1 || part.retiring !== undefined) {
        if (offered.has(seq)) return;
        offered.add(seq);
      }
      best.offer(seq, this.similarity(seq, query));
    };
    for (const seq of part.retiring?.changed ?? []) offerExact(seq);
    // Each list is ascending: its entries newer than the graph are a suffix.
    for (const list of lists) {
      for (let i = list.length - 1; i >= 0 && (list[i] as number) > mark; i--) offerExact(list[i] as number);
    }
    return best.sorted().map(({ seq, score }) => ({ seq, similarity: score }));
  }

  #exact(query: Float32Array, seqs: readonly number[], k: number): DenseHit[] {
    const best = new TopK(k);
    for (const seq of seqs) best.offer(seq, this.similarity(seq, query));
    return best.sorted().map(({ seq, score }) => ({ seq, similarity: score }));
  }
}
