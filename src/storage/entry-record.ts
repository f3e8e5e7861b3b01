// The memory entry record: its vocabularies (defined once, everything else derives from them), its shape, and the
// decoder every read from LMDB goes through (schema version checked, older versions upgraded, nothing cast).
import { openRecord, type RecordReader } from "./record-codec.js";
import { DEFAULT_TRUST_POLICY, ORIGINS, TRUST_LEVELS, legacyProvenance, type Provenance, type TrustPolicy } from "./provenance.js";

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
/** A lesson's pending scope promotion: "" none, or one of these (see learning_service.proto for the transitions). */
export const PROMOTION_STATES = ["proposed", "auditioning", "quarantined"] as const;
export type PromotionState = "" | (typeof PROMOTION_STATES)[number];

/**
 * The record version this build writes; older versions are upgraded when read. Version 5 stores only the fields that
 * differ from their defaults (see encodeEntry): a fact written plainly is a third of its version 4 size, and quicker
 * to pack and to unpack.
 */
export const ENTRY_RECORD_VERSION = 5;

/** How many runs a lesson remembers having been learned in: enough to tell "confirmed elsewhere", and bounded. */
export const MAX_CONFIRMED_RUNS = 16;

/**
 * What outcomes taught about an entry. Confidence is the mean of a Beta posterior: `evidenceFor` / (`evidenceFor` +
 * `evidenceAgainst`), seeded with PRIOR_STRENGTH pseudo-outcomes at the entry's initial confidence.
 */
export interface LearningState {
  readonly evidenceFor: number;
  readonly evidenceAgainst: number;
  /** Outcomes with a non-zero signal that credited the entry. */
  readonly reinforcementCount: number;
  readonly verifiedInProduction: boolean;
  readonly promotionState: PromotionState;
  /** Scope the pending promotion leads to; "" when none. */
  readonly promotionTargetScope: string;
  /** A person refused a promotion: the lesson is never proposed again. */
  readonly promotionRefused: boolean;
  /** Runs the lesson was learned in (its own first), at most MAX_CONFIRMED_RUNS. */
  readonly confirmedRuns: readonly string[];
  /** Outcomes of other runs while auditioning: positive and negative. */
  readonly auditionWins: number;
  readonly auditionLosses: number;
  /** Negative outcomes in a row since the last positive one. */
  readonly negativeStreak: number;
}

/** Pseudo-outcomes the initial confidence counts for in the Beta posterior. */
export const PRIOR_STRENGTH = 2;

export function initialLearning(confidence: number, runId: string): LearningState {
  return {
    evidenceFor: PRIOR_STRENGTH * confidence,
    evidenceAgainst: PRIOR_STRENGTH * (1 - confidence),
    reinforcementCount: 0,
    verifiedInProduction: false,
    promotionState: "",
    promotionTargetScope: "",
    promotionRefused: false,
    confirmedRuns: runId === "" ? [] : [runId],
    auditionWins: 0,
    auditionLosses: 0,
    negativeStreak: 0,
  };
}

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
  /** Direct changes, oldest first; the oldest are dropped beyond MAX_AUDIT_EVENTS. */
  readonly audit: readonly EntryAuditEvent[];
  /** Outcomes and promotion (lessons and rules; other entries only gather outcomes). */
  readonly learning: LearningState;
  /** Number of index terms, for BM25 length normalisation. */
  readonly termCount: number;
  /** Where the text came from, who wrote it, how far it is trusted. */
  readonly provenance: Provenance;
  /** What ingest noticed about the text, e.g. `instruction_like`; empty when nothing. */
  readonly flags: readonly string[];
  /** Unix milliseconds after which the entry is gone; 0: it does not expire. */
  readonly expiresAt: number;
  /** Ids of the near-duplicate entries merged into this one; they resolve to it. */
  readonly absorbedIds: readonly string[];
}

/** What a caller supplies; the store assigns the rest. */
export type NewEntry = Omit<
  EntryRecord,
  "v" | "seq" | "id" | "createdAt" | "updatedAt" | "supersededBy" | "stale" | "referenceId" | "termCount" | "lineageReview" | "audit" | "validationStatus" | "learning"
> &
  Partial<Pick<EntryRecord, "validationStatus" | "learning">>;

/** Audit trails keep the most recent changes: outcomes keep arriving for as long as a lesson lives. */
export const MAX_AUDIT_EVENTS = 200;

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
    provenance: legacyProvenance(fields.source ?? "agent"),
    flags: [],
    expiresAt: 0,
    absorbedIds: [],
    ...fields,
  };
}

