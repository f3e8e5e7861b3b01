// Lesson maintenance routes: update (scope, validation status, stale, confidence, content, importance, lane,
// metadata; every change audited) and delete.
import type { ServiceImpl } from "@connectrpc/connect";
import type { LearningService } from "../../../gen/engram/v2/learning_service_pb.js";
import { callerOf, isAdmin, type Principal } from "../../auth/principal.js";
import { invalidArgument, notFound, quoted } from "../../platform/errors.js";
import type { EntryChanges } from "../../memory/entry-changes.js";
import { IMPORTANCE_LEVELS, LESSON_SCOPES, VALIDATION_STATUSES, type CanRead, type EntryPatch, type EntryStore } from "../../storage/entry-store.js";
import { lessonEntryOf, lessonFieldName } from "../../learning/lesson-view.js";
import { bounded, content, jsonObject, oneOf, required } from "../memory/validate.js";

type Handlers = Pick<ServiceImpl<typeof LearningService>, "updateLesson" | "deleteLesson">;

export interface LessonDeps {
  readonly entries: EntryStore;
  readonly changes: EntryChanges;
}

/** Lessons a caller may change: its own (any, for admins). Others' lessons do not exist for it. */
function ownLesson(caller: Principal): CanRead {
  return (record) => record.entryType === "lesson" && (isAdmin(caller) || record.owner === caller.userId);
}

export function lessonHandlers(deps: LessonDeps): Handlers {
  const find = (caller: Principal, lessonId: string) => {
    const lesson = deps.entries.find(required("lesson_id", lessonId), ownLesson(caller));
    if (lesson === undefined) throw notFound(`lesson ${quoted(lessonId)}`);
    return lesson;
  };
  return {
    async updateLesson(req, ctx) {
      const caller = callerOf(ctx);
      const lesson = find(caller, req.lessonId);
      const patch: EntryPatch = {
        ...(req.scope === "" ? {} : { lessonScope: oneOf("scope", req.scope, LESSON_SCOPES, "run") }),
        ...(req.validationStatus === "" ? {} : { validationStatus: oneOf("validation_status", req.validationStatus, VALIDATION_STATUSES, "pending") }),
        ...(req.stale === undefined ? {} : { stale: req.stale }),
        ...(req.confidence === undefined ? {} : { confidence: clampedConfidence(req.confidence) }),
        ...(req.content === undefined ? {} : { content: content("content", req.content) }),
        ...(req.importance === "" ? {} : { importance: oneOf("importance", req.importance, IMPORTANCE_LEVELS, "medium") }),
        ...(req.lane === undefined ? {} : { lane: bounded("lane", req.lane) }),
        ...(req.metadataJson === undefined ? {} : { metadataJson: jsonObject("metadata_json", req.metadataJson) }),
      };
      if (Object.keys(patch).length === 0) {
        throw invalidArgument("lesson_id", "names no field to change: set scope, validation_status, stale, confidence, content, importance, lane or metadata_json");
      }
      const by = { reason: bounded("reason", req.reason), agentId: bounded("agent_id", req.agentId) };
      const updated = await deps.changes.update(lesson.seq, patch, by);
      if (updated === undefined) throw notFound(`lesson ${quoted(req.lessonId)}`);
      return { success: true, lesson: lessonEntryOf(updated.after), changedFields: updated.changed.map(lessonFieldName) };
    },

    async deleteLesson(req, ctx) {
      const caller = callerOf(ctx);
      const lesson = find(caller, req.lessonId);
      const deleted = await deps.changes.delete(lesson.seq, { reason: "", agentId: "" });
      if (deleted === undefined) throw notFound(`lesson ${quoted(req.lessonId)}`);
      return { success: true };
    },
  };
}

function clampedConfidence(value: number): number {
  if (!Number.isFinite(value)) throw invalidArgument("confidence", "must be a number");
  return Math.min(1, Math.max(0, value));
}
