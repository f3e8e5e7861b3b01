// Activity browse and export over the entry indexes, by sequence number: one page, the total of a listing and a full
// export. Every walk reads the indexes in bounded chunks and yields to the event loop every couple of milliseconds
// (see ../scan.ts), so a listing of a 100k-entry run never holds the server up; the cost of a walk is still linear
// in what it visits.
import type { GrantedRun } from "../../acl/access-control.js";
import type { EntryRecord, EntryStore, EntryType } from "../../storage/entry-store.js";
import { TimeSlicer, chunkedVisibleSeqs, mergeSeqs } from "../scan.js";
import { isProvenanceUnfiltered, matchesProvenance, provenanceSignature, type ProvenanceFilter } from "../provenance-filter.js";

export type Sort = "asc" | "desc";

/** Which entries a browse or export reads, all validated. */
export interface ActivityQuery {
  /** Owner whose entries are visible; undefined for admins, who see every owner's. */
  readonly owner: number | undefined;
  readonly runId: string | undefined;
  readonly userId: string;
  readonly agentId: string;
  readonly entryTypes: ReadonlySet<EntryType> | undefined;
  /** Inclusive bounds on createdAt, unix milliseconds. */
  readonly createdAfter: number | undefined;
  readonly createdBefore: number | undefined;
  readonly excludeDerived: boolean;
  readonly sort: Sort;
  /** Other owners' entries of `runId` the caller holds read grants on (empty for admins, who see all anyway). */
  readonly granted: readonly GrantedRun[];
  /** Only entries of some origins or one trust level; undefined: any. */
  readonly provenance?: ProvenanceFilter | undefined;
}

/** The filters of a listing as one canonical text: equal for equal filters, whatever their order. */
export function filterSignature(q: ActivityQuery): string {
  return JSON.stringify([
    q.owner ?? null,
    q.runId ?? null,
    q.userId,
    q.agentId,
    q.entryTypes === undefined ? null : [...q.entryTypes].sort(),
    q.createdAfter ?? null,
    q.createdBefore ?? null,
    q.excludeDerived,
    ...(isProvenanceUnfiltered(q.provenance) ? [] : provenanceSignature(q.provenance)),
  ]);
}

/**
 * ExportActivity answers in one message, so one export holds at most this many entries and characters; a larger one
 * is refused (see ExportTooLarge) rather than cut short: narrow it with created_after / created_before.
 */
export const MAX_EXPORT_ENTRIES = 100_000;
export const MAX_EXPORT_CHARS = 128 * 1024 * 1024;

export interface ExportLimits {
  readonly maxEntries: number;
  readonly maxChars: number;
}

const EXPORT_LIMITS: ExportLimits = { maxEntries: MAX_EXPORT_ENTRIES, maxChars: MAX_EXPORT_CHARS };

/** An export that would exceed its maximum entries or characters. */
export class ExportTooLarge extends Error {
  override readonly name = "ExportTooLarge";
  constructor(limit: "entries" | "characters", max: number) {
    super(
      limit === "entries"
        ? `more than ${max} entries match, the most one export holds`
        : `the matching entries exceed ${max} characters of JSON Lines, the most one export holds`,
    );
  }
}

/** Whether the query filters on fields of the record rather than only on the index it scans. */
export function filtersRecords(q: ActivityQuery): boolean {
  return (
    q.userId !== "" ||
    q.agentId !== "" ||
    q.entryTypes !== undefined ||
    q.createdAfter !== undefined ||
    q.createdBefore !== undefined ||
    q.excludeDerived ||
    !isProvenanceUnfiltered(q.provenance)
  );
}

function matches(q: ActivityQuery, e: EntryRecord): boolean {
  if (q.userId !== "" && e.userId !== q.userId) return false;
  if (q.agentId !== "" && e.agentId !== q.agentId) return false;
  if (q.entryTypes !== undefined && !q.entryTypes.has(e.entryType)) return false;
  if (q.createdAfter !== undefined && e.createdAt < q.createdAfter) return false;
  if (q.createdBefore !== undefined && e.createdAt > q.createdBefore) return false;
  if (!matchesProvenance(q.provenance, e.provenance)) return false;
  return !(q.excludeDerived && e.derived);
}

/** Whether a granted owner's entry lies in a lane the caller may read. */
function inGrantedLane(q: ActivityQuery, e: EntryRecord): boolean {
  const grant = q.granted.find((g) => g.owner === e.owner);
  return grant === undefined || grant.lanes === undefined || grant.lanes.has(e.lane);
}

