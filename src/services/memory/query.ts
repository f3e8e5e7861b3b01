// POST /v2/control/query: routed retrieval with an answer, or plain semantic search in direct-bypass mode.
import type { ServiceImpl } from "@connectrpc/connect";
import type { MemoryService } from "../../../gen/engram/v2/memory_service_pb.js";
import { permissionDenied } from "../../platform/errors.js";
import type { MemoryDeps } from "./deps.js";
import { evidenceOfHit } from "./evidence.js";
import { retrieve } from "./retrieve.js";
import { BUDGETS, RANK_BY, bounded, callerVector, clampLimit, content, entryTypeFilter, oneOf, required, timeBounds } from "./validate.js";

type Handlers = Pick<ServiceImpl<typeof MemoryService>, "query">;

const MODES = ["agent_routed", "direct_bypass"] as const;
const DIRECT_LANES = ["semantic_search"] as const;

export function queryHandlers(deps: MemoryDeps): Handlers {
  return {
    async query(req, ctx) {
      const runId = required("run_id", req.runId);
      const query = content("query", req.query);
      const mode = oneOf("mode", req.mode, MODES, "agent_routed");
      oneOf("direct_lane", req.directLane, DIRECT_LANES, "semantic_search");
      if (mode === "direct_bypass" && !deps.directSearchEnabled) {
        throw permissionDenied("direct_bypass queries are disabled; set SERVICE_CORE_ENABLE_DIRECT_SEARCH=true to allow them");
      }
      const rankBy = oneOf("rank_by", req.rankBy, RANK_BY, "relevance");
      const budget = oneOf("budget", req.budget, BUDGETS, "mid");
      const direct = mode === "direct_bypass";
      const result = await retrieve(deps.index, deps.acl, ctx, {
        runIds: [runId],
        text: query,
        vector: callerVector("embedding", req.embedding, deps.index.embedder.dimensions),
        userId: bounded("user_id", req.userId),
        entryTypes: entryTypeFilter("entry_types", req.entryTypes),
        laneFilter: bounded("lane_filter", req.laneFilter),
        time: timeBounds(req.minTimestamp, req.maxTimestamp),
        includeWorkingMemory: req.includeWorkingMemory ?? true,
        includeGlobalLessons: !req.preferCurrentRun && !direct,
        limit: clampLimit(req.limit, 10, 100),
        budget,
        rankBy,
      });
      const answer = direct ? { finalAnswer: "", confidence: 0, citations: [], synthesized: false } : await deps.answerer.answer(query, result.hits);
      return {
        finalAnswer: answer.finalAnswer,
        confidence: Math.round(answer.confidence * 1e4) / 1e4,
        mode,
        evidence: result.hits.map((hit) => evidenceOfHit(hit, req.explain, rankBy)),
        citations: answer.citations,
        degraded: false,
        consultedRuns: [runId],
        routingSummary:
          `budget ${budget}: ${result.sparseCandidates} lexical and ${result.denseCandidates} vector candidates, ` +
          `${result.candidatesConsidered} fused; answer ${answer.synthesized ? "synthesised by the LLM" : direct ? "skipped (direct bypass)" : "extracted from evidence"}`,
      };
    },
  };
}
