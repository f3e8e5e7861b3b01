// Asynchronous ingest: jobs and their validated items are persisted on acceptance; one worker applies them, serving
// owners in turn (each owner's jobs in acceptance order, so one tenant's backlog never starves another's), each job
// in one transaction that also records its completion, so a job interrupted by a crash is redone in full after
// restart and never applied twice.
import { inWriteScope } from "../storage/write-scope.js";
import type { Logger } from "../platform/logger.js";
import type { Metrics } from "../platform/metrics.js";
import type { EventBus } from "../events/event-bus.js";
import type { Storage } from "../storage/database.js";
import { nextSequence } from "../storage/database.js";
import { ENTRY_TYPES, IMPORTANCE_LEVELS, vectorFromBytes, type EntryStore, type EntryType, type NewEntry } from "../storage/entry-store.js";
import { VectorSpaceConflict } from "../storage/vector-space-store.js";
import { decodeOptional, openFields, openRecord, type RecordReader } from "../storage/record-codec.js";
import { CostMeter, metered, ZERO_COST, type Cost, type ProviderCost } from "../platform/cost-meter.js";
import { providerCostSink } from "../platform/metrics.js";
import { decodeProvenance } from "../storage/entry-record.js";
import { legacyProvenance } from "../storage/provenance.js";
import type { EntryWriter } from "./entry-writer.js";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Key } from "lmdb";
import type { BackgroundGate } from "../platform/background-gate.js";

/** Unfinished jobs one owner may have queued at once; beyond it ingest answers resource_exhausted (429). */
export const MAX_QUEUED_JOBS_PER_OWNER = 1000;
/**
 * Accepted jobs whose validated items are also kept in memory for the worker, so that it need not read, unpack and
 * re-check what it stored a moment ago. Beyond this many (a backlog) the worker reads the items from LMDB, as it does
 * after a restart; 16 jobs of 1000 items are a few megabytes.
 */
const MAX_HELD_JOBS = 16;

export const JOB_STATUSES = ["queued", "running", "completed", "failed"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

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
  /** Caller vectors for the owner's named vector spaces, as Float32 bytes (wide vectors stay compact in the job). */
  readonly spaceVectors?: readonly { readonly space: string; readonly bytes: Uint8Array }[] | undefined;
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
  readonly v: 2;
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
  /** The API key id that submitted the job: its provider costs are charged to that key (version 2; "" before). */
  readonly keyId: string;
  /** What applying the job spent on external providers (version 2; zeros before, and until the job is done). */
  readonly cost: Cost;
}

const JOB_RECORD_VERSION = 2;
/** Version 1 records lack `keyId` and `cost`, read as "" and zeros. */
const READABLE_JOB_VERSIONS = [1, 2] as const;

function decodeProviderCost(r: RecordReader): ProviderCost {
  return { calls: r.number("calls"), inputTokens: r.number("inputTokens"), outputTokens: r.number("outputTokens"), ms: r.number("ms") };
}

/** Checks a job record read from LMDB against its schema (see record-codec). */
function decodeJob(jobId: string, value: unknown): IngestJobRecord {
  const r = openRecord("ingest_jobs", jobId, value, READABLE_JOB_VERSIONS);
  return {
    v: JOB_RECORD_VERSION,
    jobId: r.string("jobId"),
    jobSeq: r.integer("jobSeq"),
    owner: r.integer("owner"),
    runId: r.string("runId"),
    agentId: r.string("agentId"),
    status: r.oneOf("status", JOB_STATUSES),
    error: r.string("error"),
    createdAt: r.number("createdAt"),
    startedAt: r.number("startedAt"),
    finishedAt: r.number("finishedAt"),
    itemCount: r.integer("itemCount"),
    entryCount: r.integer("entryCount"),
    ordered: r.boolean("ordered"),
    idempotencyKey: r.string("idempotencyKey"),
    deduplicatedCount: r.integer("deduplicatedCount"),
    traces: r.objects("traces").map((t) => ({
      itemId: t.string("itemId"),
      contentType: t.string("contentType"),
      entryType: t.oneOf("entryType", ENTRY_TYPES),
      reasoning: t.string("reasoning"),
      confidence: t.number("confidence"),
      recordId: t.string("recordId"),
    })),
    keyId: r.version === 1 ? "" : r.string("keyId"),
    cost: r.version === 1 ? ZERO_COST : { llm: decodeProviderCost(r.object("cost").object("llm")), embeddings: decodeProviderCost(r.object("cost").object("embeddings")) },
  };
}

