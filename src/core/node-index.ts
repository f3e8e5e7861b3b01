// The in-memory side of nodes: who owns which node in which run, and their unit vectors in a VectorIndex of their
// own. Derived data: loaded from LMDB at start-up and updated, in commit order, after every committed write.
import path from "node:path";
import type { Logger } from "../platform/logger.js";
import type { Embedder } from "../retrieval/embedder.js";
import { VectorIndex, type DenseHit } from "../retrieval/vector-index.js";
import { unitCopy, type NodeRecord } from "./node-record.js";
import type { NodeStore } from "./node-store.js";


export interface Placement {
  readonly owner: number;
  readonly runId: string;
}

function addTo<K>(map: Map<K, Set<number>>, key: K, id: number): void {
  const set = map.get(key);
  if (set === undefined) map.set(key, new Set([id]));
  else set.add(id);
}

function removeFrom<K>(map: Map<K, Set<number>>, key: K, id: number): void {
  const set = map.get(key);
  if (set === undefined) return;
  set.delete(id);
  if (set.size === 0) map.delete(key);
}

export class NodeIndex {
  readonly dense: VectorIndex;
  readonly #logger: Logger;
  readonly #placement = new Map<number, Placement>();
  readonly #byOwner = new Map<number, Set<number>>();
  readonly #byOwnerRun = new Map<string, Set<number>>();
  readonly #byRun = new Map<string, Set<number>>();
  /** Ascending copies of the sets above (the vector index wants ascending lists), dropped when a set changes. */
  readonly #sorted = new Map<string, number[]>();

  constructor(dataDir: string, embedder: Embedder, logger: Logger) {
    this.#logger = logger;
    // One graph per owner, as for entries: another owner's nodes never shape a search's candidates or its latency.
    this.dense = new VectorIndex(path.join(dataDir, "vectors", "nodes"), `nodes-${embedder.id}`, embedder.dimensions, logger, (id) => this.#placement.get(id)?.owner ?? -1);
  }

  get size(): number {
    return this.#placement.size;
  }

  /**
   * Loads every node, then the saved graph when it was saved at the store's current generation (no node write
   * committed since); otherwise the graph is rebuilt in the background while exact search covers the rest.
   */
  load(store: NodeStore): void {
    const started = Date.now();
    for (const { record, vector } of store.all()) this.#put(record, vector);
    this.dense.generation = store.generation();
    this.dense.loadGraph();
    this.#logger.info({ nodes: this.size, node_graph: this.dense.size, ms: Date.now() - started }, "core nodes loaded");
    void this.dense.indexPending();
  }

  /** A committed insert or update (nodes never change owner or run). */
  put(record: NodeRecord, vector: Float32Array): void {
    this.#put(record, vector);
  }

  /** A committed delete. */
  remove(record: NodeRecord): void {
    this.#placement.delete(record.id);
    this.#invalidate(record);
    removeFrom(this.#byOwner, record.owner, record.id);
    removeFrom(this.#byOwnerRun, `${record.owner}/${record.runId}`, record.id);
    removeFrom(this.#byRun, record.runId, record.id);
    this.dense.remove(record.id);
  }

  /** After the writes of one committed transaction are applied: records its generation and schedules indexing. */
  committed(generation: number): void {
    this.dense.generation = generation;
    this.dense.scheduleIndexing();
    this.dense.saveSoon();
  }

  #put(record: NodeRecord, vector: Float32Array): void {
    if (!this.#placement.has(record.id)) this.#invalidate(record);
    this.#placement.set(record.id, { owner: record.owner, runId: record.runId });
    addTo(this.#byOwner, record.owner, record.id);
    addTo(this.#byOwnerRun, `${record.owner}/${record.runId}`, record.id);
    addTo(this.#byRun, record.runId, record.id);
    if (vector.length === this.dense.dimensions) this.dense.add(record.id, unitCopy(vector));
  }

  #invalidate(record: NodeRecord): void {
    this.#sorted.delete(`o${record.owner}`);
    this.#sorted.delete(`o${record.owner}/${record.runId}`);
    this.#sorted.delete(`r${record.runId}`);
  }

  #ascending(key: string, set: Set<number> | undefined): readonly number[] {
    if (set === undefined) return [];
    let list = this.#sorted.get(key);
    if (list === undefined) {
      list = [...set].sort((a, b) => a - b);
      this.#sorted.set(key, list);
    }
    return list;
  }

  /** Ids of an owner's nodes, in one run when `runId` is set; ascending. */
  idsOf(owner: number, runId: string | undefined): readonly number[] {
    return runId === undefined
      ? this.#ascending(`o${owner}`, this.#byOwner.get(owner))
      : this.#ascending(`o${owner}/${runId}`, this.#byOwnerRun.get(`${owner}/${runId}`));
  }

  /** Ids of every owner's nodes in a run (for admins); ascending. */
  idsOfRun(runId: string): readonly number[] {
    return this.#ascending(`r${runId}`, this.#byRun.get(runId));
  }

  /** Owner and run of a stored node. */
  placement(id: number): Placement | undefined {
    return this.#placement.get(id);
  }

  /**
   * Top `k` nodes by cosine similarity to a unit query vector. `lists` (ascending) are the scope; `accept` must also
   * refuse every node outside it, because a graph search meets nodes of every owner.
   */
  search(query: Float32Array, lists: readonly (readonly number[])[], accept: (id: number) => boolean, k: number): DenseHit[] {
    return this.dense.search(query, lists, accept, k);
  }


  close(): void {
    this.dense.close();
  }
}
