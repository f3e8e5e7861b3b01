// The few Engram HTTP/JSON calls the benchmarks make: ingest and its jobs, batch insert, query, context.
import { sleep } from "./server.mjs";

export const MAX_ITEMS_PER_REQUEST = 1000;

export class ApiError extends Error {
  constructor(route, status, body) {
    super(`${route} answered ${status}: ${body.slice(0, 500)}`);
    this.status = status;
    this.body = body;
  }
}

export async function call(server, method, route, body, timeoutMs = 120_000) {
  const res = await fetch(`${server.base}${route}`, {
    method,
    headers: { authorization: `Bearer ${server.key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) throw new ApiError(route, res.status, text);
  if (text === "") return {};
  return (res.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : text;
}

export const post = (server, route, body, timeoutMs) => call(server, "POST", route, body, timeoutMs);

/** Whether a route is implemented yet: anything but 501 (a 400 for an empty body counts as implemented). */
export async function implemented(server, route) {
  try {
    await post(server, route, {});
    return true;
  } catch (e) {
    if (e instanceof ApiError) return e.status !== 501 && e.status !== 404;
    throw e;
  }
}

/** Submits one ingest job of at most 1000 items; resolves with its job id once the server acknowledged it. */
export async function submitIngest(server, runId, items) {
  if (items.length === 0 || items.length > MAX_ITEMS_PER_REQUEST) throw new Error(`bad batch size ${items.length}`);
  const res = await post(server, "/v2/control/ingest", { run_id: runId, items });
  if (!res.job_id) throw new Error(`ingest answered without job_id: ${JSON.stringify(res).slice(0, 300)}`);
  return res.job_id;
}

export function getJob(server, jobId) {
  return call(server, "GET", `/v2/control/ingest/jobs/${encodeURIComponent(jobId)}`);
}

/**
 * Waits until every job is done, polling the oldest unfinished one (the worker takes jobs in order). Throws when a job
 * fails or the deadline passes. Resolves with the final job records, in order.
 */
export async function waitJobs(server, jobIds, { timeoutMs, pollMs = 20 }) {
  const deadline = performance.now() + timeoutMs;
  const finished = [];
  let i = 0;
  while (i < jobIds.length) {
    if (performance.now() > deadline) {
      throw new Error(`ingest jobs not done after ${Math.round(timeoutMs / 1000)} s: ${i} of ${jobIds.length} finished`);
    }
    if (server.alive && !server.alive()) throw new Error(`server died while jobs ran:\n${server.output()}`);
    const job = await getJob(server, jobIds[i]);
    if (job.done || job.status === "completed" || job.status === "failed") {
      if (job.status !== "completed") throw new Error(`ingest job ${jobIds[i]} ${job.status}: ${job.error ?? ""}`);
      finished.push(job);
      i++;
      continue;
    }
    await sleep(pollMs);
  }
  return finished;
}

/**
 * Ingests `items` into `runId` in requests of at most `batch` items, keeping up to `inFlight` requests outstanding,
 * then waits for every job. Returns { jobs, submitMs, totalMs }: acknowledgement time and end-to-end time.
 */
export async function ingestAll(server, runId, items, { batch = MAX_ITEMS_PER_REQUEST, inFlight = 2, timeoutMs }) {
  const started = performance.now();
  const batches = [];
  for (let i = 0; i < items.length; i += batch) batches.push(items.slice(i, i + batch));
  const jobIds = new Array(batches.length);
  let next = 0;
  const worker = async () => {
    while (next < batches.length) {
      const b = next++;
      jobIds[b] = await submitIngest(server, runId, batches[b]);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, inFlight) }, worker));
  const submitMs = performance.now() - started;
  const jobs = await waitJobs(server, jobIds, { timeoutMs: timeoutMs ?? 60_000 + items.length * 10 });
  return { jobs, jobIds, submitMs, totalMs: performance.now() - started };
}

/** Percentile (nearest rank) of an array of numbers. */
export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export function summarize(latenciesMs) {
  const mean = latenciesMs.reduce((a, b) => a + b, 0) / Math.max(1, latenciesMs.length);
  return {
    n: latenciesMs.length,
    p50_ms: round(percentile(latenciesMs, 50), 3),
    p90_ms: round(percentile(latenciesMs, 90), 3),
    p99_ms: round(percentile(latenciesMs, 99), 3),
    max_ms: round(percentile(latenciesMs, 100), 3),
    mean_ms: round(mean, 3),
  };
}

export function round(x, digits = 1) {
  if (typeof x !== "number" || !Number.isFinite(x)) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
