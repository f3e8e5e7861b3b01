// The memory entry record: its vocabularies (defined once, everything else derives from them), its shape, and the
// decoder every read from LMDB goes through (schema version checked, older versions upgraded, nothing cast).

export const ENTRY_TYPES = ["fact", "lesson", "rule", "trace", "working_memory", "archive_block", "checkpoint"] as const;
export type EntryType = (typeof ENTRY_TYPES)[number];
export const IMPORTANCE_LEVELS = ["low", "medium", "high", "critical"] as const;
export type Importance = (typeof IMPORTANCE_LEVELS)[number];
export const SOURCES = ["agent", "human", "system"] as const;
export const LESSON_TYPES = ["success", "failure", "observation", "rule", "preference"] as const;
export type LessonType = (typeof LESSON_TYPES)[number];
export const LESSON_SCOPES = ["run", "session", "global"] as const;
export type LessonScope = (typeof LESSON_SCOPES)[number];
export const VALIDATION_STATUSES = ["pending", "validated", "invalidated"] as const;
export type ValidationStatus = (typeof VALIDATION_STATUSES)[number];
/** How an evidence item was found, in the order the proto lists them. */
export const RETRIEVAL_MODES = ["semantic", "exact_reference", "checkpoint", "rule_overlay", "lesson_overlay", "working_memory"] as const;
export type RetrievalMode = (typeof RETRIEVAL_MODES)[number];
/** Why a derived entry awaits review: "" none, or one of these. */
export const LINEAGE_REVIEW_REASONS = ["source_deleted"] as const;

/** The record version this build writes; older versions are upgraded when read. */
export const ENTRY_RECORD_VERSION = 2;

/** One direct change of an entry (an update), oldest first on the entry. */
export interface EntryAuditEvent {
  /** Unix milliseconds. */
  readonly at: number;
  readonly field: string;
  readonly from: string;
  readonly to: string;
  readonly reason: string;
  readonly agentId: string;
}

export interface EntryRecord {
  readonly v: typeof ENTRY_RECORD_VERSION;
  readonly seq: number;
  readonly id: string;
  /** Auth user id of the key that wrote the entry. */
  readonly owner: number;
  /** Run (session) scope. */
  readonly runId: string;
  readonly agentId: string;
  /** Logical user the entry is about; "" when none. */
  readonly userId: string;
  readonly entryType: EntryType;
  readonly content: string;
  /** `run`, `session` or `global` for lessons; "" otherwise. */
  readonly lessonScope: string;
  /** `success`, `failure`, `observation`, `rule` or `preference` for lessons; "" otherwise. */
  readonly lessonType: string;
  readonly importance: Importance;
  readonly metadataJson: string;
  readonly lane: string;
  /** Unix seconds when the event happened. */
  readonly occurrenceTime: number;
  /** Unix milliseconds when the entry was stored. */
  readonly createdAt: number;
  /** Unix milliseconds of the last change; equals createdAt until an update. */
  readonly updatedAt: number;
  /** Id of the entry that superseded this one; "" while current. */
  readonly supersededBy: string;
  /** Marked stale directly (an update); a superseded entry is stale too. */
  readonly stale: boolean;
  readonly upsertKey: string;
  readonly source: string;
  /** Stable id for Dereference; "" when the entry is not referenceable. */
  readonly referenceId: string;
  readonly contentType: string;
  readonly envTags: readonly string[];
  /** True when the server derived the entry (reflection, promotion) rather than a caller writing it. */
  readonly derived: boolean;
  /** Confidence in [0, 1]; 1 unless learning adjusts it. */
  readonly confidence: number;
  /** Lessons: `pending`, `validated` or `invalidated`; "" for other types. */
  readonly validationStatus: string;
  /** Lineage: ids of the entries this one was made from (a reflected lesson's evidence, a merged lesson's parts). */
  readonly sourceIds: readonly string[];
  /** "" or why the entry awaits review, e.g. `source_deleted` when an entry it was derived from was deleted. */
  readonly lineageReview: string;
  /** Direct changes, oldest first. */
  readonly audit: readonly EntryAuditEvent[];
  /** Number of index terms, for BM25 length normalisation. */
  readonly termCount: number;
}

/** What a caller supplies; the store assigns the rest. */
export type NewEntry = Omit<
  EntryRecord,
  "v" | "seq" | "id" | "createdAt" | "updatedAt" | "supersededBy" | "stale" | "referenceId" | "termCount" | "lineageReview" | "audit" | "validationStatus"
> &
  Partial<Pick<EntryRecord, "validationStatus">>;

