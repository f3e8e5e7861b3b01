// Activity browse, export and append: validates at the boundary, pages over the entry indexes by sequence number.
import { createHash } from "node:crypto";
import { create, toJsonString } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  ActivityEntrySchema,
  type ActivityEntry,
  type ListActivityRequest,
  type MemoryService,
} from "../../../gen/engram/v2/memory_service_pb.js";
import { callerOf, isAdmin } from "../../auth/principal.js";
import type { AccessControl, GrantedRun } from "../../acl/access-control.js";
import type { EventBus } from "../../events/event-bus.js";
import { invalidArgument, quoted } from "../../platform/errors.js";
import { isStaleRecord, newEntry, type EntryRecord, type EntryStore, type EntryType, type NewEntry } from "../../storage/entry-store.js";
import { bounded, content, entryTypeFilter, required } from "./validate.js";

/** Page size bounds of ListActivity; an omitted or 0 limit resolves to the minimum. */
export const MIN_PAGE_SIZE = 1;
export const MAX_PAGE_SIZE = 500;
/** Characters (Unicode code points) of content kept by the `compact` projection. */
export const COMPACT_CONTENT_CHARS = 200;
/**
 * ExportActivity answers in one message, so it stops at whole lines once either cap is reached (in the requested
 * order): a larger export would not fit in one JavaScript string or one reasonable response. Narrow the export with
 * `created_after` / `created_before` to get the rest.
 */
export const MAX_EXPORT_ENTRIES = 100_000;
export const MAX_EXPORT_CHARS = 128 * 1024 * 1024;
const MAX_PAGE_TOKEN_LENGTH = 512;

type Sort = "asc" | "desc";
type Projection = "full" | "compact";
type MemoryImpl = ServiceImpl<typeof MemoryService>;

export type ActivityHandlers = Pick<MemoryImpl, "listActivity" | "exportActivity" | "appendActivity">;

export interface ActivityDeps {
  readonly entries: EntryStore;
  /** Embeds, indexes and durably stores one entry; resolves with the stored record. */
  readonly write: (entry: NewEntry) => Promise<EntryRecord>;
  /** When given, AppendActivity publishes `activity.appended` on it. */
  readonly events?: EventBus;
  /** When given, a listing of one run also shows the entries of that run's other owners who granted the caller read. */
  readonly acl?: AccessControl;
}

/** Which entries a browse or export reads, all validated. */
interface ActivityQuery {
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
}

type FilterFields = Pick<ListActivityRequest, "runId" | "userId" | "agentId" | "entryTypes" | "createdAfter" | "createdBefore" | "sort">;

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Unix milliseconds of an RFC 3339 date-time; fractions below a millisecond are truncated. */
export function parseRfc3339(field: string, value: string): number {
  const bad = (): Error => invalidArgument(field, `must be an RFC 3339 date-time such as 2024-05-01T12:00:00Z; got ${quoted(value)}`);
  const match = RFC3339.exec(value);
  if (match === null) throw bad();
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const daysInMonth = month === 2 && leap ? 29 : (DAYS_IN_MONTH[month - 1] ?? 0);
  // Second 60 is a leap second, which RFC 3339 allows; it lands on the next minute's first second.
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 60) throw bad();
  let offsetMinutes = 0;
  if (match[8] !== undefined) {
    const offsetHours = Number(match[9]);
    const offsetMins = Number(match[10]);
    if (offsetHours > 23 || offsetMins > 59) throw bad();
    offsetMinutes = (match[8] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const millis = Number(`${match[7] ?? ""}000`.slice(0, 3));
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, does not map years 0-99 to 1900-1999.
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, millis);
  return date.getTime() - offsetMinutes * 60_000;
}

/** The first `max` code points: never splits a surrogate pair. */
export function firstCharacters(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = 0;
  for (let taken = 0; taken < max && end < text.length; taken += 1) {
    end += (text.codePointAt(end) ?? 0) > 0xffff ? 2 : 1;
  }
  return text.slice(0, end);
}

function sortOf(value: string): Sort {
  if (value === "" || value === "desc") return "desc";
  if (value === "asc") return "asc";
  throw invalidArgument("sort", `must be "desc" or "asc"; got ${quoted(value)}`);
}

function projectionOf(value: string): Projection {
  if (value === "" || value === "full") return "full";
  if (value === "compact") return "compact";
  throw invalidArgument("projection", `must be "full" or "compact"; got ${quoted(value)}`);
}


