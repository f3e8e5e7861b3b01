// Lesson maintenance routes: update (scope, validation status, stale, confidence, content, importance, lane,
// metadata; every change audited; what an edit implies besides is learning/lesson-edit.ts), delete, and a person's
// decision on a pending promotion.
import type { ServiceImpl } from "@connectrpc/connect";
import { isUntrustedKnowledge } from "../../memory/evidence-trust.js";
import type { LearningService } from "../../../gen/engram/v2/learning_service_pb.js";
import { callerOf, isAdmin, type Principal } from "../../auth/principal.js";
import { Code, ConnectError } from "@connectrpc/connect";
import { invalidArgument, notFound, quoted } from "../../platform/errors.js";
import type { Storage } from "../../storage/database.js";
import type { LearningChanges } from "../../learning/learning-changes.js";
import { resolvePromotion } from "../../learning/reinforcement.js";
import { lessonEdit } from "../../learning/lesson-edit.js";
import { clampedConfidence } from "./confidence.js";
import type { EntryChanges } from "../../memory/entry-changes.js";
import { IMPORTANCE_LEVELS, LESSON_SCOPES, VALIDATION_STATUSES, type CanRead, type EntryPatch, type EntryStore } from "../../storage/entry-store.js";
import { lessonEntryOf, lessonFieldName } from "../../learning/lesson-view.js";
import { bounded, content, jsonObject, oneOf, required } from "../memory/validate.js";

type Handlers = Pick<ServiceImpl<typeof LearningService>, "updateLesson" | "deleteLesson" | "resolveLessonPromotion">;

export interface LessonDeps {
  readonly storage: Storage;
  readonly entries: EntryStore;
  readonly changes: EntryChanges;
  readonly learning: LearningChanges;
}

const RESOLUTIONS = ["accept", "refuse"] as const;

/** Lessons (and rules) a caller may change: its own (any, for admins). Others' lessons do not exist for it. */
function ownLesson(caller: Principal): CanRead {
  return (record) => (record.entryType === "lesson" || record.entryType === "rule") && (isAdmin(caller) || record.owner === caller.userId);
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
        ...(req.confidence === undefined ? {} : { confidence: clampedConfidence("confidence", req.confidence) }),
        ...(req.content === undefined ? {} : { content: content("content", req.content) }),
        ...(req.importance === "" ? {} : { importance: oneOf("importance", req.importance, IMPORTANCE_LEVELS, "medium") }),
        ...(req.lane === undefined ? {} : { lane: bounded("lane", req.lane) }),
        ...(req.metadataJson === undefined ? {} : { metadataJson: jsonObject("metadata_json", req.metadataJson) }),
      };
      if (Object.keys(patch).length === 0) {
        throw invalidArgument("lesson_id", "names no field to change: set scope, validation_status, stale, confidence, content, importance, lane or metadata_json");
      }
      const by = { reason: bounded("reason", req.reason), agentId: bounded("agent_id", req.agentId) };
      const updated = await deps.changes.update(lesson.seq, patch, by, lessonEdit);
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

    async resolveLessonPromotion(req, ctx) {
      const caller = callerOf(ctx);
      const lesson = find(caller, req.lessonId);
      const accept = oneOf("resolution", required("resolution", req.resolution), RESOLUTIONS, "accept") === "accept";
      const by = { reason: content("reason", req.reason, true), agentId: bounded("agent_id", req.agentId) };
      const applied = await deps.storage.transaction(() => {
        const current = deps.entries.get(lesson.seq);
        if (current === undefined) return undefined;
        // Untrusted knowledge is never proposed: a person resolves it as it is (accepting corroborates it).
        if (current.learning.promotionState === "" && !isUntrustedKnowledge(current)) {
          throw new ConnectError(`lesson ${quoted(req.lessonId)} has no pending promotion`, Code.FailedPrecondition);
        }
        const resolved = resolvePromotion(current, accept, by.reason);
        return deps.learning.applyInTransaction(current.seq, resolved, by, { validationStatus: resolved.validationStatus });
      });
      if (applied === undefined) throw notFound(`lesson ${quoted(req.lessonId)}`);
      deps.learning.committed([applied], "promotion resolved");
      return { success: true, lesson: lessonEntryOf(applied.updated.after) };
    },
  };
}
