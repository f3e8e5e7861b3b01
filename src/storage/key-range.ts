// Key ranges of the records under a tuple prefix whose last element is an id, e.g. one run's records under
// [owner, run_id, …]: ids never hold NUL, and lmdb-js orders [..., id, x] before [..., `${id}\0`] for every x, so that
// key ends the range (a bound like "\uffff" would miss ids with characters above it, such as emoji).
import type { Key } from "lmdb";

type KeyPart = string | number;

/** The first key after every key under `prefix`. */
export function prefixEnd(prefix: readonly [...KeyPart[], string]): Key {
  return [...prefix.slice(0, -1), `${prefix[prefix.length - 1] as string}\u0000`];
}

/** Every key under `prefix`, for getRange / getKeys / getKeysCount. */
export function prefixRange(prefix: readonly [...KeyPart[], string]): { start: Key; end: Key } {
  return { start: [...prefix], end: prefixEnd(prefix) };
}

/** Every key of one owner's run under [owner, run_id, …]. */
export function runRange(owner: number, runId: string): { start: Key; end: Key } {
  return prefixRange([owner, runId]);
}

/** The first key after one owner's run. */
export function runEnd(owner: number, runId: string): Key {
  return prefixEnd([owner, runId]);
}
