// Outcomes: a run-level outcome reinforces the entries that produced it (the reference and the contributing
// entries, each resolved within the run and scope-checked), at most once per idempotency key; a step outcome records
// a step's reward and hindsight for reflection.
//
// Credit in context: an outcome speaks about a lesson in the situation where it was used. A lesson from another run
// that a negative outcome names is judged against the run's situation (its failures, and whether it applied the
// lesson's fix): when the lesson was surfaced for a situation it is not about, or the outcome says it did not apply,
// only its association with that situation is lowered (the situation joins its `not_for` list, and ranking keeps it
// out of such situations) — its belief in its own fix, its audition and its quarantine streak are untouched. Belief
// falls when the fix was applied, or the failure was the lesson's own, and it failed. A positive outcome in a run that
// met a failure makes that failure another situation of each lesson it credits: each later occurrence finds it easier.
import type { EventBus } from "../events/event-bus.js";
import type { Catalog } from "../retrieval/catalog.js";
import type { Storage } from "../storage/database.js";
import type { EntryRecord, EntryStore } from "../storage/entry-store.js";
import type { AppliedLearning, LearningChanges } from "./learning-changes.js";
import type { OutcomeRecord, OutcomeStore, StepOutcomeRecord } from "./outcome-store.js";
import { reinforce, unchanged } from "./reinforcement.js";
import type { MemoryIndex } from "../memory/memory-index.js";
import type { EntryAuditEvent } from "../storage/entry-record.js";
import type { Reindex } from "../storage/entry-store.js";
import { withSituations } from "../retrieval/situations.js";
import { appliedFix, bearingOn, runSituation, type RunSituation } from "./lesson-situations.js";