function queryOf(req: FilterFields, excludeDerived: boolean, ctx: HandlerContext, acl: AccessControl | undefined): ActivityQuery {
  const caller = callerOf(ctx);
  const runId = req.runId === "" ? undefined : bounded("run_id", req.runId);
  return {
    granted: acl === undefined || runId === undefined || isAdmin(caller) ? [] : acl.readableRuns(caller, runId),
    owner: isAdmin(caller) ? undefined : caller.userId,
    runId,
    userId: req.userId,
    agentId: req.agentId,
    entryTypes: entryTypeFilter("entry_types", req.entryTypes),
    createdAfter: req.createdAfter === "" ? undefined : parseRfc3339("created_after", req.createdAfter),
    createdBefore: req.createdBefore === "" ? undefined : parseRfc3339("created_before", req.createdBefore),
    excludeDerived,
    sort: sortOf(req.sort),
  };
}

/** Whether the query filters on fields of the record rather than only on the index it scans. */
function filtersRecords(q: ActivityQuery): boolean {
  return q.userId !== "" || q.agentId !== "" || q.entryTypes !== undefined || q.createdAfter !== undefined || q.createdBefore !== undefined || q.excludeDerived;
}

function matches(q: ActivityQuery, e: EntryRecord): boolean {
  if (q.userId !== "" && e.userId !== q.userId) return false;
  if (q.agentId !== "" && e.agentId !== q.agentId) return false;
  if (q.entryTypes !== undefined && !q.entryTypes.has(e.entryType)) return false;
  if (q.createdAfter !== undefined && e.createdAt < q.createdAfter) return false;
  if (q.createdBefore !== undefined && e.createdAt > q.createdBefore) return false;
  return !(q.excludeDerived && e.derived);
}

/** The seqs a query walks, in its order: the caller's (or everyone's) entries, merged with granted owners' runs. */
function* visibleSeqs(entries: EntryStore, q: ActivityQuery, afterSeq?: number): Generator<number> {
  const reverse = q.sort === "desc";
  const sources = [entries.visibleSeqs(q.owner, q.runId, reverse, afterSeq), ...q.granted.map((g) => entries.visibleSeqs(g.owner, g.runId, reverse, afterSeq))];
  if (sources.length === 1) {
    yield* sources[0] as Generator<number>;
    return;
  }
  // k-way merge of ascending (or descending) streams; k is small (the owners who granted this run).
  const heads = sources.map((source) => ({ source, next: source.next() }));
  for (;;) {
    let best: (typeof heads)[number] | undefined;
    for (const head of heads) {
      if (head.next.done) continue;
      if (best === undefined || (reverse ? head.next.value > (best.next.value as number) : head.next.value < (best.next.value as number))) best = head;
    }
    if (best === undefined) return;
    yield best.next.value as number;
    best.next = best.source.next();
  }
}

/** Whether a granted owner's entry lies in a lane the caller may read. */
function inGrantedLane(q: ActivityQuery, e: EntryRecord): boolean {
  const grant = q.granted.find((g) => g.owner === e.owner);
  return grant === undefined || grant.lanes === undefined || grant.lanes.has(e.lane);
}

/** Every visible entry that matches, in the query's order, starting after `afterSeq` (in that order) when given. */
function* matching(entries: EntryStore, q: ActivityQuery, afterSeq?: number): Generator<EntryRecord> {
  for (const seq of visibleSeqs(entries, q, afterSeq)) {
    const record = entries.get(seq);
    if (record !== undefined && inGrantedLane(q, record) && matches(q, record)) yield record;
  }
}

function countMatching(entries: EntryStore, q: ActivityQuery): number {
  let count = 0;
  if (filtersRecords(q) || q.granted.length > 0) {
    for (const _ of matching(entries, q)) count += 1;
  } else {
    // Only the scanned index decides membership: count its keys without decoding records.
    for (const _ of entries.visibleSeqs(q.owner, q.runId, false)) count += 1;
  }
  return count;
}

// Page tokens: base64url of {seq, sort, filters}, where `filters` hashes everything that decides which entries the
// listing walks. Tokens are not secret: a forged seq only moves the cursor, visibility is enforced on every read.
interface PageCursor {
  readonly seq: number;
  readonly sort: Sort;
  readonly filters: string;
}

function filtersHash(q: ActivityQuery): string {
  const canonical = JSON.stringify([
    q.owner ?? null,
    q.runId ?? null,
    q.userId,
    q.agentId,
    q.entryTypes === undefined ? null : [...q.entryTypes].sort(),
    q.createdAfter ?? null,
    q.createdBefore ?? null,
    q.excludeDerived,
  ]);
  return createHash("sha256").update(canonical).digest("base64url").slice(0, 22);
}

function encodePageToken(cursor: PageCursor): string {
  return Buffer.from(JSON.stringify(cursor), "utf8").toString("base64url");
}

