// Reflect: validates the request (caller lessons field by field, naming `lessons[i].field`) and hands it to the
// learning domain's Reflector.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { LearningService, Lesson, LessonSchema } from "../../../gen/engram/v2/learning_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument, notFound, quoted } from "../../platform/errors.js";
import { IMPORTANCE_LEVELS, LESSON_SCOPES, LESSON_TYPES, type EntryStore } from "../../storage/entry-store.js";
import type { CandidateLesson } from "../../learning/evidence.js";
import type { Reflector } from "../../learning/reflection.js";
import type { RunLinks } from "../../runs/run-links.js";
import { bounded, content, oneOf, required } from "../memory/validate.js";
import { clampedConfidence } from "./confidence.js";

type Handlers = Pick<ServiceImpl<typeof LearningService>, "reflect">;

/** A caller may supply this many lessons at once, each with this many conditions. */
const MAX_CALLER_LESSONS = 100;
const MAX_CONDITIONS = 32;

export function reflectHandlers(deps: { entries: EntryStore; reflector: Reflector; runLinks: RunLinks }): Handlers {
  return {
    async reflect(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const batchConfidence = req.confidence === undefined ? 1 : clampedConfidence("confidence", req.confidence);
      const callerLessons = callerLessonsOf(req.lessons, batchConfidence);
      let after;
      if (req.checkpointId !== "") {
        after = deps.entries.find(bounded("checkpoint_id", req.checkpointId), (r) => r.owner === caller.userId && r.runId === runId && r.entryType === "checkpoint");
        if (after === undefined) throw notFound(`checkpoint ${quoted(req.checkpointId)} in run ${quoted(runId)}`);
      }
      const reflection = await deps.reflector.reflect({
        owner: caller.userId,
        runId,
        // The caller's own runs linked under this one (one level): their evidence is read too.
        linkedRunIds: req.includeLinkedRuns ? deps.runLinks.linkedRuns(caller.userId, runId) : [],
        after,
        stepId: bounded("step_id", req.stepId),
        lastNItems: Math.max(0, req.lastNItems),
        includeStepOutcomes: req.includeStepOutcomes ?? true,
        userId: bounded("user_id", req.userId),
        agentId: bounded("agent_id", req.agentId),
        callerLessons,
        signal: ctx.signal,
      });
      const lessons: MessageInitShape<typeof LessonSchema>[] = reflection.decisions.map(({ candidate, lesson }) => ({
        lessonId: lesson?.id ?? "",
        content: candidate.content,
        lessonType: candidate.lessonType,
        scope: candidate.scope,
        importance: candidate.importance,
        conditions: [...candidate.conditions],
        rationale: candidate.rationale,
      }));
      return {
        lessons,
        decisions: reflection.decisions.map(({ candidate, decision, reason, lesson }, index) => ({
          lessonIndex: index,
          lessonId: lesson?.id ?? "",
          decision,
          reason,
          confidence: decision === "merged" && lesson !== undefined ? lesson.confidence : candidate.confidence,
          validationStatus: lesson?.validationStatus ?? "",
          promotionState: lesson?.learning.promotionState ?? "",
          promotionTargetScope: lesson?.learning.promotionTargetScope ?? "",
        })),
        summary: reflection.summary,
        confidence: callerLessons.length > 0 ? batchConfidence : reflection.confidence,
        degraded: reflection.degraded,
        fallbackReason: reflection.fallbackReason,
        lessonsStored: reflection.decisions.filter((d) => d.decision === "accepted").length,
        evidenceItems: reflection.evidenceCount,
      };
    },
  };
}

/** The caller's lessons as candidates; any invalid field rejects the whole batch before anything is stored. */
function callerLessonsOf(lessons: readonly Lesson[], confidence: number): CandidateLesson[] {
  if (lessons.length > MAX_CALLER_LESSONS) throw invalidArgument("lessons", `holds ${lessons.length} lessons; at most ${MAX_CALLER_LESSONS} per call`);
  return lessons.map((lesson, i) => {
    const field = (name: string): string => `lessons[${i}].${name}`;
    if (lesson.conditions.length > MAX_CONDITIONS) throw invalidArgument(field("conditions"), `holds ${lesson.conditions.length} conditions; at most ${MAX_CONDITIONS}`);
    return {
      content: content(field("content"), lesson.content),
      lessonType: oneOf(field("lesson_type"), lesson.lessonType, LESSON_TYPES, "observation"),
      scope: oneOf(field("scope"), lesson.scope, LESSON_SCOPES, "run"),
      importance: oneOf(field("importance"), lesson.importance, IMPORTANCE_LEVELS, "medium"),
      conditions: lesson.conditions.map((condition, j) => content(`${field("conditions")}[${j}]`, condition, true)).filter((c) => c.trim() !== ""),
      rationale: content(field("rationale"), lesson.rationale, true),
      confidence,
      sourceIds: [],
    };
  });
}
