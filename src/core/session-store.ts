// Open transactional sessions and their snapshots in LMDB, and the view of the store through a session: its staged
// writes over those of its parents over the store.
import { randomBytes } from "node:crypto";
import type { Storage } from "../storage/database.js";
import { notFound } from "../platform/errors.js";
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
  readonly records: readonly SessionRecord[];
  readonly staged: readonly StagedOps[];
  readonly #nodes: NodeStore;

  constructor(records: readonly SessionRecord[], nodes: NodeStore) {
    this.records = records;
    this.staged = records.map((r) => new StagedOps(r.ops));
    this.#nodes = nodes;
  }

  get leaf(): SessionRecord {
    return this.records[0] as SessionRecord;
  }

  get depth(): number {
    return this.records.length;
  }

  /** The node as seen at a level: the nearest staged write wins, a staged delete hides it. */
  nodeAt(level: number, id: number): NodeState | undefined {
    for (let i = level; i < this.staged.length; i++) {
      const op = (this.staged[i] as StagedOps).node(id);
      if (op !== undefined) return op.kind === "put" ? stagedState(op) : undefined;
    }
    return this.#nodes.state(id);
  }

  node(id: number): NodeState | undefined {
    return this.nodeAt(0, id);
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

  /** Opens the store; throws RecordVersionError when a session or snapshot was written by another schema version. */
  constructor(storage: Storage, nodes: NodeStore) {
    this.#storage = storage;
    this.#nodes = nodes;
    checkVersions("core_sessions", storage.dbs.coreSessions, SESSION_RECORD_VERSION);
    checkVersions("core_session_snapshots", storage.dbs.coreSnapshots, SESSION_RECORD_VERSION);
  }

  newId(): string {
    return `cs_${randomBytes(12).toString("hex")}`;
  }

  get(id: string): SessionRecord | undefined {
    return decodeOptional(this.#storage.dbs.coreSessions.get(id), (value) => decodeSession(id, value));
  }

  /** An open session of `owner`, or NOT_FOUND naming `field`. */
  own(field: string, id: string, owner: number): SessionRecord {
    const record = id === "" ? undefined : this.get(id);
    if (record === undefined || record.owner !== owner) throw notFound(`session "${id}" (${field})`);
    return record;
  }

  /** The session and its ancestors; NOT_FOUND naming `field` unless it is an open session of `owner`. */
  chain(field: string, id: string, owner: number): SessionChain {
    const records = [this.own(field, id, owner)];
    for (let parent = records[0]?.parentId ?? ""; parent !== ""; ) {
      const record = this.get(parent);
      if (record === undefined) throw notFound(`session "${parent}" (parent of ${field} "${id}")`);
      records.push(record);
      parent = record.parentId;
    }
    return new SessionChain(records, this.#nodes);
  }

  putInTransaction(record: SessionRecord): void {
    this.#storage.dbs.coreSessions.put(record.id, record);
  }

  removeInTransaction(id: string): void {
    this.#storage.dbs.coreSessions.remove(id);
  }

  snapshot(owner: number, name: string): SnapshotRecord | undefined {
    const key = [owner, name];
    return decodeOptional(this.#storage.dbs.coreSnapshots.get(key), (value) => decodeSnapshot(key, value));
  }

  putSnapshotInTransaction(record: SnapshotRecord): void {
    this.#storage.dbs.coreSnapshots.put([record.owner, record.name], record);
  }
}