/** Checks a job's stored items (an array without a version of its own: the store's schema version covers it). */
function decodeJobItems(jobId: string, value: unknown): JobItem[] {
  return openFields("ingest_job_items", jobId, { items: value })
    .objects("items")
    .map((item) => {
      const e = item.object("entry");
      return {
        itemId: item.string("itemId"),
        contentType: item.string("contentType"),
        reasoning: item.string("reasoning"),
        confidence: item.number("confidence"),
        vector: item.has("vector") ? item.numbers("vector") : undefined,
        spaceVectors: item.has("spaceVectors") ? item.objects("spaceVectors").map((v) => ({ space: v.string("space"), bytes: v.bytes("bytes") })) : undefined,
        entry: {
          owner: e.integer("owner"),
          runId: e.string("runId"),
          agentId: e.string("agentId"),
          userId: e.string("userId"),
          entryType: e.oneOf("entryType", ENTRY_TYPES),
          content: e.string("content"),
          lessonScope: e.string("lessonScope"),
          lessonType: e.string("lessonType"),
          importance: e.oneOf("importance", IMPORTANCE_LEVELS),
          metadataJson: e.string("metadataJson"),
          lane: e.string("lane"),
          occurrenceTime: e.number("occurrenceTime"),
          upsertKey: e.string("upsertKey"),
          source: e.string("source"),
          contentType: e.string("contentType"),
          envTags: e.strings("envTags"),
          derived: e.boolean("derived"),
          confidence: e.number("confidence"),
          sourceIds: e.has("sourceIds") ? e.strings("sourceIds") : [],
          // Items queued by a build before provenance and expiry: the defaults of their time.
          provenance: e.has("provenance") ? decodeProvenance(e.object("provenance")) : legacyProvenance(e.string("source")),
          flags: e.has("flags") ? e.strings("flags") : [],
          expiresAt: e.has("expiresAt") ? e.number("expiresAt") : 0,
          absorbedIds: [],
        },
      };
    });
}

export interface Acceptance {
  readonly job: IngestJobRecord;
  readonly deduplicated: boolean;
}

/**
 * Thrown inside a job's transaction when the job was finished meanwhile (clustered mode: by another node of its shard,
 * whose worker also saw it queued): the transaction is undone and the job left as that node finished it.
 */
class JobSettled extends Error {}

/** Thrown inside a job's transaction when a run deletion dropped the job meanwhile: the transaction is undone. */
class JobDropped extends Error {
  constructor(jobId: string) {
    super(`ingest job ${jobId} was deleted with its run`);
  }
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
  /** Test-only: holds the worker between jobs. */
  readonly #gate: BackgroundGate;
  /** Owner whose job the worker applied last: the next turn goes to the owner after it. */
  #lastOwner: number | undefined;
  /**
   * The job whose transaction is committing: its entries are durable before they are searchable, so until the
   * index has them the job is reported as still running (callers read `completed` as "searchable").
   */
  #indexing: string | undefined;
  /**
   * The job the worker is applying. Its "running" state is not written to LMDB (that would cost every job one more
   * flushed transaction): a job cut off by a crash is queued again anyway, and callers see `running` from here.
   */
  #applying: { readonly jobId: string; readonly startedAt: number } | undefined;
  /** Resolves waiters (tests, BatchInsert-style callers) when a job finishes. */
  readonly #finished = new Map<string, (() => void)[]>();
  /** Items of recently accepted jobs, as stored (see MAX_HELD_JOBS); the stored copy stays the one that counts. */
  readonly #held = new Map<string, readonly JobItem[]>();

  /** Whether this node works the owner's jobs (clustered: the owner's shard is one it serves). */
  readonly #worksFor: (owner: number) => boolean;

