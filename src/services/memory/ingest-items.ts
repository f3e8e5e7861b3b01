// Validates and normalises ingest and batch-insert items into entries ready to store.
import { create } from "@bufbuild/protobuf";
import { ProvenanceSchema, type BatchInsertItem, type IngestItem, type Provenance as ProvenanceInput } from "../../../gen/engram/v2/memory_service_pb.js";
import { invalidArgument, quoted } from "../../platform/errors.js";
import { ENTRY_TYPES, IMPORTANCE_LEVELS, LESSON_SCOPES, LESSON_TYPES, SOURCES, newEntry, type EntryType, type NewEntry } from "../../storage/entry-store.js";
import type { JobItem } from "../../memory/ingest-queue.js";
import { isEnvTag } from "../../retrieval/env-tags.js";
import { bounded, content, jsonObject, oneOf, parseJson, unixSeconds } from "./validate.js";
import type { ItemVectors, RequestSpaces } from "./vector-space-input.js";
import { expiryOf, provenanceOf, type WriteOrigin } from "./provenance-input.js";
import { MAX_TOOL_NAME_CHARS, MAX_URL_CHARS, type Origin } from "../../storage/provenance.js";

export const MAX_ITEMS = 1000;

/** Intents that are not entry types themselves, and the type each is stored as. */
const INTENT_TYPES: Readonly<Record<string, EntryType>> = {
  observation: "fact",
  context: "fact",
  mental_model: "fact",
  reflection: "lesson",
  tool_output: "trace",
  log: "trace",
  task_result: "trace",
  handoff: "trace",
  feedback: "trace",
  step_outcome: "trace",
};

export function checkItemCount(count: number): void {
  if (count === 0) throw invalidArgument("items", "must hold at least one item");
  if (count > MAX_ITEMS) throw invalidArgument("items", `must hold at most ${MAX_ITEMS} items, got ${count}`);
}

/** Unix seconds from metadata keys `occurrence_time`, `event_time` or `session_date` (number or date text). */
function occurrenceFromMetadata(metadata: Record<string, unknown>): number | undefined {
  for (const key of ["occurrence_time", "event_time", "session_date"]) {
    const value = metadata[key];
    if (typeof value === "number" && Number.isFinite(value) && value > 0) return Math.floor(value);
    if (typeof value === "string" && value.trim() !== "") {
      const asNumber = Number(value);
      if (Number.isFinite(asNumber) && asNumber > 0) return Math.floor(asNumber);
      const parsed = Date.parse(value);
      if (!Number.isNaN(parsed)) return Math.floor(parsed / 1000);
    }
  }
  return undefined;
}

function envTags(field: string, tags: readonly string[]): string[] {
  for (const tag of tags) if (!isEnvTag(tag)) throw invalidArgument(field, `${quoted(tag)} is not TYPE:NAME or TYPE:NAME:VERSION`);
  return [...tags];
}

function entryTypeOf(field: string, entryType: string, intent: string): { type: EntryType; reasoning: string; confidence: number } {
  if (entryType !== "") {
    const type = oneOf(`${field}.entry_type`, entryType, ENTRY_TYPES, "fact");
    return { type, reasoning: "entry_type", confidence: 1 };
  }
  if (intent !== "") {
    const lower = intent.toLowerCase();
    const type = (ENTRY_TYPES as readonly string[]).includes(lower) ? (lower as EntryType) : INTENT_TYPES[lower];
    if (type === undefined) throw invalidArgument(`${field}.intent`, `unknown intent ${quoted(intent)}`);
    return { type, reasoning: "intent", confidence: 1 };
  }
  return { type: "fact", reasoning: "default", confidence: 0.5 };
}

/** Metadata keys that name the tool a text came from, and where it was fetched from. */
const TOOL_NAME_KEYS = ["tool_name", "tool"] as const;
const URL_KEYS = ["url", "source_url"] as const;

/** A metadata value usable as a tool name or URL: a string within the provenance limits, else undefined. */
function metadataText(metadata: Record<string, unknown>, keys: readonly string[], max: number, allowSpaces: boolean): string | undefined {
  for (const key of keys) {
    const value = metadata[key];
    if (typeof value !== "string" || value === "" || value.length > max) continue;
    if (/[\u0000-\u001f]/u.test(value) || (!allowSpaces && /\s/u.test(value))) continue;
    return value;
  }
  return undefined;
}

/**
 * The provenance an ingest item states, or, when it states none, what its intent and metadata say: intent
 * `tool_output` is a tool's output; metadata `tool_name`/`tool` names the tool (origin `tool`), `url`/`source_url`
 * where the text was fetched from (origin `web`). A write that states provenance is taken as it is.
 */
function statedOrDerivedProvenance(stated: ProvenanceInput | undefined, intent: string, metadata: Record<string, unknown>): ProvenanceInput | undefined {
  const statesNone = stated === undefined || (stated.origin === "" && stated.toolName === "" && stated.url === "" && stated.trust === "");
  if (!statesNone) return stated;
  const toolName = metadataText(metadata, TOOL_NAME_KEYS, MAX_TOOL_NAME_CHARS, true);
  const url = metadataText(metadata, URL_KEYS, MAX_URL_CHARS, false);
  const origin: Origin | undefined = url !== undefined ? "web" : toolName !== undefined || intent.toLowerCase() === "tool_output" ? "tool" : undefined;
  if (origin === undefined) return stated;
  return create(ProvenanceSchema, { origin, toolName: toolName ?? "", url: url ?? "" });
}

