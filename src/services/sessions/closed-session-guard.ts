// Refuses new memory written into the run of a closing or closed control session, on every transport: one interceptor
// (after auth) over the write routes that name a run, so the memory and learning adapters stay unaware of sessions.
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { LearningService } from "../../../gen/engram/v2/learning_service_pb.js";
import { MemoryService } from "../../../gen/engram/v2/memory_service_pb.js";
import { principalKey } from "../../auth/principal.js";
import type { ControlSessionStore } from "../../control-sessions/control-session-store.js";
import { quoted } from "../../platform/errors.js";
import { bounded } from "../memory/validate.js";
import { CoordinationService } from "../../../gen/engram/v2/coordination_service_pb.js";
import { PlanningService } from "../../../gen/engram/v2/planning_service_pb.js";

/**
 * The run a request writes into, read from its message. An id that cannot be a key (over 256 bytes, NUL, an unpaired
 * surrogate) is refused here as the route itself would refuse it: INVALID_ARGUMENT naming the field.
 */
type RunOf = (message: unknown) => string;

const byField =
  (field: "runId" | "sessionId", name: "run_id" | "session_id"): RunOf =>
  (message) => {
    const value = (message as Record<string, unknown>)[field];
    return typeof value === "string" ? bounded(name, value) : "";
  };

/**
 * Routes that add memory (evidence) to a run. Left open on purpose: Reflect, RecordOutcome and the lesson routes
 * (learning from a finished run, outcomes that arrive after it), DeleteRun and every read.
 */
const GUARDED: ReadonlyMap<DescMethod, RunOf> = new Map<DescMethod, RunOf>([
  [MemoryService.method.remember, byField("sessionId", "session_id")],
  [MemoryService.method.ingest, byField("runId", "run_id")],
  [MemoryService.method.batchInsert, byField("runId", "run_id")],
  [MemoryService.method.archiveBlock, byField("runId", "run_id")],
  [MemoryService.method.checkpoint, byField("runId", "run_id")],
  [MemoryService.method.appendActivity, byField("runId", "run_id")],
  [LearningService.method.recordStepOutcome, byField("runId", "run_id")],
  [CoordinationService.method.registerAgent, byField("runId", "run_id")],
  [CoordinationService.method.createHandoff, byField("runId", "run_id")],
  [PlanningService.method.setVariable, byField("runId", "run_id")],
  [PlanningService.method.defineConcept, byField("runId", "run_id")],
  [PlanningService.method.addGoal, byField("runId", "run_id")],
]);

export function closedSessionGuard(sessions: Pick<ControlSessionStore, "phaseOf">): Interceptor {
  return (next) => async (req) => {
    const runOf = req.stream ? undefined : GUARDED.get(req.method);
    const caller = req.contextValues.get(principalKey);
    if (runOf !== undefined && caller !== undefined) {
      const runId = runOf(req.message);
      const phase = runId === "" ? undefined : sessions.phaseOf(caller.userId, runId);
      if (phase === "closing" || phase === "closed") {
        throw new ConnectError(`run ${quoted(runId)}: its control session is ${phase}; new memory is refused (reads, Reflect and outcomes stay open)`, Code.Aborted);
      }
    }
    return next(req);
  };
}
