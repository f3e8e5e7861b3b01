// The planning plane of a run: variables, concepts, goals and the action/cycle logs, built over one storage; plus
// what other planes need from it — the goals and variables a context snapshot shows, and erasure with a run.
import type { EventBus } from "../events/event-bus.js";
import type { EntryWriter } from "../memory/entry-writer.js";
import type { Storage } from "../storage/database.js";
import type { EntryStore } from "../storage/entry-store.js";
import type { Goal, Variable } from "../../gen/engram/v2/planning_service_pb.js";
import { ActionLog } from "./action-log.js";
import { Concepts } from "./concepts.js";
import { Goals, openGoals } from "./goals.js";
import { goalMessage, variableMessage } from "./messages.js";
import { PLANNING_LIMITS } from "./planning-records.js";
import { Variables } from "./variables.js";
import { runRange } from "../storage/key-range.js";
import type { TrustPolicy } from "../storage/provenance.js";

export interface PlanningDeps {
  readonly storage: Storage;
  readonly entries: EntryStore;
  readonly writer: EntryWriter;
  readonly events: EventBus;
  /** The trust each origin gets (SERVICE_TRUST_POLICY); the default policy when not given. */
  readonly trustPolicy?: TrustPolicy;
}

export class Planning {
  readonly storage: Storage;
  readonly variables: Variables;
  readonly concepts: Concepts;
  readonly goals: Goals;
  readonly actions: ActionLog;

  constructor(deps: PlanningDeps) {
    this.storage = deps.storage;
    this.variables = new Variables(deps.storage, deps.events);
    this.concepts = new Concepts(deps.storage, deps.entries, deps.writer, deps.events, deps.trustPolicy);
    this.goals = new Goals(deps.storage, deps.events);
    this.actions = new ActionLog(deps.storage);
  }
}

/** For `context/snapshot`: the run's `active` and `suspended` goals of this owner, oldest first. */
export function goalsOfRun(planning: Planning, owner: number, runId: string): Goal[] {
  return openGoals(planning.goals, owner, runId).map(goalMessage);
}

/** For `context/snapshot`'s working memory: the run's variables of this owner, by name (reading does not count). */
export function variablesOfRun(planning: Planning, owner: number, runId: string): Variable[] {
  return planning.variables.list(owner, runId, undefined, PLANNING_LIMITS.pageSize).variables.map(variableMessage);
}

/** What `deletePlanningOfRun` removed, per kind. */
export interface PlanningErasure {
  readonly variables: number;
  readonly concepts: number;
  readonly goals: number;
  readonly actions: number;
  readonly cycles: number;
}

/**
 * Removes every planning record of one owner's run; call inside the run deletion's write transaction (at most a few
 * thousand keys: each kind is bounded per run). The concepts' memory entries are entries of the run and go with them.
 */
export function deletePlanningOfRun(storage: Storage, owner: number, runId: string): PlanningErasure {
  const { dbs } = storage;
  const removeAll = (db: typeof dbs.planVariables): number => {
    const keys = [...db.getKeys(runRange(owner, runId))];
    for (const key of keys) db.remove(key);
    return keys.length;
  };
  return {
    variables: removeAll(dbs.planVariables),
    concepts: removeAll(dbs.planConcepts),
    goals: removeAll(dbs.planGoals),
    actions: removeAll(dbs.planActions),
    cycles: removeAll(dbs.planCycles),
  };
}
