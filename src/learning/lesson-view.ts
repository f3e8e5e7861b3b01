// A stored lesson as the learning routes show it: the entry record mapped onto the LessonEntry message.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { LessonEntrySchema } from "../../gen/engram/v2/learning_service_pb.js";
import type { EntryRecord } from "../storage/entry-store.js";
import { isStaleRecord } from "../storage/entry-record.js";
import { lessonTypeOf, scopeOf } from "./lesson-listing.js";
import { provenanceView } from "../memory/provenance-view.js";

type LessonEntryInit = MessageInitShape<typeof LessonEntrySchema>;

const SOURCE_OF_WRITE: Readonly<Record<string, string>> = { reflect: "reflect", remember: "remember" };

export function lessonEntryOf(record: EntryRecord): LessonEntryInit {
  const metadata = parseObject(record.metadataJson);
  const conditions = metadata["conditions"];
  return {
    id: record.id,
    lessonId: record.id,
    content: record.content,
    lessonType: lessonTypeOf(record),
    scope: scopeOf(record),
    importance: record.importance,
    conditions: Array.isArray(conditions) ? conditions.filter((c): c is string => typeof c === "string") : [],
    rationale: typeof metadata["rationale"] === "string" ? metadata["rationale"] : "",
    sourceRunId: record.runId,
    source: SOURCE_OF_WRITE[String(metadata["written_by"])] ?? "ingest",
    autoExtracted: record.derived,
    validationStatus: record.validationStatus,
    stale: isStaleRecord(record),
    confidence: record.confidence,
    promotionState: record.learning.promotionState,
    promotionTargetScope: record.learning.promotionTargetScope,
    reinforcementCount: record.learning.reinforcementCount,
    verifiedInProduction: record.learning.verifiedInProduction,
    promotionRefused: record.learning.promotionRefused,
    sourceEntryIds: [...record.sourceIds],
    lineageReview: record.lineageReview,
    agentId: record.agentId,
    userId: record.userId,
    createdAt: new Date(record.createdAt).toISOString(),
    updatedAt: new Date(record.updatedAt).toISOString(),
    provenance: provenanceView(record),
    auditTrail: record.audit.map((event) => ({
      at: new Date(event.at).toISOString(),
      field: lessonFieldName(event.field),
      oldValue: event.from,
      newValue: event.to,
      reason: event.reason,
      agentId: event.agentId,
    })),
  };
}

const WIRE_NAMES: Readonly<Record<string, string>> = {
  lessonScope: "scope",
  validationStatus: "validation_status",
  lineageReview: "lineage_review",
  metadataJson: "metadata_json",
  entryType: "entry_type",
  lessonType: "lesson_type",
};

/** The request's name of a record field, as change lists and audit trails show it. */
export function lessonFieldName(field: string): string {
  return WIRE_NAMES[field] ?? field;
}

function parseObject(json: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
