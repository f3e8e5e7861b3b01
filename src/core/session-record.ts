// Transactional sessions as stored (decoded on every read): the staged writes of one session, and how a staged write
// folds into a session (staging in a session, a child committing into its parent and flattening for snapshots all
// fold the same way).
import { NODE_RECORD_VERSION, readNode, type NodeRecord, type NodeState } from "./node-record.js";
import { vectorBytes, vectorFromBytes } from "../storage/entry-store.js";
import { openRecord, type RecordReader } from "../storage/record-codec.js";
import { readScratchpadWrite, type ScratchpadWrite } from "./scratchpad-store.js";

/** The record version this build writes and reads, of sessions and snapshots alike. */
export const SESSION_RECORD_VERSION = 1;

/**
 * `base`: the node's version in the view under the session (its parent's view, or the store) when the session
 * first staged it; 0 when the node did not exist there (a staged insert). A commit refuses nodes whose version
 * there has moved on since.
 */
export interface StagedPut {
  readonly kind: "put";
  readonly nodeId: number;
  readonly base: number;
  /** The node as staged; its `version` is one past the version it was staged over. */
  readonly record: NodeRecord;
  /** Float32 bytes (msgpack keeps a Buffer exact, not a Float32Array). */
  readonly vector: Uint8Array;
}

export interface StagedDelete {
  readonly kind: "delete";
  readonly nodeId: number;
  readonly base: number;
  /** The node as it was when the delete was staged (its owner and run, for access checks and the event). */
  readonly record: NodeRecord;
}

export interface StagedScratchpad {
  readonly kind: "scratchpad";
  /** Entry id assigned at staging, kept at commit. */
  readonly id: string;
  readonly write: ScratchpadWrite;
  /** Unix milliseconds, the entry's provisional time in reads through the session. */
  readonly stagedAt: number;
}

export type StagedOp = StagedPut | StagedDelete | StagedScratchpad;
export type StagedNodeOp = StagedPut | StagedDelete;

export interface SessionRecord {
  readonly v: typeof SESSION_RECORD_VERSION;
  readonly id: string;
  /** Auth user id of the creator; nobody else can see or use the session. */
  readonly owner: number;
  /** "" for a top-level session. */
  readonly parentId: string;
  readonly createdAt: number;
  /** Open child sessions. */
  readonly children: readonly string[];
  /** Staged writes, oldest first; at most one node op per node. */
  readonly ops: readonly StagedOp[];
}

export interface SnapshotRecord {
  readonly v: typeof SESSION_RECORD_VERSION;
  readonly owner: number;
  readonly name: string;
  /** Session the snapshot was taken of. */
  readonly sessionId: string;
  readonly createdAt: number;
  /** The session's staged writes folded over those of its parents, so that a loaded session sees what it saw. */
  readonly ops: readonly StagedOp[];
}

/** How each kind of staged write is read: the one list of kinds, which the decoder accepts and no more. */
const STAGED_OP_READERS: { readonly [K in StagedOp["kind"]]: (r: RecordReader, kind: K) => Extract<StagedOp, { kind: K }> } = {
  put: (r, kind) => ({ kind, nodeId: r.integer("nodeId"), base: r.integer("base"), record: readNode(r.record("record", NODE_RECORD_VERSION)), vector: r.bytes("vector") }),
  delete: (r, kind) => ({ kind, nodeId: r.integer("nodeId"), base: r.integer("base"), record: readNode(r.record("record", NODE_RECORD_VERSION)) }),
  scratchpad: (r, kind) => ({ kind, id: r.string("id"), write: readScratchpadWrite(r.object("write")), stagedAt: r.number("stagedAt") }),
};

export const STAGED_OP_KINDS = Object.keys(STAGED_OP_READERS) as readonly StagedOp["kind"][];

function readOps(r: RecordReader): StagedOp[] {
  return r.objects("ops").map((op) => {
    const kind = op.oneOf("kind", STAGED_OP_KINDS);
    return (STAGED_OP_READERS[kind] as (r: RecordReader, kind: StagedOp["kind"]) => StagedOp)(op, kind);
  });
}

export function decodeSession(id: string, value: unknown): SessionRecord {
  const r = openRecord("core_sessions", id, value, SESSION_RECORD_VERSION);
  return {
    v: SESSION_RECORD_VERSION,
    id: r.string("id"),
    owner: r.integer("owner"),
    parentId: r.string("parentId"),
    createdAt: r.number("createdAt"),
    children: r.strings("children"),
    ops: readOps(r),
  };
}

/** `key`: the snapshot's [owner, name] key, for messages. */
export function decodeSnapshot(key: unknown, value: unknown): SnapshotRecord {
  const r = openRecord("core_session_snapshots", key, value, SESSION_RECORD_VERSION);
  return {
    v: SESSION_RECORD_VERSION,
    owner: r.integer("owner"),
    name: r.string("name"),
    sessionId: r.string("sessionId"),
    createdAt: r.number("createdAt"),
    ops: readOps(r),
  };
}

export function stagedState(op: StagedPut): NodeState {
  return { record: op.record, vector: vectorFromBytes(op.vector) };
}

export function stagedPut(base: number, state: NodeState): StagedPut {
  return { kind: "put", nodeId: state.record.id, base, record: state.record, vector: Buffer.from(vectorBytes(state.vector)) };
}

/** A session's staged writes with a lookup by node, for staging and folding. */
export class StagedOps {
  #ops: StagedOp[];
  readonly #byNode = new Map<number, StagedNodeOp>();

  constructor(ops: readonly StagedOp[]) {
    this.#ops = [...ops];
    for (const op of ops) if (op.kind !== "scratchpad") this.#byNode.set(op.nodeId, op);
  }

  get ops(): readonly StagedOp[] {
    return this.#ops;
  }

  node(id: number): StagedNodeOp | undefined {
    return this.#byNode.get(id);
  }

  /**
   * Folds a staged write in, as the latest: a node's earlier op is replaced but keeps its `base`; deleting a node
   * this session inserted (base 0) removes the insert altogether.
   */
  fold(op: StagedOp): void {
    if (op.kind === "scratchpad") {
      this.#ops.push(op);
      return;
    }
    const earlier = this.#byNode.get(op.nodeId);
    if (earlier !== undefined) this.#ops = this.#ops.filter((o) => o !== earlier);
    const base = earlier?.base ?? op.base;
    if (op.kind === "delete" && base === 0) {
      this.#byNode.delete(op.nodeId);
      return;
    }
    const folded: StagedNodeOp = { ...op, base };
    this.#byNode.set(op.nodeId, folded);
    this.#ops.push(folded);
  }
}
