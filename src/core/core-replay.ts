// Clustered mode: the core changes of a command another node computed, read back from its replayed writes in the
// order that node's committer recorded them, so that this node indexes and announces them alike.
import type { ReplayedWrite } from "../storage/database.js";
import { vectorFromBytes } from "../storage/vector-bytes.js";
import type { CoreChange } from "./core-commit.js";
import { decodeNode, type NodeRecord } from "./node-record.js";
import { decodeScratchpadEntry } from "./scratchpad-record.js";

export interface ReplayedChange {
  readonly change: CoreChange;
  /**
   * Whether the writing node announced it: a node rewritten at the same version (re-embedded at start-up after an
   * embedder change) is indexed anew but was never an update anyone made.
   */
  readonly announced: boolean;
}

export interface ReplayedCore {
  readonly changes: readonly ReplayedChange[];
  /** Whether a node or its vector was written: the node vector generation moved. */
  readonly nodesWritten: boolean;
}

interface PendingPut {
  readonly record: NodeRecord;
  readonly inserted: boolean;
  readonly announced: boolean;
}

/**
 * The changes a command's writes make, in write order. A node is written record first, vector second (NodeStore's
 * `putInTransaction`), so a put becomes a change when its vector arrives; a delete needs only the record it removed.
 * Every scratchpad entry is written under a fresh key: each new one is a `memory.added`; expired entries dropped by
 * the same write are not announced, here as there.
 */
export function replayedChanges(writes: readonly ReplayedWrite[]): ReplayedCore {
  const changes: ReplayedChange[] = [];
  const pending = new Map<number, PendingPut>();
  let nodesWritten = false;
  for (const { db, key, before, after } of writes) {
    if (db === "nodes") {
      nodesWritten = true;
      const previous = before === undefined ? undefined : decodeNode(key, before);
      if (after !== undefined) {
        const record = decodeNode(key, after);
        pending.set(record.id, { record, inserted: previous === undefined, announced: previous?.version !== record.version });
      } else if (previous !== undefined) {
        pending.delete(previous.id);
        changes.push({ change: { kind: "node.delete", record: previous }, announced: true });
      }
    } else if (db === "nodeVectors") {
      nodesWritten = true;
      const put = pending.get(key as number);
      if (put === undefined || after === undefined) continue;
      pending.delete(put.record.id);
      changes.push({ change: { kind: "node.put", record: put.record, vector: vectorFromBytes(after as Uint8Array), inserted: put.inserted }, announced: put.announced });
    } else if (db === "scratchpad" && before === undefined && after !== undefined) {
      const entry = decodeScratchpadEntry(key, after);
      changes.push({ change: { kind: "memory.added", owner: scratchpadOwner(key), entry }, announced: true });
    }
  }
  return { changes, nodesWritten };
}

/** The owner in a scratchpad key, [owner, session_id, seq]. */
function scratchpadOwner(key: unknown): number {
  const owner: unknown = Array.isArray(key) ? (key as unknown[])[0] : undefined;
  if (typeof owner !== "number" || !Number.isInteger(owner)) throw new Error(`core_scratchpad key ${JSON.stringify(key)} names no owner`);
  return owner;
}
