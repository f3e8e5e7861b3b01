// POST /v2/control/context: ranked evidence assembled into a prompt block under a token budget.
import type { ServiceImpl } from "@connectrpc/connect";
import type { MemoryService } from "../../../gen/engram/v2/memory_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument, quoted } from "../../platform/errors.js";
import { assembleContext, isContextSectionName, type ContextSectionName } from "../../retrieval/context/assemble-context.js";
import { modeOf, type Hit } from "../../retrieval/search-engine.js";
import { isStaleRecord } from "../../storage/entry-store.js";
import type { MemoryDeps } from "./deps.js";
import { evidenceOfEntry, evidenceOfHit, type EvidenceInit } from "./evidence.js";
import { readableScopes, retrieve } from "./retrieve.js";
import { untrustedLabel } from "../../memory/evidence-trust.js";
import { withinLanes } from "../../memory/scoped-search.js";
import { narrowEntryTypes } from "../../coordination/agent-access.js";
import { handoffView } from "../coordination/coordination-views.js";
import { provenanceFilterOf } from "./provenance-filter-input.js";
import type { ProvenanceFilter } from "../../memory/provenance-filter.js";
import { BUDGETS, bounded, clampLimit, entryTypeFilter, oneOf, required, timeBounds } from "./validate.js";

type Handlers = Pick<ServiceImpl<typeof MemoryService>, "getContext">;

const MODES = ["full", "summary", "sections"] as const;
const FORMATS = ["structured", "compact"] as const;
/** Candidates retrieved per section the block may hold, so every section can be filled best-first. */
const CANDIDATES_PER_SECTION_SLOT = 7;
/** Open handoffs addressed to the asking agent that a context lists; ListHandoffs pages through all. */
const MAX_PENDING_HANDOFFS = 20;

interface Candidate {
  readonly id: string;
  readonly content: string;
  readonly entryType: Hit["entry"]["entryType"];
  readonly retrievalMode: Hit["mode"];
  readonly score: number;
  readonly referenceId: string;
  readonly referenceable: boolean;
  readonly isStale: boolean;
  readonly quotedAs: string;
  readonly evidence: EvidenceInit;
}

function candidateOf(evidence: EvidenceInit, hit: Pick<Hit, "entry" | "mode" | "score">): Candidate {
  return {
    id: hit.entry.id,
    content: hit.entry.content,
    entryType: hit.entry.entryType,
    retrievalMode: hit.mode,
    score: hit.score,
    referenceId: hit.entry.referenceId,
    referenceable: hit.entry.referenceId !== "",
    isStale: isStaleRecord(hit.entry),
    quotedAs: untrustedLabel(hit.entry),
    evidence,
  };
}

