// Strategies and diagnosis: request validation, then the learning domain's clustering and failure search.
import type { ServiceImpl } from "@connectrpc/connect";
import type { LearningService } from "../../../gen/engram/v2/learning_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument, quoted } from "../../platform/errors.js";
import type { MemoryIndex } from "../../memory/memory-index.js";
import { LESSON_TYPES, type EntryStore } from "../../storage/entry-store.js";
import { diagnose } from "../../learning/diagnosis.js";
import type { OutcomeStore } from "../../learning/outcome-store.js";
import { surfaceStrategies } from "../../learning/strategies.js";
import { evidenceOfEntry } from "../memory/evidence.js";
import { bounded, content } from "../memory/validate.js";

type Handlers = Pick<ServiceImpl<typeof LearningService>, "surfaceStrategies" | "diagnose">;

export function insightHandlers(deps: { entries: EntryStore; index: MemoryIndex; outcomes: OutcomeStore }): Handlers {
  return {
    async surfaceStrategies(req, ctx) {
      const caller = callerOf(ctx);
      const known = new Set<string>(LESSON_TYPES);
      for (const type of req.lessonTypes) {
        if (!known.has(type)) throw invalidArgument("lesson_types", `unknown lesson type ${quoted(type)}; known: ${LESSON_TYPES.join(", ")}`);
      }
      const strategies = await surfaceStrategies(deps.entries, deps.index.catalog, deps.outcomes, {
        owner: caller.userId,
        runId: bounded("run_id", req.runId),
        lessonTypes: new Set(req.lessonTypes),
        userId: bounded("user_id", req.userId),
        maxStrategies: req.maxStrategies === 0 ? 5 : Math.min(50, req.maxStrategies),
        minSupport: req.minSupportingLessons === 0 ? 2 : req.minSupportingLessons,
      });
      return {
        strategies: strategies.map((s) => ({
          strategyId: s.id,
          description: s.description,
          supportingLessonCount: s.lessons.length,
          avgConfidence: s.avgConfidence,
          avgReinforcement: s.avgReinforcement,
          dominantLessonType: s.dominantType,
          dominantScope: s.dominantScope,
          lessonIds: s.lessons.map((l) => l.id),
          successRate: s.successRate,
          outcomeCount: s.outcomeCount,
        })),
      };
    },

    async diagnose(req, ctx) {
      const caller = callerOf(ctx);
      const errorText = content("error_text", req.errorText);
      const result = await diagnose(deps.index, deps.entries, deps.outcomes, {
        owner: caller.userId,
        runId: bounded("run_id", req.runId),
        errorText,
        errorType: bounded("error_type", req.errorType),
        userId: bounded("user_id", req.userId),
        limit: req.limit === 0 ? 10 : Math.min(100, req.limit),
      });
      return {
        failureLessons: result.lessons.map(({ record, score }) => evidenceOfEntry(record, score, record.entryType === "rule" ? "rule_overlay" : "lesson_overlay", deps.entries.viewOf(record))),
        summary: result.summary,
        totalFailureLessons: result.total,
      };
    },
  };
}
