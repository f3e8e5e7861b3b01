// Node inserts, updates and deletes: applied at once in one transaction (announced after it commits), or staged in
// a transactional session when the request names one.
import type { Principal } from "../auth/principal.js";
import { invalidArgument } from "../platform/errors.js";
import type { Storage } from "../storage/database.js";
import type { CoreCommitter } from "./core-commit.js";
import { NODE_RECORD_VERSION, type NodeRecord, type NodeState } from "./node-record.js";
import type { NodeStore } from "./node-store.js";
import { stagedPut, type StagedOps } from "./session-record.js";
import type { SessionChain, SessionStore } from "./session-store.js";

/** One validated node write. */
export interface NodeWrite {
  /** Undefined inserts a new node. */
  readonly nodeId: number | undefined;
  /** Required for inserts; on updates "" or the node's run. */
  readonly runId: string;
  readonly text: string;
  readonly vector: Float32Array;
  readonly metadataJson: string;
  /** Prefix of field names in errors: "" or "nodes[3].". */
  readonly field: string;
}

export interface NodeWriterDeps {
  readonly storage: Storage;
  readonly nodes: NodeStore;
  readonly sessions: SessionStore;
  readonly committer: CoreCommitter;
}

/** A node reached for writing in the caller's scope (NOT_FOUND or PERMISSION_DENIED otherwise); `what` names it. */
type ReachForWrite = (id: number, what: string) => NodeState;

export class NodeWriter {
  readonly #deps: NodeWriterDeps;

  constructor(deps: NodeWriterDeps) {
    this.#deps = deps;
  }

  /** Checks every update of a request before anything is written. */
  #checkUpdates(writes: readonly NodeWrite[], reach: ReachForWrite): void {
    for (const w of writes) {
      if (w.nodeId === undefined) continue;
      const { record } = reach(w.nodeId, `node ${w.nodeId} (${w.field}node_id)`);
      if (w.runId !== "" && w.runId !== record.runId) {
        throw invalidArgument(`${w.field}run_id`, `node ${w.nodeId} is in run "${record.runId}", not "${w.runId}"; nodes do not move between runs`);
      }
    }
  }

  #next(caller: Principal, w: NodeWrite, current: NodeRecord | undefined, now: number): NodeRecord {
    if (current !== undefined) return { ...current, text: w.text, metadataJson: w.metadataJson, updatedAt: now, version: current.version + 1 };
    const id = this.#deps.nodes.nextIdInTransaction();
    return { v: NODE_RECORD_VERSION, id, owner: caller.userId, runId: w.runId, text: w.text, metadataJson: w.metadataJson, createdAt: now, updatedAt: now, version: 1 };
  }

  /** Inserts and updates in one atomic write, or staged in `sessionId` when not "". Resolves the nodes as written. */
  async upsert(caller: Principal, writes: readonly NodeWrite[], sessionId: string): Promise<NodeState[]> {
    if (sessionId !== "") return this.#stage(caller, writes, sessionId);
    const { nodes } = this.#deps;
    return this.#deps.committer.commit((changes) => {
      this.#checkUpdates(writes, (id, what) => nodes.reach(caller, id, "write", what));
      const now = Date.now();
      return writes.map((w) => {
        // Every id was reached above. Reads inside the transaction see its earlier writes, so repeated ids in one
        // batch apply in order.
        const current = w.nodeId === undefined ? undefined : nodes.readStored(w.nodeId);
        const record = this.#next(caller, w, current, now);
        nodes.putInTransaction(record, w.vector);
        changes.push({ kind: "node.put", record, vector: w.vector, inserted: current === undefined });
        return { record, vector: w.vector };
      });
    });
  }

  async #stage(caller: Principal, writes: readonly NodeWrite[], sessionId: string): Promise<NodeState[]> {
    const { storage, sessions } = this.#deps;
    return storage.transaction(() => {
      const chain = sessions.chain(caller, "session_id", sessionId);
      this.#checkUpdates(writes, (id, what) => chain.reach(id, "write", what));
      const now = Date.now();
      const staged = writes.map((w) => {
        // Reached above; the session's view includes the writes this batch folded in so far.
        const current = w.nodeId === undefined ? undefined : chain.nodeAt(0, w.nodeId)?.record;
        const record = this.#next(caller, w, current, now);
        ops(chain).fold(stagedPut(baseOf(chain, record.id), { record, vector: w.vector }));
        return { record, vector: w.vector };
      });
      sessions.putInTransaction({ ...chain.leaf, ops: ops(chain).ops });
      return staged;
    });
  }

  /** Deletes one node at once, or stages the delete in `sessionId` when not "". */
  async delete(caller: Principal, id: number, sessionId: string): Promise<void> {
    const { nodes, sessions } = this.#deps;
    if (sessionId !== "") {
      await this.#deps.storage.transaction(() => {
        const chain = sessions.chain(caller, "session_id", sessionId);
        const { record } = chain.reach(id, "write", `node ${id}`);
        ops(chain).fold({ kind: "delete", nodeId: id, base: baseOf(chain, id), record });
        sessions.putInTransaction({ ...chain.leaf, ops: ops(chain).ops });
      });
      return;
    }
    await this.#deps.committer.commit((changes) => {
      const { record } = nodes.reach(caller, id, "write", `node ${id}`);
      nodes.removeInTransaction(record);
      changes.push({ kind: "node.delete", record });
    });
  }

  /** Deletes every node of one of the caller's runs at once; resolves how many. */
  async deleteRun(caller: Principal, runId: string): Promise<number> {
    const { nodes } = this.#deps;
    return this.#deps.committer.commit((changes) => {
      // The caller's own nodes, listed by their [owner, run] index.
      const ids = nodes.idsOfRun(caller.userId, runId);
      for (const id of ids) {
        const record = nodes.readStored(id);
        if (record === undefined) continue;
        nodes.removeInTransaction(record);
        changes.push({ kind: "node.delete", record });
      }
      return changes.length;
    });
  }
}

function ops(chain: SessionChain): StagedOps {
  return chain.staged[0] as StagedOps;
}

/** The node's version under the session (its parent's view, or the store); 0 when absent there. */
function baseOf(chain: SessionChain, id: number): number {
  return chain.nodeAt(1, id)?.record.version ?? 0;
}
