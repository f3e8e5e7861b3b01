// POST /v2/control/memory_health: counts, staleness, contradicting lessons, low-confidence lessons, section health;
// the assessment is the domain's (src/memory/memory-health.ts).
import type { ServiceImpl } from "@connectrpc/connect";
import type { MemoryService } from "../../../gen/engram/v2/memory_service_pb.js";
import { callerOf, isAdmin } from "../../auth/principal.js";
import { assessHealth } from "../../memory/memory-health.js";
import type { MemoryDeps } from "./deps.js";
import { bounded, clampLimit } from "./validate.js";

type Handlers = Pick<ServiceImpl<typeof MemoryService>, "getMemoryHealth">;

export function memoryHealthHandlers(deps: MemoryDeps): Handlers {
  const vectors = {
    vector: (seq: number) => deps.entries.vector(seq),
    similarity: (seq: number, query: Float32Array) => deps.index.dense.similarity(seq, query),
  };
  return {
    async getMemoryHealth(req, ctx) {
      const caller = callerOf(ctx);
      const runId = bounded("run_id", req.runId);
      const report = await assessHealth(deps.entries, vectors, {
        owner: isAdmin(caller) ? undefined : caller.userId,
        runId: runId === "" ? undefined : runId,
        userId: req.userId,
        staleDays: req.staleThresholdDays === 0 ? 30 : Math.min(3650, Math.max(1, req.staleThresholdDays)),
        limit: clampLimit(req.limit, 500, 10000),
        now: Date.now(),
      });
      return {
        entryCounts: report.counts,
        staleEntries: report.stale,
        contradictions: report.contradictions.map(({ older, newer, similarity }) => ({
          lessonAId: older.id,
          lessonBId: newer.id,
          similarity: Math.round(similarity * 1e4) / 1e4,
          lessonAType: older.lessonType,
          lessonBType: newer.lessonType,
        })),
        lowConfidenceCount: report.lowConfidence.length,
        promotionCandidates: report.promotionCandidates.map((l) => l.id),
        sectionHealth: report.sections.map((s) => ({
          sectionName: s.section,
          count: s.count,
          avgConfidence: Math.round(s.avgConfidence * 1e4) / 1e4,
          avgAgeHours: Math.round(s.avgAgeHours * 100) / 100,
          staleCount: s.stale,
        })),
        lowConfidenceLessonIds: report.lowConfidence.map((l) => l.id),
        entriesInspected: report.inspected,
        quarantinedLessonIds: report.quarantined.map((l) => l.id),
        staleLessonIds: report.staleLessons.map((l) => l.id),
        untrustedEntries: report.untrusted,
        instructionFlaggedEntries: report.instructionFlagged,
        instructionFlaggedEntryIds: report.flaggedIds,
        untrustedLessonIds: report.untrustedLessonIds,
      };
    },
  };
}
