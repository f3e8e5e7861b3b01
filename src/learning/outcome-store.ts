// Run-level and step-level outcomes in LMDB, each filed under its owner and run, and the idempotency keys that make an
// outcome apply at most once. Writes run inside the caller's transaction, so an outcome commits with the
// reinforcement it causes or not at all.
import type { Key } from "lmdb";
import { nextSequence, type Storage } from "../storage/database.js";
import { openFields, openRecord } from "../storage/record-codec.js";
import { runRange } from "../storage/key-range.js";

export const OUTCOMES = ["success", "failure", "partial", "neutral"] as const;
export type Outcome = (typeof OUTCOMES)[number];

const OUTCOME_RECORD_VERSION = 1;
const STEP_OUTCOME_RECORD_VERSION = 1;

export interface OutcomeRecord {
  readonly v: typeof OUTCOME_RECORD_VERSION;
  readonly id: string;
  readonly owner: number;
  readonly runId: string;
  /** The entry the outcome pertains to, as resolved; "" when `reference_id` named none. */
  readonly referenceId: string;
  readonly outcome: Outcome;
  readonly signal: number;
  readonly rationale: string;
  readonly agentId: string;
  readonly userId: string;
  readonly verifiedInProduction: boolean;
  /** Entries the outcome reinforced, the primary first. */
  readonly reinforcedIds: readonly string[];
  readonly idempotencyKey: string;
  /** Unix milliseconds. */
  readonly createdAt: number;
}

export interface StepOutcomeRecord {
  readonly v: typeof STEP_OUTCOME_RECORD_VERSION;
  readonly id: string;
  readonly owner: number;
  readonly runId: string;
  readonly stepId: string;
  readonly stepName: string;
  readonly outcome: Outcome;
  readonly signal: number;
  readonly rationale: string;
  readonly directiveHint: string;
  readonly agentId: string;
  readonly userId: string;
  readonly metadataJson: string;
  /** Unix milliseconds: first recorded, and last replaced. */
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** What an idempotency key remembers: the outcome it applied. */
export interface KeyedOutcome {
  readonly outcomeId: string;
  readonly runId: string;
  readonly referenceId: string;
}

export class OutcomeStore {
  readonly #storage: Storage;

  constructor(storage: Storage) {
    this.#storage = storage;
  }

  /** Stores a run-level outcome (and its idempotency key). Call inside a write transaction. */
  putOutcomeInTransaction(fields: Omit<OutcomeRecord, "v" | "id">): OutcomeRecord {
    const { dbs } = this.#storage;
    const seq = nextSequence(dbs.meta, "outcome");
    const record: OutcomeRecord = { v: OUTCOME_RECORD_VERSION, id: `out_${seq.toString(36)}`, ...fields };
    dbs.outcomes.put([record.owner, record.runId, seq], record);
    if (record.idempotencyKey !== "") {
      const keyed: KeyedOutcome = { outcomeId: record.id, runId: record.runId, referenceId: record.referenceId };
      dbs.outcomeKeys.put([record.owner, record.idempotencyKey], keyed);
    }
    return record;
  }

  /** The outcome an idempotency key already applied, if any. Inside a write transaction this sees the latest commit. */
  keyed(owner: number, idempotencyKey: string): KeyedOutcome | undefined {
    const value = this.#storage.dbs.outcomeKeys.get([owner, idempotencyKey]);
    if (value === undefined) return undefined;
    const r = openFields("learning_outcome_keys", [owner, idempotencyKey], value);
    return { outcomeId: r.string("outcomeId"), runId: r.string("runId"), referenceId: r.string("referenceId") };
  }

  /** A run's outcomes, oldest first, at most `limit` (the most recent ones). */
  outcomesOfRun(owner: number, runId: string, limit: number): OutcomeRecord[] {
    const range = this.#storage.dbs.outcomes.getRange({ start: [owner, runId, Infinity], end: [owner, runId, -1], reverse: true, limit });
    return [...range].map(({ key, value }) => decodeOutcome(key, value)).reverse();
  }

  /** Every outcome of an owner (strategies read success rates), at most `limit`, newest first. */
  outcomesOfOwner(owner: number, limit: number): OutcomeRecord[] {
    const range = this.#storage.dbs.outcomes.getRange({ start: [owner + 1], end: [owner], reverse: true, limit });
    return [...range].map(({ key, value }) => decodeOutcome(key, value));
  }

