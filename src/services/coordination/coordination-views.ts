// Records of src/coordination as response messages.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AgentIdentitySchema, HandoffSchema } from "../../../gen/engram/v2/coordination_service_pb.js";
import { livenessOf, type AgentRecord, type LivenessThresholds } from "../../coordination/agent-record.js";
import type { HandoffRecord } from "../../coordination/handoff-record.js";

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function agentView(agent: AgentRecord, now: number, thresholds: LivenessThresholds): MessageInitShape<typeof AgentIdentitySchema> {
  return {
    agentId: agent.agentId,
    role: agent.role,
    capabilities: [...agent.capabilities],
    status: agent.status,
    heartbeatAt: iso(agent.heartbeatAt),
    readScopes: [...agent.readScopes],
    writeScopes: [...agent.writeScopes],
    sharedMemoryLanes: [...agent.lanes],
    runId: agent.runId,
    registeredAt: iso(agent.registeredAt),
    liveness: livenessOf(agent.heartbeatAt, now, thresholds),
    progress: agent.progress,
    metadataJson: agent.metadataJson,
  };
}

export function handoffView(handoff: HandoffRecord): MessageInitShape<typeof HandoffSchema> {
  return {
    handoffId: handoff.id,
    runId: handoff.runId,
    taskId: handoff.taskId,
    fromAgentId: handoff.fromAgentId,
    toAgentId: handoff.toAgentId,
    content: handoff.content,
    requestedAction: handoff.requestedAction,
    status: handoff.status,
    entryIds: [...handoff.entryIds],
    metadataJson: handoff.metadataJson,
    userId: handoff.userId,
    createdAt: iso(handoff.createdAt),
    updatedAt: iso(handoff.updatedAt),
    feedback: handoff.feedback.map((f) => ({
      feedbackId: f.id,
      verdict: f.verdict,
      comments: f.comments,
      fromAgentId: f.fromAgentId,
      metadataJson: f.metadataJson,
      userId: f.userId,
      createdAt: iso(f.createdAt),
    })),
  };
}
