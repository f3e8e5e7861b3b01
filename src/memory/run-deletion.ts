// Deleting a run: one small transaction hides all of the owner's entries in it at once (a tombstone) and drops its
// ingest jobs, so the deletion is visible to the very next request and survives a crash; the run's outcomes and step
// outcomes are removed before the call answers (in bounded slices); a background purge then removes the entries,
// their postings, vectors and lineage links in bounded slices, resuming after a restart.
import { inWriteScope } from "../storage/write-scope.js";
import type { Logger } from "../platform/logger.js";
import type { EventBus } from "../events/event-bus.js";
import type { Storage } from "../storage/database.js";
import type { EntryStore } from "../storage/entry-store.js";
import type { IngestQueue } from "./ingest-queue.js";
import type { MemoryIndex } from "./memory-index.js";
import type { BackgroundGate } from "../platform/background-gate.js";
import type { OutcomeStore } from "../learning/outcome-store.js";

/**
 * Entries removed per purge transaction: small enough that one slice never holds the event loop for long. Removing an
 * entry costs about 0.1 ms in the transaction and 0.05 ms in the indexes at 25k entries, so a slice holds it for about
 * 5 ms; slices of 200 held it for 25-45 ms, once a minute in the soak, and that showed in its p99.
 */
const PURGE_SLICE = 32;
/** Outcomes removed per transaction while a deletion is answered: most runs' all, with the tombstone. */
const OUTCOME_SLICE = 5_000;

/** Another plane's records of a run, removed inside the deletion's transaction; returns how many of each kind. */
export type RunPlanePurge = (owner: number, runId: string) => Readonly<Record<string, number>>;

/**
 * Runs the deletion's one write transaction. A plane whose writes need work after the commit of its own (the core
 * data plane's node index and events) provides the transaction and hands `body` its purge.
 */
export type DeletionTransaction = <T>(body: (purge: RunPlanePurge) => T) => Promise<T>;

export interface RunDeletionResult {
  /** Whether the run held anything of the owner's. */
  readonly deleted: boolean;
  readonly entries: number;
  readonly jobs: number;
  /** Outcomes and step outcomes removed. */
  readonly outcomes: number;
  /** The erasure receipt: how many records of each kind the deletion removed (or hid, for entries). */
  readonly erased: Readonly<Record<string, number>>;
}

export class RunDeletion {
  readonly #storage: Storage;
  readonly #entries: EntryStore;
  readonly #index: MemoryIndex;
  readonly #ingest: IngestQueue;
  readonly #events: EventBus;
  readonly #logger: Logger;
  #purging: Promise<void> | undefined;
  #stopped = false;

  readonly #gate: BackgroundGate;
  readonly #outcomes: OutcomeStore;
  readonly #planes: readonly RunPlanePurge[];
  readonly #transaction: DeletionTransaction;
  /** Whether this node purges the owner's runs (clustered: the owner's shard is one it serves). */
  readonly #worksFor: (owner: number) => boolean;
  /** Told once a deletion is durable: in-memory mirrors of the planes' records (retention policies) follow it. */
  readonly #committed: (owner: number, runId: string) => void;

  constructor(
    storage: Storage,
    entries: EntryStore,
    index: MemoryIndex,
    ingest: IngestQueue,
    events: EventBus,
    logger: Logger,
    gate: BackgroundGate,
    outcomes: OutcomeStore,
    planes: readonly RunPlanePurge[] = [],
    transaction?: DeletionTransaction,
    worksFor: (owner: number) => boolean = () => true,
    committed: (owner: number, runId: string) => void = () => undefined,
  ) {
    this.#committed = committed;
    this.#worksFor = worksFor;
    this.#planes = planes;
    this.#transaction = transaction ?? ((body) => storage.transaction(() => body(() => ({}))));
    this.#gate = gate;
    this.#outcomes = outcomes;
    this.#storage = storage;
    this.#entries = entries;
    this.#index = index;
    this.#ingest = ingest;
    this.#events = events;
    this.#logger = logger;
  }

