// Opening, dropping, snapshotting and loading transactional sessions. Sessions and snapshots live in LMDB, so both
// outlive a restart; each belongs to its creator alone, and every lookup of one takes the caller.
import type { Principal } from "../auth/principal.js";
import type { Storage } from "../storage/database.js";
import { SESSION_RECORD_VERSION, StagedOps, type SessionRecord } from "./session-record.js";
import type { SessionStore } from "./session-store.js";

export interface SnapshotOutcome {
  readonly name: string;
  readonly writeCount: number;
}

export class SessionLifecycle {
  readonly #storage: Storage;
  readonly #sessions: SessionStore;

  constructor(storage: Storage, sessions: SessionStore) {
    this.#storage = storage;
    this.#sessions = sessions;
  }

  /** Opens a session, nested in `parentId` when not "". */
  async create(caller: Principal, parentId: string): Promise<SessionRecord> {
    const sessions = this.#sessions;
    return this.#storage.transaction(() => {
      const parent = parentId === "" ? undefined : sessions.reach(caller, "parent_session_id", parentId);
      const record: SessionRecord = { v: SESSION_RECORD_VERSION, id: sessions.newId(), owner: caller.userId, parentId, createdAt: Date.now(), children: [], ops: [] };
      sessions.putInTransaction(record);
      if (parent !== undefined) sessions.putInTransaction({ ...parent, children: [...parent.children, record.id] });
      return record;
    });
  }

  /** Discards a session's staged writes and closes it with all its open descendants. */
  async drop(caller: Principal, id: string): Promise<number> {
    const sessions = this.#sessions;
    return this.#storage.transaction(() => sessions.closeTreeInTransaction(sessions.reach(caller, "id", id)));
  }

  /**
   * Saves the session's view — its staged writes folded over those of its parents — under `name` (replacing the
   * caller's snapshot of that name); the session stays open.
   */
  async snapshot(caller: Principal, id: string, name: string): Promise<SnapshotOutcome> {
    const sessions = this.#sessions;
    return this.#storage.transaction(() => {
      const chain = sessions.chain(caller, "id", id);
      const flat = new StagedOps([]);
      for (let i = chain.depth - 1; i >= 0; i--) for (const op of (chain.staged[i] as StagedOps).ops) flat.fold(op);
      sessions.putSnapshotInTransaction({ v: SESSION_RECORD_VERSION, owner: caller.userId, name, sessionId: id, createdAt: Date.now(), ops: flat.ops });
      return { name, writeCount: flat.ops.length };
    });
  }

  /** Opens a new top-level session holding a snapshot's staged writes. */
  async load(caller: Principal, name: string): Promise<SessionRecord> {
    const sessions = this.#sessions;
    return this.#storage.transaction(() => {
      const snapshot = sessions.snapshot(caller, name);
      const record: SessionRecord = { v: SESSION_RECORD_VERSION, id: sessions.newId(), owner: caller.userId, parentId: "", createdAt: Date.now(), children: [], ops: snapshot.ops };
      sessions.putInTransaction(record);
      return record;
    });
  }
}
