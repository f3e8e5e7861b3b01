// Workload steps on the memory and learning planes (remember, ingest, batch insert, archive, lesson update and
// delete, outcomes with idempotency keys, delete_run), each updating the model from its answer and, when the answer
// never came, leaving a Pending that the next check settles.
import type { JsonObject } from "../harness/callers.js";
import { call, readOptional, violation, type Ctx } from "./context.js";
import { MemoryRun, type ClientWorld, type EntryModel } from "./model.js";
import { rowsOf, type Observation } from "./observe.js";

const WORDS = ["deploy", "cache", "schema", "retry", "index", "ticket", "release", "backup", "quota", "latency", "token", "queue", "mirror", "ledger", "parser", "socket"];

/** Above this many entries a run is deleted and replaced, so that the state the checks read stays bounded. */
export const RUN_CAPACITY = 40;

export const MEMORY_RPC = {
  remember: "engram.v2.MemoryService/Remember",
  ingest: "engram.v2.MemoryService/Ingest",
  batchInsert: "engram.v2.MemoryService/BatchInsert",
  archive: "engram.v2.MemoryService/ArchiveBlock",
  getJob: "engram.v2.MemoryService/GetIngestJob",
  updateLesson: "engram.v2.LearningService/UpdateLesson",
  deleteLesson: "engram.v2.LearningService/DeleteLesson",
  outcome: "engram.v2.LearningService/RecordOutcome",
  deleteRun: "engram.v2.RunsService/DeleteRun",
} as const;

export function phrase(ctx: Ctx, marker: string): string {
  const words = Array.from({ length: ctx.rng.between(3, 6) }, () => ctx.rng.pick(WORDS));
  return `Crash probe ${marker} about ${words.join(" ")}.`;
}

function newEntry(ctx: Ctx, type: EntryModel["type"], fate: EntryModel["fate"]): EntryModel {
  const marker = ctx.world.marker();
  const entry: EntryModel = { marker, content: phrase(ctx, marker), type, id: undefined, fate };
  if (type === "lesson") entry.outcomes = { applied: new Set(), uncertain: new Set() };
  return entry;
}

/** Settles entries written by one unanswered request: each is stored once or not at all, and all alike. */
function resolveGroup(route: string, entries: readonly EntryModel[]): (obs: Observation, ctx: Ctx) => void {
  return (obs, ctx) => {
    const counts = entries.map((e) => rowsOf(obs, e.marker).length);
    if (counts.some((n) => n > 1)) violation(ctx, `${route} (unanswered) stored an item more than once: ${JSON.stringify(counts)}`);
    const stored = counts.map((n) => n > 0);
    if (stored.some((s) => s !== stored[0])) violation(ctx, `${route} (unanswered) was applied in part: stored ${JSON.stringify(stored)} of its items`);
    entries.forEach((e, i) => {
      const row = rowsOf(obs, e.marker)[0];
      e.fate = stored[i] === true ? "present" : "absent";
      if (row !== undefined) {
        e.id = row.id;
        if (row.referenceId !== "") e.referenceId = row.referenceId;
      }
    });
  };
}

function add(run: MemoryRun, entries: readonly EntryModel[]): void {
  for (const e of entries) run.entries.set(e.marker, e);
}

export async function remember(ctx: Ctx, run: MemoryRun): Promise<boolean> {
  const entry = newEntry(ctx, ctx.rng.chance(0.4) ? "lesson" : "fact", "maybe");
  add(run, [entry]);
  const answer = await call(ctx, "remember", MEMORY_RPC.remember, { session_id: run.id, content: entry.content, intent: entry.type });
  if (answer.kind === "acked") {
    entry.fate = "present";
    entry.id = String(answer.body["entry_id"]);
  } else if (answer.kind === "refused") {
    entry.fate = "absent";
  } else {
    ctx.pending.push({ route: "remember", resolve: resolveGroup("remember", [entry]) });
    return false;
  }
  return true;
}

export async function batchInsert(ctx: Ctx, run: MemoryRun): Promise<boolean> {
  const entries = Array.from({ length: ctx.rng.between(1, 5) }, () => newEntry(ctx, "fact", "maybe"));
  add(run, entries);
  const answer = await call(ctx, "batch_insert", MEMORY_RPC.batchInsert, { run_id: run.id, items: entries.map((e) => ({ text: e.content })) });
  if (answer.kind === "unknown") {
    ctx.pending.push({ route: "batch_insert", resolve: resolveGroup("batch_insert", entries) });
    return false;
  }
  const ids = answer.kind === "acked" ? (answer.body["entry_ids"] as string[]) : [];
  if (answer.kind === "acked" && ids.length !== entries.length) violation(ctx, `batch_insert acknowledged ${ids.length} of ${entries.length} items`);
  entries.forEach((e, i) => {
    e.fate = answer.kind === "acked" ? "present" : "absent";
    e.id = ids[i];
  });
  return true;
}

