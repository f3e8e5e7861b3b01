// Open transactional sessions and their snapshots in LMDB, and the view of the store through a session: its staged
// writes over those of its parents over the store. A session or snapshot is its creator's alone: every lookup takes
// the caller, and another user's answers NOT_FOUND exactly as a missing one does.
import { randomBytes } from "node:crypto";
import type { AccessControl, Permission } from "../acl/access-control.js";
import type { Principal } from "../auth/principal.js";
import type { Storage } from "../storage/database.js";
import { notFound } from "../platform/errors.js";
import { reachNode } from "./node-access.js";
import type { NodeState } from "./node-record.js";
import type { NodeStore } from "./node-store.js";
import { checkVersions, decodeOptional } from "../storage/record-codec.js";
import { SCRATCHPAD_RECORD_VERSION, type ScratchpadRecord } from "./scratchpad-record.js";
import { decodeSession, decodeSnapshot, SESSION_RECORD_VERSION, StagedOps, stagedState, type SessionRecord, type SnapshotRecord } from "./session-record.js";

/**
 * A session and its ancestors, leaf first, as read at one moment. Level 0 is the session's own view, level i the
 * view of its i-th ancestor, and level `depth` the store itself.
 */
export class SessionChain {
  /** The session's owner, who reached it: node lookups through the chain are in this caller's scope. */
  readonly caller: Principal;
  readonly records: readonly SessionRecord[];
  readonly staged: readonly StagedOps[];
  readonly #nodes: NodeStore;
  readonly #acl: AccessControl;

  constructor(caller: Principal, records: readonly SessionRecord[], nodes: NodeStore, acl: AccessControl) {
    this.caller = caller;
    this.records = records;
    this.staged = records.map((r) => new StagedOps(r.ops));
    this.#nodes = nodes;
    this.#acl = acl;
  }

  get leaf(): SessionRecord {
    return this.records[0] as SessionRecord;
  }

  get depth(): number {
    return this.records.length;
  }

  /**
   * The node as the session sees it, when its caller may act on it with `permission`; NOT_FOUND naming `what` (the
   * same for a node out of the caller's reach as for a missing one) or PERMISSION_DENIED, as NodeStore.reach.
   */
  reach(id: number, permission: Permission, what: string): NodeState {
    return reachNode(this.#acl, this.caller, this.nodeAt(0, id), permission, what);
  }

  /**
   * Unscoped: the node as seen at a level, the nearest staged write winning and a staged delete hiding it. Only for
   * staging and commit internals comparing and re-reading nodes already reached; requests use `reach`.
   */
  nodeAt(level: number, id: number): NodeState | undefined {
    for (let i = level; i < this.staged.length; i++) {
      const op = (this.staged[i] as StagedOps).node(id);
      if (op !== undefined) return op.kind === "put" ? stagedState(op) : undefined;
    }
    return this.#nodes.storedState(id);
  }

  /** Ids with a staged write anywhere in the chain: the store's version of them is not what the session sees. */
  touchedIds(): Set<number> {
    const ids = new Set<number>();
    for (const ops of this.staged) for (const op of ops.ops) if (op.kind !== "scratchpad") ids.add(op.nodeId);
    return ids;
  }

  /** Staged nodes the session sees (not hidden by a nearer delete). */
  stagedNodes(): NodeState[] {
    const seen = new Set<number>();
    const states: NodeState[] = [];
    for (const ops of this.staged) {
      for (const op of ops.ops) {
        if (op.kind === "scratchpad" || seen.has(op.nodeId)) continue;
        seen.add(op.nodeId);
        if (op.kind === "put") states.push(stagedState(op));
      }
    }
    return states;
  }

  /** A scratchpad as the session sees it: the stored entries, then the staged writes of its ancestors and its own. */
  scratchpad(sessionId: string, stored: readonly ScratchpadRecord[]): ScratchpadRecord[] {
    let entries = [...stored];
    for (let i = this.records.length - 1; i >= 0; i--) {
      for (const op of (this.staged[i] as StagedOps).ops) {
        if (op.kind !== "scratchpad" || op.write.sessionId !== sessionId) continue;
        const { ttlMs, ...write } = op.write;
        if (write.key !== "") entries = entries.filter((e) => e.key !== write.key);
        const last = entries[entries.length - 1]?.timestamp ?? 0;
        const timestamp = Math.max(op.stagedAt, last + 1);
        entries.push({ v: SCRATCHPAD_RECORD_VERSION, id: op.id, ...write, timestamp, expiresAt: ttlMs > 0 ? timestamp + ttlMs : 0 });
      }
    }
    return entries;
  }
}

export class SessionStore {
  readonly #storage: Storage;
  readonly #nodes: NodeStore;
  readonly #acl: AccessControl;