/** A new entry with the defaults of a plain write: no lesson fields, medium importance, no lane or upsert key. */
export function newEntry(
  fields: Pick<NewEntry, "owner" | "runId" | "entryType" | "content" | "occurrenceTime"> & Partial<NewEntry>,
): NewEntry {
  return {
    agentId: "",
    userId: "",
    lessonScope: "",
    lessonType: "",
    importance: "medium",
    metadataJson: "{}",
    lane: "",
    upsertKey: "",
    source: "agent",
    contentType: "text/plain",
    envTags: [],
    derived: false,
    confidence: 1,
    sourceIds: [],
    ...fields,
  };
}

export function isStaleRecord(record: EntryRecord): boolean {
  return record.stale || record.supersededBy !== "";
}

export class RecordDecodeError extends Error {}

/**
 * Checks a value read from the entries database and returns it as the current record version. Version 1 records
 * (before update, delete and lineage) are upgraded with the defaults those fields had; any other version, or a
 * missing or mistyped field, throws: start-up stops with the message rather than serving a corrupt record.
 */
export function decodeEntry(value: unknown, seq: number): EntryRecord {
  const where = `entries record ${seq}`;
  if (typeof value !== "object" || value === null) throw new RecordDecodeError(`${where} is not a record`);
  const raw = value as Record<string, unknown>;
  const version = raw["v"];
  if (version !== 1 && version !== ENTRY_RECORD_VERSION) {
    throw new RecordDecodeError(
      `${where} has schema version ${String(version)}; this build reads 1 and ${ENTRY_RECORD_VERSION}: upgrade Engram or restore a matching backup`,
    );
  }
  const field = <T>(name: string, check: (x: unknown) => x is T): T => {
    const x = raw[name];
    if (!check(x)) throw new RecordDecodeError(`${where} field ${name} is ${x === undefined ? "missing" : `not ${check.name.replace(/^is/, "a ")}`}`);
    return x;
  };
  const str = (name: string): string => field(name, isString);
  const num = (name: string): number => field(name, isNumber);
  const entryType = str("entryType");
  if (!(ENTRY_TYPES as readonly string[]).includes(entryType)) throw new RecordDecodeError(`${where} has unknown entry type "${entryType}"`);
  const importance = str("importance");
  if (!(IMPORTANCE_LEVELS as readonly string[]).includes(importance)) throw new RecordDecodeError(`${where} has unknown importance "${importance}"`);
  const createdAt = num("createdAt");
  const upgraded = version === 1;
  return {
    v: ENTRY_RECORD_VERSION,
    seq: num("seq"),
    id: str("id"),
    owner: num("owner"),
    runId: str("runId"),
    agentId: str("agentId"),
    userId: str("userId"),
    entryType: entryType as EntryType,
    content: str("content"),
    lessonScope: str("lessonScope"),
    lessonType: str("lessonType"),
    importance: importance as Importance,
    metadataJson: str("metadataJson"),
    lane: str("lane"),
    occurrenceTime: num("occurrenceTime"),
    createdAt,
    updatedAt: upgraded ? createdAt : num("updatedAt"),
    supersededBy: str("supersededBy"),
    stale: upgraded ? false : field("stale", isBoolean),
    upsertKey: str("upsertKey"),
    source: str("source"),
    referenceId: str("referenceId"),
    contentType: str("contentType"),
    envTags: field("envTags", isStringArray),
    derived: field("derived", isBoolean),
    confidence: num("confidence"),
    validationStatus: upgraded ? (entryType === "lesson" ? "pending" : "") : str("validationStatus"),
    sourceIds: upgraded ? [] : field("sourceIds", isStringArray),
    lineageReview: upgraded ? "" : str("lineageReview"),
    audit: upgraded ? [] : field("audit", isAuditList),
    termCount: num("termCount"),
  };
}

function isString(x: unknown): x is string {
  return typeof x === "string";
}

function isNumber(x: unknown): x is number {
  return typeof x === "number" && Number.isFinite(x);
}

function isBoolean(x: unknown): x is boolean {
  return typeof x === "boolean";
}

function isStringArray(x: unknown): x is string[] {
  return Array.isArray(x) && x.every(isString);
}

function isAuditList(x: unknown): x is EntryAuditEvent[] {
  return (
    Array.isArray(x) &&
    x.every((e: unknown) => {
      if (typeof e !== "object" || e === null) return false;
      const r = e as Record<string, unknown>;
      return isNumber(r["at"]) && isString(r["field"]) && isString(r["from"]) && isString(r["to"]) && isString(r["reason"]) && isString(r["agentId"]);
    })
  );
}