export async function archive(ctx: Ctx, run: MemoryRun): Promise<boolean> {
  const entry = newEntry(ctx, "archive_block", "maybe");
  add(run, [entry]);
  const answer = await call(ctx, "archive", MEMORY_RPC.archive, { run_id: run.id, content: entry.content, artifact_kind: "log" });
  if (answer.kind === "acked") {
    entry.fate = "present";
    entry.referenceId = String(answer.body["reference_id"]);
  } else if (answer.kind === "refused") {
    entry.fate = "absent";
  } else {
    ctx.pending.push({ route: "archive", resolve: resolveGroup("archive", [entry]) });
    return false;
  }
  return true;
}

function ingestRequest(run: MemoryRun, key: string, entries: readonly EntryModel[]): JsonObject {
  return { run_id: run.id, idempotency_key: key, items: entries.map((e) => ({ text: e.content, intent: e.type })) };
}

export async function ingest(ctx: Ctx, run: MemoryRun): Promise<boolean> {
  const entries = Array.from({ length: ctx.rng.between(1, 5) }, () => newEntry(ctx, ctx.rng.chance(0.3) ? "lesson" : "fact", "maybe"));
  add(run, entries);
  const key = `ingest-${entries[0]?.marker}`;
  const request = ingestRequest(run, key, entries);
  const answer = await call(ctx, "ingest", MEMORY_RPC.ingest, request);
  if (answer.kind === "acked") {
    // Present once the job completes; the check waits for it.
    run.jobs.push({ jobId: String(answer.body["job_id"]), markers: entries.map((e) => e.marker) });
    for (const e of entries) e.fate = "present";
  } else if (answer.kind === "refused") {
    for (const e of entries) e.fate = "absent";
  } else {
    // The retry with the same key must return the first job if there was one, and queue it otherwise: either way
    // the items are then stored exactly once.
    ctx.pending.push({
      route: "ingest",
      async before(c) {
        const retry = await call(c, "ingest (retry)", MEMORY_RPC.ingest, request, { transport: "rest" });
        if (retry.kind !== "acked") {
          for (const e of entries) e.fate = "absent";
          return;
        }
        run.jobs.push({ jobId: String(retry.body["job_id"]), markers: entries.map((e) => e.marker) });
        for (const e of entries) e.fate = "present";
      },
    });
    return false;
  }
  return true;
}

export async function updateLesson(ctx: Ctx, run: MemoryRun): Promise<boolean> {
  const lessons = run.lessons();
  if (lessons.length === 0) return remember(ctx, run);
  const old = ctx.rng.pick(lessons);
  const marker = ctx.world.marker();
  const next: EntryModel = { marker, content: phrase(ctx, marker), type: "lesson", id: old.id, fate: "maybe", outcomes: old.outcomes };
  add(run, [next]);
  const answer = await call(ctx, "lesson update", MEMORY_RPC.updateLesson, { lesson_id: old.id ?? "", content: next.content, reason: "crash loop" });
  if (answer.kind === "acked") {
    old.fate = "absent";
    next.fate = "present";
  } else if (answer.kind === "refused") {
    next.fate = "absent";
  } else {
    old.fate = "maybe";
    ctx.pending.push({
      route: "lesson update",
      resolve(obs, c) {
        const before = rowsOf(obs, old.marker);
        const after = rowsOf(obs, next.marker);
        const applied = after.length === 1 && before.length === 0 && after[0]?.id === old.id;
        const kept = before.length === 1 && after.length === 0 && before[0]?.id === old.id;
        if (!applied && !kept) violation(c, `lesson update (unanswered) left ${before.length} entries with the old text and ${after.length} with the new one`);
        old.fate = applied ? "absent" : "present";
        next.fate = applied ? "present" : "absent";
      },
    });
    return false;
  }
  return true;
}

export async function deleteLesson(ctx: Ctx, run: MemoryRun): Promise<boolean> {
  const lessons = run.lessons();
  if (lessons.length === 0) return remember(ctx, run);
  const lesson = ctx.rng.pick(lessons);
  const answer = await call(ctx, "lesson delete", MEMORY_RPC.deleteLesson, { lesson_id: lesson.id ?? "" });
  if (answer.kind === "acked") lesson.fate = "absent";
  else if (answer.kind === "unknown") {
    lesson.fate = "maybe";
    ctx.pending.push({
      route: "lesson delete",
      resolve(obs, c) {
        const n = rowsOf(obs, lesson.marker).length;
        if (n > 1) violation(c, `lesson ${lesson.id} is stored ${n} times`);
        lesson.fate = n > 0 ? "present" : "absent";
      },
    });
    return false;
  }
  return true;
}

/**
 * An outcome crediting one lesson, with a fresh idempotency key or (sometimes) one already applied, whose repeat
 * must change nothing. Unanswered, it is retried with the same key after the restart: applied once either way.
 */
