// The core data plane assembled: stores, the node index, the ordered committer and the domain operations the core
// routes call. Built once at start-up; `load` fills the node index from LMDB before the server is ready.
import type { AccessControl } from "../acl/access-control.js";
import type { Logger } from "../platform/logger.js";
import type { Embedder } from "../retrieval/embedder.js";
import type { Storage } from "../storage/database.js";
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
import { nodeIdOf, unitCopy } from "./node-record.js";

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
  readonly nodes: NodeStore;
  readonly index: NodeIndex;
  readonly sessions: SessionStore;
  readonly writer: NodeWriter;
  readonly search: NodeSearch;
  readonly scratchpads: Scratchpads;
  readonly lifecycle: SessionLifecycle;
  readonly #commitDeps: Parameters<typeof commitSession>[0];
  readonly #storage: Storage;
  readonly #logger: Logger;

  constructor(options: CoreDataOptions) {
    const { storage, acl } = options;
    this.#storage = storage;
    this.#logger = options.logger;
    this.embedder = options.embedder;
    this.acl = acl;
    this.nodes = new NodeStore(storage);
    this.index = new NodeIndex(options.dataDir, options.embedder, options.logger);
    this.sessions = new SessionStore(storage, this.nodes);
    const committer = new CoreCommitter(storage, this.nodes, this.index, options.bus, options.logger);
    const scratchpadStore = new ScratchpadStore(storage);
    this.writer = new NodeWriter({ storage, nodes: this.nodes, sessions: this.sessions, committer, acl });
    this.search = new NodeSearch(this.nodes, this.index, this.sessions, acl);
    this.scratchpads = new Scratchpads(storage, scratchpadStore, this.sessions, committer);
    this.lifecycle = new SessionLifecycle(storage, this.sessions);
    this.#commitDeps = { nodes: this.nodes, scratchpads: scratchpadStore, sessions: this.sessions, committer, acl };
  }

  commit(caller: Principal, id: string, strategy: MergeStrategy): Promise<CommitOutcome> {
    return commitSession(this.#commitDeps, caller, id, strategy);
  }

  /** Owner and run of a stored node (nodes have no lane), e.g. for subscriptions to one node. */
  locateNode(nodeId: bigint): { owner: number; runId: string; lane: string } | undefined {
    const id = nodeIdOf(nodeId);
    const record = id === undefined ? undefined : this.nodes.get(id);
    return record === undefined ? undefined : { owner: record.owner, runId: record.runId, lane: "" };
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
    this.index.load(this.nodes);
  }

  async #reembed(from: string): Promise<void> {
    const ids = this.nodes.idsWithText();
    if (ids.length === 0) return;
    this.#logger.warn({ from, to: this.embedder.id, nodes: ids.length }, "embedder changed: re-embedding core nodes");
    for (let i = 0; i < ids.length; i += REEMBED_BATCH) {
      const batch = ids.slice(i, i + REEMBED_BATCH).flatMap((id) => {
        const record = this.nodes.get(id);
        return record === undefined ? [] : [record];
      });
      const vectors = await this.embedder.embed(batch.map((record) => record.text));
      await this.#storage.transaction(() => {
        batch.forEach((record, j) => this.nodes.putInTransaction(record, unitCopy(vectors[j] as Float32Array)));
        this.nodes.bumpGenerationInTransaction();
      });
    }
  }

  close(): void {
    this.index.close();
  }
}
