// Committing a transactional session: conflicts with writes made outside the session are detected against the
// version each node had when the session first staged it, and refused unless the caller names a merge strategy;
// otherwise every staged write is applied in one transaction, to the parent session or to the store.
import { Code, ConnectError } from "@connectrpc/connect";
import type { AccessControl } from "../acl/access-control.js";
import type { Principal } from "../auth/principal.js";
import { permissionDenied } from "../platform/errors.js";
import type { CoreChange, CoreCommitter } from "./core-commit.js";
import { unitCopy, type NodeRecord, type NodeState } from "./node-record.js";
import type { NodeStore } from "./node-store.js";
import type { ScratchpadStore } from "./scratchpad-store.js";
import { StagedOps, stagedPut, stagedState, type StagedNodeOp, type StagedOp } from "./session-record.js";
import type { SessionChain, SessionStore } from "./session-store.js";

/** `refuse` (the default) fails a commit on any conflict; the others say how a conflicting write applies. */
export const MERGE_STRATEGIES = ["overwrite", "average", "bundle"] as const;
export type MergeStrategy = "refuse" | (typeof MERGE_STRATEGIES)[number];

export interface CommitOutcome {
  readonly applied: number;
  readonly skipped: number;
  /** Node ids whose conflicts a merge strategy resolved. */
  readonly merged: readonly number[];
}

export interface SessionCommitDeps {
  readonly nodes: NodeStore;
  readonly scratchpads: ScratchpadStore;
  readonly sessions: SessionStore;
  readonly committer: CoreCommitter;
  readonly acl: AccessControl;
}

interface Conflict {
  readonly nodeId: number;
  readonly current: NodeState | undefined;
}

function describe(conflicts: readonly Conflict[]): string {
  return conflicts.map((c) => `node ${c.nodeId} (${c.current === undefined ? "deleted" : "changed"})`).join(", ");
}

/** The staged vector merged with the current one: their mean, scaled to unit length for `bundle`. */
function mergedVector(strategy: MergeStrategy, staged: Float32Array, current: Float32Array): Float32Array {
  if (strategy !== "average" && strategy !== "bundle") return staged;
  const mean = new Float32Array(staged.length);
  for (let i = 0; i < mean.length; i++) mean[i] = ((staged[i] as number) + (current[i] ?? 0)) / 2;
  return strategy === "bundle" ? unitCopy(mean) : mean;
}

/** A staged write resolved against the current view under the session: what to apply, or nothing. */
type Resolved =
  | { readonly kind: "put"; readonly op: StagedNodeOp; readonly state: NodeState; readonly current: NodeState | undefined }
  | { readonly kind: "delete"; readonly op: StagedNodeOp; readonly current: NodeState }
  | { readonly kind: "scratchpad"; readonly op: Extract<StagedOp, { kind: "scratchpad" }> }
  | { readonly kind: "skip" };

function resolve(op: StagedOp, current: NodeState | undefined, conflicted: boolean, strategy: MergeStrategy): Resolved {
  if (op.kind === "scratchpad") return { kind: "scratchpad", op };
  // Deleted outside the session meanwhile: a staged update or delete has nothing left to apply to.
  if (current === undefined && op.base !== 0) return { kind: "skip" };
  if (op.kind === "delete") return current === undefined ? { kind: "skip" } : { kind: "delete", op, current };
  const staged = stagedState(op);
  if (!conflicted || current === undefined) return { kind: "put", op, state: staged, current };
  return { kind: "put", op, state: { record: staged.record, vector: mergedVector(strategy, staged.vector, current.vector) }, current };
}

/**
 * Commits a session of `caller` with the given strategy. Refuses with ABORTED, changing nothing, when a node the
 * session staged was changed or deleted under it since and no merge strategy is named.
 */