export async function outcome(ctx: Ctx, run: MemoryRun): Promise<boolean> {
  const lessons = run.lessons();
  if (lessons.length === 0) return remember(ctx, run);
  const lesson = ctx.rng.pick(lessons);
  const keys = lesson.outcomes ?? { applied: new Set<string>(), uncertain: new Set<string>() };
  const applied = keys.applied;
  const repeat = applied.size > 0 && ctx.rng.chance(0.25);
  const key = repeat ? ctx.rng.pick([...applied]) : `outcome-${ctx.world.marker()}`;
  const request = { run_id: run.id, reference_id: lesson.id ?? "", outcome: "success", idempotency_key: key, rationale: "crash loop" };
  const answer = await call(ctx, "outcome", MEMORY_RPC.outcome, request);
  if (answer.kind === "acked") {
    if (repeat && answer.body["deduplicated"] !== true) violation(ctx, `outcome with the applied key ${key} was applied again`);
    applied.add(key);
  } else if (answer.kind === "unknown") {
    if (!repeat) {
      keys.uncertain.add(key);
      ctx.pending.push({
        route: "outcome",
        resolve(obs, c) {
          const row = obs.lessons.get(run.id)?.get(lesson.id ?? "");
          if (row !== undefined && (row.reinforcementCount < applied.size || row.reinforcementCount > applied.size + keys.uncertain.size)) {
            violation(c, `lesson ${lesson.id}: reinforcement count ${row.reinforcementCount} after ${applied.size} applied outcomes and ${keys.uncertain.size} unanswered`);
          }
        },
        async after(c) {
          const retry = await call(c, "outcome (retry)", MEMORY_RPC.outcome, request, { transport: "rest" });
          if (retry.kind === "acked" && applied.has(key) && retry.body["deduplicated"] !== true) violation(c, `outcome with the applied key ${key} was applied again`);
          if (retry.kind === "acked") applied.add(key);
          keys.uncertain.delete(key);
        },
      });
    }
    return false;
  }
  return true;
}

/** Deletes the run and replaces it with a fresh one; unanswered, all of the run must be there or none of it. */
export async function deleteRun(ctx: Ctx, client: ClientWorld, slot: number): Promise<boolean> {
  const run = client.memoryRuns[slot] as MemoryRun;
  client.generation++;
  client.memoryRuns[slot] = new MemoryRun(run.id.replace(/-g\d+$/, `-g${client.generation}`));
  const answer = await call(ctx, "delete_run", MEMORY_RPC.deleteRun, { run_id: run.id });
  if (answer.kind === "refused") {
    client.memoryRuns[slot] = run;
    return true;
  }
  const gone = (): void => {
    ctx.world.limbo.delete(run.id);
    run.deleted = true;
    for (const e of run.entries.values()) e.fate = "absent";
    run.jobs.length = 0;
    ctx.world.deletedRuns.push(run);
  };
  if (answer.kind === "acked") {
    gone();
    return true;
  }
  ctx.world.limbo.add(run.id);
  ctx.pending.push({
    route: "delete_run",
    // Jobs of the run must be finished (or gone with the run) before its entries are counted.
    before: (c) => waitForJobs(c, run, true),
    resolve(obs, c) {
      const rows = obs.entries.filter((e) => e.runId === run.id && !e.derived);
      const expected = [...run.entries.values()].filter((e) => e.fate === "present");
      if (rows.length !== 0 && rows.length !== expected.length) {
        violation(c, `delete_run (unanswered) was applied in part: ${rows.length} of the run's ${expected.length} entries remain`);
      }
    },
    async after(c) {
      const retry = await call(c, "delete_run (retry)", MEMORY_RPC.deleteRun, { run_id: run.id }, { transport: "rest" });
      if (retry.kind === "acked") gone();
    },
  });
  return false;
}

/** Polls of one job before the check gives up on it; the pause between polls grows to 100 ms. */
const MAX_JOB_POLLS = 300;

/**
 * Waits until every acknowledged ingest job of the run is done: each must complete (never fail: its input was valid).
 * `mayBeGone`: the run's deletion is in doubt, so a job may have gone with it.
 */
export async function waitForJobs(ctx: Ctx, run: MemoryRun, mayBeGone: boolean): Promise<void> {
  for (const job of run.jobs.splice(0)) {
    for (let poll = 0; ; poll++) {
      const body = await readOptional(ctx, MEMORY_RPC.getJob, { job_id: job.jobId });
      if (body === undefined) {
        if (!mayBeGone) violation(ctx, `acknowledged ingest job ${job.jobId} of run ${run.id} is unknown to the server`);
        break;
      }
      if (body["done"] === true) {
        if (body["status"] !== "completed") {
          violation(ctx, `acknowledged ingest job ${job.jobId} ended ${String(body["status"])}: ${String(body["error"])}`);
          for (const marker of job.markers) {
            const e = run.entries.get(marker);
            if (e !== undefined) e.fate = "absent";
          }
        }
        break;
      }
      if (poll >= MAX_JOB_POLLS) {
        violation(ctx, `ingest job ${job.jobId} not done after ${MAX_JOB_POLLS} polls (status ${String(body["status"])})`);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(100, 5 * (poll + 1))));
    }
  }
}
