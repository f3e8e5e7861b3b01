// Links between an owner's runs: a parent run and the child runs linked under it, so that reads with
// `include_linked_runs` search the children too. Links are filed under the owner in LMDB both ways
// ([owner, parent, child] and [owner, child, parent]); every change is one transaction, announced after the commit.
import type { Key } from "lmdb";
import { Code, ConnectError } from "@connectrpc/connect";
import type { EventBus } from "../events/event-bus.js";
import type { Storage } from "../storage/database.js";
import { decodeOptional } from "../storage/record-codec.js";
import { RUN_LINK_RECORD_VERSION, decodeRunLink, type RunLinkRecord } from "./run-link-record.js";
import { runRange } from "../storage/key-range.js";

/** Most runs one run may have linked under it: reads with linked runs search at most this many more runs. */
export const MAX_LINKED_RUNS = 100;

/** A parent run and its linked runs, in link order. */
export interface LinkedScope {
  readonly runId: string;
  readonly linkedRunIds: readonly string[];
}


/** The other run of a link key [owner, run, other]. */
function thirdOf(key: Key): string {
  const other = Array.isArray(key) ? (key as unknown[])[2] : undefined;
  if (typeof other !== "string") throw new Error(`run link key ${JSON.stringify(key)} is not [owner, run_id, linked_run_id]`);
  return other;
}

export class RunLinks {
  readonly #storage: Storage;
  readonly #events: EventBus;
  readonly #now: () => number;

  constructor(storage: Storage, events: EventBus, now: () => number = Date.now) {
    this.#storage = storage;
    this.#events = events;
    this.#now = now;
  }

  /** The runs linked under `runId` by `owner`, in link order (oldest link first). At most MAX_LINKED_RUNS. */
  linkedRuns(owner: number, runId: string): string[] {
    const records: RunLinkRecord[] = [];
    for (const { key, value } of this.#storage.dbs.runLinks.getRange(runRange(owner, runId))) records.push(decodeRunLink(key, value));
    records.sort((a, b) => a.linkedAt - b.linkedAt || (a.linkedRunId < b.linkedRunId ? -1 : a.linkedRunId > b.linkedRunId ? 1 : 0));
    return records.map((r) => r.linkedRunId);
  }

  /** The runs a read of `runId` searches: the run itself, then (when asked) its linked runs — one level, not followed further. */
  runsToSearch(owner: number, runId: string, includeLinked: boolean): string[] {
    return includeLinked ? [runId, ...this.linkedRuns(owner, runId)] : [runId];
  }

  /** Links `linkedRunId` under `runId`; idempotent. `created` is false when the link was already there. */
  async link(owner: number, runId: string, linkedRunId: string): Promise<{ created: boolean; scope: LinkedScope }> {
    const created = await this.#storage.transaction(() => {
      const { runLinks, runLinkedBy } = this.#storage.dbs;
      const key: Key = [owner, runId, linkedRunId];
      if (decodeOptional(runLinks.get(key), (value) => decodeRunLink(key, value)) !== undefined) return false;
      let count = 0;
      for (const _ of runLinks.getKeys({ ...runRange(owner, runId), limit: MAX_LINKED_RUNS })) count++;
      if (count >= MAX_LINKED_RUNS) {
        throw new ConnectError(`run_id: the run already has ${MAX_LINKED_RUNS} linked runs, the most a run may have; unlink one first`, Code.ResourceExhausted);
      }
      const record: RunLinkRecord = { v: RUN_LINK_RECORD_VERSION, owner, runId, linkedRunId, linkedAt: this.#now() };
      runLinks.put(key, record);
      runLinkedBy.put([owner, linkedRunId, runId], record);
      return true;
    });
    if (created) this.#announce("run.linked", owner, runId, linkedRunId);
    return { created, scope: { runId, linkedRunIds: this.linkedRuns(owner, runId) } };
  }

  /** Removes the link; `removed` is false when there was none. */
  async unlink(owner: number, runId: string, linkedRunId: string): Promise<{ removed: boolean; scope: LinkedScope }> {
    const removed = await this.#storage.transaction(() => {
      const { runLinks, runLinkedBy } = this.#storage.dbs;
      const key: Key = [owner, runId, linkedRunId];
      if (decodeOptional(runLinks.get(key), (value) => decodeRunLink(key, value)) === undefined) return false;
      runLinks.remove(key);
      runLinkedBy.remove([owner, linkedRunId, runId]);
      return true;
    });
    if (removed) this.#announce("run.unlinked", owner, runId, linkedRunId);
    return { removed, scope: { runId, linkedRunIds: this.linkedRuns(owner, runId) } };
  }

  /**
   * Inside a run deletion's transaction: removes every link to or from the owner's run (at most MAX_LINKED_RUNS
   * from it; the links to it are as many as the owner's runs linking it). Returns how many links were removed.
   */
  forgetRunInTransaction(owner: number, runId: string): number {
    const { runLinks, runLinkedBy } = this.#storage.dbs;
    const children = [...runLinks.getKeys(runRange(owner, runId))];
    const parents = [...runLinkedBy.getKeys(runRange(owner, runId))];
    for (const key of children) {
      runLinks.remove(key);
      runLinkedBy.remove([owner, thirdOf(key), runId]);
    }
    for (const key of parents) {
      runLinkedBy.remove(key);
      runLinks.remove([owner, thirdOf(key), runId]);
    }
    return children.length + parents.length;
  }

  #announce(type: "run.linked" | "run.unlinked", owner: number, runId: string, linkedRunId: string): void {
    this.#events.publish({ type, owner, runId, agentId: "", payload: JSON.stringify({ run_id: runId, linked_run_id: linkedRunId }) });
  }
}
