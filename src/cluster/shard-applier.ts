// Applies a shard's logged commands to this node's store exactly once: each command's effects and the shard's applied
// sequence are written in one LMDB transaction, so a node that crashes mid-way resumes after the last command it
// committed and never applies one twice. Replicas of a shard apply the same commands in the same order.
import type { Storage } from "../storage/database.js";
import type { CommandLog, LoggedCommand, ReadOptions } from "./command-log.js";

const appliedKey = (shard: number): string => `cluster:applied:${shard}`;

/** The last command of `shard` this store committed, 0 for none. */
export function appliedSequence(storage: Storage, shard: number): number {
  const value = storage.dbs.meta.get(appliedKey(shard));
  return typeof value === "number" ? value : 0;
}

/** The cluster (by name) whose log this store was applied from; undefined for a store that never joined one. */
const MEMBER_OF_KEY = "cluster:member-of";

export function clusterOfStore(storage: Storage): string | undefined {
  const value = storage.dbs.meta.get(MEMBER_OF_KEY);
  return typeof value === "string" ? value : undefined;
}

/** Marks the store as applied from `cluster`'s log, in the caller's transaction. */
export function markMemberOf(storage: Storage, cluster: string): void {
  storage.dbs.meta.put(MEMBER_OF_KEY, cluster);
}

/** Forgets every shard's applied position, in the caller's transaction: the store starts a new log at its beginning. */
export function forgetAppliedPositions(storage: Storage): void {
  for (const key of [...storage.dbs.meta.getKeys({ start: "cluster:applied:", end: "cluster:applied:~" })]) storage.dbs.meta.remove(key);
}

/**
 * Applies `shard`'s commands after the last one this store committed, up to the log's end when called; `apply` runs
 * inside the write transaction and must only write through `storage`, `committed` after the transaction committed
 * (for what is derived from the store). Returns the shard's applied sequence.
 */
export async function catchUp(
  log: CommandLog,
  storage: Storage,
  shard: number,
  apply: (command: LoggedCommand) => void,
  committed?: (command: LoggedCommand) => void,
  options: Omit<ReadOptions, "pageSize"> = {},
): Promise<number> {
  let applied = appliedSequence(storage, shard);
  for await (const command of log.read(shard, applied, options)) {
    let appliedNow = false;
    await storage.applyLog(() => {
      // A command another catch-up of the same shard committed meanwhile is not applied again.
      if (command.sequence <= appliedSequence(storage, shard)) return;
      apply(command);
      storage.dbs.meta.put(appliedKey(shard), command.sequence);
      appliedNow = true;
    });
    if (appliedNow) committed?.(command);
    applied = command.sequence;
  }
  return applied;
}
