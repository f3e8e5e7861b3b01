// Outcomes: a run-level outcome reinforces the entries that produced it (the reference and the contributing
// entries, each resolved within the run and scope-checked), at most once per idempotency key; a step outcome records
// a step's reward and hindsight for reflection.
import type { EventBus } from "../events/event-bus.js";
import type { Catalog } from "../retrieval/catalog.js";
import type { Storage } from "../storage/database.js";
import type { EntryRecord, EntryStore } from "../storage/entry-store.js";
import type { AppliedLearning, LearningChanges } from "./learning-changes.js";
import type { OutcomeRecord, OutcomeStore, StepOutcomeRecord } from "./outcome-store.js";
import { reinforce } from "./reinforcement.js";

/** An outcome as a request states it: the record's fields, with the entries it names still to be resolved. */
export type OutcomeInput = Omit<OutcomeRecord, "v" | "id" | "reinforcedIds" | "createdAt"> & {
  /** Further contributing entries, as named; resolved within the run and scope-checked. */
  readonly entryIds: readonly string[];
};

export interface OutcomeResult {
  readonly outcomeId: string;
  readonly deduplicated: boolean;
  /** The primary entry after the outcome; undefined when `reference_id` named none of the run's. */
  readonly reference: EntryRecord | undefined;
  readonly entriesReinforced: number;
  readonly skippedEntryIds: readonly string[];
}

export type StepOutcomeInput = Omit<StepOutcomeRecord, "v" | "id" | "createdAt" | "updatedAt">;

export class Outcomes {
  readonly #storage: Storage;
  readonly #entries: EntryStore;
  readonly #catalog: Catalog;
  readonly #store: OutcomeStore;
  readonly #changes: LearningChanges;
  readonly #events: EventBus;

  constructor(deps: { storage: Storage; entries: EntryStore; catalog: Catalog; store: OutcomeStore; changes: LearningChanges; events: EventBus }) {
    this.#storage = deps.storage;
    this.#entries = deps.entries;
    this.#catalog = deps.catalog;
    this.#store = deps.store;
    this.#changes = deps.changes;
    this.#events = deps.events;
  }

  /**
   * An entry an outcome of `runId` may credit: the owner's, about the outcome's user (or nobody in particular), and
   * written in the run — or a lesson or rule that reaches the run from a wider scope (global or auditioning), since
   * that is how it could have helped there.
   */
  #creditable(input: OutcomeInput): (record: EntryRecord) => boolean {
    return (record) => {
      if (record.owner !== input.owner) return false;
      if (input.userId !== "" && record.userId !== "" && record.userId !== input.userId) return false;
      if (record.runId === input.runId) return true;
      return (record.entryType === "lesson" || record.entryType === "rule") && this.#catalog.isGlobalLesson(record.seq);
    };
  }

  async record(input: OutcomeInput): Promise<OutcomeResult> {
    if (input.idempotencyKey !== "") {
      const repeat = this.#repeat(input);
      if (repeat !== undefined) return repeat;
    }
    const canCredit = this.#creditable(input);
    const primary = input.referenceId === "" ? undefined : this.#entries.find(input.referenceId, canCredit);
    const credited: EntryRecord[] = primary === undefined ? [] : [primary];
    const skipped: string[] = [];
    for (const id of input.entryIds) {
      const entry = this.#entries.find(id, canCredit);
      if (entry === undefined) skipped.push(id);
      else if (!credited.some((e) => e.seq === entry.seq)) credited.push(entry);
    }
    const now = Date.now();
    const committed = await this.#storage.transaction(() => {
      // Checked again inside the transaction: of concurrent repeats, exactly one applies.
      if (input.idempotencyKey !== "" && this.#store.keyed(input.owner, input.idempotencyKey) !== undefined) return undefined;
      const outcome = this.#store.putOutcomeInTransaction({
        owner: input.owner,
        runId: input.runId,
        referenceId: primary?.id ?? "",
        outcome: input.outcome,
        signal: input.signal,
        rationale: input.rationale,
        agentId: input.agentId,
        userId: input.userId,
        verifiedInProduction: input.verifiedInProduction,
        reinforcedIds: input.signal === 0 ? [] : credited.map((e) => e.id),
        idempotencyKey: input.idempotencyKey,
        createdAt: now,
      });
      const applied: (AppliedLearning | undefined)[] = [];
      if (input.signal !== 0) {
        const credit = { signal: input.signal, verifiedInProduction: input.verifiedInProduction, runId: input.runId, outcomeId: outcome.id };
        const by = { reason: `outcome ${outcome.id}: ${input.outcome} (signal ${input.signal})`, agentId: input.agentId };
        for (const entry of credited) {
          const current = this.#entries.get(entry.seq);
          if (current !== undefined) applied.push(this.#changes.applyInTransaction(current.seq, reinforce(current, credit), by, {}, now));
        }
      }
      return { outcome, applied };
    });
    if (committed === undefined) return this.#repeat(input) ?? { outcomeId: "", deduplicated: true, reference: undefined, entriesReinforced: 0, skippedEntryIds: [] };
    this.#changes.committed(committed.applied, "outcome");
    this.#announce(committed.outcome);
    return {
      outcomeId: committed.outcome.id,
      deduplicated: false,
      reference: primary === undefined ? undefined : this.#entries.get(primary.seq),
      entriesReinforced: committed.outcome.reinforcedIds.length,
      skippedEntryIds: skipped,
    };
  }

  #repeat(input: OutcomeInput): OutcomeResult | undefined {
    const keyed = this.#store.keyed(input.owner, input.idempotencyKey);
    if (keyed === undefined) return undefined;
    const reference = keyed.referenceId === "" ? undefined : this.#entries.find(keyed.referenceId, (r) => r.owner === input.owner);
    return { outcomeId: keyed.outcomeId, deduplicated: true, reference, entriesReinforced: 0, skippedEntryIds: [] };
  }

  #announce(outcome: OutcomeRecord): void {
    this.#events.publish({
      type: "outcome.recorded",
      owner: outcome.owner,
      runId: outcome.runId,
      agentId: outcome.agentId,
      payload: JSON.stringify({
        outcome_id: outcome.id,
        reference_id: outcome.referenceId,
        outcome: outcome.outcome,
        signal: outcome.signal,
        reinforced_ids: outcome.reinforcedIds,
      }),
    });
  }

  /** Records a step's outcome; the same step again replaces it and keeps its id. */
  async recordStep(input: StepOutcomeInput): Promise<StepOutcomeRecord> {
    const now = Date.now();
    const stored = await this.#storage.transaction(() => {
      const earlier = this.#store.stepOutcome(input.owner, input.runId, input.stepId);
      return this.#store.putStepOutcomeInTransaction({
        ...input,
        id: earlier?.id ?? this.#store.nextStepOutcomeId(),
        createdAt: earlier?.createdAt ?? now,
        updatedAt: now,
      });
    });
    this.#events.publish({
      type: "step_outcome.recorded",
      owner: stored.owner,
      runId: stored.runId,
      agentId: stored.agentId,
      payload: JSON.stringify({ step_outcome_id: stored.id, step_id: stored.stepId, outcome: stored.outcome, signal: stored.signal }),
    });
    return stored;
  }
}
