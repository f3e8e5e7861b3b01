// The core data plane assembled: stores, the node index, the ordered committer and the domain operations the core
// routes call. Built once at start-up; `load` fills the node index from LMDB before the server is ready. The stores
// stay private: routes reach nodes, sessions and scratchpads only through operations that take the caller.
import type { AccessControl } from "../acl/access-control.js";
import type { Logger } from "../platform/logger.js";
import type { Embedder } from "../retrieval/embedder.js";
import type { ReplayedWrite, Storage } from "../storage/database.js";
import { CoreCommitter } from "./core-commit.js";
import type { CoreEventBus } from "./core-events.js";
import { NodeIndex } from "./node-index.js";
import { NodeSearch } from "./node-search.js";
import { NodeStore } from "./node-store.js";
import { NodeWriter } from "./node-writes.js";
import { ScratchpadStore } from "./scratchpad-store.js";
import { Scratchpads } from "./scratchpads.js";
import { commitSession, type CommitOutcome, type MergeStrategy } from "./session-commit.js";
import { SessionLifecycle } from "./session-lifecycle.js";
import { SessionStore } from "./session-store.js";
import type { Principal } from "../auth/principal.js";
import { NODE_RECORD_VERSION, nodeIdOf, unitCopy, type NodeRecord, type NodeState } from "./node-record.js";

export interface CoreDataOptions {
  readonly storage: Storage;
  readonly dataDir: string;
  readonly embedder: Embedder;
  readonly bus: CoreEventBus;
  readonly acl: AccessControl;
  readonly logger: Logger;
}

/** Meta key of the embedder whose vectors the core nodes hold. */
const NODE_EMBEDDER_KEY = "node_embedder_id";
const REEMBED_BATCH = 512;

export class CoreData {
  readonly embedder: Embedder;
  readonly acl: AccessControl;
  readonly index: NodeIndex;
  readonly writer: NodeWriter;
  readonly search: NodeSearch;
  readonly scratchpads: Scratchpads;
  readonly lifecycle: SessionLifecycle;
  readonly #commitDeps: Parameters<typeof commitSession>[0];
  readonly #committer: CoreCommitter;
  readonly #nodes: NodeStore;
  readonly #sessions: SessionStore;
  readonly #storage: Storage;
  readonly #logger: Logger;

  constructor(options: CoreDataOptions) {
    const { storage, acl } = options;
    this.#storage = storage;
    this.#logger = options.logger;
    this.embedder = options.embedder;
    this.acl = acl;
    const nodes = new NodeStore(storage, acl);
    const sessions = new SessionStore(storage, nodes, acl);
    this.#nodes = nodes;
    this.#sessions = sessions;
    this.index = new NodeIndex(options.dataDir, options.embedder, options.logger);
    const committer = new CoreCommitter(storage, nodes, this.index, options.bus, options.logger);
    this.#committer = committer;
    const scratchpadStore = new ScratchpadStore(storage);
    this.writer = new NodeWriter({ storage, nodes, sessions, committer });
    this.search = new NodeSearch(nodes, this.index, sessions, acl);
    this.scratchpads = new Scratchpads(storage, scratchpadStore, sessions, committer);
    this.lifecycle = new SessionLifecycle(storage, sessions);
    this.#commitDeps = { nodes, scratchpads: scratchpadStore, sessions, committer, acl };
  }

  /**
   * A node as the caller may read it, through the staged writes of the caller's session `sessionId` when not "".
   * NOT_FOUND — the same for another user's node (without a read grant) or session as for a missing one.
   */
  getNode(caller: Principal, id: number, sessionId: string): NodeState {
    const what = `node ${id}`;
    if (sessionId === "") return this.#nodes.reach(caller, id, "read", what);
    return this.#sessions.chain(caller, "session_id", sessionId).reach(id, "read", what);
  }

