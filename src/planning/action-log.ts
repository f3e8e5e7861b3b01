// The action log and decision cycles of a run (deprecated routes). Actions are recorded, never executed; a cycle
// records observation → decision (the best-scored candidate) → action (the decision, appended to the action log).
// Both logs keep a run's latest PLANNING_LIMITS.logPerRun records: the oldest are dropped in the same transaction.
import type { Database as LmdbDatabase, Key } from "lmdb";
import { nextSequence, type Storage } from "../storage/database.js";
import {
  PLANNING_LIMITS,
  actionIdOf,
  decodeAction,
  decodeCycle,
  newRecordVersion,
  type ActionRecord,
  type ActionType,
  type CandidateRecord,
  type CycleRecord,
} from "./planning-records.js";

export interface ActionInput {
  readonly owner: number;
  readonly runId: string;
  readonly agentId: string;
  readonly actionType: ActionType;
  readonly actionJson: string;
}

export interface CycleInput {
  readonly owner: number;
  readonly runId: string;
  readonly agentId: string;
  readonly observation: string;
  readonly candidates: readonly CandidateRecord[];
}

export interface RecordedCycle {
  readonly cycle: CycleRecord;
  readonly action: ActionRecord | undefined;
}

/** The decision of a cycle: the highest score, the first one on a tie; undefined without candidates. */
export function decide(candidates: readonly CandidateRecord[]): CandidateRecord | undefined {
  let best: CandidateRecord | undefined;
  for (const candidate of candidates) if (best === undefined || candidate.score > best.score) best = candidate;
  return best;
}

export class ActionLog {
  readonly #storage: Storage;

  constructor(storage: Storage) {
    this.#storage = storage;
  }

  submit(input: ActionInput): Promise<ActionRecord> {
    return this.#storage.transaction(() => this.#append(input, 0, Date.now()));
  }

  /** The run's actions, newest first. */
  log(owner: number, runId: string, limit: number, actionType: ActionType | undefined): ActionRecord[] {
    const actions: ActionRecord[] = [];
    // Bounded: the log holds at most PLANNING_LIMITS.logPerRun records of the run.
    for (const { key, value } of this.#storage.dbs.planActions.getRange({ start: [owner, runId, Infinity], end: [owner, runId, -1], reverse: true })) {
      const action = decodeAction(key, value);
      if (actionType !== undefined && action.actionType !== actionType) continue;
      actions.push(action);
      if (actions.length === limit) break;
    }
    return actions;
  }

  async runCycle(input: CycleInput): Promise<RecordedCycle> {
    const started = performance.now();
    const selected = decide(input.candidates);
    const planningTimeMs = Math.round(performance.now() - started);
    return this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      const { owner, runId } = input;
      const now = Date.now();
      const last = [...dbs.planCycles.getKeys({ start: [owner, runId, Infinity], end: [owner, runId, -1], reverse: true, limit: 1 })][0] as [number, string, number] | undefined;
      const cycleNumber = (last?.[2] ?? 0) + 1;
      const action = selected === undefined ? undefined : this.#append({ owner, runId, agentId: input.agentId, actionType: selected.actionType, actionJson: selected.actionJson }, cycleNumber, now);
      const cycle: CycleRecord = {
        v: newRecordVersion,
        cycleNumber,
        agentId: input.agentId,
        observation: input.observation,
        selected,
        actionId: action?.id ?? "",
        planningTimeMs,
        createdAt: now,
      };
      dbs.planCycles.put([owner, runId, cycleNumber], selected === undefined ? withoutSelected(cycle) : cycle);
      trim(dbs.planCycles, owner, runId);
      return { cycle, action };
    });
  }

  /** The run's cycles, newest first. */
  history(owner: number, runId: string, limit: number): CycleRecord[] {
    const range = this.#storage.dbs.planCycles.getRange({ start: [owner, runId, Infinity], end: [owner, runId, -1], reverse: true, limit });
    return [...range].map(({ key, value }) => decodeCycle(key, value));
  }

  #append(input: ActionInput, cycleNumber: number, now: number): ActionRecord {
    const { dbs } = this.#storage;
    const seq = nextSequence(dbs.meta, "action");
    const record: ActionRecord = {
      v: newRecordVersion,
      seq,
      id: actionIdOf(seq),
      agentId: input.agentId,
      actionType: input.actionType,
      actionJson: input.actionJson,
      cycleNumber,
      createdAt: now,
    };
    dbs.planActions.put([input.owner, input.runId, seq], record);
    trim(dbs.planActions, input.owner, input.runId);
    return record;
  }
}

/** msgpack keeps an undefined field; the stored record leaves it out. */
function withoutSelected(cycle: CycleRecord): Omit<CycleRecord, "selected"> {
  const { selected: _selected, ...rest } = cycle;
  return rest;
}

/** Drops the oldest records of a run's log beyond PLANNING_LIMITS.logPerRun (at most one per append). */
function trim(db: LmdbDatabase<unknown, Key>, owner: number, runId: string): void {
  // lmdb-js marks the options object it is given (getKeysCount sets a count-only flag): a fresh one per call.
  const range = (): { start: Key; end: Key } => ({ start: [owner, runId, -1], end: [owner, runId, Infinity] });
  if (db.getKeysCount(range()) <= PLANNING_LIMITS.logPerRun) return;
  const oldest = [...db.getKeys({ ...range(), limit: 1 })][0];
  if (oldest !== undefined) db.remove(oldest);
}
