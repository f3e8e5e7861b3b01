// What a direct edit of a lesson or rule (UpdateLesson) changes besides the fields it names. New text is screened as
// ingest screens a new entry (memory/ingest-screening.ts): flagged instruction-like or cleared by what it now says,
// judged with the lesson's provenance; and knowledge that is untrusted after the edit is guarded as ingest guards it
// (a rule becomes an observation lesson, the global scope the run's). A scope change withdraws a pending promotion,
// as does the edit that makes a lesson untrusted (untrusted knowledge is never proposed); a direct confidence
// re-seeds the posterior at that confidence with the evidence it had, so later outcomes move it from there.
import type { EntryAuditEvent, EntryRecord, LearningState } from "../storage/entry-record.js";
import { PRIOR_STRENGTH } from "../storage/entry-record.js";
import type { EntryPatch } from "../storage/entry-store.js";
import { evidenceTrust, guardedKnowledge } from "../memory/evidence-trust.js";
import { INSTRUCTION_FLAG, ingestFlags } from "../memory/instruction-detector.js";

/** The patch an edit stores, and the audit events it adds beside the per-field ones. */
export interface LessonEdit {
  readonly patch: EntryPatch;
  readonly audit: readonly EntryAuditEvent[];
}

/**
 * The edit `requested` makes of `lesson` as it is now (read in the write transaction, so a concurrent change of its
 * trust is seen). `at` and `agentId` date and sign the `trust` audit event of an edit that changes its trust.
 */
export function lessonEdit(lesson: EntryRecord, requested: EntryPatch, at: number, agentId: string): LessonEdit {
  let patch = requested;
  if (requested.content !== undefined && requested.content !== lesson.content) {
    // The old text's flag said nothing about the new one: the new one is screened afresh.
    const kept = lesson.flags.filter((flag) => flag !== INSTRUCTION_FLAG);
    patch = { ...patch, flags: [...new Set([...kept, ...ingestFlags(requested.content, lesson.provenance.trust)])] };
  }
  const edited = {
    entryType: lesson.entryType,
    lessonType: lesson.lessonType,
    lessonScope: patch.lessonScope ?? lesson.lessonScope,
    provenance: lesson.provenance,
    flags: patch.flags ?? lesson.flags,
  };
  const guarded = guardedKnowledge(edited);
  if (guarded !== edited) {
    if (guarded.entryType !== lesson.entryType) patch = { ...patch, entryType: guarded.entryType };
    if (guarded.lessonType !== lesson.lessonType) patch = { ...patch, lessonType: guarded.lessonType };
    if (guarded.lessonScope !== edited.lessonScope) patch = { ...patch, lessonScope: guarded.lessonScope };
  }
  const from = evidenceTrust(lesson);
  const to = evidenceTrust(edited);
  if (from === to) return { patch: withLearning(lesson, patch, false), audit: [] };
  const why = to === "untrusted" ? "the edited text reads as instructions to an agent" : "the edited text no longer reads as instructions to an agent";
  const audit: EntryAuditEvent[] = [{ at, field: "trust", from, to, reason: why, agentId }];
  const state = lesson.learning.promotionState;
  const withdrawn = to === "untrusted" && (state === "proposed" || state === "auditioning");
  if (withdrawn) audit.push({ at, field: "promotion", from: state, to: "none", reason: `withdrawn: ${why}`, agentId });
  return { patch: withLearning(lesson, patch, withdrawn), audit };
}

/** The lesson's learning after the edit: promotion withdrawn by a scope change or by losing trust, confidence re-seeded. */
function withLearning(lesson: EntryRecord, patch: EntryPatch, withdrawn: boolean): EntryPatch {
  let learning: LearningState = lesson.learning;
  const scopeChanged = patch.lessonScope !== undefined && patch.lessonScope !== lesson.lessonScope;
  if ((scopeChanged && learning.promotionState !== "") || withdrawn) {
    learning = { ...learning, promotionState: "", promotionTargetScope: "", auditionWins: 0, auditionLosses: 0 };
  }
  if (patch.confidence !== undefined) {
    const total = Math.max(PRIOR_STRENGTH, learning.evidenceFor + learning.evidenceAgainst);
    learning = { ...learning, evidenceFor: patch.confidence * total, evidenceAgainst: (1 - patch.confidence) * total };
  }
  return learning === lesson.learning ? patch : { ...patch, learning };
}
