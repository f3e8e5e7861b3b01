// A large run deletion survives kill -9: killed right after delete_run answered (the purge half done) or while it
// runs, the restarted server shows the run whole or gone — never part of it — and finishes the purge by itself.
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

it("killed right after delete_run answered: the run stays deleted and the purge completes after restart", async () => {
  await fill("big", ENTRIES);
  await fill("small", 10);
  expect(await ok(caller, "engram.v2.RunsService/DeleteRun", { run_id: "big" }, adminKey)).toMatchObject({ deleted: true });
  await child?.kill("SIGKILL");
  await start();
  expect(await visibleCount("big")).toBe(0);
  expect(await visibleCount("small")).toBe(10);
  const found = await ok(caller, RPC.query, { run_id: "big", query: "nightly export of table", limit: 20 }, adminKey);
  expect(found["evidence"]).toEqual([]);
  // The purge resumes on its own: the deleted run's records, vectors and tombstone leave LMDB.
  for (let poll = 0; poll < 400 && (await keyCount("run_tombstones")) > 0; poll++) await new Promise((r) => setTimeout(r, 50));
  expect(await keyCount("run_tombstones")).toBe(0);
  expect(await keyCount("entries")).toBe(10);
  expect(await keyCount("vectors")).toBe(10);
}, 180_000);

it("killed while delete_run runs: after restart the run is either whole or gone", async () => {
  await fill("racy", 2000);
  const deleting = caller.call("engram.v2.RunsService/DeleteRun", { run_id: "racy" }, adminKey).catch(() => undefined);
  await child?.kill("SIGKILL");
  await deleting;
  await start();
  expect([0, 2000]).toContain(await visibleCount("racy"));
  expect(await visibleCount("small")).toBe(10);
}, 180_000);
