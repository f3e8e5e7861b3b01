// Acknowledged means on disk, measured from outside: the server runs with a preloaded shim that makes every fsync,
// fdatasync and msync take SLOW_SYNC_MS. A write route that answered before its data was flushed would answer in a
// few milliseconds; each must take at least the flush delay, also when many requests share one flush (group commit).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ensureBuilt, startChild, type ChildServer } from "./harness/child-server.js";
import { connectCaller, type Caller, type JsonObject } from "./harness/callers.js";
import { mintApiKey } from "../src/auth/api-key.js";
import { RPC, ok, waitForJob } from "./harness/memory.js";

const SLOW_SYNC_MS = 400;
/** Margin for timer granularity: a sleep of SLOW_SYNC_MS may end a little early by the caller's clock. */
const FLUSH_FLOOR_MS = SLOW_SYNC_MS - 20;

let child: ChildServer;
let caller: Caller;
let dataDir: string;
const adminKey = mintApiKey("local").key;

function buildShim(): string {
  const out = path.join(os.tmpdir(), `engram-slow-sync-${process.pid}.so`);
  const built = spawnSync("cc", ["-shared", "-fPIC", "-O2", "-o", out, "test/fixtures/slow-sync.c", "-ldl"], { encoding: "utf8" });
  if (built.status !== 0) throw new Error(`cannot build the sync shim (is a C compiler installed? make test installs gcc): ${built.stderr}`);
  return out;
}

beforeAll(async () => {
  ensureBuilt();
  const shim = buildShim();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-durable-"));
  child = await startChild({
    LD_PRELOAD: shim,
    SLOW_SYNC_MS: String(SLOW_SYNC_MS),
    SERVICE_DATA_DIR: dataDir,
    SERVICE_ADMIN_KEY: adminKey,
    SERVICE_LOG_LEVEL: "warn",
    SERVICE_CORE_ALLOW_ALL: "true",
  });
  caller = connectCaller(child.baseUrl);
}, 120_000);