  stepOutcome(owner: number, runId: string, stepId: string): StepOutcomeRecord | undefined {
    const key = [owner, runId, stepId];
    const value = this.#storage.dbs.stepOutcomes.get(key);
    return value === undefined ? undefined : decodeStepOutcome(key, value);
  }

  /** Stores a step outcome, replacing the step's earlier one. Call inside a write transaction. */
  putStepOutcomeInTransaction(record: Omit<StepOutcomeRecord, "v">): StepOutcomeRecord {
    const stored: StepOutcomeRecord = { v: STEP_OUTCOME_RECORD_VERSION, ...record };
    this.#storage.dbs.stepOutcomes.put([record.owner, record.runId, record.stepId], stored);
    return stored;
  }

  nextStepOutcomeId(): string {
    return `so_${nextSequence(this.#storage.dbs.meta, "step_outcome").toString(36)}`;
  }

  /** A run's step outcomes in step id order, at most `limit`. */
  stepOutcomesOfRun(owner: number, runId: string, limit: number): StepOutcomeRecord[] {
    const range = this.#storage.dbs.stepOutcomes.getRange({ ...runRange(owner, runId), limit });
    return [...range].map(({ key, value }) => decodeStepOutcome(key, value));
  }

  /** Every step outcome of an owner, at most `limit` (diagnosis reads past failures and their fixes). */
  stepOutcomesOfOwner(owner: number, limit: number): StepOutcomeRecord[] {
    const range = this.#storage.dbs.stepOutcomes.getRange({ start: [owner], end: [owner + 1], limit });
    return [...range].map(({ key, value }) => decodeStepOutcome(key, value));
  }

  /**
   * Removes up to `limit` outcomes and step outcomes of a deleted run. Call inside a write transaction; returns how
   * many it removed (0 once none remain).
   */
  purgeRunInTransaction(owner: number, runId: string, limit: number): number {
    const { dbs } = this.#storage;
    let removed = 0;
    for (const { key, value } of dbs.outcomes.getRange({ start: [owner, runId, -1], end: [owner, runId, Infinity], limit })) {
      const record = decodeOutcome(key, value);
      if (record.idempotencyKey !== "") dbs.outcomeKeys.remove([owner, record.idempotencyKey]);
      dbs.outcomes.remove(key);
      removed++;
    }
    for (const key of dbs.stepOutcomes.getKeys({ ...runRange(owner, runId), limit: Math.max(0, limit - removed) })) {
      dbs.stepOutcomes.remove(key);
      removed++;
    }
    return removed;
  }
}

export function decodeOutcome(key: Key, value: unknown): OutcomeRecord {
  const r = openRecord("learning_outcomes", key, value, OUTCOME_RECORD_VERSION);
  return {
    v: OUTCOME_RECORD_VERSION,
    id: r.string("id"),
    owner: r.integer("owner"),
    runId: r.string("runId"),
    referenceId: r.string("referenceId"),
    outcome: r.oneOf("outcome", OUTCOMES),
    signal: r.number("signal"),
    rationale: r.string("rationale"),
    agentId: r.string("agentId"),
    userId: r.string("userId"),
    verifiedInProduction: r.boolean("verifiedInProduction"),
    reinforcedIds: r.strings("reinforcedIds"),
    idempotencyKey: r.string("idempotencyKey"),
    createdAt: r.number("createdAt"),
  };
}

export function decodeStepOutcome(key: Key, value: unknown): StepOutcomeRecord {
  const r = openRecord("learning_step_outcomes", key, value, STEP_OUTCOME_RECORD_VERSION);
  return {
    v: STEP_OUTCOME_RECORD_VERSION,
    id: r.string("id"),
    owner: r.integer("owner"),
    runId: r.string("runId"),
    stepId: r.string("stepId"),
    stepName: r.string("stepName"),
    outcome: r.oneOf("outcome", OUTCOMES),
    signal: r.number("signal"),
    rationale: r.string("rationale"),
    directiveHint: r.string("directiveHint"),
    agentId: r.string("agentId"),
    userId: r.string("userId"),
    metadataJson: r.string("metadataJson"),
    createdAt: r.number("createdAt"),
    updatedAt: r.number("updatedAt"),
  };
}
