// Keeps the log bounded by snapshots, not by memory or disk. Every node records how far it has applied each shard (its
// progress, in the shard map's bucket). On each round, the first node (by id) of each set of shards takes a snapshot
// of its store for that set; then a shard's commands are dropped up to the oldest position that every snapshot
// holding the shard, and every node serving it, has passed. A new node of that set starts from the snapshot and the
// tail; a node kept down until the log moved past it is told to start again from the snapshot (LogTruncated).
import type { KV } from "@nats-io/kv";
import type { Storage } from "../storage/database.js";
import type { Logger } from "../platform/logger.js";
import type { CommandLog } from "./command-log.js";
import { appliedSequence } from "./shard-applier.js";
import type { SnapshotStore } from "./shard-snapshots.js";

/** The snapshot of a set of shards is kept under this name (one per set: the newest replaces the older). */
export function snapshotName(shards: readonly number[]): string {
  return `shards-${[...shards].sort((a, b) => a - b).join("-")}`;
}

export interface NodeProgress {
  /** Tenant shards the node serves (the global shard 0 is served by all). */
  readonly shards: readonly number[];
  /** Applied position by shard, the global shard included. */
  readonly applied: Readonly<Record<string, number>>;
}

export interface TrimmingPlan {
  /** This node's id and tenant shards. */
  readonly nodeId: string;
  readonly shards: readonly number[];
  /** Every node's progress as the bucket holds it, this node's included. */
  readonly progress: ReadonlyMap<string, NodeProgress>;
  /** The positions of the snapshot of each set of shards, by snapshotName; a set without one is missing. */
  readonly snapshots: ReadonlyMap<string, Readonly<Record<string, number>>>;
}

/** Whether this node takes its set's snapshot: the first, by id, of the nodes recorded as serving exactly that set. */
export function takesSnapshot(plan: Pick<TrimmingPlan, "nodeId" | "shards" | "progress">): boolean {
  const name = snapshotName(plan.shards);
  const peers = [...plan.progress].filter(([, p]) => snapshotName(p.shards) === name).map(([id]) => id);
  return [...peers, plan.nodeId].sort()[0] === plan.nodeId;
}

/**
 * How far each shard's log may be dropped: to the oldest position among the snapshots of every set of shards that
 * includes it (a set with no snapshot keeps the whole log) and the progress of every node serving it.
 */
export function trimPositions(plan: Pick<TrimmingPlan, "progress" | "snapshots">): Map<number, number> {
  const limits = new Map<number, number>();
  const lower = (shard: number, position: number): void => {
    limits.set(shard, Math.min(position, limits.get(shard) ?? Infinity));
  };
  for (const { shards, applied } of plan.progress.values()) {
    const held = [0, ...shards];
    const snapshot = plan.snapshots.get(snapshotName(shards));
    for (const shard of held) {
      lower(shard, applied[String(shard)] ?? 0);
      lower(shard, snapshot?.[String(shard)] ?? 0);
    }
  }
  for (const [shard, position] of limits) if (!Number.isFinite(position) || position <= 0) limits.delete(shard);
  return limits;
}

export const progressKey = (nodeId: string): string => `progress.${nodeId}`;

/** One node's part in trimming the log: its progress, its set's snapshot when its turn, and the trim. */
export class LogTrimmer {
  readonly #plan: { readonly nodeId: string; readonly shards: readonly number[] };
  readonly #storage: Storage;
  readonly #log: CommandLog;
  readonly #bucket: KV;
  readonly #snapshots: SnapshotStore;
  readonly #logger: Logger;
  #running: Promise<void> | undefined;

  constructor(plan: { readonly nodeId: string; readonly shards: readonly number[] }, storage: Storage, log: CommandLog, bucket: KV, snapshots: SnapshotStore, logger: Logger) {
    this.#plan = plan;
    this.#storage = storage;
    this.#log = log;
    this.#bucket = bucket;
    this.#snapshots = snapshots;
    this.#logger = logger;
  }

  /** Records this node's progress (every node, often: it bounds how far others may trim). */
  async recordProgress(): Promise<void> {
    const applied: Record<string, number> = {};
    for (const shard of [0, ...this.#plan.shards]) applied[String(shard)] = appliedSequence(this.#storage, shard);
    await this.#bucket.put(progressKey(this.#plan.nodeId), JSON.stringify({ shards: this.#plan.shards, applied } satisfies NodeProgress));
  }

  /** One round: progress, the snapshot when this node takes it, the trim. One round at a time. */
  round(): Promise<void> {
    this.#running ??= this.#round().finally(() => (this.#running = undefined));
    return this.#running;
  }

  /** Resolves once no round is under way. */
  async idle(): Promise<void> {
    await this.#running?.catch(() => undefined);
  }

  async #round(): Promise<void> {
    await this.recordProgress();
    let progress = await this.#readProgress();
    if (takesSnapshot({ ...this.#plan, progress })) {
      const taken = await this.#snapshots.publish(this.#storage, snapshotName(this.#plan.shards), [0, ...this.#plan.shards]);
      this.#logger.info({ snapshot: taken.name, bytes: taken.bytes, positions: taken.positions }, "cluster snapshot published");
    }
    // The snapshots before the progress: a node that starts joining after this read of the snapshots restores one at
    // least as new, and one that started before it is in the progress read after (ClusterNode.bootstrap records it
    // first), so the trim never passes where a joining node starts.
    const snapshots = new Map<string, Readonly<Record<string, number>>>((await this.#snapshots.list()).map((s) => [s.name, s.positions]));
    progress = await this.#readProgress();
    for (const [shard, upTo] of trimPositions({ progress, snapshots })) await this.#log.truncate(shard, upTo);
  }

  async #readProgress(): Promise<Map<string, NodeProgress>> {
    const progress = new Map<string, NodeProgress>();
    for await (const key of await this.#bucket.keys("progress.>")) {
      const entry = await this.#bucket.get(key);
      if (entry === null || entry.operation !== "PUT") continue;
      try {
        const value = JSON.parse(entry.string()) as NodeProgress;
        if (Array.isArray(value.shards) && typeof value.applied === "object") progress.set(key.slice("progress.".length), value);
      } catch {
        // Not a progress record: ignored.
      }
    }
    return progress;
  }
}