afterAll(async () => {
  await child?.kill("SIGTERM");
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function timed(rpc: string, request: JsonObject): Promise<{ ms: number; body: JsonObject }> {
  const started = performance.now();
  const body = await ok(caller, rpc, request, adminKey);
  return { ms: performance.now() - started, body };
}

it("every write route answers only after its own flush", async () => {
  // A read is not slowed: the shim delays flushes only, so the floor below measures the flush, not the server.
  const read = await timed(RPC.query, { run_id: "d", query: "anything" });
  expect(read.ms).toBeLessThan(FLUSH_FLOOR_MS);

  const writes: [string, string, JsonObject][] = [
    ["remember", RPC.remember, { session_id: "d", content: "The deploy key rotates monthly." }],
    ["archive", RPC.archive, { run_id: "d", content: "exact artifact bytes" }],
    ["checkpoint", RPC.checkpoint, { run_id: "d", context_snapshot: "state so far" }],
    ["batch_insert", RPC.batchInsert, { run_id: "d", items: [{ text: "one" }, { text: "two" }] }],
    ["ingest acceptance", RPC.ingest, { run_id: "d", items: [{ text: "queued durably" }] }],
    ["activities/append", "engram.v2.MemoryService/AppendActivity", { run_id: "d", activity: { type: "t", payload: "p" } }],
    ["core insert", "engram.v2.CoreService/InsertNode", { run_id: "d", text: "a node" }],
    ["scratchpad write", "engram.v2.CoreService/WriteScratchpad", { session_id: "d", key: "k", content: "v" }],
    ["acl grant", "engram.v2.CoreService/GrantPermission", { principal_type: "agent", principal_id: "a1", run_id: "d", permission: "read" }],
    ["user creation", "engram.v2.AuthService/CreateUser", { username: "durable-user" }],
    ["reflect", "engram.v2.LearningService/Reflect", { run_id: "d", lessons: [{ content: "Rotate the deploy key monthly." }] }],
    ["step_outcome", "engram.v2.LearningService/RecordStepOutcome", { run_id: "d", step_id: "s1", outcome: "success" }],
    ["outcome", "engram.v2.LearningService/RecordOutcome", { run_id: "d", outcome: "success", idempotency_key: "durable" }],
    ["runs/link", "engram.v2.RunsService/LinkRun", { run_id: "d", linked_run_id: "d-child" }],
    ["agents/register", "engram.v2.CoordinationService/RegisterAgent", { run_id: "d", agent_id: "a1" }],
    ["handoff", "engram.v2.CoordinationService/CreateHandoff", { run_id: "d", task_id: "t", from_agent_id: "a1", to_agent_id: "a2", content: "c" }],
    ["variables/set", "engram.v2.PlanningService/SetVariable", { run_id: "d", name: "v", value_json: "1" }],
    ["sessions/create", "engram.v2.SessionsService/CreateControlSession", { run_id: "d-session" }],
    ["projects", "engram.v2.ResourcesService/CreateProject", { name: "durable-project" }],
    ["retention/set", "engram.v2.RunsService/SetRetentionPolicy", { run_id: "d", policy: { rules: [{ entry_type: "trace", max_age_seconds: 86400 }] } }],
  ];
  for (const [name, rpc, request] of writes) {
    const { ms, body } = await timed(rpc, request);
    expect(ms, `${name} answered in ${ms.toFixed(0)} ms, before a ${SLOW_SYNC_MS} ms flush could finish`).toBeGreaterThanOrEqual(FLUSH_FLOOR_MS);
    if (typeof body["job_id"] === "string") await waitForJob(caller, adminKey, body["job_id"]);
  }
  // Lesson update and delete: the lesson comes from a finished ingest job.
  const accepted = await ok(caller, RPC.ingest, { run_id: "d", items: [{ text: "Always pin versions.", entry_type: "lesson" }] }, adminKey);
  const { job } = await waitForJob(caller, adminKey, String(accepted["job_id"]));
  const lessonId = String((((job["traces"] as JsonObject[])[0] as JsonObject)["writes"] as JsonObject[])[0]?.["record_id"]);
  const preview = await ok(caller, "engram.v2.MemoryService/Forget", { query: "deploy key", run_ids: ["d"] }, adminKey);
  expect(Number(preview["matched"])).toBeGreaterThan(0);
  for (const [name, rpc, request] of [
    ["forget (erasure)", "engram.v2.MemoryService/Forget", { query: "deploy key", run_ids: ["d"], dry_run: false, preview_token: preview["preview_token"] }],
    ["lessons/update", "engram.v2.LearningService/UpdateLesson", { lesson_id: lessonId, confidence: 0.5 }],
    ["lessons/delete", "engram.v2.LearningService/DeleteLesson", { lesson_id: lessonId }],
    // Last: it deletes what the writes above stored. (Deleting a run that holds nothing writes nothing, so there is
    // nothing to flush and it answers at once.)
    ["delete_run", "engram.v2.RunsService/DeleteRun", { run_id: "d" }],
  ] as [string, string, JsonObject][]) {
    const { ms } = await timed(rpc, request);
    expect(ms, `${name} answered in ${ms.toFixed(0)} ms`).toBeGreaterThanOrEqual(FLUSH_FLOOR_MS);
  }
}, 120_000);

it("16 concurrent writers share flushes (group commit), and none is answered before its own data is flushed", async () => {
  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: 16 }, async (_, i) => {
      const t0 = performance.now();
      await ok(caller, RPC.remember, { session_id: "group", content: `concurrent write ${i}` }, adminKey);
      return performance.now() - t0;
    }),
  );
  const total = performance.now() - started;
  for (const ms of results) expect(ms).toBeGreaterThanOrEqual(FLUSH_FLOOR_MS);
  // One flush per request would take 16 × 400 ms; shared flushes take a few.
  expect(total).toBeLessThan(8 * SLOW_SYNC_MS);
  // Every acknowledged write is there.
  const activity = await ok(caller, "engram.v2.MemoryService/ListActivity", { run_id: "group", limit: 100 }, adminKey);
  expect((activity["entries"] as JsonObject[]).map((e) => e["content"]).sort()).toEqual(Array.from({ length: 16 }, (_, i) => `concurrent write ${i}`).sort());
}, 120_000);
