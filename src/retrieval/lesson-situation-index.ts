// The situations of every lesson and rule in memory, kept beside the catalog (as its observer): ranking compares a
// question with hundreds of lessons' situations, and reading each lesson's record and metadata for it would cost more
// than the rest of the query. Holds one entry per lesson or rule, as the catalog holds one row per entry.
import type { CatalogObserver } from "./catalog.js";
import type { EntryRecord } from "../storage/entry-store.js";
import { situationsOf, type LessonSituations } from "./situations.js";
import { terms } from "./text.js";

const NONE: LessonSituations = { conditions: [], seen: [], notFor: [] };

export class LessonSituationIndex implements CatalogObserver {
  readonly #bySeq = new Map<number, LessonSituations>();
  /** The index terms of each situation a lesson did not apply to, for lessons that have any. */
  readonly #notForTerms = new Map<number, readonly ReadonlySet<string>[]>();

  added(record: EntryRecord): void {
    if (record.entryType !== "lesson" && record.entryType !== "rule") return;
    const situations = situationsOf(record.metadataJson);
    this.#bySeq.set(record.seq, situations);
    if (situations.notFor.length > 0) this.#notForTerms.set(record.seq, situations.notFor.map((situation) => new Set(terms(situation))));
    else this.#notForTerms.delete(record.seq);
  }

  removed(seq: number): void {
    this.#bySeq.delete(seq);
    this.#notForTerms.delete(seq);
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

  /** The index terms of each situation a lesson was surfaced in and did not apply to (see `of(seq).notFor`). */
  notForTermsOf(seq: number): readonly ReadonlySet<string>[] {
    return this.#notForTerms.get(seq) ?? [];
  }
}
