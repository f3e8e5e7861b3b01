// Goal routes (deprecated): add, update, list and tree, adapted to src/planning/goals.ts.
import type { ServiceImpl } from "@connectrpc/connect";
import type { PlanningService } from "../../../gen/engram/v2/planning_service_pb.js";
import { callerOf } from "../../auth/principal.js";
import { invalidArgument, notFound, quoted } from "../../platform/errors.js";
import type { Goals } from "../../planning/goals.js";
import { goalMessage, goalNodeMessage } from "../../planning/messages.js";
import { GOAL_PRIORITIES, GOAL_STATUSES, type GoalPriority, type GoalStatus } from "../../planning/planning-records.js";
import { bounded, oneOf, required } from "../memory/validate.js";
import { boundedText } from "./validate.js";

type Handlers = Pick<ServiceImpl<typeof PlanningService>, "addGoal" | "updateGoal" | "listGoals" | "getGoalTree">;

function optionalChoice<T extends string>(field: string, value: string, allowed: readonly T[]): T | undefined {
  return value === "" ? undefined : oneOf(field, value, allowed, allowed[0] as T);
}

export function goalHandlers(goals: Goals): Handlers {
  return {
    async addGoal(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const description = boundedText("description", req.description.trim());
      if (description === "") throw invalidArgument("description", "is required");
      const parentId = bounded("parent_id", req.parentId);
      const parentGoalId = bounded("parent_goal_id", req.parentGoalId);
      if (parentId !== "" && parentGoalId !== "" && parentId !== parentGoalId) throw invalidArgument("parent_goal_id", "differs from parent_id; set one of them");
      const goal = await goals.add({
        owner: caller.userId,
        runId,
        description,
        priority: oneOf<GoalPriority>("priority", req.priority, GOAL_PRIORITIES, "medium"),
        parentId: parentId || parentGoalId,
      });
      const { $typeName: _typeName, updatedAt: _updatedAt, ...fields } = goalMessage(goal);
      return fields;
    },

    async updateGoal(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const goalId = required("goal_id", req.goalId);
      const description = boundedText("description", req.description.trim());
      const patch = {
        status: optionalChoice<GoalStatus>("status", req.status, GOAL_STATUSES),
        description: description === "" ? undefined : description,
        priority: optionalChoice<GoalPriority>("priority", req.priority, GOAL_PRIORITIES),
      };
      const goal = await goals.update(caller.userId, runId, goalId, patch);
      if (goal === undefined) throw notFound(`goal ${quoted(goalId)} in run ${quoted(runId)}`);
      return { success: true, goal: goalMessage(goal) };
    },

    listGoals(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const status = optionalChoice<GoalStatus>("status_filter", req.statusFilter, GOAL_STATUSES);
      return { goals: goals.list(caller.userId, runId, status).map(goalMessage) };
    },

    getGoalTree(req, ctx) {
      const caller = callerOf(ctx);
      const runId = required("run_id", req.runId);
      const rootId = bounded("root_goal_id", req.rootGoalId);
      const tree = goals.tree(caller.userId, runId, rootId);
      if (tree === undefined) throw notFound(`goal ${quoted(rootId)} in run ${quoted(runId)}`);
      return { goals: tree.map(goalNodeMessage) };
    },
  };
}
