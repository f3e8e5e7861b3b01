// Asynchronous ingest: jobs and their validated items are persisted on acceptance; one worker applies them in
// acceptance order, each job in one transaction that also records its completion, so a job interrupted by a crash
// is redone in full after restart and never applied twice.
import type { Logger } from "../platform/logger.js";
import type { Metrics } from "../platform/metrics.js";
import type { EventBus } from "../events/event-bus.js";
import type { Storage } from "../storage/database.js";
import { nextSequence } from "../storage/database.js";
import type { EntryStore, EntryType, NewEntry } from "../storage/entry-store.js";
import type { EntryWriter } from "./entry-writer.js";

export type JobStatus = "queued" | "running" | "completed" | "failed";

/** One validated item of a job, ready to store. */
export interface JobItem {
  readonly itemId: string;
  readonly contentType: string;
  /** How the entry type was chosen: `entry_type`, `intent` or `default`. */
  readonly reasoning: string;
  readonly confidence: number;
  readonly entry: NewEntry;
  /** Caller-supplied vector, as plain numbers for storage. */
  readonly vector: number[] | undefined;
}

export interface JobTrace {
  readonly itemId: string;
  readonly contentType: string;
  readonly entryType: EntryType;
  readonly reasoning: string;
  readonly confidence: number;
  readonly recordId: string;
}

export interface IngestJobRecord {
  readonly v: 1;
  readonly jobId: string;
  readonly jobSeq: number;
  readonly owner: number;
  readonly runId: string;
  readonly agentId: string;
  readonly status: JobStatus;
  readonly error: string;
  readonly createdAt: number;
  readonly startedAt: number;
  readonly finishedAt: number;
  readonly itemCount: number;
  readonly entryCount: number;
  readonly ordered: boolean;
  readonly idempotencyKey: string;
  /** Ingest calls answered with this job because they repeated its idempotency key. */
  readonly deduplicatedCount: number;
  readonly traces: readonly JobTrace[];
}

export interface Acceptance {
  readonly job: IngestJobRecord;
  readonly deduplicated: boolean;
}

export class IngestQueue {
  readonly #storage: Storage;
  readonly #entries: EntryStore;
  readonly #writer: EntryWriter;
  readonly #events: EventBus;
  readonly #metrics: Metrics;
  readonly #logger: Logger;
  #running: Promise<void> | undefined;
  #stopped = false;
  /**
   * The job whose transaction is committing: its entries are durable before they are searchable, so until the
   * index has them the job is reported as still running (callers read `completed` as "searchable").
   */
  #indexing: string | undefined;
  /** Resolves waiters (tests, BatchInsert-style callers) when a job finishes. */
  readonly #finished = new Map<string, (() => void)[]>();

  constructor(storage: Storage, entries: EntryStore, writer: EntryWriter, events: EventBus, metrics: Metrics, logger: Logger) {
    this.#storage = storage;
    this.#entries = entries;
    this.#writer = writer;
    this.#events = events;
    this.#metrics = metrics;
    this.#logger = logger;
  }

  /** The job as callers may see it: `completed` only once its entries are searchable. */
  get(jobId: string): IngestJobRecord | undefined {
    const job = this.#read(jobId);
    if (job === undefined || jobId !== this.#indexing || job.status !== "completed") return job;
    return { ...job, status: "running", finishedAt: 0, entryCount: 0, traces: [] };
  }

  /** The stored record, for read-modify-write inside a transaction. */
  #read(jobId: string): IngestJobRecord | undefined {
    return this.#storage.dbs.jobs.get(jobId) as IngestJobRecord | undefined;
  }

  /** Jobs of one owner's run, oldest first. */
  *jobsOfRun(owner: number, runId: string): Generator<IngestJobRecord> {
    const { dbs } = this.#storage;
    for (const { value } of dbs.jobsByRun.getRange({ start: [owner, runId, 0], end: [owner, runId, Infinity] })) {
      const job = this.get(value);
      if (job !== undefined) yield job;
    }
  }

