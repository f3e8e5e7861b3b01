// Enforces SERVICE_MAX_STORE_BYTES: counts the LMDB pages each write transaction adds to the databases it writes and
// refuses, inside the transaction (so LMDB rolls all of it back), one that would take the store past the cap.
//
// lmdb-js grows its memory map whenever a write needs room (even past an explicit `mapSize`), so LMDB itself never
// reports a full map: the cap has to be ours. What it counts is the pages holding records and indexes (branch, leaf
// and overflow pages of every named database). Pages freed by deletes leave that count at once and LMDB reuses them
// before it grows the file, so deletions let writes resume; compaction then returns the free pages to the file
// system. The data file can therefore be larger than the cap by free pages not yet reused (or held by a long read),
// never by records. Derived files (the vector graphs under data/vectors, rebuilt from LMDB) are not counted.
import { storageFull } from "../platform/errors.js";

/** What `getStats()` reports for one LMDB database (lmdb-js types it as `{}`). */
interface DatabaseStats {
  readonly pageSize: number;
  readonly treeBranchPageCount: number;
  readonly treeLeafPageCount: number;
  readonly overflowPages: number;
}

/** Any LMDB handle: inside a write transaction its statistics include that transaction's own writes. */
export interface StatsSource {
  getStats(): object;
}

const PUTS = new Set(["put", "putSync"]);
const REMOVES = new Set(["remove", "removeSync", "clearAsync", "clearSync", "drop", "dropSync"]);

/**
 * Headroom above the cap for transactions that mostly delete (see `#freeing`): deleting a run first writes a small
 * tombstone, and deleting a lesson re-flags the entries derived from it, so a deletion can need a page or two even on
 * a full store. At least this many pages, or 1% of the cap if that is more.
 */
const MIN_RESERVE_PAGES = 32;

function pagesOf(db: StatsSource): number {
  const stats = db.getStats() as DatabaseStats;
  return stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages;
}

/** What one write transaction did, as far as the cap is concerned. */
export class WriteTally {
  /** Pages of each database written, as they were just before its first write in this transaction. */
  readonly before = new Map<StatsSource, number>();
  puts = 0;
  removes = 0;
  /** Pages the transaction added (negative: freed), once it passed the check; pending until it commits. */
  grown = 0;
}

export class StoreCap {
  readonly maxBytes: number;
  #pageSize = 4096;
  #capPages = 0;
  #reservePages = 0;
  /** Pages of the committed store: as last measured, plus the growth of every transaction committed since. */
  #usedPages = 0;
  /** Growth of transactions that passed the check and have not committed yet (lmdb-js commits them in batches). */
  #pendingPages = 0;
  /** The transaction whose callback is running; writes outside one (maintenance) are measured afterwards instead. */
  #current: WriteTally | undefined;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /** Bytes the committed store holds in pages (see the module comment for what counts). */
  get usedBytes(): number {
    return this.#usedPages * this.#pageSize;
  }

  /** Counts the committed store afresh; call while no write is in flight (open, after exclusive maintenance). */
  measure(databases: readonly StatsSource[]): void {
    const first = databases[0];
    if (first !== undefined) this.#pageSize = (first.getStats() as DatabaseStats).pageSize;
    this.#capPages = Math.floor(this.maxBytes / this.#pageSize);
    this.#reservePages = Math.max(MIN_RESERVE_PAGES, Math.ceil(this.#capPages / 100));
    this.#usedPages = databases.reduce((sum, db) => sum + pagesOf(db), 0);
    this.#pendingPages = 0;
  }

  /** Called by the write guard before each write to `db`; `recordsDeletion` marks a write that records a deletion. */
  beforeWrite(db: StatsSource, method: string, recordsDeletion: boolean): void {
    const tally = this.#current;
    if (tally === undefined) return;
    if (!tally.before.has(db)) tally.before.set(db, pagesOf(db));
    if (REMOVES.has(method) || recordsDeletion) tally.removes++;
    else if (PUTS.has(method)) tally.puts++;
  }

  /**
   * Runs a write transaction's callback, counting its writes, then checks the pages it added: past the cap it
   * throws `storageFull`, and the caller's transaction rolls back. A transaction that adds no page always passes,
   * so deletes and same-size updates work on a full store. `databases` gives every database for an exact recount
   * (inside the transaction, so including writes of others of the same batch) before a refusal. `refuse` false: only
   * counted (clustered mode's application of the log, whose transactions were checked where they were computed).
   */
  within<T>(tally: WriteTally, databases: () => readonly StatsSource[], fn: () => T, refuse = true): T {
    this.#current = tally;
    let result: T;
    try {
      result = fn();
    } finally {
      this.#current = undefined;
    }
    let grown = 0;
    for (const [db, before] of tally.before) grown += pagesOf(db) - before;
    if (grown > 0 && refuse) {
      const limit = this.#capPages + (this.#freeing(tally) ? this.#reservePages : 0);
      if (this.#usedPages + this.#pendingPages + grown > limit) {
        // The running count says full: recount exactly before refusing, and correct the count by what is found.
        const total = databases().reduce((sum, db) => sum + pagesOf(db), 0);
        this.#usedPages = total - this.#pendingPages - grown;
        if (total > limit) throw storageFull(this.maxBytes);
      }
    }
    tally.grown = grown;
    this.#pendingPages += grown;
    return result;
  }

  /** The transaction's fate, once lmdb-js has committed (or abandoned) its batch. */
  settled(tally: WriteTally, committed: boolean): void {
    this.#pendingPages -= tally.grown;
    if (committed) this.#usedPages += tally.grown;
  }

  /** Mostly a deletion: it removes at least as many keys as it puts (a tombstone counts as a removal). */
  #freeing(tally: WriteTally): boolean {
    return tally.removes > 0 && tally.removes >= tally.puts;
  }
}