export function contextHandlers(deps: MemoryDeps): Handlers {
  return {
    async getContext(req, ctx) {
      const runId = required("run_id", req.runId);
      const mode = oneOf("mode", req.mode, MODES, "full");
      const sections: ContextSectionName[] = [];
      if (mode === "sections") {
        if (req.sections.length === 0) throw invalidArgument("sections", "is required when mode is sections");
        for (const section of req.sections) {
          if (!isContextSectionName(section)) throw invalidArgument("sections", `unknown section ${quoted(section)}`);
          sections.push(section);
        }
      }
      // A registered agent reads through its lanes and read scopes (see GetContextRequest.agent_id).
      const agentId = bounded("agent_id", req.agentId);
      const owner = callerOf(ctx).userId;
      const view = deps.agents.readView(owner, runId, agentId);
      const limitPerSection = clampLimit(req.limit, 5, 50);
      const question = {
        // The run, then the caller's links under it (one level); each is scoped like run_id (own data, grants).
        runIds: deps.runLinks.runsToSearch(callerOf(ctx).userId, runId, req.includeLinkedRuns),
        text: req.query,
        vector: undefined,
        userId: bounded("user_id", req.userId),
        entryTypes: narrowEntryTypes(entryTypeFilter("entry_types", req.entryTypes), view),
        lanes: view?.lanes,
        laneFilter: bounded("lane_filter", req.laneFilter),
        time: timeBounds(req.minTimestamp, req.maxTimestamp),
        provenance: provenanceFilterOf(req.origins, req.trust),
        includeWorkingMemory: req.includeWorkingMemory ?? true,
        includeGlobalLessons: true,
        limit: Math.min(400, limitPerSection * CANDIDATES_PER_SECTION_SLOT * 2),
        budget: oneOf("budget", req.budget, BUDGETS, "mid"),
        rankBy: "relevance" as const,
        // An embedding endpoint that fails leaves the block to the words of the query, as query does.
        tolerateEmbedderFailure: true,
      };
      let candidates: Candidate[];
      let recencyFallback = false;
      const result = req.query.trim() === "" ? undefined : await retrieve(deps.index, deps.acl, ctx, question);
      if (result !== undefined && result.hits.length > 0) {
        candidates = result.hits.map((hit) => candidateOf(evidenceOfHit(hit, false, "relevance", deps.entries.viewOf(hit.entry)), hit));
      } else {
        // No topic, or nothing relevant: the newest entries of the run that pass the filters.
        recencyFallback = req.query.trim() !== "";
        candidates = newest(deps, ctx, question, question.limit);
      }
      const assembled = assembleContext({
        candidates,
        maxTokenBudget: req.maxTokenBudget,
        mode,
        sections,
        format: oneOf("format", req.format, FORMATS, "structured"),
        limitPerSection,
      });
      return {
        contextBlock: assembled.contextBlock,
        tokenEstimate: assembled.tokenCount,
        sources: assembled.included.map((c) => c.evidence),
        budgetUsed: assembled.budgetUsed,
        budgetRemaining: assembled.budgetRemaining,
        sectionSummaries: assembled.sectionSummaries.map((s) => ({
          sectionName: s.section,
          itemCount: s.itemCount,
          topItemPreview: s.topItemPreview,
          estimatedTokens: s.tokenCount,
        })),
        sourceCountsByEntryType: assembled.sourceCountsByEntryType,
        sourceCountsByRetrievalMode: assembled.sourceCountsByRetrievalMode,
        evidenceCandidatesConsidered: assembled.evidenceCandidatesConsidered,
        evidenceDroppedByBudget: assembled.evidenceDroppedByBudget,
        exactReferencesSurfaced: assembled.exactReferencesSurfaced,
        emptyReason: assembled.emptyReason === "" && recencyFallback ? "recency_fallback" : assembled.emptyReason,
        requestedTokenBudget: assembled.requestedTokenBudget,
        pendingHandoffs: agentId === "" ? [] : deps.handoffs.openFor(owner, runId, agentId, MAX_PENDING_HANDOFFS).map(handoffView),
      };
    },
  };
}

/** The newest entries of the run (and the owner's global lessons) that pass the filters, newest first. */
function newest(
  deps: MemoryDeps,
  ctx: Parameters<Handlers["getContext"]>[1],
  q: { runIds: readonly string[]; userId: string; entryTypes: ReturnType<typeof entryTypeFilter>; laneFilter: string; time: { min: number | undefined; max: number | undefined }; provenance: ProvenanceFilter; includeWorkingMemory: boolean; lanes: ReadonlySet<string> | undefined },
  limit: number,
): Candidate[] {
  const caller = callerOf(ctx);
  const { catalog } = deps.index;
  const passes = catalog.matcher({
    entryTypes: q.entryTypes,
    userId: q.userId === "" ? undefined : q.userId,
    laneFilter: q.laneFilter,
    minTimestamp: q.time.min,
    maxTimestamp: q.time.max,
    origins: q.provenance.origins,
    trust: q.provenance.trust,
  });
  const scopes = withinLanes(readableScopes(deps.acl, caller, q.runIds), q.lanes);
  const inScope = catalog.scopeMatcher(scopes, undefined);
  const lists = scopes.map((scope) => catalog.runSeqs(scope.owner, scope.runId));
  // Lists are ascending; one run (the usual case) is read backwards without copying.
  const seqs = lists.length === 1 ? (lists[0] as readonly number[]) : lists.flat().sort((a, b) => a - b);
  const out: Candidate[] = [];
  for (let i = seqs.length - 1; i >= 0; i--) {
    const seq = seqs[i] as number;
    if (out.length >= limit) break;
    if (!inScope(seq) || !passes(seq) || (!q.includeWorkingMemory && catalog.entryType(seq) === "working_memory")) continue;
    const entry = deps.entries.get(seq);
    if (entry === undefined) continue;
    const mode = modeOf(entry);
    out.push(candidateOf(evidenceOfEntry(entry, 0, mode, deps.entries.viewOf(entry)), { entry, mode, score: 0 }));
  }
  return out;
}
