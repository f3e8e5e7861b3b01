// CoordinationService: agents of a shared run (register, heartbeat, list) and handoffs with their feedback. Validates
// and adapts; the logic lives in src/coordination.
import type { ServiceImpl } from "@connectrpc/connect";
import type { CoordinationService } from "../../../gen/engram/v2/coordination_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument, notFound } from "../../platform/errors.js";
import { cursorSeq, decodeCursor, encodeCursor, filtersDigest } from "../../platform/page-cursor.js";
import type { AgentRegistry } from "../../coordination/agent-registry.js";
import type { LivenessThresholds } from "../../coordination/agent-record.js";
import type { Handoffs } from "../../coordination/handoffs.js";
import { HANDOFF_STATUSES, REQUESTED_ACTIONS, VERDICTS, type HandoffStatus } from "../../coordination/handoff-record.js";
import { bounded, content, entryTypeFilter, jsonObject, oneOf, required } from "../memory/validate.js";
import { MAX_ENTRY_IDS, MAX_PROGRESS_CHARS, MAX_STATUS_CHARS, idList, shortText } from "./coordination-validate.js";
import { agentView, handoffView } from "./coordination-views.js";

export interface CoordinationDeps {
  readonly agents: AgentRegistry;
  readonly handoffs: Handoffs;
  readonly liveness: LivenessThresholds;
}

const MAX_AGENTS_PAGE = 1000;
const DEFAULT_HANDOFFS_PAGE = 50;
const MAX_HANDOFFS_PAGE = 200;

function entryTypes(field: string, values: readonly string[]) {
  idList(field, values);
  return [...(entryTypeFilter(field, values) ?? [])];
}

function agentCursor(token: string, runId: string): string {
  if (token === "") return "";
  const cursor = decodeCursor(token);
  if (cursor["f"] !== filtersDigest(`agents:${runId}`) || typeof cursor["a"] !== "string") {
    throw invalidArgument("page_token", "was issued for another run; pass a next_page_token unchanged");
  }
  return cursor["a"];
}

export function coordinationService(deps: CoordinationDeps): ServiceImpl<typeof CoordinationService> {
  const { agents, handoffs, liveness } = deps;
  return {
    async listAgents(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const limit = req.limit === 0 ? MAX_AGENTS_PAGE : Math.min(MAX_AGENTS_PAGE, req.limit);
      const page = agents.list(caller.userId, runId, agentCursor(req.pageToken, runId), limit);
      const now = agents.now();
      return {
        agents: page.agents.map((a) => agentView(a, now, liveness)),
        nextPageToken: page.nextAfter === undefined ? "" : encodeCursor({ f: filtersDigest(`agents:${runId}`), a: page.nextAfter }),
      };
    },

    async registerAgent(req, ctx) {
      const caller = callerOf(ctx);
      const { agent } = await agents.register({
        owner: caller.userId,
        runId: required("run_id", req.runId),
        agentId: required("agent_id", req.agentId),
        role: bounded("role", req.role),
        capabilities: idList("capabilities", req.capabilities),
        status: shortText("status", req.status, MAX_STATUS_CHARS) || "active",
        readScopes: entryTypes("read_scopes", req.readScopes),
        writeScopes: entryTypes("write_scopes", req.writeScopes),
        lanes: idList("shared_memory_lanes", req.sharedMemoryLanes),
        metadataJson: jsonObject("metadata_json", req.metadataJson),
      });
      return { success: true, agent: agentView(agent, agents.now(), liveness) };
    },

    async agentHeartbeat(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const agentId = required("agent_id", req.agentId);
      const agent = await agents.heartbeat({
        owner: caller.userId,
        runId,
        agentId,
        status: shortText("status", req.status, MAX_STATUS_CHARS),
        progress: shortText("progress", req.progress, MAX_PROGRESS_CHARS),
      });
      if (agent === undefined) throw notFound(`agent "${agentId}" in run "${runId}"`);
      return { success: true, agent: agentView(agent, agents.now(), liveness) };
    },

    async createHandoff(req, ctx) {
      const caller = callerOf(ctx);
      const handoff = await handoffs.create({
        owner: caller.userId,
        runId: required("run_id", req.runId),
        taskId: required("task_id", req.taskId),
        fromAgentId: required("from_agent_id", req.fromAgentId),
        toAgentId: required("to_agent_id", req.toAgentId),
        content: content("content", req.content),
        requestedAction: oneOf("requested_action", req.requestedAction, REQUESTED_ACTIONS, "continue"),
        entryIds: idList("entry_ids", req.entryIds, MAX_ENTRY_IDS),
        metadataJson: jsonObject("metadata_json", req.metadataJson),
        userId: bounded("user_id", req.userId),
      });
      return { success: true, handoffId: handoff.id, createdAt: new Date(handoff.createdAt).toISOString(), status: handoff.status };
    },

    async submitFeedback(req, ctx) {
      const caller = callerOf(ctx);
      const { feedback, handoff } = await handoffs.answer({
        owner: caller.userId,
        runId: required("run_id", req.runId),
        handoffId: required("handoff_id", req.handoffId),
        verdict: oneOf("verdict", required("verdict", req.verdict), VERDICTS, "acknowledge"),
        comments: content("comments", req.comments, true),
        fromAgentId: bounded("from_agent_id", req.fromAgentId),
        metadataJson: jsonObject("metadata_json", req.metadataJson),
        userId: bounded("user_id", req.userId),
      });
      return { success: true, feedbackId: feedback.id, createdAt: new Date(feedback.createdAt).toISOString(), handoffStatus: handoff.status };
    },

    async listHandoffs(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const toAgentId = bounded("to_agent_id", req.toAgentId);
      const fromAgentId = bounded("from_agent_id", req.fromAgentId);
      const statuses = new Set<HandoffStatus>(req.statuses.map((s, i) => oneOf(`statuses[${i}]`, required(`statuses[${i}]`, s), HANDOFF_STATUSES, "pending")));
      const limit = req.limit === 0 ? DEFAULT_HANDOFFS_PAGE : Math.min(MAX_HANDOFFS_PAGE, req.limit);
      const digest = filtersDigest(JSON.stringify(["handoffs", runId, toAgentId, fromAgentId, [...statuses].sort()]));
      let after = 0;
      if (req.pageToken !== "") {
        const cursor = decodeCursor(req.pageToken);
        if (cursor["f"] !== digest) throw invalidArgument("page_token", "was issued for other filters; pass a next_page_token with the filters it came with");
        after = cursorSeq(cursor["s"]);
      }
      const page = handoffs.list(caller.userId, runId, { toAgentId, fromAgentId, statuses }, after, limit);
      return {
        handoffs: page.handoffs.map(handoffView),
        nextPageToken: page.nextAfter === undefined ? "" : encodeCursor({ f: digest, s: page.nextAfter }),
      };
    },
  };
}
