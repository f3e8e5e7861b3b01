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
