// Key ranges of one run's records under [owner, run_id, …]: ids never hold NUL, and lmdb-js orders [owner, run_id, x]
// before [owner, `${run_id}\0`] for every x, so that key ends a run's range.
import type { Key } from "lmdb";

export function runEnd(owner: number, runId: string): Key {
  return [owner, `${runId}\u0000`];
}

export function runRange(owner: number, runId: string): { start: Key; end: Key } {
  return { start: [owner, runId], end: runEnd(owner, runId) };
}
