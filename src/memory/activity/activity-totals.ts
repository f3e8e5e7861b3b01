// ListActivity's `total_visible`, remembered per listing so that paging through a large filtered run reads its
// records once, not once per page. A remembered total covers the entries up to a seq; a later page counts only the
// entries written since. Before it is reused, the index keys up to that seq are counted again (no record is read):
// a deletion or a run deletion changes that count and the total is computed afresh. Record fields the filters read
// (user, agent, entry type, creation time, derived, provenance) never change after a write; lanes can, so listings limited to
// granted lanes are not remembered.
import type { EntryStore } from "../../storage/entry-store.js";
import { countActivity, countRange, filterSignature, filtersRecords, type ActivityQuery } from "./activity-scan.js";

/** Listings remembered at most; the least recently used is forgotten first. */
const CAPACITY = 64;

interface Remembered {
  /** Entries matching, among those with a seq up to `upTo`. */
  readonly matching: number;
  /** Index keys of the listing up to `upTo`. */
  readonly keys: number;
  readonly upTo: number;
}

function listingKey(q: ActivityQuery): string {
  return JSON.stringify([filterSignature(q), q.granted.map((g) => [g.owner, g.runId])]);
}

export class ActivityTotals {
  readonly #entries: EntryStore;
  readonly #remembered = new Map<string, Remembered>();

  constructor(entries: EntryStore) {
    this.#entries = entries;
  }

  /** Number of entries matching the query over all pages. */
  async count(q: ActivityQuery): Promise<number> {
    // Without record filters the index keys are the answer: counting them is as cheap as checking a remembered total.
    if ((!filtersRecords(q) && q.granted.length === 0) || q.granted.some((g) => g.lanes !== undefined)) return countActivity(this.#entries, q);
    const key = listingKey(q);
    const upTo = this.#entries.maxSeq();
    const known = this.#remembered.get(key);
    let next: Remembered;
    if (known !== undefined && (await countRange(this.#entries, q, 0, known.upTo, true)).keys === known.keys) {
      const since = await countRange(this.#entries, q, known.upTo, upTo, false);
      next = { matching: known.matching + since.matching, keys: known.keys + since.keys, upTo };
    } else {
      const all = await countRange(this.#entries, q, 0, upTo, false);
      next = { matching: all.matching, keys: all.keys, upTo };
    }
    this.#remembered.delete(key);
    this.#remembered.set(key, next);
    if (this.#remembered.size > CAPACITY) this.#remembered.delete(this.#remembered.keys().next().value as string);
    return next.matching;
  }
}
