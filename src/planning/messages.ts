// Planning records as the proto messages every route (and the runs service's context snapshot) returns.
import { create } from "@bufbuild/protobuf";
import {
  ActionLogEntrySchema,
  ConceptSchema,
  DecisionCycleSchema,
  GoalNodeSchema,
  GoalSchema,
  VariableSchema,
  type ActionCandidate,
  type ActionLogEntry,
  type ActionResult,
  type Concept,
  type DecisionCycle,
  type Goal,
  type GoalNode,
  type Variable,
} from "../../gen/engram/v2/planning_service_pb.js";
import { ActionCandidateSchema, ActionResultSchema } from "../../gen/engram/v2/planning_service_pb.js";
import type { GoalTreeNode } from "./goals.js";
import type { ActionRecord, CandidateRecord, ConceptRecord, CycleRecord, GoalRecord, VariableRecord } from "./planning-records.js";

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function goalMessage(goal: GoalRecord): Goal {
  return create(GoalSchema, {
    id: goal.id,
    description: goal.description,
    priority: goal.priority,
    status: goal.status,
    parentId: goal.parentId,
    createdAt: iso(goal.createdAt),
    updatedAt: iso(goal.updatedAt),
  });
}

export function goalNodeMessage(node: GoalTreeNode): GoalNode {
  return create(GoalNodeSchema, { goal: goalMessage(node.goal), depth: node.depth, children: node.children.map(goalNodeMessage) });
}

export function variableMessage(variable: VariableRecord): Variable {
  return create(VariableSchema, {
    name: variable.name,
    valueJson: variable.valueJson,
    varType: variable.varType,
    createdAt: iso(variable.createdAt),
    lastUpdated: iso(variable.updatedAt),
    accessCount: variable.accessCount,
    source: variable.source,
    version: BigInt(variable.version),
  });
}

export function conceptMessage(concept: ConceptRecord): Concept {
  return create(ConceptSchema, {
    name: concept.name,
    schemaJson: concept.schemaJson,
    description: concept.definition,
    definition: concept.definition,
    relatedConcepts: [...concept.relatedConcepts],
    entryId: concept.entryId,
    createdAt: iso(concept.createdAt),
    updatedAt: iso(concept.updatedAt),
  });
}

export function actionResultMessage(action: ActionRecord): ActionResult {
  return create(ActionResultSchema, { actionId: action.id, success: true, resultJson: "", error: "", durationMs: 0 });
}

export function actionLogMessage(action: ActionRecord): ActionLogEntry {
  return create(ActionLogEntrySchema, {
    actionId: action.id,
    actionType: action.actionType,
    actionJson: action.actionJson,
    success: true,
    resultJson: "",
    cycleNumber: action.cycleNumber,
    timestamp: iso(action.createdAt),
    agentId: action.agentId,
  });
}

export function candidateMessage(candidate: CandidateRecord): ActionCandidate {
  return create(ActionCandidateSchema, { ...candidate });
}

export function cycleMessage(cycle: CycleRecord): DecisionCycle {
  return create(DecisionCycleSchema, {
    cycleNumber: cycle.cycleNumber,
    ...(cycle.selected === undefined ? {} : { selectedAction: candidateMessage(cycle.selected) }),
    ...(cycle.actionId === "" ? {} : { actionResult: create(ActionResultSchema, { actionId: cycle.actionId, success: true }) }),
    planningTimeMs: cycle.planningTimeMs,
    executionTimeMs: 0,
    timestamp: iso(cycle.createdAt),
    agentId: cycle.agentId,
    observation: cycle.observation,
  });
}