  constructor(
    storage: Storage,
    entries: EntryStore,
    writer: EntryWriter,
    events: EventBus,
    metrics: Metrics,
    logger: Logger,
    gate: BackgroundGate,
    worksFor: (owner: number) => boolean = () => true,
  ) {
    this.#worksFor = worksFor;
    this.#gate = gate;
    this.#storage = storage;
    this.#entries = entries;
    this.#writer = writer;
    this.#events = events;
    this.#metrics = metrics;
    this.#logger = logger;
  }

  /** The job as callers may see it: `completed` only once its entries are searchable. */
  get(jobId: string, canRead: (job: IngestJobRecord) => boolean): IngestJobRecord | undefined {
    const job = this.#read(jobId);
    if (job === undefined || !canRead(job)) return undefined;
    const applying = this.#applying;
    if (job.status === "queued" && applying?.jobId === jobId) return { ...job, status: "running", startedAt: applying.startedAt };
    if (job.status !== "completed") return job;
    // Being indexed here: committed by this node's worker, or (clustered) replayed from another node's.
    if (jobId !== this.#indexing && this.#writer.searchable(job.traces.map((t) => t.recordId))) return job;
    return { ...job, status: "running", finishedAt: 0, entryCount: 0, traces: [] };
  }

  /** A job as callers see it, without a reader's check: for the worker's own waiters. */
  #view(jobId: string): IngestJobRecord | undefined {
    return this.get(jobId, () => true);
  }

  /** The stored record, for read-modify-write inside a transaction. */
  #read(jobId: string): IngestJobRecord | undefined {
    return decodeOptional(this.#storage.dbs.jobs.get(jobId), (value) => decodeJob(jobId, value));
  }

  /** Jobs of one owner's run, oldest first. */
  *jobsOfRun(owner: number, runId: string): Generator<IngestJobRecord> {
    const { dbs } = this.#storage;
    for (const { value } of dbs.jobsByRun.getRange({ start: [owner, runId, 0], end: [owner, runId, Infinity] })) {
      const job = this.get(value, (j) => j.owner === owner);
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
    keyId: string,
  ): Promise<Acceptance> {
    // Held before the commit, so that the worker, which may take the job as soon as it is committed, finds them.
    let held: string | undefined;
    const result = await this.#storage.transaction((): Acceptance => {
      const { dbs } = this.#storage;
      // Run again (clustered mode: a conflict with another node), the first run's job id may go to another job.
      if (held !== undefined) this.#held.delete(held);
      held = undefined;
      if (idempotencyKey !== "") {
        const earlierId = dbs.jobIdempotency.get([owner, runId, idempotencyKey]);
        const earlier = earlierId === undefined ? undefined : this.#read(earlierId);
        if (earlier !== undefined) {
          const updated = { ...earlier, deduplicatedCount: earlier.deduplicatedCount + 1 };
          dbs.jobs.put(earlier.jobId, updated);
          return { job: updated, deduplicated: true };
        }
      }
      const queued = dbs.jobQueueByOwner.getKeysCount({ start: [owner, 0], end: [owner, Infinity] });
      if (queued >= MAX_QUEUED_JOBS_PER_OWNER) {
        throw new ConnectError(`${queued} ingest jobs of this user are still queued (at most ${MAX_QUEUED_JOBS_PER_OWNER}); retry when they finish`, Code.ResourceExhausted);
      }
      const jobSeq = nextSequence(dbs.meta, "job");
      const job: IngestJobRecord = {
        v: JOB_RECORD_VERSION,
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
        keyId,
        cost: ZERO_COST,
      };
      dbs.jobs.put(job.jobId, job);
      dbs.jobItems.put(job.jobId, items);
      dbs.jobQueue.put(jobSeq, job.jobId);
      dbs.jobQueueByOwner.put([owner, jobSeq], job.jobId);
      dbs.jobsByRun.put([owner, runId, jobSeq], job.jobId);
      if (idempotencyKey !== "") dbs.jobIdempotency.put([owner, runId, idempotencyKey], job.jobId);
      if (this.#held.size < MAX_HELD_JOBS) {
        held = job.jobId;
        this.#held.set(held, items);
      }
      return { job, deduplicated: false };
    }).catch((e: unknown) => {
      if (held !== undefined) this.#held.delete(held);
      throw e;
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
        if (!this.#stopped && this.#nextJob() !== undefined) this.start();
      });
  }

