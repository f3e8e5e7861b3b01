// Core nodes in LMDB: the record, its vector and its [owner, run_id, node_id] index, written together inside the
// caller's transaction.
import type { Storage } from "../storage/database.js";
import { nextSequence } from "../storage/database.js";
import { vectorBytes, vectorFromBytes } from "../storage/entry-store.js";
import { checkVersions, decodeOptional } from "../storage/record-codec.js";
import { decodeNode, NODE_RECORD_VERSION, type NodeRecord, type NodeState } from "./node-record.js";

/** Counter bumped by every transaction that changes node vectors; the node graph is saved with it. */
const GENERATION_KEY = "seq:node_vector_writes";

export class NodeStore {
  readonly #storage: Storage;

  /** Opens the store; throws RecordVersionError when a node was written by another schema version. */
  constructor(storage: Storage) {
    this.#storage = storage;
    checkVersions("core_nodes", storage.dbs.nodes, NODE_RECORD_VERSION);
  }

  get(id: number): NodeRecord | undefined {
    return decodeOptional(this.#storage.dbs.nodes.get(id), (value) => decodeNode(id, value));
  }

  vector(id: number): Float32Array | undefined {
    const bytes = this.#storage.dbs.nodeVectors.get(id);
    return bytes === undefined ? undefined : vectorFromBytes(bytes);
  }

  state(id: number): NodeState | undefined {
    const record = this.get(id);
    const vector = record === undefined ? undefined : this.vector(id);
    return record === undefined || vector === undefined ? undefined : { record, vector };
  }

  /** Ids of an owner's nodes in one run, ascending. */
  idsOfRun(owner: number, runId: string): number[] {
    const ids: number[] = [];
    for (const key of this.#storage.dbs.nodesByOwnerRun.getKeys({ start: [owner, runId], end: [owner, runId, Number.MAX_SAFE_INTEGER + 1] })) {
      ids.push((key as [number, string, number])[2]);
    }
    return ids;
  }

  /** Ids of the nodes that have text (whose vectors the server embedded, unless the caller gave one too). */
  idsWithText(): number[] {
    const ids: number[] = [];
    for (const { key, value } of this.#storage.dbs.nodes.getRange()) if (decodeNode(key, value).text !== "") ids.push(key);
    return ids;
  }

  /** Every node with its vector, for loading the index at start-up. */
  *all(): Generator<NodeState> {
    for (const { key, value } of this.#storage.dbs.nodes.getRange()) {
      const vector = this.vector(key);
      if (vector !== undefined) yield { record: decodeNode(key, value), vector };
    }
  }

  /** The next node id; inside a write transaction, so the increment commits with the node. */
  nextIdInTransaction(): number {
    return nextSequence(this.#storage.dbs.meta, "node");
  }

  putInTransaction(record: NodeRecord, vector: Float32Array): void {
    const { dbs } = this.#storage;
    dbs.nodes.put(record.id, record);
    dbs.nodeVectors.put(record.id, vectorBytes(vector));
    dbs.nodesByOwnerRun.put([record.owner, record.runId, record.id], null);
  }

  removeInTransaction(record: NodeRecord): void {
    const { dbs } = this.#storage;
    dbs.nodes.remove(record.id);
    dbs.nodeVectors.remove(record.id);
    dbs.nodesByOwnerRun.remove([record.owner, record.runId, record.id]);
  }

  generation(): number {
    const value = this.#storage.dbs.meta.get(GENERATION_KEY);
    return typeof value === "number" ? value : 0;
  }

  bumpGenerationInTransaction(): number {
    return nextSequence(this.#storage.dbs.meta, "node_vector_writes");
  }
}