export async function commitSession(deps: SessionCommitDeps, caller: Principal, id: string, strategy: MergeStrategy): Promise<CommitOutcome> {
  return deps.committer.commit((changes) => {
    const chain = deps.sessions.chain(caller, "id", id);
    const session = chain.leaf;
    if (session.children.length > 0) {
      throw new ConnectError(`session "${id}" has open child sessions (${session.children.join(", ")}); commit or drop them first`, Code.FailedPrecondition);
    }
    // Every check comes before the first write: a throw inside the transaction does not undo earlier writes.
    const conflicts: Conflict[] = [];
    const currents = new Map<number, NodeState | undefined>();
    for (const op of session.ops) {
      if (op.kind === "scratchpad") continue;
      const current = chain.nodeAt(1, op.nodeId);
      currents.set(op.nodeId, current);
      if ((current?.record.version ?? 0) !== op.base) conflicts.push({ nodeId: op.nodeId, current });
      const owner = current?.record ?? op.record;
      if (owner.owner !== caller.userId && !deps.acl.allows(caller, owner.owner, owner.runId, "", "write")) {
        throw permissionDenied(`session "${id}" writes node ${op.nodeId}, on which write access was revoked; drop the session`);
      }
    }
    if (conflicts.length > 0 && strategy === "refuse") {
      throw new ConnectError(
        `session "${id}" conflicts with writes made outside it since it staged ${describe(conflicts)}; nothing was applied and the session is still open: commit with merge_strategy "overwrite", "average" or "bundle", or drop it`,
        Code.Aborted,
      );
    }
    const conflicted = new Set(conflicts.map((c) => c.nodeId));
    const resolved = session.ops.map((op) => resolve(op, op.kind === "scratchpad" ? undefined : currents.get(op.nodeId), op.kind !== "scratchpad" && conflicted.has(op.nodeId), strategy));
    const applied = resolved.filter((r) => r.kind !== "skip").length;
    const outcome: CommitOutcome = { applied, skipped: resolved.length - applied, merged: [...conflicted] };
    if (chain.depth > 1) commitIntoParent(deps, chain, resolved);
    else commitIntoStore(deps, session.owner, resolved, changes);
    deps.sessions.removeInTransaction(session.id);
    return outcome;
  });
}

function commitIntoStore(deps: SessionCommitDeps, owner: number, resolved: readonly Resolved[], changes: CoreChange[]): void {
  const now = Date.now();
  for (const r of resolved) {
    if (r.kind === "put") {
      const current = r.current?.record;
      const record: NodeRecord = {
        ...r.state.record,
        owner: current?.owner ?? r.state.record.owner,
        runId: current?.runId ?? r.state.record.runId,
        createdAt: current?.createdAt ?? now,
        updatedAt: now,
        version: (current?.version ?? 0) + 1,
      };
      deps.nodes.putInTransaction(record, r.state.vector);
      changes.push({ kind: "node.put", record, vector: r.state.vector, inserted: current === undefined });
    } else if (r.kind === "delete") {
      deps.nodes.removeInTransaction(r.current.record);
      changes.push({ kind: "node.delete", record: r.current.record });
    } else if (r.kind === "scratchpad") {
      const entry = deps.scratchpads.writeInTransaction(owner, r.op.write, now, r.op.id);
      changes.push({ kind: "memory.added", owner, entry });
    }
  }
}

/** A child's writes become its parent's staged writes; nothing reaches the store, so nothing is announced. */
function commitIntoParent(deps: SessionCommitDeps, chain: SessionChain, resolved: readonly Resolved[]): void {
  const parent = chain.records[1];
  if (parent === undefined) return;
  const ops = new StagedOps(parent.ops);
  for (const r of resolved) {
    if (r.kind === "put") {
      // Folded over the parent's view as it is now; the parent keeps its own base when it staged the node before.
      const version = (r.current?.record.version ?? 0) + 1;
      ops.fold(stagedPut(r.current?.record.version ?? 0, { record: { ...r.state.record, version }, vector: r.state.vector }));
    } else if (r.kind === "delete") {
      ops.fold({ kind: "delete", nodeId: r.op.nodeId, base: r.current.record.version, record: r.current.record });
    } else if (r.kind === "scratchpad") {
      ops.fold(r.op);
    }
  }
  deps.sessions.putInTransaction({ ...parent, ops: ops.ops, children: parent.children.filter((c) => c !== chain.leaf.id) });
}