/**
 * The seqs a query walks, in its order, starting after `afterSeq` (in that order) when given: the caller's (or
 * everyone's) entries, merged with the granted owners' runs. Safe to hold across awaits (see chunkedVisibleSeqs).
 */
function walk(entries: EntryStore, q: ActivityQuery, afterSeq?: number): Generator<number> {
  const reverse = q.sort === "desc";
  const sources = [q.owner, ...q.granted.map((g) => g.owner)].map((owner, i) =>
    chunkedVisibleSeqs(entries, owner, i === 0 ? q.runId : (q.granted[i - 1] as GrantedRun).runId, reverse, afterSeq),
  );
  return mergeSeqs(sources, reverse);
}

/**
 * Every visible entry that matches, in the query's order, after `afterSeq`; `undefined` for each visited entry that
 * does not, so a consumer can tick its slicer once per entry read, matching or not.
 */
function* visited(entries: EntryStore, q: ActivityQuery, afterSeq?: number): Generator<EntryRecord | undefined> {
  for (const seq of walk(entries, q, afterSeq)) {
    const record = entries.get(seq);
    yield record !== undefined && inGrantedLane(q, record) && matches(q, record) ? record : undefined;
  }
}

/** Up to `limit` matching entries after `afterSeq`, and whether more follow. */
export async function activityPage(entries: EntryStore, q: ActivityQuery, limit: number, afterSeq?: number): Promise<{ page: EntryRecord[]; more: boolean }> {
  const slicer = new TimeSlicer();
  const page: EntryRecord[] = [];
  for (const record of visited(entries, q, afterSeq)) {
    if (record !== undefined) {
      if (page.length === limit) return { page, more: true };
      page.push(record);
    }
    const pause = slicer.tick();
    if (pause) await pause;
  }
  return { page, more: false };
}

/**
 * Entries the query's indexes hold with a seq in (`above`, `upTo`], and how many of them match: `keys` reads no
 * record. Walks newest first, so entries written meanwhile (higher seqs) are never reached.
 */
export async function countRange(entries: EntryStore, q: ActivityQuery, above: number, upTo: number, keysOnly: boolean): Promise<{ keys: number; matching: number }> {
  const slicer = new TimeSlicer();
  const newestFirst = { ...q, sort: "desc" as const };
  let keys = 0;
  let matching = 0;
  for (const seq of walk(entries, newestFirst, upTo + 1)) {
    if (seq <= above) break;
    keys += 1;
    if (!keysOnly) {
      const record = entries.get(seq);
      if (record !== undefined && inGrantedLane(q, record) && matches(q, record)) matching += 1;
    }
    const pause = slicer.tick();
    if (pause) await pause;
  }
  return { keys, matching: keysOnly ? keys : matching };
}

/** Number of entries matching the query over all pages. */
export async function countActivity(entries: EntryStore, q: ActivityQuery): Promise<number> {
  const slicer = new TimeSlicer();
  let count = 0;
  if (filtersRecords(q) || q.granted.length > 0) {
    for (const record of visited(entries, q)) {
      if (record !== undefined) count += 1;
      const pause = slicer.tick();
      if (pause) await pause;
    }
  } else {
    // Only the scanned index decides membership: count its keys without reading records.
    for (const _ of walk(entries, q)) {
      count += 1;
      const pause = slicer.tick();
      if (pause) await pause;
    }
  }
  return count;
}

/** Every matching entry as one line (`line` must end it with "\n"); throws ExportTooLarge past the maximum. */
export async function exportActivity(
  entries: EntryStore,
  q: ActivityQuery,
  line: (record: EntryRecord) => string,
  limits: ExportLimits = EXPORT_LIMITS,
): Promise<{ content: string; entryCount: number }> {
  const slicer = new TimeSlicer();
  let content = "";
  let entryCount = 0;
  for (const record of visited(entries, q)) {
    if (record !== undefined) {
      if (entryCount === limits.maxEntries) throw new ExportTooLarge("entries", limits.maxEntries);
      const text = line(record);
      if (content.length + text.length > limits.maxChars) throw new ExportTooLarge("characters", limits.maxChars);
      content += text;
      entryCount += 1;
    }
    const pause = slicer.tick();
    if (pause) await pause;
  }
  return { content, entryCount };
}