  /** Opens the store; throws RecordVersionError when a session or snapshot was written by another schema version. */
  constructor(storage: Storage, nodes: NodeStore, acl: AccessControl) {
    this.#storage = storage;
    this.#nodes = nodes;
    this.#acl = acl;
    checkVersions("core_sessions", storage.dbs.coreSessions, SESSION_RECORD_VERSION);
    checkVersions("core_session_snapshots", storage.dbs.coreSnapshots, SESSION_RECORD_VERSION);
  }

  newId(): string {
    return `cs_${randomBytes(12).toString("hex")}`;
  }

  /**
   * Unscoped read, kept private: only for walking the tree of a session its owner already reached (its parents and
   * children, which share that owner).
   */
  #readStored(id: string): SessionRecord | undefined {
    return decodeOptional(this.#storage.dbs.coreSessions.get(id), (value) => decodeSession(id, value));
  }

  /** An open session of the caller; NOT_FOUND naming `field` — the same for another user's session as for none. */
  reach(caller: Principal, field: string, id: string): SessionRecord {
    const record = id === "" ? undefined : this.#readStored(id);
    if (record === undefined || record.owner !== caller.userId) throw notFound(`session "${id}" (${field})`);
    return record;
  }

  /** The session and its ancestors; NOT_FOUND naming `field` unless it is an open session of the caller. */
  chain(caller: Principal, field: string, id: string): SessionChain {
    const records = [this.reach(caller, field, id)];
    for (let parent = records[0]?.parentId ?? ""; parent !== ""; ) {
      const record = this.#readStored(parent);
      if (record === undefined) throw notFound(`session "${parent}" (parent of ${field} "${id}")`);
      records.push(record);
      parent = record.parentId;
    }
    return new SessionChain(caller, records, this.#nodes, this.#acl);
  }

  putInTransaction(record: SessionRecord): void {
    this.#storage.dbs.coreSessions.put(record.id, record);
  }

  removeInTransaction(id: string): void {
    this.#storage.dbs.coreSessions.remove(id);
  }

  /**
   * Inside the caller's transaction, closes a session already reached by its owner together with all its open
   * descendants, and unlinks it from its parent; returns how many sessions closed.
   */
  closeTreeInTransaction(session: SessionRecord): number {
    const closing: string[] = [];
    for (const queue = [session.id]; queue.length > 0; ) {
      const next = queue.shift() as string;
      closing.push(next);
      queue.push(...(this.#readStored(next)?.children ?? []));
    }
    const parent = session.parentId === "" ? undefined : this.#readStored(session.parentId);
    if (parent !== undefined) this.putInTransaction({ ...parent, children: parent.children.filter((c) => c !== session.id) });
    for (const closed of closing) this.removeInTransaction(closed);
    return closing.length;
  }

  /** The caller's snapshot of that name; NOT_FOUND otherwise (snapshots are keyed by owner: no other user's is read). */
  snapshot(caller: Principal, name: string): SnapshotRecord {
    const key = [caller.userId, name];
    const record = decodeOptional(this.#storage.dbs.coreSnapshots.get(key), (value) => decodeSnapshot(key, value));
    if (record === undefined) throw notFound(`snapshot "${name}"`);
    return record;
  }

  putSnapshotInTransaction(record: SnapshotRecord): void {
    this.#storage.dbs.coreSnapshots.put([record.owner, record.name], record);
  }
}
