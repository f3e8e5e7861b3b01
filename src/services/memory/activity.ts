// Activity browse, export and append: validates at the boundary and maps records to messages; the walks over the
// entry indexes (paging, totals, export) are the domain's, in src/memory/activity/.
import { create, toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  ActivityEntrySchema,
  type ActivityEntry,
  type ListActivityRequest,
  type MemoryService,
} from "../../../gen/engram/v2/memory_service_pb.js";
import { callerOf, isAdmin } from "../../auth/principal.js";
import type { AccessControl } from "../../acl/access-control.js";
import type { EventBus } from "../../events/event-bus.js";
import { invalidArgument, quoted } from "../../platform/errors.js";
import { isStaleRecord, newEntry, type EntryRecord, type EntryStore, type EntryView, type NewEntry } from "../../storage/entry-store.js";
import {
  ExportTooLarge,
  MAX_EXPORT_CHARS,
  MAX_EXPORT_ENTRIES,
  activityPage,
  exportActivity,
  type ActivityQuery,
  type Sort,
} from "../../memory/activity/activity-scan.js";
import { ActivityTotals } from "../../memory/activity/activity-totals.js";
import { decodePageToken, encodePageToken } from "../../memory/activity/page-token.js";
import { bounded, content, entryTypeFilter, required } from "./validate.js";
import type { MemoryDeps } from "./deps.js";
import { mayWrite } from "./archive.js";
import { provenanceFilterOf } from "./provenance-filter-input.js";
import { provenanceView } from "../../memory/provenance-view.js";
import { writeProvenance, type TrustPolicy } from "../../storage/provenance.js";
import { iso } from "../iso-time.js";

export { MAX_EXPORT_CHARS, MAX_EXPORT_ENTRIES };

/** Page size bounds of ListActivity; an omitted or 0 limit resolves to the minimum. */
export const MIN_PAGE_SIZE = 1;
export const MAX_PAGE_SIZE = 500;
/** Characters (Unicode code points) of content kept by the `compact` projection. */
export const COMPACT_CONTENT_CHARS = 200;

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
  /** When given, the run's registered agents, whose write scopes AppendActivity checks. */
  readonly agents?: MemoryDeps["agents"];
  /** The trust each origin gets (SERVICE_TRUST_POLICY); the default policy when not given. */
  readonly trustPolicy?: TrustPolicy;
}

type FilterFields = Pick<ListActivityRequest, "runId" | "userId" | "agentId" | "entryTypes" | "createdAfter" | "createdBefore" | "sort" | "origins" | "trust">;

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
    provenance: provenanceFilterOf(req.origins, req.trust),
  };
}

/** `view`: expiry with retention and the supersedes chain (EntryStore.viewOf). */
function activityEntryOf(e: EntryRecord, projection: Projection, view: EntryView): ActivityEntry {
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
    provenance: provenanceView(e),
    expiresAt: iso(view.expiresAt),
    supersedes: [...view.supersedes],
    absorbedIds: [...e.absorbedIds],
  });
}

export function activityHandlers(deps: ActivityDeps): ActivityHandlers {
  const { entries, write, events } = deps;
  const totals = new ActivityTotals(entries);
  return {
    async listActivity(req, ctx) {
      const q = queryOf(req, req.excludeDerived, ctx, deps.acl);
      const projection = projectionOf(req.projection);
      const limit = Math.min(MAX_PAGE_SIZE, Math.max(MIN_PAGE_SIZE, req.limit));
      const afterSeq = req.pageToken === "" ? undefined : decodePageToken(req.pageToken, q);
      // The cursor is a seq: entries appended while a client pages get higher seqs, so they never shift, repeat or
      // hide older ones. The walks yield to other requests, so the total counts what is visible once the page is read.
      const { page, more } = await activityPage(entries, q, limit, afterSeq);
      const last = page.at(-1);
      return {
        entries: page.map((e) => activityEntryOf(e, projection, entries.viewOf(e))),
        nextPageToken: more && last !== undefined ? encodePageToken(q, last.seq) : "",
        totalVisible: await totals.count(q),
      };
    },

    async exportActivity(req, ctx) {
      const q = queryOf(req, false, ctx, deps.acl);
      const line = (record: EntryRecord): string =>
        `${toJsonString(ActivityEntrySchema, activityEntryOf(record, "full", entries.viewOf(record)), { useProtoFieldName: true, alwaysEmitImplicit: true })}\n`;
      try {
        const { content, entryCount } = await exportActivity(entries, q, line);
        return { format: "jsonl", content, entryCount };
      } catch (e: unknown) {
        if (!(e instanceof ExportTooLarge)) throw e;
        throw new ConnectError(`${e.message}; narrow the export with created_after and created_before (or entry_types)`, Code.FailedPrecondition);
      }
    },

    async appendActivity(req, ctx) {
      const caller = callerOf(ctx);
      const runId = bounded("run_id", required("run_id", req.runId));
      const activity = req.activity;
      if (activity === undefined) throw invalidArgument("activity", "is required");
      const type = bounded("activity.type", required("activity.type", activity.type));
      const payload = content("activity.payload", activity.payload);
      const agentId = activity.agentId !== "" ? bounded("activity.agent_id", activity.agentId) : bounded("agent_id", req.agentId);
      if (deps.agents !== undefined) mayWrite({ agents: deps.agents }, caller.userId, runId, agentId, "trace");
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
        // A record naming a tool carries that tool's output: origin `tool`, trusted only if the policy says so.
        provenance:
          activity.toolName === ""
            ? writeProvenance("agent", caller.keyId, deps.trustPolicy)
            : writeProvenance("tool", caller.keyId, deps.trustPolicy, bounded("activity.tool_name", activity.toolName)),
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
