// The situations of every lesson and rule in memory, kept beside the catalog (as its observer): ranking compares a
// question with hundreds of lessons' situations, and reading each lesson's record and metadata for it would cost more
// than the rest of the query. Holds one entry per lesson or rule, as the catalog holds one row per entry.
import type { CatalogObserver } from "./catalog.js";
import type { EntryRecord } from "../storage/entry-store.js";
import { situationsOf, type LessonSituations } from "./situations.js";

const NONE: LessonSituations = { conditions: [], seen: [], notFor: [] };

export class LessonSituationIndex implements CatalogObserver {
  readonly #bySeq = new Map<number, LessonSituations>();

  added(record: EntryRecord): void {
    if (record.entryType === "lesson" || record.entryType === "rule") this.#bySeq.set(record.seq, situationsOf(record.metadataJson));
  }

  removed(seq: number): void {
    this.#bySeq.delete(seq);
  }

  /** An expired lesson's situations stay until its purge: nothing reads them, since no candidate is expired. */
  expired(): void {}

  released(seq: number): void {
    this.#bySeq.delete(seq);
  }

  /** A lesson's situations as last written; none for an entry that is no lesson or rule. */
  of(seq: number): LessonSituations {
    return this.#bySeq.get(seq) ?? NONE;
  }
}
