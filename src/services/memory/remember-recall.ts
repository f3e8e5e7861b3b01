// The quickstart routes: remember one fact or lesson, recall an answer from a session.
import type { ServiceImpl } from "@connectrpc/connect";
import type { MemoryService } from "../../../gen/engram/v2/memory_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { permissionDenied } from "../../platform/errors.js";
import { IMPORTANCE_LEVELS, LESSON_SCOPES, newEntry } from "../../storage/entry-store.js";
import { narrowEntryTypes } from "../../coordination/agent-access.js";
import type { MemoryDeps } from "./deps.js";
import { expiryOf, provenanceOf } from "./provenance-input.js";
import { screenedEntry } from "../../memory/ingest-screening.js";
import { evidenceOfHit } from "./evidence.js";
import { retrieve } from "./retrieve.js";
import { provenanceFilterOf } from "./provenance-filter-input.js";
import { BUDGETS, bounded, clampLimit, content, entryTypeFilter, jsonObject, oneOf, required, timeBounds, unixSeconds } from "./validate.js";

type Handlers = Pick<ServiceImpl<typeof MemoryService>, "remember" | "recall">;

const INTENTS = ["fact", "lesson"] as const;

export function rememberRecallHandlers(deps: MemoryDeps): Handlers {
  return {
    async remember(req, ctx) {
      const caller = callerOf(ctx);
      const sessionId = required("session_id", req.sessionId);
      bounded("agent_id", req.agentId);
      bounded("user_id", req.userId);
      const text = content("content", req.content);
      const intent = oneOf("intent", req.intent, INTENTS, "fact");
      const scope = oneOf("lesson_scope", req.lessonScope, LESSON_SCOPES, "session");
      const occurrence = unixSeconds("occurrence_time", req.occurrenceTime);
      const now = deps.now();
      const provenance = provenanceOf("provenance", req.provenance, "agent", { trustPolicy: deps.trustPolicy, keyId: caller.keyId, now });
      const expiresAt = expiryOf("", req.ttlSeconds, req.expiresAt, now);
      const refusal = deps.agents.writeCheck(caller.userId, sessionId, req.agentId)({ lane: "", entryType: intent });
      if (refusal !== undefined) throw permissionDenied(`${refusal.field === "lane" ? "lane" : "intent"}: ${refusal.reason}`);
      const [written] = await deps.writer.write(
        [
          {
            entry: screenedEntry(
              newEntry({
                owner: caller.userId,
                runId: sessionId,
                agentId: req.agentId,
                userId: req.userId,
                entryType: intent,
                content: text,
                lessonScope: intent === "lesson" ? scope : "",
                lessonType: intent === "lesson" ? "observation" : "",
                importance: oneOf("importance", req.importance, IMPORTANCE_LEVELS, "medium"),
                metadataJson: jsonObject("metadata_json", req.metadataJson),
                occurrenceTime: occurrence || Math.floor(Date.now() / 1000),
                provenance,
                expiresAt,
              }),
            ),
          },
        ],
        "remember",
      );
      if (written === undefined) throw new Error("write returned no entry");
      return {
        success: true,
        entryId: written.record.id,
        entryType: written.record.entryType,
        sessionId,
        createdAt: new Date(written.record.createdAt).toISOString(),
      };
    },

    async recall(req, ctx) {
      const sessionId = required("session_id", req.sessionId);
      bounded("user_id", req.userId);
      const query = content("query", req.query);
      const view = deps.agents.readView(callerOf(ctx).userId, sessionId, bounded("agent_id", req.agentId));
      const result = await retrieve(deps.index, deps.acl, ctx, {
        runIds: [sessionId],
        text: query,
        vector: undefined,
        userId: req.userId,
        entryTypes: narrowEntryTypes(entryTypeFilter("entry_types", req.entryTypes), view),
        lanes: view?.lanes,
        laneFilter: bounded("lane_filter", req.laneFilter),
        time: timeBounds(req.minTimestamp, req.maxTimestamp),
        includeWorkingMemory: true,
        includeGlobalLessons: true,
        limit: clampLimit(req.limit, 10, 100),
        budget: oneOf("budget", req.budget, BUDGETS, "mid"),
        rankBy: "relevance",
        provenance: provenanceFilterOf(req.origins, req.trust),
      });
      const answer = await deps.answerer.answer(query, result.hits);
      return {
        finalAnswer: answer.finalAnswer,
        confidence: Math.round(answer.confidence * 1e4) / 1e4,
        mode: "agent_routed",
        evidence: result.hits.map((hit) => evidenceOfHit(hit, false, "relevance", deps.entries.viewOf(hit.entry))),
        citations: answer.citations,
      };
    },
  };
}
