// POST /v2/control/query: routed retrieval with an answer, or plain semantic search in direct-bypass mode.
import type { ServiceImpl } from "@connectrpc/connect";
import type { MemoryService } from "../../../gen/engram/v2/memory_service_pb.js";
import { invalidArgument, permissionDenied, quoted } from "../../platform/errors.js";
import type { LlmFallback } from "../../retrieval/answerer.js";
import { parseEnvTag, type EnvTag } from "../../retrieval/env-tags.js";
import { callerOf } from "../../auth/principal.js";
import { narrowEntryTypes } from "../../coordination/agent-access.js";
import type { MemoryDeps } from "./deps.js";
import { evidenceOfHit } from "./evidence.js";
import { retrieve, type Retrieved } from "./retrieve.js";
import { BUDGETS, RANK_BY, bounded, clampLimit, content, entryTypeFilter, oneOf, required, timeBounds } from "./validate.js";
import { queryVector } from "./vector-space-input.js";
import { provenanceFilterOf } from "./provenance-filter-input.js";

type Handlers = Pick<ServiceImpl<typeof MemoryService>, "query">;

const MODES = ["agent_routed", "direct_bypass"] as const;
const DIRECT_LANES = ["semantic_search"] as const;

const LLM_FALLBACKS: Readonly<Record<Exclude<LlmFallback, "">, string>> = {
  timeout: "the LLM call timed out",
  error: "the LLM call failed",
  invalid_reply: "the LLM reply was unusable",
};

export function envTagList(field: string, values: readonly string[]): EnvTag[] {
  return values.map((value, i) => {
    const tag = parseEnvTag(value);
    if (tag === undefined) throw invalidArgument(`${field}[${i}]`, `${quoted(value)} is not TYPE:NAME or TYPE:NAME:VERSION`);
    return tag;
  });
}

function routingSummary(budget: string, result: Retrieved, answer: string, agentId: string): string {
  const parts = [`budget ${budget}: ${result.sparseCandidates} lexical and ${result.denseCandidates} vector candidates, ${result.candidatesConsidered} fused`];
  if (result.vectorSkipped !== "") parts.push("vector search skipped: the query could not be embedded");
  parts.push(`answer ${answer}`);
  if (agentId !== "") parts.push(`asked by agent "${agentId}"`);
  return parts.join("; ");
}

export function queryHandlers(deps: MemoryDeps): Handlers {
  return {
    async query(req, ctx) {
      const runId = required("run_id", req.runId);
      const query = content("query", req.query);
      const mode = oneOf("mode", req.mode, MODES, "agent_routed");
      oneOf("direct_lane", req.directLane, DIRECT_LANES, "semantic_search");
      const agentId = bounded("agent_id", req.agentId);
      const view = deps.agents.readView(callerOf(ctx).userId, runId, agentId);
      const envTags = envTagList("env_tags", req.envTags);
      if (mode === "direct_bypass" && !deps.directSearchEnabled) {
        throw permissionDenied("direct_bypass queries are disabled; set SERVICE_CORE_ENABLE_DIRECT_SEARCH=true to allow them");
      }
      const rankBy = oneOf("rank_by", req.rankBy, RANK_BY, "relevance");
      const budget = oneOf("budget", req.budget, BUDGETS, "mid");
      const direct = mode === "direct_bypass";
      const { vector, vectorSpace } = queryVector(deps.entries.spaces, callerOf(ctx).userId, deps.index.embedder.dimensions, req.vectorSpace, req.embedding);
      const consultedRuns = deps.runLinks.runsToSearch(callerOf(ctx).userId, runId, req.includeLinkedRuns);
      const result = await retrieve(deps.index, deps.acl, ctx, {
        // The run, then the caller's links under it (one level); each is scoped like run_id (own data, grants).
        runIds: consultedRuns,
        text: query,
        vector,
        vectorSpace,
        userId: bounded("user_id", req.userId),
        entryTypes: narrowEntryTypes(entryTypeFilter("entry_types", req.entryTypes), view),
        lanes: view?.lanes,
        laneFilter: bounded("lane_filter", req.laneFilter),
        time: timeBounds(req.minTimestamp, req.maxTimestamp),
        provenance: provenanceFilterOf(req.origins, req.trust),
        includeWorkingMemory: req.includeWorkingMemory ?? true,
        includeGlobalLessons: !req.preferCurrentRun && !direct,
        limit: clampLimit(req.limit, 10, 100),
        budget,
        rankBy,
        envTags,
        tolerateEmbedderFailure: true,
      });
      if (result.vectorSkipped !== "") deps.logger.warn({ err: result.vectorSkipped }, "query embedding failed; searching lexically only");
      const answer = direct
        ? { finalAnswer: "", confidence: 0, citations: [], synthesized: false, fallback: "" as const }
        : await deps.answerer.answer(query, result.hits);
      const answerHow = answer.synthesized
        ? "synthesised by the LLM"
        : direct
          ? "skipped (direct bypass)"
          : answer.fallback === ""
            ? "extracted from evidence"
            : `extracted from evidence (${LLM_FALLBACKS[answer.fallback]})`;
      return {
        finalAnswer: answer.finalAnswer,
        confidence: Math.round(answer.confidence * 1e4) / 1e4,
        mode,
        evidence: result.hits.map((hit) => evidenceOfHit(hit, req.explain, rankBy, deps.entries.viewOf(hit.entry))),
        citations: answer.citations,
        degraded: result.vectorSkipped !== "" || answer.fallback !== "",
        consultedRuns,
        routingSummary: routingSummary(budget, result, answerHow, agentId),
      };
    },
  };
}