  /** Resolves when the job is done (or at once if it already is). */
  async waitFor(jobId: string): Promise<IngestJobRecord | undefined> {
    const job = this.#view(jobId);
    if (job === undefined || job.status === "completed" || job.status === "failed") return job;
    await new Promise<void>((resolve) => {
      const waiters = this.#finished.get(jobId) ?? [];
      waiters.push(resolve);
      this.#finished.set(jobId, waiters);
    });
    return this.#view(jobId);
  }

  /** Resolves once the worker has drained the queue (tests). */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }

  async #drain(): Promise<void> {
    while (!this.#stopped) {
      await this.#gate.pass();
      const next = this.#nextJob();
      if (next === undefined) return;
      this.#lastOwner = next.owner;
      // The job's writes belong to its owner (clustered: to the owner's shard); a job from before per-owner queues to none.
      await inWriteScope(next.owner < 0 ? undefined : next.owner, () => this.#process(next.jobId, next.key));
    }
  }

  /**
   * The oldest job of the next owner after the one served last (wrapping around): owners take turns, one job each,
   * whatever the length of their backlogs.
   */
  #nextJob(): { owner: number; key: number; jobId: string } | undefined {
    const { dbs } = this.#storage;
    const after = this.#lastOwner;
    // A store started from a snapshot of more shards than the node serves holds their queues too: skipped, owner by
    // owner (the nodes serving them work them).
    const pick = (start: Key): { owner: number; key: number; jobId: string } | undefined => {
      for (let from = start; ; ) {
        let found: { owner: number; key: number; jobId: string } | undefined;
        for (const { key, value } of dbs.jobQueueByOwner.getRange({ start: from, limit: 1 })) {
          const [owner, jobSeq] = key as [number, number];
          found = { owner, key: jobSeq, jobId: value };
        }
        if (found === undefined || this.#worksFor(found.owner)) return found;
        from = [found.owner + 1];
      }
    };
    const next = (after === undefined ? undefined : pick([after + 1])) ?? pick([-Infinity]);
    if (next !== undefined) return next;
    // Jobs accepted before the per-owner queue existed are only in the acceptance-order queue.
    for (const { key, value } of dbs.jobQueue.getRange({ limit: 1 })) return { owner: -1, key, jobId: value };
    return undefined;
  }

  /**
   * Drops the owner's jobs of a run, queued or finished (a run deletion). A job being applied meanwhile finds its
   * record gone at commit and stores nothing. Call inside a write transaction; returns how many jobs it dropped.
   */
  forgetRunInTransaction(owner: number, runId: string): number {
    const { dbs } = this.#storage;
    const keys = [...dbs.jobsByRun.getRange({ start: [owner, runId, 0], end: [owner, runId, Infinity] })];
    for (const { key, value: jobId } of keys) {
      const jobSeq = (key as [number, string, number])[2];
      const job = this.#read(jobId);
      this.#held.delete(jobId);
      dbs.jobs.remove(jobId);
      dbs.jobItems.remove(jobId);
      this.#dequeue(jobSeq, owner);
      dbs.jobsByRun.remove(key);
      if (job !== undefined && job.idempotencyKey !== "") dbs.jobIdempotency.remove([owner, runId, job.idempotencyKey]);
    }
    return keys.length;
  }

  async #process(jobId: string, queueKey: number): Promise<void> {
    const { dbs } = this.#storage;
    const job = this.#read(jobId);
    const held = this.#held.get(jobId);
    this.#held.delete(jobId);
    const items = held ?? decodeOptional(dbs.jobItems.get(jobId), (value) => decodeJobItems(jobId, value));
    if (job === undefined || items === undefined || job.status === "completed" || job.status === "failed") {
      await this.#storage.transaction(() => this.#dequeue(queueKey, job?.owner));
      return;
    }
    // Each write of the job record re-reads it in its transaction: accept() may have counted a deduplicated repeat
    // meanwhile, and writing back an older copy would lose that count.
    const startedAt = job.startedAt || Date.now();
    // A run deletion may drop the job while it is applied: then its transaction stores nothing (see JobDropped).
    const current = (): IngestJobRecord => {
      const stored = this.#read(jobId);
      if (stored === undefined) throw new JobDropped(jobId);
      if (stored.status === "completed" || stored.status === "failed") throw new JobSettled(jobId);
      return stored;
    };
    let finished: IngestJobRecord;
    this.#applying = { jobId, startedAt };
    // The job's provider calls are charged to the key that submitted it, not to whichever request woke the worker.
    const meter = new CostMeter(providerCostSink(this.#metrics, job.keyId));
    try {
      const prepared = await metered(meter, () => this.#writer.prepare(
        items.map((item) => ({
          entry: item.entry,
          vector: item.vector === undefined ? undefined : Float32Array.from(item.vector),
          spaceVectors: item.spaceVectors?.map(({ space, bytes }) => ({ space, vector: vectorFromBytes(bytes) })),
        })),
      ));
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
          cost: meter.totals,
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
        this.#dequeue(queueKey, job.owner);
        return result;
      }).catch((e: unknown) => {
        if (e instanceof JobDropped || e instanceof JobSettled) throw e;
        // Another request fixed a space's dimension after this job was accepted: the job's owner learns which.
        if (e instanceof VectorSpaceConflict) throw new Error(`none of the job's entries was stored: ${e.message}`);
        // A full store (SERVICE_MAX_STORE_BYTES) is an expected refusal, and its message is written for callers.
        if (e instanceof ConnectError && e.code === Code.ResourceExhausted) throw new Error(`none of the job's entries was stored: ${e.rawMessage}`);
        // The store's own message names its internals; the job's owner learns what happened, the log the cause.
        this.#logger.error({ err: e, job_id: jobId }, "storing an ingest job's entries failed");
        throw new Error("storing the job's entries failed; none of them was stored");
      });
      // Still "indexing" while near-duplicates merge: the job reads as done once its entries are as they stay.
      await this.#writer.indexAndMerge(written, prepared, "ingest");
      this.#indexing = undefined;
      this.#metrics.ingestJobs.inc({ status: "completed" });
      this.#publish(finished!, "ingest.job.completed", {});
    } catch (e: unknown) {
      // Only a failure outside our validation (an embedding provider, the disk) gets here; nothing was stored.
      this.#indexing = undefined;
      if (e instanceof JobSettled) {
        this.#settled(jobId);
        return;
      }
      const error = e instanceof Error ? e.message : String(e);
      const failed = await this.#storage.transaction(() => {
        const { dbs } = this.#storage;
        const stored = this.#read(jobId);
        this.#dequeue(queueKey, job.owner);
        if (stored === undefined) return undefined;
        const record: IngestJobRecord = { ...stored, status: "failed", startedAt, finishedAt: Date.now(), error, cost: meter.totals };
        dbs.jobs.put(jobId, record);
        dbs.jobItems.remove(jobId);
        return record;
      });
      if (failed !== undefined) {
        this.#logger.warn({ job_id: jobId, error }, "ingest job failed");
        this.#metrics.ingestJobs.inc({ status: "failed" });
        this.#publish(failed, "ingest.job.failed", { error });
      }
    }
    this.#settled(jobId);
  }

  #settled(jobId: string): void {
    this.#applying = undefined;
    for (const resolve of this.#finished.get(jobId) ?? []) resolve();
    this.#finished.delete(jobId);
  }

  /** Removes a job from both queues. Call inside a write transaction. */
  #dequeue(jobSeq: number, owner: number | undefined): void {
    const { dbs } = this.#storage;
    dbs.jobQueue.remove(jobSeq);
    if (owner !== undefined) dbs.jobQueueByOwner.remove([owner, jobSeq]);
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
