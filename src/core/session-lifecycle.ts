// Opening, dropping, snapshotting and loading transactional sessions. Sessions and snapshots live in LMDB, so both
// outlive a restart; each belongs to its creator alone.
import type { Principal } from "../auth/principal.js";
import { notFound } from "../platform/errors.js";
import type { Storage } from "../storage/database.js";
import { StagedOps, type SessionRecord } from "./session-record.js";
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
      const parent = parentId === "" ? undefined : sessions.own("parent_session_id", parentId, caller.userId);
      const record: SessionRecord = { v: 1, id: sessions.newId(), owner: caller.userId, parentId, createdAt: Date.now(), children: [], ops: [] };
      sessions.putInTransaction(record);
      if (parent !== undefined) sessions.putInTransaction({ ...parent, children: [...parent.children, record.id] });
      return record;
    });
  }

  /** Discards a session's staged writes and closes it with all its open descendants. */
  async drop(caller: Principal, id: string): Promise<number> {
    const sessions = this.#sessions;
    return this.#storage.transaction(() => {
      const session = sessions.own("id", id, caller.userId);
      const closing: string[] = [];
      for (const queue = [session.id]; queue.length > 0; ) {
        const next = queue.shift() as string;
        closing.push(next);
        queue.push(...(sessions.get(next)?.children ?? []));
      }
      const parent = session.parentId === "" ? undefined : sessions.get(session.parentId);
      if (parent !== undefined) sessions.putInTransaction({ ...parent, children: parent.children.filter((c) => c !== id) });
      for (const closed of closing) sessions.removeInTransaction(closed);
      return closing.length;
    });
  }

  /**
   * Saves the session's view — its staged writes folded over those of its parents — under `name` (replacing the
   * caller's snapshot of that name); the session stays open.
   */
  async snapshot(caller: Principal, id: string, name: string): Promise<SnapshotOutcome> {
    const sessions = this.#sessions;
    return this.#storage.transaction(() => {
      const chain = sessions.chain("id", id, caller.userId);
      const flat = new StagedOps([]);
      for (let i = chain.depth - 1; i >= 0; i--) for (const op of (chain.staged[i] as StagedOps).ops) flat.fold(op);
      sessions.putSnapshotInTransaction({ v: 1, owner: caller.userId, name, sessionId: id, createdAt: Date.now(), ops: flat.ops });
      return { name, writeCount: flat.ops.length };
    });
  }

  /** Opens a new top-level session holding a snapshot's staged writes. */
  async load(caller: Principal, name: string): Promise<SessionRecord> {
    const sessions = this.#sessions;
    return this.#storage.transaction(() => {
      const snapshot = sessions.snapshot(caller.userId, name);
      if (snapshot === undefined) throw notFound(`snapshot "${name}"`);
      const record: SessionRecord = { v: 1, id: sessions.newId(), owner: caller.userId, parentId: "", createdAt: Date.now(), children: [], ops: snapshot.ops };
      sessions.putInTransaction(record);
      return record;
    });
  }
}
