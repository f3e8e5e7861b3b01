// SessionsService: validates control-session requests and adapts them to src/control-sessions.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { ControlSessionSchema, SessionsService } from "../../../gen/engram/v2/sessions_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import type { ControlSessions, ControlSessionView } from "../../control-sessions/control-sessions.js";
import { bounded, content, required } from "../memory/validate.js";

export function sessionsService(sessions: ControlSessions): ServiceImpl<typeof SessionsService> {
  return {
    async createControlSession(req, ctx) {
      const caller = callerOf(ctx);
      const session = await sessions.create({
        owner: caller.userId,
        runId: bounded("run_id", req.runId.trim()),
        agentId: bounded("agent_id", req.agentId) || "default",
        description: content("description", req.description, true),
        projectId: bounded("project_id", req.projectId),
      });
      return { success: true, session: controlSessionMessage(session) };
    },

    getControlSession(req, ctx) {
      const caller = callerOf(ctx);
      const session = sessions.get(caller.userId, required("session_id", req.sessionId));
      return { session: controlSessionMessage(session) };
    },

    async closeControlSession(req, ctx) {
      const caller = callerOf(ctx);
      const closed = await sessions.close(caller.userId, required("session_id", req.sessionId), req.reflectOnClose, ctx.signal, caller.keyId);
      return {
        success: true,
        session: controlSessionMessage(closed.session),
        reflected: closed.reflected,
        lessonsExtracted: closed.lessonsExtracted,
        checkpointId: closed.session.record.finalCheckpointId,
      };
    },
  };
}

function controlSessionMessage(view: ControlSessionView): MessageInitShape<typeof ControlSessionSchema> {
  const { record } = view;
  return {
    sessionId: record.runId,
    runId: record.runId,
    agentId: record.agentId,
    phase: view.phase,
    status: view.phase,
    description: record.description,
    projectId: record.projectId,
    createdAt: new Date(record.createdAt).toISOString(),
    closedAt: record.closedAt === 0 ? "" : new Date(record.closedAt).toISOString(),
    ingestCount: view.ingestCount,
    lastActivityAt: new Date(view.lastActivityAt ?? record.createdAt).toISOString(),
    finalCheckpointId: record.finalCheckpointId,
  };
}
