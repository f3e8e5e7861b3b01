// Listing an owner's stored lessons and rules, newest first, with filters and a cursor. Each page examines a bounded
// number of lessons, so a narrow filter over many lessons answers promptly with a shorter page and a cursor.
import type { Catalog } from "../retrieval/catalog.js";
import { isStaleRecord, type EntryRecord, type EntryStore } from "../storage/entry-store.js";
import { TimeSlicer } from "../memory/scan.js";

/** Lessons one page may read before it answers with what it found. */
export const MAX_EXAMINED_PER_PAGE = 20_000;

export interface LessonFilter {
  readonly owner: number;
  /** The run the lessons were learned in; "" = all runs. */
  readonly runId: string;
  readonly scope: string;
  readonly importance: string;
  readonly lessonType: string;
  readonly validationStatus: string;
  readonly promotionState: string;
  readonly pendingPromotion: boolean;
  readonly excludeStale: boolean;
  readonly userId: string;
  readonly minConfidence: number;
}

export interface LessonPage {
  readonly lessons: EntryRecord[];
  /** Seq to continue below; undefined on the last page. */
  readonly nextBefore: number | undefined;
}

/** A page of lessons, newest first; read in time slices (see memory/scan.ts). */
export async function listLessons(entries: EntryStore, catalog: Catalog, filter: LessonFilter, limit: number, before: number | undefined): Promise<LessonPage> {
  // A copy: the catalog's list may change while this awaits.
  const seqs = [...(filter.runId === "" ? catalog.lessonSeqs(filter.owner) : catalog.knowledgeSeqs(filter.owner, filter.runId))];
  const slicer = new TimeSlicer();
  let at = before === undefined ? seqs.length - 1 : lastIndexBelow(seqs, before);
  const lessons: EntryRecord[] = [];
  let examined = 0;
  for (; at >= 0 && lessons.length < limit && examined < MAX_EXAMINED_PER_PAGE; at--) {
    examined++;
    const pause = slicer.tick();
    if (pause) await pause;
    const record = entries.get(seqs[at] as number);
    if (record !== undefined && matches(record, filter)) lessons.push(record);
  }
  // The loop stops with `at` on the next lesson to read: the next page reads below the last one read.
  return { lessons, nextBefore: at < 0 ? undefined : (seqs[at + 1] as number) };
}

function matches(record: EntryRecord, filter: LessonFilter): boolean {
  const learning = record.learning;
  return (
    (filter.scope === "" || scopeOf(record) === filter.scope) &&
    (filter.importance === "" || record.importance === filter.importance) &&
    (filter.lessonType === "" || lessonTypeOf(record) === filter.lessonType) &&
    (filter.validationStatus === "" || record.validationStatus === filter.validationStatus) &&
    (filter.promotionState === "" || learning.promotionState === filter.promotionState) &&
    (!filter.pendingPromotion || learning.promotionState !== "") &&
    (!filter.excludeStale || !isStaleRecord(record)) &&
    (filter.userId === "" || record.userId === filter.userId) &&
    record.confidence >= filter.minConfidence
  );
}

/** A rule written as an entry of type `rule` (not through reflection) has no lesson scope: it holds in its run. */
export function scopeOf(record: EntryRecord): string {
  return record.lessonScope === "" ? "run" : record.lessonScope;
}

export function lessonTypeOf(record: EntryRecord): string {
  return record.lessonType !== "" ? record.lessonType : record.entryType === "rule" ? "rule" : "observation";
}

/** Index of the last seq below `before` in an ascending list, -1 when none. */
function lastIndexBelow(seqs: readonly number[], before: number): number {
  let lo = 0;
  let hi = seqs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((seqs[mid] as number) < before) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}