/** A run's failure at least this close (cosine of signatures) to a lesson's situations is that lesson's own. */
export const OWN_SITUATION_FIT = 0.75;
/** An outcome's rationale saying the knowledge it names did not bear on the run. */
const DID_NOT_APPLY =
  /\b(?:did ?n[o'’]t apply|does ?n[o'’]t apply|do ?n[o'’]t apply|not appl(?:y|icable|ied here)|inapplicable|irrelevant|not relevant|unrelated|wrong (?:lesson|rule|situation|context))\b/i;

/** What an outcome did to one entry it names. */
export type CreditEffect = "reinforced" | "penalized" | "dissociated";

export interface CreditResult {
  readonly entryId: string;
  readonly effect: CreditEffect;
  readonly reason: string;
}

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
  /** Per entry named: what the outcome did to it, and why. */
  readonly credits: readonly CreditResult[];
}

/** How an outcome is applied to one credited entry, decided before the transaction. */
interface CreditPlan {
  readonly effect: CreditEffect;
  readonly reason: string;
  /** Situations to add to its `situations` (reinforced) or `not_for` (dissociated) list. */
  readonly situations: readonly string[];
  /** Its postings and vector with the situations a reinforcement adds, embedded before the transaction. */
  readonly reindex?: Reindex | undefined;
}

export type StepOutcomeInput = Omit<StepOutcomeRecord, "v" | "id" | "createdAt" | "updatedAt">;

export class Outcomes {
  readonly #storage: Storage;
  readonly #entries: EntryStore;
  readonly #catalog: Catalog;
  readonly #store: OutcomeStore;
  readonly #changes: LearningChanges;
  readonly #events: EventBus;
  readonly #index: MemoryIndex;

  constructor(deps: { storage: Storage; entries: EntryStore; catalog: Catalog; store: OutcomeStore; changes: LearningChanges; events: EventBus; index: MemoryIndex }) {
    this.#index = deps.index;
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
    const plans = input.signal === 0 ? new Map<number, CreditPlan>() : await this.#plan(input, credited);
    const now = Date.now();
    const committed = await this.#storage.transaction(() => {
      // Checked again inside the transaction: of concurrent repeats, exactly one applies.
      if (input.idempotencyKey !== "" && this.#store.keyed(input.owner, input.idempotencyKey) !== undefined) return undefined;
      const believed = credited.filter((e) => plans.get(e.seq)?.effect !== "dissociated");
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
        reinforcedIds: input.signal === 0 ? [] : believed.map((e) => e.id),
        idempotencyKey: input.idempotencyKey,
        createdAt: now,
      });
      const applied: (AppliedLearning | undefined)[] = [];
      if (input.signal !== 0) {
        const credit = { signal: input.signal, verifiedInProduction: input.verifiedInProduction, runId: input.runId, outcomeId: outcome.id };
        const by = { reason: `outcome ${outcome.id}: ${input.outcome} (signal ${input.signal})`, agentId: input.agentId };
        for (const entry of credited) {
          const current = this.#entries.get(entry.seq);
          if (current === undefined) continue;
          const plan = plans.get(entry.seq) as CreditPlan;
          const learned = plan.effect === "dissociated" ? unchanged(current) : reinforce(current, credit);
          const list = plan.effect === "dissociated" ? "not_for" : "situations";
          // Situations a lesson is found by (not `not_for`) are added only with the postings and vector made for them.
          const grows = plan.situations.length > 0 && (plan.effect === "dissociated" || plan.reindex !== undefined);
          const metadataJson = grows ? withSituations(current.metadataJson, list, plan.situations) : undefined;
          const audit: EntryAuditEvent[] =
            plan.reason === "" ? [] : [{ at: now, field: "credit", from: "", to: plan.effect, reason: `outcome ${outcome.id}: ${plan.reason}`, agentId: input.agentId }];
          applied.push(this.#changes.applyInTransaction(current.seq, learned, by, { metadataJson }, now, metadataJson === undefined ? undefined : plan.reindex, audit));
        }
      }
      return { outcome, applied };
    });
    if (committed === undefined) return this.#repeat(input) ?? { outcomeId: "", deduplicated: true, reference: undefined, entriesReinforced: 0, skippedEntryIds: [], credits: [] };
    this.#changes.committed(committed.applied, "outcome");
    this.#announce(committed.outcome);
    return {
      outcomeId: committed.outcome.id,
      deduplicated: false,
      reference: primary === undefined ? undefined : this.#entries.get(primary.seq),
      entriesReinforced: committed.outcome.reinforcedIds.length,
      skippedEntryIds: skipped,
      credits: credited.flatMap((e) => {
        const plan = plans.get(e.seq);
        return plan === undefined ? [] : [{ entryId: e.id, effect: plan.effect, reason: plan.reason }];
      }),
    };
  }

  /**
   * How the outcome applies to each credited entry: a lesson or rule of another run is judged in the run's situation
   * (see the module comment); entries of the run itself are credited as the signal says.
   */
  async #plan(input: OutcomeInput, credited: readonly EntryRecord[]): Promise<Map<number, CreditPlan>> {
    const plans = new Map<number, CreditPlan>();
    const asSignalled: CreditPlan = { effect: input.signal > 0 ? "reinforced" : "penalized", reason: "", situations: [] };
    for (const entry of credited) plans.set(entry.seq, asSignalled);
    const elsewhere = credited.filter((e) => (e.entryType === "lesson" || e.entryType === "rule") && e.runId !== input.runId);
    if (elsewhere.length === 0) return plans;
    const run = runSituation(this.#entries, this.#store, input.owner, input.runId);
    const saidNotApplicable = DID_NOT_APPLY.test(input.rationale);
    for (const lesson of elsewhere) plans.set(lesson.seq, await this.#withReindex(lesson, await this.#planOne(input, lesson, run, saidNotApplicable)));
    return plans;
  }

  /**
   * A reinforcement that adds situations, with the lesson's postings and vector for them. When the embedder cannot
   * make them (a remote endpoint down), the outcome still applies, without adding situations: the lesson's index and
   * its metadata never disagree, and an outcome does not fail for want of an embedding.
   */
  async #withReindex(lesson: EntryRecord, plan: CreditPlan): Promise<CreditPlan> {
    if (plan.effect !== "reinforced" || plan.situations.length === 0) return plan;
    const metadataJson = withSituations(lesson.metadataJson, "situations", plan.situations);
    if (metadataJson === undefined) return plan;
    try {
      return { ...plan, reindex: await this.#index.reindexOf({ ...lesson, metadataJson }) };
    } catch {
      return { effect: "reinforced", reason: "", situations: [] };
    }
  }

  async #planOne(input: OutcomeInput, lesson: EntryRecord, run: RunSituation, saidNotApplicable: boolean): Promise<CreditPlan> {
    const situation = run.failures.length > 0 ? run.failures : run.task === "" ? [] : [run.task];
    if (input.signal > 0) {
      return { effect: "reinforced", reason: run.failures.length === 0 ? "" : `it helped in run ${JSON.stringify(input.runId)}: the failure met there is now one of its situations`, situations: run.failures };
    }
    if (saidNotApplicable) {
      return { effect: "dissociated", reason: `the outcome says it did not apply in run ${JSON.stringify(input.runId)}: it is no longer recalled for that situation; its confidence is unchanged`, situations: situation };
    }
    // A run that met no failure gives nothing to tell the lesson's situation from: the outcome counts against it.
    if (run.failures.length === 0) return { effect: "penalized", reason: "", situations: [] };
    if (appliedFix(lesson, run)) return { effect: "penalized", reason: `its fix was applied in run ${JSON.stringify(input.runId)} and the run failed`, situations: [] };
    const bearing = await bearingOn(this.#index.situations, lesson, run);
    if (bearing >= OWN_SITUATION_FIT) return { effect: "penalized", reason: `run ${JSON.stringify(input.runId)} met its own situation (fit ${bearing.toFixed(2)}) and failed`, situations: [] };
    return {
      effect: "dissociated",
      reason: `surfaced in run ${JSON.stringify(input.runId)}, whose failure is not its situation (fit ${bearing.toFixed(2)}), and its fix was not applied: it is no longer recalled for that situation; its confidence is unchanged`,
      situations: situation,
    };
  }

  #repeat(input: OutcomeInput): OutcomeResult | undefined {
    const keyed = this.#store.keyed(input.owner, input.idempotencyKey);
    if (keyed === undefined) return undefined;
    const reference = keyed.referenceId === "" ? undefined : this.#entries.find(keyed.referenceId, (r) => r.owner === input.owner);
    return { outcomeId: keyed.outcomeId, deduplicated: true, reference, entriesReinforced: 0, skippedEntryIds: [], credits: [] };
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
