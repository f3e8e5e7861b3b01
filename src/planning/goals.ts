// Goals of a run (deprecated routes): added under an optional parent, updated in place, listed flat or as a tree.
// Bounded per run and in depth, so a listing or a tree is always a bounded read.
import { Code, ConnectError } from "@connectrpc/connect";
import type { EventBus } from "../events/event-bus.js";
import { nextSequence, type Storage } from "../storage/database.js";
import { decodeOptional } from "../storage/record-codec.js";
import { invalidArgument, notFound, quoted } from "../platform/errors.js";
import { PLANNING_LIMITS, decodeGoal, goalIdOf, newRecordVersion, seqOfGoalId, type GoalPriority, type GoalRecord, type GoalStatus } from "./planning-records.js";
import { runRange } from "../storage/key-range.js";

export interface NewGoal {
  readonly owner: number;
  readonly runId: string;
  readonly description: string;
  readonly priority: GoalPriority;
  /** "" for a root goal. */
  readonly parentId: string;
}

export interface GoalPatch {
  readonly status: GoalStatus | undefined;
  readonly description: string | undefined;
  readonly priority: GoalPriority | undefined;
}

export interface GoalTreeNode {
  readonly goal: GoalRecord;
  readonly children: readonly GoalTreeNode[];
  readonly depth: number;
}

export class Goals {
  readonly #storage: Storage;
  readonly #events: EventBus;

  constructor(storage: Storage, events: EventBus) {
    this.#storage = storage;
    this.#events = events;
  }

  async add(goal: NewGoal): Promise<GoalRecord> {
    const { owner, runId } = goal;
    const record = await this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      let depth = 1;
      if (goal.parentId !== "") {
        const parent = this.get(owner, runId, goal.parentId);
        if (parent === undefined) throw notFound(`parent goal ${quoted(goal.parentId)} in run ${quoted(runId)}`);
        if (parent.depth >= PLANNING_LIMITS.goalDepth) throw invalidArgument("parent_id", `goals nest at most ${PLANNING_LIMITS.goalDepth} levels deep`);
        depth = parent.depth + 1;
      }
      if (dbs.planGoals.getKeysCount(runRange(owner, runId)) >= PLANNING_LIMITS.goalsPerRun) {
        throw new ConnectError(`run already holds ${PLANNING_LIMITS.goalsPerRun} goals`, Code.ResourceExhausted);
      }
      const now = Date.now();
      const seq = nextSequence(dbs.meta, "goal");
      const record: GoalRecord = {
        v: newRecordVersion,
        seq,
        id: goalIdOf(seq),
        description: goal.description,
        priority: goal.priority,
        status: "active",
        parentId: goal.parentId,
        depth,
        createdAt: now,
        updatedAt: now,
      };
      dbs.planGoals.put([owner, runId, seq], record);
      return record;
    });
    this.#events.publish({
      type: "goal.added",
      owner,
      runId,
      agentId: "",
      payload: JSON.stringify({ goal_id: record.id, description: record.description, priority: record.priority, parent_id: record.parentId }),
    });
    return record;
  }

  /** Applies the patch; undefined when the goal is not in the run. A patch that changes nothing writes nothing. */
  async update(owner: number, runId: string, goalId: string, patch: GoalPatch): Promise<GoalRecord | undefined> {
    const current = this.get(owner, runId, goalId);
    if (current === undefined) return undefined;
    const changed = (Object.keys(patch) as (keyof GoalPatch)[]).some((field) => patch[field] !== undefined && patch[field] !== current[field]);
    if (!changed) return current;
    const updated = await this.#storage.transaction(() => {
      const latest = this.get(owner, runId, goalId);
      if (latest === undefined) return undefined;
      const next: GoalRecord = {
        ...latest,
        status: patch.status ?? latest.status,
        description: patch.description ?? latest.description,
        priority: patch.priority ?? latest.priority,
        updatedAt: Date.now(),
      };
      this.#storage.dbs.planGoals.put([owner, runId, latest.seq], next);
      return next;
    });
    if (updated !== undefined) {
      this.#events.publish({ type: "goal.updated", owner, runId, agentId: "", payload: JSON.stringify({ goal_id: updated.id, status: updated.status }) });
    }
    return updated;
  }

  get(owner: number, runId: string, goalId: string): GoalRecord | undefined {
    const seq = seqOfGoalId(goalId);
    if (seq === undefined) return undefined;
    const key = [owner, runId, seq];
    return decodeOptional(this.#storage.dbs.planGoals.get(key), (value) => decodeGoal(key, value));
  }

  /** The run's goals, oldest first (bounded by PLANNING_LIMITS.goalsPerRun). */
  list(owner: number, runId: string, status?: GoalStatus): GoalRecord[] {
    const goals: GoalRecord[] = [];
    for (const { key, value } of this.#storage.dbs.planGoals.getRange(runRange(owner, runId))) {
      const goal = decodeGoal(key, value);
      if (status === undefined || goal.status === status) goals.push(goal);
    }
    return goals;
  }

  /** The run's goals nested by parent, children oldest first; rooted at `rootId` when given (undefined: not found). */
  tree(owner: number, runId: string, rootId: string): GoalTreeNode[] | undefined {
    const goals = this.list(owner, runId);
    const children = new Map<string, GoalRecord[]>();
    for (const goal of goals) {
      const siblings = children.get(goal.parentId) ?? [];
      siblings.push(goal);
      children.set(goal.parentId, siblings);
    }
    // Depth is bounded by PLANNING_LIMITS.goalDepth, so this recursion is too.
    const build = (goal: GoalRecord, depth: number): GoalTreeNode => ({
      goal,
      depth,
      children: (children.get(goal.id) ?? []).map((child) => build(child, depth + 1)),
    });
    if (rootId === "") return (children.get("") ?? []).map((goal) => build(goal, 0));
    const root = goals.find((goal) => goal.id === rootId);
    return root === undefined ? undefined : [build(root, 0)];
  }
}

/** Goals a context snapshot shows: the run's `active` and `suspended` goals, oldest first. */
export function openGoals(goals: Goals, owner: number, runId: string): GoalRecord[] {
  return goals.list(owner, runId).filter((goal) => goal.status === "active" || goal.status === "suspended");
}
