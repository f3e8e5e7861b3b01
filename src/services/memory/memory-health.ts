// POST /v2/control/memory_health: counts, staleness, contradicting lessons, low-confidence lessons, section health.
import type { ServiceImpl } from "@connectrpc/connect";
import type { MemoryService } from "../../../gen/engram/v2/memory_service_pb.js";
import { callerOf, isAdmin } from "../../auth/principal.js";
import { isStaleRecord, type EntryRecord } from "../../storage/entry-store.js";
import { sectionOf, CONTEXT_SECTIONS } from "../../retrieval/context/assemble-context.js";
import type { MemoryDeps } from "./deps.js";
import { bounded, clampLimit } from "./validate.js";

type Handlers = Pick<ServiceImpl<typeof MemoryService>, "getMemoryHealth">;

const LOW_CONFIDENCE = 0.5;
/** Lessons at least this similar (cosine of their vectors) are compared for disagreement. */
const SAME_SUBJECT = 0.8;
/** Contradictions are sought pairwise among at most this many lessons (the newest), so a call stays bounded. */
const MAX_COMPARED_LESSONS = 1000;
const NEGATION = /\b(not|never|don't|do not|avoid|shouldn't|should not|no longer|stop)\b/i;

function disagree(a: EntryRecord, b: EntryRecord): boolean {
  const types = new Set([a.lessonType, b.lessonType]);
  if (types.has("success") && types.has("failure")) return true;
  return NEGATION.test(a.content) !== NEGATION.test(b.content);
}

export function memoryHealthHandlers(deps: MemoryDeps): Handlers {
  return {
    async getMemoryHealth(req, ctx) {
      const caller = callerOf(ctx);
      const runId = bounded("run_id", req.runId);
      const staleDays = req.staleThresholdDays === 0 ? 30 : Math.min(3650, Math.max(1, req.staleThresholdDays));
      const limit = clampLimit(req.limit, 500, 10000);
      const owner = isAdmin(caller) ? undefined : caller.userId;
      const now = Date.now();
      const inspected: EntryRecord[] = [];
      for (const seq of deps.entries.visibleSeqs(owner, runId === "" ? undefined : runId, true)) {
        if (inspected.length >= limit) break;
        const entry = deps.entries.get(seq);
        if (entry === undefined || (req.userId !== "" && entry.userId !== req.userId)) continue;
        inspected.push(entry);
      }
      const counts: Record<string, number> = {};
      let stale = 0;
      const isStale = (e: EntryRecord): boolean => isStaleRecord(e) || now - e.createdAt > staleDays * 86_400_000;
      const sections = new Map<string, { count: number; confidence: number; ageHours: number; stale: number }>();
      for (const entry of inspected) {
        counts[entry.entryType] = (counts[entry.entryType] ?? 0) + 1;
        if (isStale(entry)) stale++;
        const name = sectionOf(entry.entryType);
        const section = sections.get(name) ?? { count: 0, confidence: 0, ageHours: 0, stale: 0 };
        section.count++;
        section.confidence += entry.confidence;
        section.ageHours += (now - entry.createdAt) / 3_600_000;
        if (isStale(entry)) section.stale++;
        sections.set(name, section);
      }
      const lessons = inspected.filter((e) => e.entryType === "lesson" && !isStaleRecord(e));
      const lowConfidence = lessons.filter((l) => l.confidence < LOW_CONFIDENCE).sort((a, b) => a.confidence - b.confidence);
      const contradictions = [];
      // `inspected` is newest first, so this keeps the newest lessons.
      const compared = lessons.slice(0, MAX_COMPARED_LESSONS);
      for (let i = 0; i < compared.length; i++) {
        const a = compared[i] as EntryRecord;
        const va = deps.entries.vector(a.seq);
        if (va === undefined) continue;
        for (let j = i + 1; j < compared.length; j++) {
          const b = compared[j] as EntryRecord;
          const similarity = deps.index.dense.similarity(b.seq, va);
          if (similarity >= SAME_SUBJECT && disagree(a, b)) {
            const [older, newer] = a.seq < b.seq ? [a, b] : [b, a];
            contradictions.push({
              lessonAId: older.id,
              lessonBId: newer.id,
              similarity: Math.round(similarity * 1e4) / 1e4,
              lessonAType: older.lessonType,
              lessonBType: newer.lessonType,
            });
          }
        }
      }
      return {
        entryCounts: counts,
        staleEntries: stale,
        contradictions,
        lowConfidenceCount: lowConfidence.length,
        promotionCandidates: [],
        sectionHealth: CONTEXT_SECTIONS.filter((name) => sections.has(name)).map((name) => {
          const s = sections.get(name) as { count: number; confidence: number; ageHours: number; stale: number };
          return {
            sectionName: name,
            count: s.count,
            avgConfidence: Math.round((s.confidence / s.count) * 1e4) / 1e4,
            avgAgeHours: Math.round((s.ageHours / s.count) * 100) / 100,
            staleCount: s.stale,
          };
        }),
        lowConfidenceLessonIds: lowConfidence.map((l) => l.id),
        entriesInspected: inspected.length,
      };
    },
  };
}