  /** Persists a job durably, or returns the earlier job with the same idempotency key. */
  async accept(
    owner: number,
    runId: string,
    agentId: string,
    idempotencyKey: string,
    ordered: boolean,
    items: readonly JobItem[],
  ): Promise<Acceptance> {
    const result = await this.#storage.transaction((): Acceptance => {
      const { dbs } = this.#storage;
      if (idempotencyKey !== "") {
        const earlierId = dbs.jobIdempotency.get([owner, runId, idempotencyKey]);
        const earlier = earlierId === undefined ? undefined : this.#read(earlierId);
        if (earlier !== undefined) {
          const updated = { ...earlier, deduplicatedCount: earlier.deduplicatedCount + 1 };
          dbs.jobs.put(earlier.jobId, updated);
          return { job: updated, deduplicated: true };
        }
      }
      const jobSeq = nextSequence(dbs.meta, "job");
      const job: IngestJobRecord = {
        v: 1,
        jobId: `job_${jobSeq.toString(36)}`,
        jobSeq,
        owner,
        runId,
        agentId,
        status: "queued",
        error: "",
        createdAt: Date.now(),
        startedAt: 0,
        finishedAt: 0,
        itemCount: items.length,
        entryCount: 0,
        ordered,
        idempotencyKey,
        deduplicatedCount: 0,
        traces: [],
      };
      dbs.jobs.put(job.jobId, job);
      dbs.jobItems.put(job.jobId, items);
      dbs.jobQueue.put(jobSeq, job.jobId);
      dbs.jobsByRun.put([owner, runId, jobSeq], job.jobId);
      if (idempotencyKey !== "") dbs.jobIdempotency.put([owner, runId, idempotencyKey], job.jobId);
      return { job, deduplicated: false };
    });
    if (!result.deduplicated) {
      this.#metrics.ingestJobs.inc({ status: "queued" });
      this.start();
    }
    return result;
  }

  /** Starts the worker if it is idle; it drains the queue, including jobs left over from before a restart. */
  start(): void {
    if (this.#running !== undefined || this.#stopped) return;
    this.#running = this.#drain()
      .catch((e: unknown) => this.#logger.error({ err: e }, "ingest worker stopped"))
      .finally(() => {
        this.#running = undefined;
        if (!this.#stopped && this.#storage.dbs.jobQueue.getCount() > 0) this.start();
      });
  }

  /** Resolves when the job is done (or at once if it already is). */
  async waitFor(jobId: string): Promise<IngestJobRecord | undefined> {
    const job = this.get(jobId);
    if (job === undefined || job.status === "completed" || job.status === "failed") return job;
    await new Promise<void>((resolve) => {
      const waiters = this.#finished.get(jobId) ?? [];
      waiters.push(resolve);
      this.#finished.set(jobId, waiters);
    });
    return this.get(jobId);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }

  async #drain(): Promise<void> {
    while (!this.#stopped) {
      let next: { key: number; jobId: string } | undefined;
      for (const { key, value } of this.#storage.dbs.jobQueue.getRange({ limit: 1 })) next = { key, jobId: value };
      if (next === undefined) return;
      await this.#process(next.jobId, next.key);
    }
  }

  async #process(jobId: string, queueKey: number): Promise<void> {
    const { dbs } = this.#storage;
    const job = this.#read(jobId);
    const items = dbs.jobItems.get(jobId) as JobItem[] | undefined;
    if (job === undefined || items === undefined || job.status === "completed" || job.status === "failed") {
      await this.#storage.transaction(() => this.#storage.dbs.jobQueue.remove(queueKey));
      return;
    }
    // Each write of the job record re-reads it in its transaction: accept() may have counted a deduplicated repeat
    // meanwhile, and writing back an older copy would lose that count.
    const startedAt = job.startedAt || Date.now();
    const current = (): IngestJobRecord => this.#read(jobId) ?? job;
    await this.#storage.transaction(() => this.#storage.dbs.jobs.put(jobId, { ...current(), status: "running", startedAt }));
    let finished: IngestJobRecord;
    try {
      const prepared = await this.#writer.prepare(
        items.map((item) => ({ entry: item.entry, vector: item.vector === undefined ? undefined : Float32Array.from(item.vector) })),
      );
      this.#indexing = jobId;
      const written = await this.#storage.transaction(() => {
        const { dbs } = this.#storage;
        const result = this.#entries.writeInTransaction(prepared);
        finished = {
          ...current(),
          startedAt,
          status: "completed",
          finishedAt: Date.now(),
          entryCount: result.length,
          traces: result.map(({ record }, i) => {
            const item = items[i] as JobItem;
            return {
              itemId: item.itemId,
              contentType: item.contentType,
              entryType: record.entryType,
              reasoning: item.reasoning,
              confidence: item.confidence,
              recordId: record.id,
            };
          }),
        };
        dbs.jobs.put(jobId, finished);
        dbs.jobItems.remove(jobId);
        dbs.jobQueue.remove(queueKey);
        return result;
      });
      this.#writer.committed(written, prepared, "ingest");
      this.#indexing = undefined;
      this.#metrics.ingestJobs.inc({ status: "completed" });
      this.#publish(finished!, "ingest.job.completed", {});
    } catch (e: unknown) {
      // Only a failure outside our validation (an embedding provider, the disk) gets here; nothing was stored.
      this.#indexing = undefined;
      const error = e instanceof Error ? e.message : String(e);
      finished = await this.#storage.transaction(() => {
        const { dbs } = this.#storage;
        const failed: IngestJobRecord = { ...current(), status: "failed", startedAt, finishedAt: Date.now(), error };
        dbs.jobs.put(jobId, failed);
        dbs.jobItems.remove(jobId);
        dbs.jobQueue.remove(queueKey);
        return failed;
      });
      this.#logger.warn({ job_id: jobId, error }, "ingest job failed");
      this.#metrics.ingestJobs.inc({ status: "failed" });
      this.#publish(finished, "ingest.job.failed", { error });
    }
    for (const resolve of this.#finished.get(jobId) ?? []) resolve();
    this.#finished.delete(jobId);
  }

  #publish(job: IngestJobRecord, type: string, extra: Record<string, string>): void {
    this.#events.publish({
      type,
      owner: job.owner,
      runId: job.runId,
      agentId: job.agentId,
      payload: JSON.stringify({ job_id: job.jobId, item_count: job.itemCount, ...extra }),
    });
  }
}
