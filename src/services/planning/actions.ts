// Action and decision-cycle routes (deprecated): record and read, adapted to src/planning/action-log.ts.
import type { ServiceImpl } from "@connectrpc/connect";
import type { PlanningService } from "../../../gen/engram/v2/planning_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument } from "../../platform/errors.js";
import type { ActionLog } from "../../planning/action-log.js";
import { actionLogMessage, actionResultMessage, candidateMessage, cycleMessage, iso } from "../../planning/messages.js";
import { ACTION_TYPES, PLANNING_LIMITS, type ActionType, type CandidateRecord } from "../../planning/planning-records.js";
import { bounded, clampLimit, oneOf, required } from "../memory/validate.js";
import { boundedText, smallJson } from "./validate.js";

type Handlers = Pick<ServiceImpl<typeof PlanningService>, "submitAction" | "getActionLog" | "runCycle" | "getCycleHistory">;

const DEFAULT_LOG_LIMIT = 50;
const MAX_LOG_LIMIT = 500;

function actionType(field: string, value: string): ActionType {
  if (value.trim() === "") throw invalidArgument(field, `is required (one of ${ACTION_TYPES.join(", ")})`);
  return oneOf(field, value, ACTION_TYPES, "reason");
}

export function actionHandlers(log: ActionLog): Handlers {
  return {
    async submitAction(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const action = await log.submit({
        owner: caller.userId,
        runId,
        agentId: bounded("agent_id", req.agentId),
        actionType: actionType("action_type", req.actionType),
        actionJson: smallJson("action_json", req.actionJson),
      });
      const { $typeName: _typeName, ...result } = actionResultMessage(action);
      return result;
    },

    getActionLog(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const type = req.actionTypeFilter === "" ? undefined : oneOf("action_type_filter", req.actionTypeFilter, ACTION_TYPES, "reason");
      const actions = log.log(caller.userId, runId, clampLimit(req.limit, DEFAULT_LOG_LIMIT, MAX_LOG_LIMIT), type);
      return { entries: actions.map(actionLogMessage) };
    },

    async runCycle(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      if (req.candidates.length > PLANNING_LIMITS.candidates) {
        throw invalidArgument("candidates", `must hold at most ${PLANNING_LIMITS.candidates} candidates, got ${req.candidates.length}`);
      }
      const candidates = req.candidates.map((c, i): CandidateRecord => {
        if (!Number.isFinite(c.score)) throw invalidArgument(`candidates[${i}].score`, "must be a finite number");
        return {
          actionType: actionType(`candidates[${i}].action_type`, c.actionType),
          actionJson: smallJson(`candidates[${i}].action_json`, c.actionJson),
          score: c.score,
          rationale: boundedText(`candidates[${i}].rationale`, c.rationale),
        };
      });
      const { cycle, action } = await log.runCycle({
        owner: caller.userId,
        runId,
        agentId: bounded("agent_id", req.agentId),
        observation: boundedText("observation", req.observation),
        candidates,
      });
      return {
        cycleNumber: cycle.cycleNumber,
        ...(cycle.selected === undefined ? {} : { selectedAction: candidateMessage(cycle.selected) }),
        ...(action === undefined ? {} : { actionResult: actionResultMessage(action) }),
        planningTimeMs: cycle.planningTimeMs,
        executionTimeMs: 0,
        timestamp: iso(cycle.createdAt),
      };
    },

    getCycleHistory(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      return { cycles: log.history(caller.userId, runId, clampLimit(req.limit, DEFAULT_LOG_LIMIT, MAX_LOG_LIMIT)).map(cycleMessage) };
    },
  };
}
