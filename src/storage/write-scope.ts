// Whose data a request or a background task writes, carried through its async calls. Clustered mode places an
// owner's writes on the owner's shard and gives the request back the log positions it wrote at (its consistency
// token); writes outside any owner's scope (users and keys, start-up) belong to the global shard. Standalone mode
// carries the scope too and ignores it.
import { AsyncLocalStorage } from "node:async_hooks";

export interface WriteScope {
  /** The owner whose data is written; undefined: data of no single owner. */
  readonly owner: number | undefined;
  /** The log position of the last replicated write this scope made, by shard (clustered mode fills it). */
  readonly written: Map<number, number>;
}

const scopes = new AsyncLocalStorage<WriteScope>();

/** Runs `fn` with writes belonging to `owner` (undefined: to no single owner, the global shard). */
export function inWriteScope<T>(owner: number | undefined, fn: () => T): T {
  return scopes.run({ owner, written: new Map() }, fn);
}

/** The scope of the current request or task, if it set one. */
export function currentWriteScope(): WriteScope | undefined {
  return scopes.getStore();
}
