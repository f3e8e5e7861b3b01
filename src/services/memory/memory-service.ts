// Remember and recall: validates requests at the boundary and runs them against the entry store and search.
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { MemoryService, type QueryEvidence } from "../../../gen/engram/v2/memory_service_pb.js";
import { callerOf, isAdmin } from "../../auth/principal.js";
import { invalidArgument } from "../../platform/errors.js";
import type { Metrics } from "../../platform/metrics.js";
import type { EventBus } from "../../events/event-bus.js";
import { ENTRY_TYPES, type EntryStore, type EntryType, type Visibility } from "../../storage/entry-store.js";
import type { Embedder } from "../../retrieval/embedder.js";
import type { RecallSearch, Hit } from "../../retrieval/recall-search.js";
import { composeAnswer } from "../../retrieval/answer.js";

const INTENTS = new Set(["fact", "lesson"]);
const LESSON_SCOPES = new Set(["run", "session", "global"]);
const IMPORTANCE = new Set(["low", "medium", "high", "critical"]);
const BUDGETS = new Set(["low", "mid", "high"]);
const MAX_CONTENT_BYTES = 1024 * 1024;
/** Identifiers become parts of LMDB keys, whose size is bounded. */
const MAX_ID_LENGTH = 256;

function required(field: string, value: string): string {
  if (value.trim() === "") throw invalidArgument(field, "is required");
  return value;
}

function bounded(field: string, value: string): string {
  if (value.length > MAX_ID_LENGTH) throw invalidArgument(field, `must be at most ${MAX_ID_LENGTH} characters`);
  return value;
}

function oneOf(field: string, value: string, allowed: ReadonlySet<string>, fallback: string): string {
  if (value === "") return fallback;
  if (!allowed.has(value)) throw invalidArgument(field, `must be one of ${[...allowed].join(", ")}; got "${value}"`);
  return value;
}

function metadataJson(value: string): string {
  if (value === "") return "{}";
  try {
    const parsed: unknown = JSON.parse(value);
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not an object");
  } catch {
    throw invalidArgument("metadata_json", "must be a JSON object");
  }
  return value;
}

export function entryTypeFilter(values: readonly string[]): ReadonlySet<EntryType> | undefined {
  if (values.length === 0) return undefined;
  const known = new Set<string>(ENTRY_TYPES);
  for (const value of values) {
    if (!known.has(value)) throw invalidArgument("entry_types", `unknown entry type "${value}"; known: ${ENTRY_TYPES.join(", ")}`);
  }
  return new Set(values as EntryType[]);
}

function visibilityOf(ctx: HandlerContext): { visibility: Visibility; owner: number } {
  const caller = callerOf(ctx);
  return { visibility: isAdmin(caller) ? { everyone: true } : { owner: caller.userId }, owner: caller.userId };
}

function evidenceOf(hit: Hit): Omit<QueryEvidence, "$typeName"> {
  const { entry } = hit;
  return {
    id: entry.id,
    content: entry.content,
    score: Math.round(hit.score * 1e6) / 1e6,
    isStale: entry.supersededBy !== "",
    supersededBy: entry.supersededBy,
    retrievalMode: hit.mode,
    referenceId: "",
    referenceable: false,
    originEntryType: entry.entryType,
    runId: entry.sessionId,
    entryType: entry.entryType,
    metadataJson: entry.metadataJson,
    agentId: entry.agentId,
    lane: entry.lane,
    occurrenceTime: BigInt(entry.occurrenceTime),
    createdAt: new Date(entry.createdAt).toISOString(),
  };
}

export function memoryService(
  entries: EntryStore,
  embedder: Embedder,
  search: RecallSearch,
  events: EventBus,
  metrics: Metrics,
): Partial<ServiceImpl<typeof MemoryService>> {
  return {
    async remember(req, ctx) {
      const caller = callerOf(ctx);
      const sessionId = bounded("session_id", required("session_id", req.sessionId));
      bounded("agent_id", req.agentId);
      bounded("user_id", req.userId);
      const content = required("content", req.content);
      if (Buffer.byteLength(content, "utf8") > MAX_CONTENT_BYTES) throw invalidArgument("content", "is larger than 1 MiB");
      const intent = oneOf("intent", req.intent, INTENTS, "fact") as "fact" | "lesson";
      const lessonScope = intent === "lesson" ? oneOf("lesson_scope", req.lessonScope, LESSON_SCOPES, "session") : "";
      if (intent === "fact" && req.lessonScope !== "") {
        oneOf("lesson_scope", req.lessonScope, LESSON_SCOPES, "");
      }
      const importance = oneOf("importance", req.importance, IMPORTANCE, "medium");
      const occurrence = Number(req.occurrenceTime);
      if (occurrence < 0) throw invalidArgument("occurrence_time", "must be unix seconds >= 0");
      const [vector] = await embedder.embed([content]);
      const [record] = await entries.append([
        {
          entry: {
            owner: caller.userId,
            sessionId,
            agentId: req.agentId,
            userId: req.userId,
            entryType: intent,
            content,
            lessonScope,
            importance,
            metadataJson: metadataJson(req.metadataJson),
            lane: "",
            occurrenceTime: occurrence || Math.floor(Date.now() / 1000),
          },
          vector: vector as Float32Array,
        },
      ]);
      if (record === undefined) throw new Error("append returned no record");
      metrics.storageWrites.inc({ kind: "entry" });
      metrics.ingestItems.inc({ entry_type: record.entryType });
      events.publish({
        type: "entry.created",
        owner: record.owner,
        runId: sessionId,
        agentId: record.agentId,
        payload: JSON.stringify({ entry_id: record.id, entry_type: record.entryType, user_id: record.userId, lane: "", upsert_key: "", source: "remember" }),
      });
      return {
        success: true,
        entryId: record.id,
        entryType: record.entryType,
        sessionId,
        createdAt: new Date(record.createdAt).toISOString(),
      };
    },

    async recall(req, ctx) {
      const sessionId = bounded("session_id", required("session_id", req.sessionId));
      bounded("user_id", req.userId);
      const query = required("query", req.query);
      const entryTypes = entryTypeFilter(req.entryTypes);
      oneOf("budget", req.budget, BUDGETS, "mid");
      const min = req.minTimestamp === 0n ? undefined : Number(req.minTimestamp);
      const max = req.maxTimestamp === 0n ? undefined : Number(req.maxTimestamp);
      if (min !== undefined && max !== undefined && min > max) {
        throw invalidArgument("min_timestamp", "must not be greater than max_timestamp");
      }
      const limit = req.limit === 0 ? 10 : Math.min(100, Math.max(1, req.limit));
      const { visibility, owner } = visibilityOf(ctx);
      const hits = await search.search({
        visibility,
        owner,
        sessionId,
        userId: req.userId === "" ? undefined : req.userId,
        text: query,
        entryTypes,
        laneFilter: req.laneFilter,
        minTimestamp: min,
        maxTimestamp: max,
        limit,
      });
      metrics.storageReads.inc({ kind: "entry" }, hits.length);
      const answer = composeAnswer(query, hits);
      return {
        finalAnswer: answer.finalAnswer,
        confidence: Math.round(answer.confidence * 1e4) / 1e4,
        mode: "agent_routed",
        evidence: hits.map(evidenceOf),
        citations: answer.citations.filter((i) => i >= 0 && i < hits.length),
      };
    },
  };
}