  /** Deletes everything the owner stored in the run's memory; durable and invisible to every read when it resolves. */
  async deleteRun(owner: number, runId: string): Promise<RunDeletionResult> {
    const { kept, maxSeq, jobs, outcomes: firstOutcomes, others } = await this.#transaction((purge) => ({
      // First, before the tombstone covers them: lessons and rules promoted beyond the run outlive it. Found inside
      // the transaction, so that a run of it again (clustered mode) decides on the newer state.
      kept: this.#globalKnowledge(owner, runId).flatMap((seq) => this.#entries.rehomeInTransaction(seq, `run ${JSON.stringify(runId)} deleted`) ?? []),
      maxSeq: this.#entries.tombstoneRunInTransaction(owner, runId),
      jobs: this.#ingest.forgetRunInTransaction(owner, runId),
      outcomes: this.#outcomes.purgeRunInTransaction(owner, runId, OUTCOME_SLICE),
      others: [...this.#planes, purge].map((plane) => plane(owner, runId)),
    }));
    this.#committed(owner, runId);
    for (const record of kept) {
      this.#index.catalog.replace(record);
      this.#events.publish({
        type: "lesson.updated",
        owner,
        runId: "",
        agentId: "",
        payload: JSON.stringify({ entry_id: record.id, changed_fields: ["run_id", "lineage_review"], cause: "run deleted", lineage_review: record.lineageReview }),
      });
    }
    let entries = 0;
    if (maxSeq !== undefined) {
      this.#entries.tombstoneCommitted(owner, runId, maxSeq);
      entries = this.#index.hideRun(owner, runId, maxSeq);
      this.start();
    }
    // A run with more outcomes than one slice: the rest go in further slices before the call answers.
    let outcomes = firstOutcomes;
    for (let removed = firstOutcomes; removed >= OUTCOME_SLICE; outcomes += removed) {
      removed = await this.#storage.transaction(() => this.#outcomes.purgeRunInTransaction(owner, runId, OUTCOME_SLICE));
    }
    const erased: Record<string, number> = { entries, jobs, outcomes, lessons_kept: kept.length };
    for (const counts of others) for (const [kind, count] of Object.entries(counts)) erased[kind] = (erased[kind] ?? 0) + count;
    const deleted = maxSeq !== undefined || Object.values(erased).some((count) => count > 0);
    if (deleted) {
      this.#events.publish({ type: "run.deleted", owner, runId, agentId: "", payload: JSON.stringify({ run_id: runId, erased }) });
    }
    return { deleted, entries, jobs, outcomes, erased };
  }

  /** The run's global lessons and rules: knowledge promoted beyond the run, kept when the run is deleted. */
  #globalKnowledge(owner: number, runId: string): number[] {
    return this.#index.catalog.knowledgeSeqs(owner, runId).filter((seq) => this.#entries.get(seq)?.lessonScope === "global");
  }

  /** Starts (or resumes, after a restart) purging deleted runs in the background. */
  start(): void {
    if (this.#purging !== undefined || this.#stopped) return;
    this.#purging = this.#purgeAll()
      .catch((e: unknown) => this.#logger.error({ err: e }, "run purge stopped; it resumes at the next start"))
      .finally(() => {
        this.#purging = undefined;
      });
  }

  /** Resolves once no deleted run awaits its purge (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#purging !== undefined) await this.#purging;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#purging;
  }

  async #purgeAll(): Promise<void> {
    const pendingHere = (): { owner: number; runId: string; maxSeq: number }[] => this.#entries.pendingTombstones().filter(({ owner }) => this.#worksFor(owner));
    for (let pending = pendingHere(); pending.length > 0 && !this.#stopped; pending = pendingHere()) {
      for (const { owner, runId, maxSeq } of pending) {
        if (this.#stopped) return;
        // The purge's writes are the owner's (clustered: on the owner's shard), whoever's call started the purge.
        await inWriteScope(owner, () => this.#purgeRun(owner, runId, maxSeq));
      }
    }
  }

  async #purgeRun(owner: number, runId: string, maxSeq: number): Promise<void> {
    let removed = 0;
    for (;;) {
      await this.#gate.pass();
      if (this.#stopped) return;
      const seqs = this.#entries.tombstonedSeqs(owner, runId, maxSeq, PURGE_SLICE);
      if (seqs.length === 0) break;
      const deleted = await this.#storage.transaction(() => seqs.flatMap((seq) => this.#entries.deleteInTransaction(seq) ?? []));
      for (const { record, termFreqs } of deleted) this.#index.forgetHidden(record.seq, record.owner, termFreqs);
      removed += deleted.length;
    }
    const cleared = await this.#storage.transaction(() => this.#entries.clearTombstoneInTransaction(owner, runId, maxSeq));
    // Not cleared: the run was deleted again meanwhile; the outer loop purges up to the new tombstone.
    if (cleared) this.#entries.tombstoneCleared(owner, runId);
    this.#index.dense.saveSoon();
    this.#logger.info({ owner, run_id: runId, entries: removed }, "deleted run purged");
  }
}