export function isStaleRecord(record: EntryRecord): boolean {
  return record.stale || record.supersededBy !== "";
}

/** The defaults of the fields a version 5 record leaves out when they hold them (those of a plain write, newEntry). */
const DEFAULT_STRINGS = {
  agentId: "",
  userId: "",
  lessonScope: "",
  lessonType: "",
  metadataJson: "{}",
  lane: "",
  supersededBy: "",
  upsertKey: "",
  source: "agent",
  referenceId: "",
  contentType: "text/plain",
  validationStatus: "",
  lineageReview: "",
} as const satisfies Partial<Record<keyof EntryRecord, string>>;
const DEFAULT_STRING_FIELDS = Object.keys(DEFAULT_STRINGS) as readonly (keyof typeof DEFAULT_STRINGS)[];
const DEFAULT_IMPORTANCE: Importance = "medium";
const DEFAULT_CONFIDENCE = 1;

/**
 * The value the entries database stores for a record (version 5): the record without the fields that hold their
 * defaults: empty strings, lists and flags, a plain write's importance, metadata, source and content type, an
 * `updatedAt` equal to `createdAt`, the initial learning state, and provenance without its empty parts. decodeEntry
 * gives the defaults back. Every write of an entry record goes through here.
 */
export function encodeEntry(record: EntryRecord): Record<string, unknown> {
  const { provenance } = record;
  const stored: Record<string, unknown> = {
    v: ENTRY_RECORD_VERSION,
    seq: record.seq,
    id: record.id,
    owner: record.owner,
    runId: record.runId,
    entryType: record.entryType,
    content: record.content,
    occurrenceTime: record.occurrenceTime,
    createdAt: record.createdAt,
    termCount: record.termCount,
    provenance: { origin: provenance.origin, trust: provenance.trust },
  };
  for (const field of DEFAULT_STRING_FIELDS) {
    if (record[field] !== DEFAULT_STRINGS[field]) stored[field] = record[field];
  }
  if (record.importance !== DEFAULT_IMPORTANCE) stored["importance"] = record.importance;
  if (record.confidence !== DEFAULT_CONFIDENCE) stored["confidence"] = record.confidence;
  if (record.updatedAt !== record.createdAt) stored["updatedAt"] = record.updatedAt;
  if (record.stale) stored["stale"] = true;
  if (record.derived) stored["derived"] = true;
  if (record.expiresAt !== 0) stored["expiresAt"] = record.expiresAt;
  if (record.envTags.length > 0) stored["envTags"] = record.envTags;
  if (record.sourceIds.length > 0) stored["sourceIds"] = record.sourceIds;
  if (record.audit.length > 0) stored["audit"] = record.audit;
  if (record.flags.length > 0) stored["flags"] = record.flags;
  if (record.absorbedIds.length > 0) stored["absorbedIds"] = record.absorbedIds;
  if (!sameLearning(record.learning, initialLearning(record.confidence, record.runId))) stored["learning"] = record.learning;
  const storedProvenance = stored["provenance"] as Record<string, unknown>;
  if (provenance.toolName !== "") storedProvenance["toolName"] = provenance.toolName;
  if (provenance.url !== "") storedProvenance["url"] = provenance.url;
  if (provenance.keyId !== "") storedProvenance["keyId"] = provenance.keyId;
  return stored;
}

/** Every field of a learning state, so that one added later is compared too. */
const LEARNING_FIELDS = Object.keys(initialLearning(1, "")) as readonly (keyof LearningState)[];

function sameLearning(a: LearningState, b: LearningState): boolean {
  for (const field of LEARNING_FIELDS) {
    const x = a[field];
    const y = b[field];
    if (Array.isArray(x) && Array.isArray(y) ? x.length !== y.length || x.some((item, i) => item !== y[i]) : x !== y) return false;
  }
  return true;
}

/**
 * An entry record of any readable version, upgraded to the current one: version 1 records (before update, delete
 * and lineage) get the defaults those fields had, versions before 4 a provenance from `policy` (the server's
 * SERVICE_TRUST_POLICY, by the origin their `source` implies), and a version 5 field left out its default (see
 * encodeEntry; a record with every field, as the tenant export writes it, reads the same). Any other version, or a
 * missing or mistyped field, throws: start-up stops with the message rather than serving a corrupt record.
 */