/** An ingest item; a space it creates is claimed at once (any problem fails the whole request). */
export function ingestItem(item: IngestItem, index: number, owner: number, runId: string, agentId: string, spaces: RequestSpaces, origin: WriteOrigin): JobItem {
  const field = `items[${index}]`;
  const { type, reasoning, confidence } = entryTypeOf(field, item.entryType, item.intent);
  let text = item.text;
  const metadata = JSON.parse(jsonObject(`${field}.metadata_json`, item.metadataJson)) as Record<string, unknown>;
  if (item.payloadJson !== "") {
    const payload = parseJson(`${field}.payload_json`, item.payloadJson);
    if (text === "") text = item.payloadJson;
    else metadata["payload"] = payload;
  }
  content(`${field}.text`, text);
  if (item.hintsJson !== "") metadata["hints"] = JSON.parse(jsonObject(`${field}.hints_json`, item.hintsJson)) as unknown;
  const isLesson = type === "lesson";
  if (item.lessonConditionsJson !== "") {
    const conditions = parseJson(`${field}.lesson_conditions_json`, item.lessonConditionsJson);
    if (!Array.isArray(conditions) || !conditions.every((c) => typeof c === "string")) {
      throw invalidArgument(`${field}.lesson_conditions_json`, "must be a JSON array of strings");
    }
    metadata["lesson_conditions"] = conditions;
  }
  // Lesson fields are validated on every item, as the contract lists them, and stored only on lessons.
  const lessonScope = oneOf(`${field}.lesson_scope`, item.lessonScope, LESSON_SCOPES, "run");
  const lessonType = oneOf(`${field}.lesson_type`, item.lessonType, LESSON_TYPES, "observation");
  const lessonImportance = oneOf(`${field}.lesson_importance`, item.lessonImportance, IMPORTANCE_LEVELS, "medium");
  const importance = oneOf(`${field}.importance`, item.importance, IMPORTANCE_LEVELS, isLesson ? lessonImportance : type === "rule" ? "high" : "medium");
  const occurrence = unixSeconds(`${field}.occurrence_time`, item.occurrenceTime);
  const vectors = spaces.check(field, item.vectorSpace, item.embedding);
  spaces.claim(vectors);
  const { vector } = vectors;
  const source = oneOf(`${field}.source`, item.source, SOURCES, "agent");
  const provenance = provenanceOf(`${field}.provenance`, statedOrDerivedProvenance(item.provenance, item.intent, metadata), source, origin);
  // Flags and the guard on untrusted knowledge are set later, in time slices (memory/ingest-screening.ts).
  const entry: NewEntry = {
    sourceIds: [],
    owner,
    runId,
    agentId,
    userId: bounded(`${field}.user_id`, item.userId),
    entryType: type,
    content: text,
    lessonScope: isLesson ? lessonScope : "",
    lessonType: isLesson ? lessonType : "",
    importance,
    metadataJson: JSON.stringify(metadata),
    lane: bounded(`${field}.lane`, item.lane),
    occurrenceTime: occurrence || occurrenceFromMetadata(metadata) || Math.floor(Date.now() / 1000),
    upsertKey: bounded(`${field}.upsert_key`, item.upsertKey),
    source,
    contentType: bounded(`${field}.content_type`, item.contentType) || "text/plain",
    envTags: envTags(`${field}.env_tags`, item.envTags),
    derived: false,
    confidence: 1,
    provenance,
    flags: [],
    expiresAt: expiryOf(`${field}.`, item.ttlSeconds, item.expiresAt, origin.now),
    absorbedIds: [],
  };
  return {
    itemId: bounded(`${field}.item_id`, item.itemId) || `item-${index}`,
    contentType: entry.contentType,
    reasoning,
    confidence,
    entry,
    vector: vector === undefined ? undefined : Array.from(vector),
    spaceVectors: vectors.spaceVectors.map(({ space, vector: v }) => ({ space, bytes: Buffer.from(v.buffer, v.byteOffset, v.byteLength) })),
  };
}

/**
 * A batch-insert item; problems are reported per item rather than failing the request. A space the item would create
 * is not claimed here: the caller claims it once the item passed its other checks too.
 */
export function batchItem(
  item: BatchInsertItem,
  index: number,
  owner: number,
  runId: string,
  agentId: string,
  spaces: RequestSpaces,
  origin: WriteOrigin,
): { entry: NewEntry } & ItemVectors {
  const field = `items[${index}]`;
  const type = oneOf(`${field}.entry_type`, item.entryType, ENTRY_TYPES, "fact");
  if (type === "lesson") throw invalidArgument(`${field}.entry_type`, "lessons need lesson fields: use Ingest or Remember");
  const occurrence = unixSeconds(`${field}.occurrence_time`, item.occurrenceTime);
  const source = oneOf(`${field}.source`, item.source, SOURCES, "agent");
  const text = content(`${field}.text`, item.text);
  const metadataJson = jsonObject(`${field}.metadata_json`, item.metadataJson);
  const metadata = JSON.parse(metadataJson) as Record<string, unknown>;
  const provenance = provenanceOf(`${field}.provenance`, statedOrDerivedProvenance(item.provenance, "", metadata), source, origin);
  const entry = newEntry({
    owner,
    runId,
    agentId,
    userId: bounded(`${field}.user_id`, item.userId),
    entryType: type,
    content: text,
    importance: type === "rule" ? "high" : "medium",
    metadataJson,
    lane: bounded(`${field}.lane`, item.lane),
    occurrenceTime: occurrence || Math.floor(Date.now() / 1000),
    source,
    envTags: envTags(`${field}.env_tags`, item.envTags),
    provenance,
    expiresAt: expiryOf(`${field}.`, item.ttlSeconds, item.expiresAt, origin.now),
  });
  return { entry, ...spaces.check(field, item.vectorSpace, item.embedding) };
}
