// The one way core writes reach the store: a durable LMDB transaction, then — strictly in commit order — the
// in-memory node index is updated and the writes' events are published.
import type { Logger } from "../platform/logger.js";
import type { ReplayedWrite, Storage } from "../storage/database.js";
import type { CoreEvent, CoreEventBus } from "./core-events.js";
import { isoTime, unitCopy, type NodeRecord } from "./node-record.js";
import type { NodeIndex } from "./node-index.js";
import type { NodeStore } from "./node-store.js";
import { replayedChanges } from "./core-replay.js";
import { scratchpadEntryJson, type ScratchpadRecord } from "./scratchpad-record.js";

/** A write applied to the store, recorded inside its transaction and announced after the commit. */
export type CoreChange =
  | { readonly kind: "node.put"; readonly record: NodeRecord; readonly vector: Float32Array; readonly inserted: boolean }
  | { readonly kind: "node.delete"; readonly record: NodeRecord }
  | { readonly kind: "memory.added"; readonly owner: number; readonly entry: ScratchpadRecord };

interface Settled {
  readonly changes: readonly CoreChange[];
  readonly generation: number | undefined;
}

export function eventOf(change: CoreChange): CoreEvent {
  switch (change.kind) {
    case "node.put":
      return {
        type: change.inserted ? "node.inserted" : "node.updated",
        owner: change.record.owner,
        nodeId: BigInt(change.record.id),
        runId: change.record.runId,
        metadataJson: change.record.metadataJson,
        createdAt: isoTime(change.record.createdAt),
        updatedAt: isoTime(change.record.updatedAt),
        vector: unitCopy(change.vector),
      };
    case "node.delete":
      return { type: "node.deleted", owner: change.record.owner, nodeId: BigInt(change.record.id), runId: change.record.runId };
    case "memory.added":
      return { type: "memory.added", owner: change.owner, sessionId: change.entry.sessionId, entryJson: scratchpadEntryJson(change.entry) };
  }
}

export class CoreCommitter {
  readonly #storage: Storage;
  readonly #nodes: NodeStore;
  readonly #index: NodeIndex;
  readonly #bus: CoreEventBus;
  readonly #logger: Logger;
  /**
   * Tickets are taken inside transactions, which LMDB runs one at a time in commit order: the one in-memory effect a
   * commit's callback has, taken once per commit however often the callback runs (see `commit`).
   */
  #nextTicket = 0;
  #nextToSettle = 0;
  readonly #waiting = new Map<number, Settled>();

  constructor(storage: Storage, nodes: NodeStore, index: NodeIndex, bus: CoreEventBus, logger: Logger) {
    this.#storage = storage;
    this.#logger = logger;
    this.#nodes = nodes;
    this.#index = index;
    this.#bus = bus;
  }

  /**
   * Runs `fn` in one write transaction. `fn` must check everything before its first write (a throw does not roll
   * back what it already wrote) and pushes the changes it applies. Resolves once the transaction is durable and
   * its changes are indexed and announced, after those of every earlier commit.
   */
  async commit<T>(fn: (changes: CoreChange[]) => T): Promise<T> {
    let ticket: number | undefined;
    try {
      // The callback may run more than once, only the last run's writes kept (clustered mode): the changes to index
      // and announce are the ones it returns, and a second ticket would never settle and hold back every later commit.
      const { value, settled } = await this.#storage.transaction(() => {
        const changes: CoreChange[] = [];
        const value = fn(changes);
        const generation = changes.some((c) => c.kind !== "memory.added") ? this.#nodes.bumpGenerationInTransaction() : undefined;
        ticket ??= this.#nextTicket++;
        return { value, settled: { changes, generation } };
      });
      this.#settle(ticket as number, settled);
      return value;
    } catch (e: unknown) {
      // A transaction that took a ticket and then failed to commit must not hold back later commits.
      if (ticket !== undefined && !this.#waiting.has(ticket) && ticket >= this.#nextToSettle) {
        this.#settle(ticket, { changes: [], generation: undefined });
      }
      throw e;
    }
  }

  #settle(ticket: number, settled: Settled): void {
    this.#waiting.set(ticket, settled);
    for (let next = this.#waiting.get(this.#nextToSettle); next !== undefined; next = this.#waiting.get(this.#nextToSettle)) {
      this.#waiting.delete(this.#nextToSettle);
      this.#nextToSettle++;
      try {
        this.#apply(next);
      } catch (e: unknown) {
        // The write is durable; a failing listener or index update must neither fail it nor stall later commits.
        this.#logger.error({ err: e }, "applying a committed core write failed");
      }
    }
  }

  /**
   * Clustered mode: the writes of a command another node computed, committed here: its nodes indexed and its changes
   * announced on this node's bus, as that node's commit did there. Applied as the log delivers them, not queued
   * behind this node's own commits, whose tickets follow the order they were computed in rather than the log's.
   */
  replayed(writes: readonly ReplayedWrite[]): void {
    const { changes, nodesWritten } = replayedChanges(writes);
    if (changes.length === 0 && !nodesWritten) return;
    const announced = new Set(changes.flatMap(({ change, announced }) => (announced ? [change] : [])));
    this.#apply({ changes: changes.map(({ change }) => change), generation: nodesWritten ? this.#nodes.generation() : undefined }, announced);
  }

  /** `announced`: the changes to publish, when not every one (a replay). */
  #apply({ changes, generation }: Settled, announced?: ReadonlySet<CoreChange>): void {
    for (const change of changes) {
      if (change.kind === "node.put") this.#index.put(change.record, change.vector);
      else if (change.kind === "node.delete") this.#index.remove(change.record);
    }
    if (generation !== undefined) this.#index.committed(generation);
    for (const change of changes) if (announced?.has(change) ?? true) this.#bus.publish(eventOf(change));
  }
}
