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

/** The record version this build writes; older versions are upgraded when read. */
export const ENTRY_RECORD_VERSION = 4;

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

/**
 * Checks a value read from the entries database and returns it as the current record version. Version 1 records
 * (before update, delete and lineage) are upgraded with the defaults those fields had; any other version, or a
 * missing or mistyped field, throws: start-up stops with the message rather than serving a corrupt record.
 */
/**
 * An entry record of any readable version, upgraded to the current one. `policy` gives a record written before
 * provenance existed the trust of the origin its `source` implies (the server's SERVICE_TRUST_POLICY).
 */
export function decodeEntry(value: unknown, seq: number, policy: TrustPolicy = DEFAULT_TRUST_POLICY): EntryRecord {
  const r = openRecord("entries", seq, value, [1, 2, 3, ENTRY_RECORD_VERSION]);
  const upgraded = r.version === 1;
  const entryType = r.oneOf("entryType", ENTRY_TYPES);
  const createdAt = r.number("createdAt");
  return {
    v: ENTRY_RECORD_VERSION,
    seq: r.integer("seq"),
    id: r.string("id"),
    owner: r.integer("owner"),
    runId: r.string("runId"),
    agentId: r.string("agentId"),
    userId: r.string("userId"),
    entryType,
    content: r.string("content"),
    lessonScope: r.string("lessonScope"),
    lessonType: r.string("lessonType"),
    importance: r.oneOf("importance", IMPORTANCE_LEVELS),
    metadataJson: r.string("metadataJson"),
    lane: r.string("lane"),
    occurrenceTime: r.number("occurrenceTime"),
    createdAt,
    updatedAt: upgraded ? createdAt : r.number("updatedAt"),
    supersededBy: r.string("supersededBy"),
    stale: upgraded ? false : r.boolean("stale"),
    upsertKey: r.string("upsertKey"),
    source: r.string("source"),
    referenceId: r.string("referenceId"),
    contentType: r.string("contentType"),
    envTags: r.strings("envTags"),
    derived: r.boolean("derived"),
    confidence: r.number("confidence"),
    validationStatus: upgraded ? (entryType === "lesson" || entryType === "rule" ? "pending" : "") : r.string("validationStatus"),
    sourceIds: upgraded ? [] : r.strings("sourceIds"),
    lineageReview: upgraded ? "" : r.string("lineageReview"),
    audit: upgraded
      ? []
      : r.objects("audit").map((e) => ({
          at: e.number("at"),
          field: e.string("field"),
          from: e.string("from"),
          to: e.string("to"),
          reason: e.string("reason"),
          agentId: e.string("agentId"),
        })),
    learning: r.version < 3 ? initialLearning(r.number("confidence"), r.string("runId")) : decodeLearning(r.object("learning")),
    termCount: r.integer("termCount"),
    provenance: r.version < 4 ? legacyProvenance(r.string("source"), policy) : decodeProvenance(r.object("provenance")),
    flags: r.version < 4 ? [] : r.strings("flags"),
    expiresAt: r.version < 4 ? 0 : r.number("expiresAt"),
    absorbedIds: r.version < 4 ? [] : r.strings("absorbedIds"),
  };
}

/** A stored provenance object (entry records from version 4, queued ingest items). */
export function decodeProvenance(r: RecordReader): Provenance {
  return { origin: r.oneOf("origin", ORIGINS), toolName: r.string("toolName"), url: r.string("url"), trust: r.oneOf("trust", TRUST_LEVELS), keyId: r.string("keyId") };
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
