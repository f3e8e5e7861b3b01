// Core nodes in LMDB: the record, its vector and its [owner, run_id, node_id] index, written together inside the
// caller's transaction.
import type { AccessControl, Permission } from "../acl/access-control.js";
import type { Principal } from "../auth/principal.js";
import type { Storage } from "../storage/database.js";
import { nextSequence, summedOverShards } from "../storage/database.js";
import { vectorBytes, vectorFromBytes } from "../storage/entry-store.js";
import { checkVersions, decodeOptional } from "../storage/record-codec.js";
import { mayRead, reachNode } from "./node-access.js";
import { decodeNode, NODE_RECORD_VERSION, type NodeRecord, type NodeState } from "./node-record.js";

/** Counter bumped by every transaction that changes node vectors; the node graph is saved with it. */
const GENERATION_KEY = "seq:node_vector_writes";

export class NodeStore {
  readonly #storage: Storage;
  readonly #acl: AccessControl;

  /** Opens the store; throws RecordVersionError when a node was written by another schema version. */
  constructor(storage: Storage, acl: AccessControl) {
    this.#storage = storage;
    this.#acl = acl;
    checkVersions("core_nodes", storage.dbs.nodes, NODE_RECORD_VERSION);
  }

  /**
   * The stored node as `caller` may act on it with `permission`: NOT_FOUND naming `what` — the same for another
   * owner's node the caller holds no read grant on as for a missing one — or PERMISSION_DENIED when `write` is asked
   * of a readable node without a write grant.
   */
  reach(caller: Principal, id: number, permission: Permission, what: string): NodeState {
    return reachNode(this.#acl, caller, this.storedState(id), permission, what);
  }

  /** The stored node when `caller` may read it; undefined alike when there is none and when it is out of reach. */
  find(caller: Principal, id: number): NodeState | undefined {
    const state = this.storedState(id);
    return state !== undefined && mayRead(this.#acl, caller, state.record) ? state : undefined;
  }

  /**
   * Unscoped read of a node's record. Only for code that has already scoped the id: commit internals re-reading a
   * node inside the transaction that checked it, search results drawn from the caller's scope, start-up
   * re-embedding. Requests reach nodes through `reach` or `find`.
   */
  readStored(id: number): NodeRecord | undefined {
    return decodeOptional(this.#storage.dbs.nodes.get(id), (value) => decodeNode(id, value));
  }

  /** Unscoped read of a node with its vector, under the same rule as `readStored` (and for the view under a session). */
  storedState(id: number): NodeState | undefined {
    const record = this.readStored(id);
    const vector = record === undefined ? undefined : this.#vector(id);
    return record === undefined || vector === undefined ? undefined : { record, vector };
  }

  #vector(id: number): Float32Array | undefined {
    const bytes = this.#storage.dbs.nodeVectors.get(id);
    return bytes === undefined ? undefined : vectorFromBytes(bytes);
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
      const vector = this.#vector(key);
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
    // Clustered, each shard counts its own bumps under its own key: the generation is their sum.
    return summedOverShards(this.#storage.dbs.meta, GENERATION_KEY);
  }

  bumpGenerationInTransaction(): number {
    nextSequence(this.#storage.dbs.meta, "node_vector_writes");
    return this.generation();
  }
}
