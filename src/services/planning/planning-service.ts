// PlanningService: variables and concepts (supported), goals, actions and decision cycles (deprecated), each route
// family adapting requests to src/planning.
import type { ServiceImpl } from "@connectrpc/connect";
import type { PlanningService } from "../../../gen/engram/v2/planning_service_pb.js";
import type { Planning } from "../../planning/planning.js";
import { actionHandlers } from "./actions.js";
import { conceptHandlers } from "./concepts.js";
import { goalHandlers } from "./goals.js";
import { variableHandlers } from "./variables.js";

export function planningService(planning: Planning): ServiceImpl<typeof PlanningService> {
  return {
    ...variableHandlers(planning.variables),
    ...conceptHandlers(planning.concepts),
    ...goalHandlers(planning.goals),
    ...actionHandlers(planning.actions),
  };
}