export function decodeEntry(value: unknown, seq: number, policy: TrustPolicy = DEFAULT_TRUST_POLICY): EntryRecord {
  const r = openRecord("entries", seq, value, [1, 2, 3, 4, ENTRY_RECORD_VERSION]);
  const upgraded = r.version === 1;
  /** Whether a version 5 record left the field out: it holds its default. */
  const compact = r.version >= 5;
  const left = (field: string): boolean => compact && !r.has(field);
  const text = (field: keyof typeof DEFAULT_STRINGS): string => (left(field) ? DEFAULT_STRINGS[field] : r.string(field));
  const strings = (field: string): string[] => (left(field) ? [] : r.strings(field));
  const entryType = r.oneOf("entryType", ENTRY_TYPES);
  const createdAt = r.number("createdAt");
  const runId = r.string("runId");
  const confidence = left("confidence") ? DEFAULT_CONFIDENCE : r.number("confidence");
  return {
    v: ENTRY_RECORD_VERSION,
    seq: r.integer("seq"),
    id: r.string("id"),
    owner: r.integer("owner"),
    runId,
    agentId: text("agentId"),
    userId: text("userId"),
    entryType,
    content: r.string("content"),
    lessonScope: text("lessonScope"),
    lessonType: text("lessonType"),
    importance: left("importance") ? DEFAULT_IMPORTANCE : r.oneOf("importance", IMPORTANCE_LEVELS),
    metadataJson: text("metadataJson"),
    lane: text("lane"),
    occurrenceTime: r.number("occurrenceTime"),
    createdAt,
    updatedAt: upgraded || left("updatedAt") ? createdAt : r.number("updatedAt"),
    supersededBy: text("supersededBy"),
    stale: upgraded || left("stale") ? false : r.boolean("stale"),
    upsertKey: text("upsertKey"),
    source: text("source"),
    referenceId: text("referenceId"),
    contentType: text("contentType"),
    envTags: strings("envTags"),
    derived: left("derived") ? false : r.boolean("derived"),
    confidence,
    validationStatus: upgraded ? (entryType === "lesson" || entryType === "rule" ? "pending" : "") : text("validationStatus"),
    sourceIds: upgraded ? [] : strings("sourceIds"),
    lineageReview: upgraded ? "" : text("lineageReview"),
    audit:
      upgraded || left("audit")
        ? []
        : r.objects("audit").map((e) => ({
            at: e.number("at"),
            field: e.string("field"),
            from: e.string("from"),
            to: e.string("to"),
            reason: e.string("reason"),
            agentId: e.string("agentId"),
          })),
    learning: r.version < 3 || left("learning") ? initialLearning(confidence, runId) : decodeLearning(r.object("learning")),
    termCount: r.integer("termCount"),
    provenance: r.version < 4 ? legacyProvenance(r.string("source"), policy) : decodeProvenance(r.object("provenance"), compact),
    flags: r.version < 4 ? [] : strings("flags"),
    expiresAt: r.version < 4 || left("expiresAt") ? 0 : r.number("expiresAt"),
    absorbedIds: r.version < 4 ? [] : strings("absorbedIds"),
  };
}

/**
 * A stored provenance object (entry records from version 4, queued ingest items). `compact`: an entry record of
 * version 5, which leaves out an empty tool name, URL or key id.
 */
export function decodeProvenance(r: RecordReader, compact = false): Provenance {
  const text = (field: string): string => (compact && !r.has(field) ? "" : r.string(field));
  return { origin: r.oneOf("origin", ORIGINS), toolName: text("toolName"), url: text("url"), trust: r.oneOf("trust", TRUST_LEVELS), keyId: text("keyId") };
}

function decodeLearning(r: RecordReader): LearningState {
  const promotionState = r.string("promotionState");
  return {
    evidenceFor: r.number("evidenceFor"),
    evidenceAgainst: r.number("evidenceAgainst"),
    reinforcementCount: r.integer("reinforcementCount"),
    verifiedInProduction: r.boolean("verifiedInProduction"),
    promotionState: promotionState === "" ? "" : r.oneOf("promotionState", PROMOTION_STATES),
    promotionTargetScope: r.string("promotionTargetScope"),
    promotionRefused: r.boolean("promotionRefused"),
    confirmedRuns: r.strings("confirmedRuns"),
    auditionWins: r.integer("auditionWins"),
    auditionLosses: r.integer("auditionLosses"),
    negativeStreak: r.integer("negativeStreak"),
  };
}