/** The seq the page continues after (in the query's order); throws a 400 naming page_token on any mismatch. */
function decodePageToken(token: string, q: ActivityQuery): number {
  const malformed = invalidArgument("page_token", "is malformed; pass a next_page_token unchanged");
  if (token.length > MAX_PAGE_TOKEN_LENGTH || !/^[A-Za-z0-9_-]+$/.test(token)) throw malformed;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw malformed;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw malformed;
  const { seq, sort, filters } = parsed as Record<string, unknown>;
  if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 0 || typeof sort !== "string" || typeof filters !== "string") {
    throw malformed;
  }
  if (sort !== q.sort) throw invalidArgument("page_token", `was issued for sort "${sort}", not "${q.sort}"`);
  if (filters !== filtersHash(q)) throw invalidArgument("page_token", "was issued for other filters; repeat the filters of the first page");
  return seq;
}

function activityEntryOf(e: EntryRecord, projection: Projection): ActivityEntry {
  const compact = projection === "compact";
  return create(ActivityEntrySchema, {
    id: e.id,
    runId: e.runId,
    userId: e.userId,
    agentId: e.agentId,
    entryType: e.entryType,
    content: compact ? firstCharacters(e.content, COMPACT_CONTENT_CHARS) : e.content,
    source: e.source,
    importance: e.importance,
    createdAt: new Date(e.createdAt).toISOString(),
    metadataJson: compact ? "" : e.metadataJson,
    referenceId: e.referenceId,
    referenceable: e.referenceId !== "",
    upsertKey: e.upsertKey,
    originEntryType: e.entryType,
    lane: e.lane,
    occurrenceTime: BigInt(Math.trunc(e.occurrenceTime)),
    isStale: isStaleRecord(e),
    supersededBy: e.supersededBy,
    derived: e.derived,
    sourceEntryIds: [...e.sourceIds],
    lineageReview: e.lineageReview,
  });
}

export function activityHandlers(deps: ActivityDeps): ActivityHandlers {
  const { entries, write, events } = deps;
  return {
    async listActivity(req, ctx) {
      const q = queryOf(req, req.excludeDerived, ctx, deps.acl);
      const projection = projectionOf(req.projection);
      const limit = Math.min(MAX_PAGE_SIZE, Math.max(MIN_PAGE_SIZE, req.limit));
      const afterSeq = req.pageToken === "" ? undefined : decodePageToken(req.pageToken, q);
      // Everything below is synchronous, so the page and the total come from one snapshot. The cursor is a seq:
      // entries appended while a client pages get higher seqs, so they never shift, repeat or hide older ones.
      const page: EntryRecord[] = [];
      let more = false;
      for (const record of matching(entries, q, afterSeq)) {
        if (page.length === limit) {
          more = true;
          break;
        }
        page.push(record);
      }
      const last = page.at(-1);
      return {
        entries: page.map((e) => activityEntryOf(e, projection)),
        nextPageToken: more && last !== undefined ? encodePageToken({ seq: last.seq, sort: q.sort, filters: filtersHash(q) }) : "",
        totalVisible: countMatching(entries, q),
      };
    },

    async exportActivity(req, ctx) {
      const q = queryOf(req, false, ctx, deps.acl);
      let content = "";
      let entryCount = 0;
      for (const record of matching(entries, q)) {
        const line = `${toJsonString(ActivityEntrySchema, activityEntryOf(record, "full"), { useProtoFieldName: true, alwaysEmitImplicit: true })}\n`;
        if (entryCount === MAX_EXPORT_ENTRIES || content.length + line.length > MAX_EXPORT_CHARS) break;
        content += line;
        entryCount += 1;
      }
      return { format: "jsonl", content, entryCount };
    },

    async appendActivity(req, ctx) {
      const caller = callerOf(ctx);
      const runId = bounded("run_id", required("run_id", req.runId));
      const activity = req.activity;
      if (activity === undefined) throw invalidArgument("activity", "is required");
      const type = bounded("activity.type", required("activity.type", activity.type));
      const payload = content("activity.payload", activity.payload);
      const agentId = activity.agentId !== "" ? bounded("activity.agent_id", activity.agentId) : bounded("agent_id", req.agentId);
      const occurredAt = activity.ts === "" ? Date.now() : parseRfc3339("activity.ts", activity.ts);
      const record = await write(
        newEntry({
        owner: caller.userId,
        runId,
        agentId,
        entryType: "trace",
        // As documented on AppendActivity: content is the payload, the rest of the record is metadata.
        content: payload,
        metadataJson: JSON.stringify({
          activity_type: type,
          tool_name: activity.toolName,
          input_ref: activity.inputRef,
          output_ref: activity.outputRef,
          ts: activity.ts === "" ? new Date(occurredAt).toISOString() : activity.ts,
        }),
        occurrenceTime: Math.floor(occurredAt / 1000),
        }),
      );
      events?.publish({
        type: "activity.appended",
        owner: record.owner,
        runId: record.runId,
        agentId: record.agentId,
        payload: JSON.stringify({ event_id: record.id, type, tool_name: activity.toolName }),
      });
      return { success: true, eventId: record.id };
    },
  };
}
