// BatchInsert's `deduplicate`: which of a batch's items repeat the text of a current entry of the same run, user and
// entry type. Each run's current entries are digested once (a hash of user, type and text → the newest entry with
// it) and kept up to date with the entries written since, so a batch on a large run reads only what is new; the
// digest is rebuilt when an entry of the run was deleted. Digests are read in time slices (see scan.ts), so no
// build holds the event loop, and kept for a bounded number of entries in all. A digest only proposes: every match
// is checked against the stored entry (current, same user, type and text), so an entry superseded or rewritten
// since is never taken for a duplicate.
import { createHash } from "node:crypto";
import type { Catalog } from "../retrieval/catalog.js";
import { isStaleRecord, type EntryStore, type EntryType } from "../storage/entry-store.js";
import { TimeSlicer } from "./scan.js";

/** Entries remembered over all digests; the least recently used runs' digests are dropped first. */
export const MAX_DIGESTED_ENTRIES = 500_000;

export interface DedupItem {
  readonly userId: string;
  readonly entryType: EntryType;
  readonly content: string;
}

export function dedupKey(item: DedupItem): string {
  return `${item.userId}\u0000${item.entryType}\u0000${item.content}`;
}

function digestOf(key: string): string {
  return createHash("sha1").update(key).digest("base64url").slice(0, 16);
}

interface RunDigest {
  /** digestOf(dedupKey) → seq of the newest entry with it that was current when read. */
  readonly bySum: Map<string, number>;
  /** The run's catalog seqs up to `upTo` when the digest was brought up to date: fewer now means a deletion. */
  readonly size: number;
  readonly upTo: number;
}

/** How many of the ascending `seqs` are at most `value`. */
function countUpTo(seqs: readonly number[], value: number): number {
  let lo = 0;
  let hi = seqs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((seqs[mid] as number) <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class DuplicateFinder {
  readonly #catalog: Catalog;
  readonly #entries: EntryStore;
  readonly #maxEntries: number;
  /** `${owner}/${runId}` → digest, least recently used first. */
  readonly #digests = new Map<string, RunDigest>();
  /** Digests being brought up to date, shared by concurrent batches on the same run. */
  readonly #updating = new Map<string, Promise<RunDigest>>();

  constructor(catalog: Catalog, entries: EntryStore, maxEntries = MAX_DIGESTED_ENTRIES) {
    this.#catalog = catalog;
    this.#entries = entries;
    this.#maxEntries = maxEntries;
  }

  /** Id of the current entry of the owner's run that each of `items` repeats, by dedupKey; items repeating none are absent. */
  async find(owner: number, runId: string, items: readonly DedupItem[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    if (items.length === 0) return found;
    const digest = await this.#upToDate(owner, runId);
    for (const item of items) {
      const key = dedupKey(item);
      const seq = digest.bySum.get(digestOf(key));
      if (seq === undefined || !this.#catalog.has(seq) || this.#catalog.isStale(seq)) continue;
      const entry = this.#entries.get(seq);
      if (entry !== undefined && !isStaleRecord(entry) && dedupKey(entry) === key) found.set(key, entry.id);
    }
    return found;
  }

  #upToDate(owner: number, runId: string): Promise<RunDigest> {
    const name = `${owner}/${runId}`;
    const pending = this.#updating.get(name);
    if (pending !== undefined) return pending;
    const update = this.#update(name, owner, runId).finally(() => this.#updating.delete(name));
    this.#updating.set(name, update);
    return update;
  }

  async #update(name: string, owner: number, runId: string): Promise<RunDigest> {
    const seqs = this.#catalog.runSeqs(owner, runId);
    let known = this.#digests.get(name);
    if (known !== undefined && countUpTo(seqs, known.upTo) !== known.size) known = undefined;
    const bySum = known?.bySum ?? new Map<string, number>();
    const from = known === undefined ? 0 : known.upTo;
    // A copy of the new part: the catalog's list changes as entries are written or deleted while the read yields.
    const fresh = seqs.slice(countUpTo(seqs, from));
    const slicer = new TimeSlicer();
    for (const seq of fresh) {
      if (this.#catalog.has(seq) && !this.#catalog.isStale(seq)) {
        const entry = this.#entries.get(seq);
        if (entry !== undefined && !isStaleRecord(entry)) bySum.set(digestOf(dedupKey(entry)), seq);
      }
      const pause = slicer.tick();
      if (pause) await pause;
    }
    const digest: RunDigest = { bySum, size: (known?.size ?? 0) + fresh.length, upTo: fresh.at(-1) ?? from };
    this.#remember(name, digest);
    return digest;
  }

  #remember(name: string, digest: RunDigest): void {
    this.#digests.delete(name);
    this.#digests.set(name, digest);
    let total = 0;
    for (const d of this.#digests.values()) total += d.bySum.size;
    for (const [other, d] of this.#digests) {
      if (total <= this.#maxEntries) break;
      this.#digests.delete(other);
      total -= d.bySum.size;
    }
  }
}
