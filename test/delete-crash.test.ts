// A large run deletion survives kill -9: killed right after delete_run answered (the purge half done) or while it
// runs, the restarted server shows the run whole or gone — never part of it, in any plane — and finishes the purge
// by itself.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ensureBuilt, startChild, type ChildServer } from "./harness/child-server.js";
import { connectCaller, type Caller, type JsonObject } from "./harness/callers.js";
import { mintApiKey } from "../src/auth/api-key.js";
import { RPC, ok, waitForJob } from "./harness/memory.js";

const ENTRIES = 4000;
const adminKey = mintApiKey("local").key;
let dataDir: string;
let child: ChildServer | undefined;
let caller: Caller;

async function start(): Promise<void> {
  child = await startChild({ SERVICE_DATA_DIR: dataDir, SERVICE_ADMIN_KEY: adminKey, SERVICE_LOG_LEVEL: "warn" });
  caller = connectCaller(child.baseUrl);
}

beforeAll(async () => {
  ensureBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-delete-crash-"));
  await start();
}, 120_000);

afterAll(async () => {
  await child?.kill("SIGKILL");
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function fill(runId: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1000) {
    const items = Array.from({ length: Math.min(1000, count - i) }, (_, j) => ({ text: `Record ${i + j} of ${runId}: the nightly export of table ${(i + j) % 97} finished.` }));
    const accepted = await ok(caller, RPC.ingest, { run_id: runId, items }, adminKey);
    const { job } = await waitForJob(caller, adminKey, String(accepted["job_id"]));
    expect(job["status"]).toBe("completed");
  }
}

async function visibleCount(runId: string): Promise<number> {
  const body = await ok(caller, "engram.v2.MemoryService/ListActivity", { run_id: runId, limit: 1 }, adminKey);
  return Number(body["total_visible"]);
}

async function keyCount(name: string): Promise<number> {
  const stats = await ok(caller, "engram.v2.CoreService/GetStorageStats", {}, adminKey);
  return Number((stats["databases"] as JsonObject[]).find((d) => d["name"] === name)?.["key_count"]);
}

/** Puts something of the run in every plane besides memory entries. */
async function fillPlanes(runId: string): Promise<void> {
  await ok(caller, "engram.v2.SessionsService/CreateControlSession", { run_id: runId }, adminKey);
  await ok(caller, "engram.v2.LearningService/RecordStepOutcome", { run_id: runId, step_id: "s1", outcome: "success" }, adminKey);
  await ok(caller, "engram.v2.LearningService/RecordOutcome", { run_id: runId, outcome: "success", idempotency_key: `${runId}-k` }, adminKey);
  await ok(caller, "engram.v2.RunsService/LinkRun", { run_id: runId, linked_run_id: "small" }, adminKey);
  await ok(caller, "engram.v2.CoordinationService/RegisterAgent", { run_id: runId, agent_id: "a1" }, adminKey);
  await ok(caller, "engram.v2.CoordinationService/CreateHandoff", { run_id: runId, task_id: "t", from_agent_id: "a1", to_agent_id: "a2", content: "c" }, adminKey);
  await ok(caller, "engram.v2.PlanningService/SetVariable", { run_id: runId, name: "v", value_json: "1" }, adminKey);
  await ok(caller, "engram.v2.PlanningService/AddGoal", { run_id: runId, description: "g" }, adminKey);
}

/** How many of the run's records every plane besides memory still shows: all or none of them, never some. */
async function planeRecords(runId: string): Promise<number> {
  const agents = (await ok(caller, "engram.v2.CoordinationService/ListAgents", { run_id: runId }, adminKey))["agents"] as unknown[];
  const handoffs = (await ok(caller, "engram.v2.CoordinationService/ListHandoffs", { run_id: runId }, adminKey))["handoffs"] as unknown[];
  const variables = (await ok(caller, "engram.v2.PlanningService/ListVariables", { run_id: runId }, adminKey))["variables"] as unknown[];
  const goals = (await ok(caller, "engram.v2.PlanningService/ListGoals", { run_id: runId }, adminKey))["goals"] as unknown[];
  const session = await caller.call("engram.v2.SessionsService/GetControlSession", { session_id: runId }, adminKey);
  const links = ((await ok(caller, "engram.v2.RunsService/UnlinkRun", { run_id: runId, linked_run_id: "never-linked" }, adminKey))["scope"] as JsonObject)["linked_run_ids"] as unknown[];
  const keyed = await ok(caller, "engram.v2.LearningService/RecordOutcome", { run_id: "probe", outcome: "neutral", idempotency_key: `${runId}-k` }, adminKey);
  return agents.length + handoffs.length + variables.length + goals.length + (session.code === "ok" ? 1 : 0) + links.length + (keyed["deduplicated"] === true ? 1 : 0);
}

it("killed right after delete_run answered: the run stays deleted and the purge completes after restart", async () => {
  await fill("big", ENTRIES);
  await fill("small", 10);
  await fillPlanes("big");
  expect(await planeRecords("big")).toBe(7);
  expect(await ok(caller, "engram.v2.RunsService/DeleteRun", { run_id: "big" }, adminKey)).toMatchObject({ deleted: true });
  await child?.kill("SIGKILL");
  await start();
  expect(await visibleCount("big")).toBe(0);
  expect(await visibleCount("small")).toBe(10);
  const found = await ok(caller, RPC.query, { run_id: "big", query: "nightly export of table", limit: 20 }, adminKey);
  expect(found["evidence"]).toEqual([]);
  expect(await planeRecords("big")).toBe(0);
  // The purge resumes on its own: the deleted run's records, vectors and tombstone leave LMDB.
  for (let poll = 0; poll < 400 && (await keyCount("run_tombstones")) > 0; poll++) await new Promise((r) => setTimeout(r, 50));
  expect(await keyCount("run_tombstones")).toBe(0);
  expect(await keyCount("entries")).toBe(10);
  expect(await keyCount("vectors")).toBe(10);
}, 180_000);

it("killed while delete_run runs: after restart the run is either whole or gone", async () => {
  await fill("racy", 2000);
  await fillPlanes("racy");
  const deleting = caller.call("engram.v2.RunsService/DeleteRun", { run_id: "racy" }, adminKey).catch(() => undefined);
  await child?.kill("SIGKILL");
  await deleting;
  await start();
  const whole = (await visibleCount("racy")) === 2000;
  expect([0, 2000]).toContain(await visibleCount("racy"));
  expect(await planeRecords("racy")).toBe(whole ? 7 : 0);
  expect(await visibleCount("small")).toBe(10);
}, 180_000);
