// Transactional sessions as stored: the staged writes of one session, and how a staged write folds into a session
// (staging in a session, a child committing into its parent and flattening for snapshots all fold the same way).
import type { NodeRecord, NodeState } from "./node-record.js";
import { vectorBytes, vectorFromBytes } from "../storage/entry-store.js";
import type { ScratchpadWrite } from "./scratchpad-store.js";

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
  readonly v: 1;
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
  readonly v: 1;
  readonly owner: number;
  readonly name: string;
  /** Session the snapshot was taken of. */
  readonly sessionId: string;
  readonly createdAt: number;
  /** The session's staged writes folded over those of its parents, so that a loaded session sees what it saw. */
  readonly ops: readonly StagedOp[];
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
