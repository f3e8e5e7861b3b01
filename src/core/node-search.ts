// Vector search over the nodes a caller may read: their own (in one run or all), plus — when a run is named — the
// run's nodes of owners who granted them read access; through a session, its staged writes replace the store's.
import type { AccessControl } from "../acl/access-control.js";
import { isAdmin, type Principal } from "../auth/principal.js";
import { cosine } from "../retrieval/embedder.js";
import { mayRead } from "./node-access.js";
import type { NodeIndex } from "./node-index.js";
import type { NodeRecord, NodeState } from "./node-record.js";
import type { NodeStore } from "./node-store.js";
import type { SessionStore } from "./session-store.js";

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface NodeQuery {
  /** Unit length. */
  readonly vector: Float32Array;
  readonly k: number;
  /** Undefined searches every run of the caller. */
  readonly runId: string | undefined;
  /** Top-level keys the metadata must hold with equal values. */
  readonly filter: Readonly<Record<string, JsonValue>> | undefined;
  readonly sessionId: string;
}

export interface NodeHit {
  readonly record: NodeRecord;
  readonly similarity: number;
}

export function jsonEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (a === null || b === null || a === undefined || b === undefined || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => jsonEqual(a[key], b[key]));
}

function matches(record: NodeRecord, filter: Readonly<Record<string, JsonValue>>): boolean {
  const metadata = JSON.parse(record.metadataJson) as Record<string, JsonValue>;
  return Object.entries(filter).every(([key, value]) => Object.hasOwn(metadata, key) && jsonEqual(metadata[key], value));
}

export class NodeSearch {
  readonly #nodes: NodeStore;
  readonly #index: NodeIndex;
  readonly #sessions: SessionStore;
  readonly #acl: AccessControl;

  constructor(nodes: NodeStore, index: NodeIndex, sessions: SessionStore, acl: AccessControl) {
    this.#nodes = nodes;
    this.#index = index;
    this.#sessions = sessions;
    this.#acl = acl;
  }

  /** The stored nodes in the caller's scope: ascending id lists, and the owners they belong to (undefined: any). */
  #scope(caller: Principal, runId: string | undefined): { lists: (readonly number[])[]; owners: Set<number> | undefined } {
    if (runId === undefined) return { lists: [this.#index.idsOf(caller.userId, undefined)], owners: new Set([caller.userId]) };
    if (isAdmin(caller)) return { lists: [this.#index.idsOfRun(runId)], owners: undefined };
    const owners = new Set([caller.userId]);
    // Nodes have no lane: only whole-run grants open another owner's run to a search.
    for (const granted of this.#acl.readableRuns(caller, runId)) if (granted.lanes === undefined) owners.add(granted.owner);
    return { lists: [...owners].map((owner) => this.#index.idsOf(owner, runId)), owners };
  }

  #inScope(caller: Principal, record: NodeRecord, runId: string | undefined): boolean {
    if (runId === undefined) return record.owner === caller.userId;
    return record.runId === runId && (record.owner === caller.userId || mayRead(this.#acl, caller, record));
  }

  search(caller: Principal, q: NodeQuery): NodeHit[] {
    const chain = q.sessionId === "" ? undefined : this.#sessions.chain(caller, "session_id", q.sessionId);
    const touched = chain?.touchedIds() ?? new Set<number>();
    const { filter, runId } = q;
    const { lists, owners } = this.#scope(caller, runId);
    const accept = (id: number): boolean => {
      const placed = this.#index.placement(id);
      if (placed === undefined || touched.has(id)) return false;
      if ((owners !== undefined && !owners.has(placed.owner)) || (runId !== undefined && placed.runId !== runId)) return false;
      if (filter === undefined) return true;
      // Unscoped reads below are of ids the checks above kept inside the caller's scope.
      const record = this.#nodes.readStored(id);
      return record !== undefined && matches(record, filter);
    };
    const hits: NodeHit[] = [];
    for (const hit of this.#index.search(q.vector, lists, accept, q.k)) {
      // A node deleted since the search began is left out.
      const record = this.#nodes.readStored(hit.seq);
      if (record !== undefined) hits.push({ record, similarity: hit.similarity });
    }
    for (const staged of chain?.stagedNodes() ?? []) {
      if (!this.#inScope(caller, staged.record, q.runId) || (filter !== undefined && !matches(staged.record, filter))) continue;
      hits.push({ record: staged.record, similarity: similarityOf(staged, q.vector) });
    }
    return hits.sort((a, b) => b.similarity - a.similarity || b.record.id - a.record.id).slice(0, q.k);
  }
}

function similarityOf(state: NodeState, query: Float32Array): number {
  return cosine(state.vector, query);
}
