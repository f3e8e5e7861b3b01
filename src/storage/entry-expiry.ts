// When an entry expires: the sooner of its own expiry (ttl_seconds / expires_at) and the retention policy that applies
// to it, read against the memory's one clock. Every read path asks this (EntryStore lookups, the catalog's candidates),
// so an expired entry is invisible everywhere from the same instant. Expiry is final: an entry once seen expired stays
// hidden until the purge removes it, even if a policy is relaxed meanwhile (the catalog remembers the entries it held
// when they expired; this module those it never held: expired before start-up, or replayed late).
import { ENTRY_TYPES, type EntryRecord } from "./entry-record.js";
import type { RetentionStore } from "./retention-store.js";

/** The fields expiry is judged from (a record, or the catalog's columns of one). */
export interface ExpiryFacts {
  readonly seq: number;
  readonly owner: number;
  readonly runId: string;
  /** Index in ENTRY_TYPES. */
  readonly typeIndex: number;
  readonly createdAt: number;
  /** The entry's own expiry in unix ms; 0 for none. */
  readonly expiresAt: number;
}

/** The index that knows when the entries it holds expire (the catalog): it catches up with the clock on demand. */
export interface ExpiringIndex {
  /** Takes out of every count and list what has expired by now. */
  expireDue(): void;
  /** Whether it holds this entry as expired, awaiting its purge. */
  holdsExpired(seq: number): boolean;
}

export class EntryExpiry {
  /** The memory's clock, unix ms. */
  readonly now: () => number;
  readonly retention: RetentionStore | undefined;
  /** Entries seen expired, not purged yet and not held by the catalog: hidden whatever the clock or policies say later. */
  readonly #hidden = new Set<number>();
  #index: ExpiringIndex = { expireDue: () => undefined, holdsExpired: () => false };

  constructor(now: () => number, retention?: RetentionStore) {
    this.now = now;
    this.retention = retention;
  }

  /** Registers the catalog, which knows when each entry it holds expires. */
  settleWith(index: ExpiringIndex): void {
    this.#index = index;
  }

  /** Catches the catalog up with the clock, so that `isHidden` alone answers for each seq of a scan. */
  settle(): void {
    this.#index.expireDue();
  }

  /** Unix ms at which the entry expires; 0 for never. */
  expiryOf(facts: ExpiryFacts): number {
    const own = facts.expiresAt;
    const retention = this.retention;
    if (retention === undefined || !retention.hasPolicies(facts.owner)) return own;
    const maxAge = retention.maxAgeMs(facts.owner, facts.runId, facts.typeIndex);
    if (maxAge === 0) return own;
    const byPolicy = facts.createdAt + maxAge;
    return own === 0 ? byPolicy : Math.min(own, byPolicy);
  }

  /** When a record expires (unix ms, 0: never): its own expiry or its retention policy's, whichever is sooner. */
  expiryOfRecord(record: EntryRecord): number {
    if (this.retention === undefined || !this.retention.hasPolicies(record.owner)) return record.expiresAt;
    return this.expiryOf(factsOf(record));
  }

  /** Whether a stored record is expired now (or was seen expired and awaits its purge). */
  isExpired(record: EntryRecord, now = this.now()): boolean {
    if (this.isHidden(record.seq)) return true;
    if (record.expiresAt === 0 && (this.retention === undefined || !this.retention.hasPolicies(record.owner))) return false;
    const at = this.expiryOf(factsOf(record));
    return at !== 0 && at <= now;
  }

  /** Marks an entry the catalog does not hold expired for good: it stays hidden until `purged`. */
  hide(seq: number): void {
    this.#hidden.add(seq);
  }

  /** Whether the entry was seen expired and awaits its purge. */
  isHidden(seq: number): boolean {
    return this.#hidden.has(seq) || this.#index.holdsExpired(seq);
  }

  /** The entry left the store (purged, or deleted on another node): nothing to remember of it. */
  purged(seq: number): void {
    this.#hidden.delete(seq);
  }

  /**
   * Up to `limit` expired entries awaiting their purge that the catalog does not hold (expired before start-up, or
   * replayed late); the catalog lists its own (`Catalog.expiredSeqs`).
   */
  unheld(limit: number): number[] {
    const out: number[] = [];
    for (const seq of this.#hidden) {
      if (out.length === limit) break;
      out.push(seq);
    }
    return out;
  }
}

export function factsOf(record: EntryRecord): ExpiryFacts {
  return { seq: record.seq, owner: record.owner, runId: record.runId, typeIndex: ENTRY_TYPES.indexOf(record.entryType), createdAt: record.createdAt, expiresAt: record.expiresAt };
}