  commit(caller: Principal, id: string, strategy: MergeStrategy): Promise<CommitOutcome> {
    return commitSession(this.#commitDeps, caller, id, strategy);
  }

  /**
   * Runs `fn` in one core write transaction (see CoreCommitter.commit) with a way to remove every node an owner has
   * in a run: a run's deletion removes its nodes in the same transaction as the rest of the run, and the node index
   * and the node events follow the commit as for any core write.
   */
  commitWithRunPurge<T>(fn: (purgeRunNodes: (owner: number, runId: string) => number) => T): Promise<T> {
    return this.#committer.commit((changes) =>
      fn((owner, runId) => {
        let removed = 0;
        for (const id of this.#nodes.idsOfRun(owner, runId)) {
          const record = this.#nodes.readStored(id);
          if (record === undefined) continue;
          this.#nodes.removeInTransaction(record);
          changes.push({ kind: "node.delete", record });
          removed++;
        }
        return removed;
      }),
    );
  }

  /**
   * Runs `fn` in one core write transaction with a way to store a node under a fresh id, keeping everything else it
   * holds (a tenant import: text, metadata, times, version); the node index and the node events follow the commit as
   * for any core write.
   */
  commitWithNodeImport<T>(fn: (importNode: (node: Omit<NodeRecord, "v" | "id">, vector: Float32Array) => NodeRecord) => T): Promise<T> {
    return this.#committer.commit((changes) =>
      fn((node, vector) => {
        const record: NodeRecord = { ...node, v: NODE_RECORD_VERSION, id: this.#nodes.nextIdInTransaction() };
        this.#nodes.putInTransaction(record, vector);
        changes.push({ kind: "node.put", record, vector, inserted: true });
        return record;
      }),
    );
  }

  /**
   * Owner and run of a stored node the caller may read (nodes have no lane), e.g. for subscriptions to one node or
   * grants naming a run by one of its nodes; undefined alike when there is no such node and when it is out of reach.
   */
  locateNode(caller: Principal, nodeId: bigint): { owner: number; runId: string; lane: string } | undefined {
    const id = nodeIdOf(nodeId);
    const found = id === undefined ? undefined : this.#nodes.find(caller, id);
    return found === undefined ? undefined : { owner: found.record.owner, runId: found.record.runId, lane: "" };
  }

  /**
   * Clustered mode: the writes of a command another node computed, committed here: the node index follows them and
   * core subscribers here hear their events, as they would have had the command been computed here.
   */
  replayed(writes: readonly ReplayedWrite[]): void {
    this.#committer.replayed(writes);
  }

  /**
   * Start-up: when the embedder changed since the nodes were written, re-embeds every node that has text (a vector
   * given without text is the caller's and stays), so vectors of different models never mix; then loads the index.
   */
  async load(): Promise<void> {
    const { meta } = this.#storage.dbs;
    const stored = meta.get(NODE_EMBEDDER_KEY);
    if (stored !== this.embedder.id) {
      if (stored !== undefined) await this.#reembed(String(stored));
      await this.#storage.transaction(() => this.#storage.dbs.meta.put(NODE_EMBEDDER_KEY, this.embedder.id));
    }
    this.index.load(this.#nodes);
  }

  async #reembed(from: string): Promise<void> {
    const ids = this.#nodes.idsWithText();
    if (ids.length === 0) return;
    this.#logger.warn({ from, to: this.embedder.id, nodes: ids.length }, "embedder changed: re-embedding core nodes");
    for (let i = 0; i < ids.length; i += REEMBED_BATCH) {
      const batch = ids.slice(i, i + REEMBED_BATCH).flatMap((id) => {
        // Start-up: every node is re-embedded, whoever owns it.
        const record = this.#nodes.readStored(id);
        return record === undefined ? [] : [record];
      });
      const vectors = await this.embedder.embed(batch.map((record) => record.text));
      await this.#storage.transaction(() => {
        batch.forEach((record, j) => this.#nodes.putInTransaction(record, unitCopy(vectors[j] as Float32Array)));
        this.#nodes.bumpGenerationInTransaction();
      });
    }
  }

  close(): void {
    this.index.close();
  }
}
