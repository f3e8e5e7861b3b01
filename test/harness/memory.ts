// Memory-route helpers for integration tests: typed access to answers, ingest with a bounded wait on the job's
// status (never a fixed sleep), and the field-naming check of INVALID_ARGUMENT errors.
import { expect } from "vitest";
import type { Caller, CallResult, JsonObject } from "./callers.js";

export const RPC = {
  remember: "engram.v2.MemoryService/Remember",
  recall: "engram.v2.MemoryService/Recall",
  ingest: "engram.v2.MemoryService/Ingest",
  batchInsert: "engram.v2.MemoryService/BatchInsert",
  getIngestJob: "engram.v2.MemoryService/GetIngestJob",
  ingestStats: "engram.v2.MemoryService/GetIngestStats",
  query: "engram.v2.MemoryService/Query",
  context: "engram.v2.MemoryService/GetContext",
  archive: "engram.v2.MemoryService/ArchiveBlock",
  dereference: "engram.v2.MemoryService/Dereference",
  checkpoint: "engram.v2.MemoryService/Checkpoint",
  memoryHealth: "engram.v2.MemoryService/GetMemoryHealth",
  exportTenant: "engram.v2.TenantService/ExportTenant",
} as const;

/** Polls of a job's status before a wait gives up; the pause between polls grows from 5 ms to 100 ms. */
export const MAX_JOB_POLLS = 200;

export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Calls `rpc` and expects success, showing the server's message when it fails. */
export async function ok(c: Caller, rpc: string, request: JsonObject, key: string): Promise<JsonObject> {
  const r = await c.call(rpc, request, key);
  expect(r.code, `${rpc}: ${r.message}`).toBe("ok");
  return r.body;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** INVALID_ARGUMENT (HTTP 400 over REST and Connect) whose message starts with `field:`. */
export function expectInvalid(r: CallResult, field: string): void {
  expect(r.code, `expected invalid_argument naming ${field}, got ${r.code}: ${r.message}`).toBe("invalid_argument");
  if (r.status !== undefined) expect(r.status).toBe(400);
  // Connect clients may prefix the code ("[invalid_argument] "); the field leads the server's own text.
  expect(r.message).toMatch(new RegExp(`(^|\\] )${escapeRegExp(field)}:`));
}

/** The call failed with this code, and over REST with this HTTP status. */
export function expectCode(r: CallResult, code: string, status: number): void {
  expect(r.code, `${code} expected, got ${r.code}: ${r.message}`).toBe(code);
  if (r.status !== undefined) expect(r.status).toBe(status);
}

export function evidenceOf(body: JsonObject): JsonObject[] {
  return body["evidence"] as JsonObject[];
}

export function idsOf(items: readonly JsonObject[]): string[] {
  return items.map((e) => String(e["id"]));
}

/** Every citation is an integer index into `evidence`. */
export function expectValidCitations(body: JsonObject): void {
  const count = evidenceOf(body).length;
  const citations = body["citations"] as number[];
  expect(Array.isArray(citations)).toBe(true);
  for (const index of citations) {
    expect(Number.isInteger(index), `citation ${index}`).toBe(true);
    expect(index).toBeGreaterThanOrEqual(0);
    expect(index).toBeLessThan(count);
  }
}

export interface FinishedJob {
  readonly job: JsonObject;
  /** Every status observed while polling, in order. */
  readonly states: string[];
}

/** Polls GetIngestJob until the job is done; fails after MAX_JOB_POLLS polls. */
export async function waitForJob(c: Caller, key: string, jobId: string): Promise<FinishedJob> {
  const states: string[] = [];
  for (let poll = 0; poll < MAX_JOB_POLLS; poll++) {
    const job = await ok(c, RPC.getIngestJob, { job_id: jobId }, key);
    states.push(String(job["status"]));
    if (job["done"] === true) return { job, states };
    await pause(Math.min(100, 5 * (poll + 1)));
  }
  throw new Error(`ingest job ${jobId} not done after ${MAX_JOB_POLLS} polls; states seen: ${states.join(", ")}`);
}

/** Ingests `items` into `runId`, waits for the job and returns the stored entry ids in item order. */
export async function ingestAndWait(c: Caller, key: string, runId: string, items: JsonObject[], extra: JsonObject = {}): Promise<string[]> {
  const accepted = await ok(c, RPC.ingest, { run_id: runId, items, ...extra }, key);
  const { job } = await waitForJob(c, key, String(accepted["job_id"]));
  expect(job["status"], String(job["error"])).toBe("completed");
  return (job["traces"] as JsonObject[]).map((t) => String(((t["writes"] as JsonObject[])[0] as JsonObject)["record_id"]));
}

/** Every line of the caller's tenant export, page by page to the end (a page is cut by size and by time). */
export async function exportTenantLines(c: Caller, key: string, limit = 0): Promise<string[]> {
  const lines: string[] = [];
  let token = "";
  do {
    const page = await ok(c, RPC.exportTenant, { page_token: token, limit }, key);
    lines.push(...(page["lines"] as string[]));
    token = String(page["next_page_token"]);
  } while (token !== "");
  return lines;
}
