// A store capped by SERVICE_MAX_STORE_BYTES: once full, a write that would add data is refused whole (HTTP 507,
// RESOURCE_EXHAUSTED over Connect and gRPC) and leaves the store byte for byte as it was; reads keep answering;
// compaction works on the full store; deleting a run frees room and writes resume; a restart on a full store serves.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, tempDataDir, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { TRANSPORTS, callerFor, restCaller, type Caller, type CallResult, type JsonObject } from "./harness/callers.js";
import { RPC, evidenceOf, ingestAndWait, ok, waitForJob } from "./harness/memory.js";

/** Small enough to fill in a few seconds; SERVICE_MAX_STORE_BYTES accepts no less than 1 MiB. */
const CAP_BYTES = 2 * 1024 * 1024;
const ENV = { SERVICE_MAX_STORE_BYTES: String(CAP_BYTES), SERVICE_CORE_ALLOW_ALL: "true" };
const COMPACT = "engram.v2.CoreService/TriggerCompaction";
const DELETE_RUN = "engram.v2.RunsService/DeleteRun";
/** Each filler write adds about 40 KB, so the store fills in about fifty of them; this bounds the loop. */
const MAX_FILL_WRITES = 400;

let server: TestServer;
let rest: Caller;
let alice: string;
let bob: string;
let written = 0;

/** A batch of entries of distinct words (no deduplication), about 40 KB of text, that no other batch shares. */
function bulkBatch(run: string, tag: string): JsonObject {
  const items = Array.from({ length: 4 }, (_, item) => ({
    text: `${tag} item ${item}: ${Array.from({ length: 1200 }, (_, w) => `w${tag}x${item}x${w}`).join(" ")}`,
    entry_type: "fact",
  }));
  return { run_id: run, items };
}

/** Writes filler batches into `run` until one is refused; returns the refusal. */
async function fillUntilRefused(c: Caller, key: string, run: string): Promise<CallResult> {
  for (let i = 0; i < MAX_FILL_WRITES; i++) {
    const r = await c.call(RPC.batchInsert, bulkBatch(run, `f${written++}`), key);
    if (r.code !== "ok") return r;
  }
  throw new Error(`the store took ${MAX_FILL_WRITES} filler writes without filling up`);
}

function expectStorageFull(r: CallResult, transport: string): void {
  expect(r.code, `${transport}: ${r.message}`).toBe("resource_exhausted");
  expect(r.message).toMatch(/storage is full \(SERVICE_MAX_STORE_BYTES=2097152\)/);
  // Over HTTP/JSON the gateway answers 507 Insufficient Storage; the Connect protocol keeps its own 429 for the code.
  if (transport === "rest") expect(r.status).toBe(507);
}

/** Entries in each in-memory index (the vector graph, the catalog, the BM25 postings...), by index name. */
async function indexCounts(): Promise<Record<string, number>> {
  const stats = await ok(rest, "engram.v2.CoreService/GetStorageStats", {}, server.adminKey);
  return Object.fromEntries((stats["indexes"] as JsonObject[]).map((i) => [String(i["name"]), Number(i["entry_count"])]));
}

/** The evidence ids a recall of the run returns for a query. */
async function recallIds(c: Caller, key: string, run: string, query: string): Promise<string[]> {
  const answer = await ok(c, RPC.recall, { session_id: run, query }, key);
  return evidenceOf(answer).map((e) => String(e["id"]));
}

beforeAll(async () => {
  server = await startTestServer(ENV, tempDataDir());
  rest = restCaller(server.baseUrl);
  alice = await createUser(server.baseUrl, server.adminKey, "alice");
  bob = await createUser(server.baseUrl, server.adminKey, "bob");
});
afterAll(async () => {
  rest.close();
  await server.close();
});

describe("a full store", () => {
  let needle = "";
  let lessonId = "";
  let nodeId = "";

  it("refuses the write that would pass the cap with 507, storing nothing of it; a queued ingest job fails saying why", async () => {
    const remembered = await ok(rest, RPC.remember, { session_id: "keep", content: "The heron fishes at the weir at dawn." }, bob);
    needle = String(remembered["entry_id"]);
    [lessonId = ""] = await ingestAndWait(rest, alice, "lessons", [{ text: "Pin the toolchain before a release build.", entry_type: "lesson" }]);
    nodeId = String((await ok(rest, "engram.v2.CoreService/InsertNode", { run_id: "nodes", text: "a node to delete" }, alice))["node_id"]);
    // An ingest job accepted before the store fills, applied after: its short items take little room in the queue,
    // their entries (with vectors and index terms) far more.
    const release = server.engram.testHooks.holdBackground();
    const items = Array.from({ length: 300 }, (_, i) => ({ text: `queued note ${i}: wqueuedx${i}`, entry_type: "fact" }));
    const accepted = await ok(rest, RPC.ingest, { run_id: "queued", items }, alice);
    let refused: CallResult;
    try {
      refused = await fillUntilRefused(rest, alice, "bulk");
    } finally {
      release();
    }
    expectStorageFull(refused, "rest");
    const { job } = await waitForJob(rest, alice, String(accepted["job_id"]));
    expect(job["status"]).toBe("failed");
    expect(String(job["error"])).toMatch(/^none of the job's entries was stored: storage is full/);
    expect(written).toBeGreaterThan(5);
    // The data file holds the cap's pages plus the free pages LMDB has not reused yet: far less than another cap.
    const stats = await ok(rest, "engram.v2.CoreService/GetStorageStats", {}, server.adminKey);
    expect(Number(stats["disk_size_bytes"])).toBeLessThan(1.5 * CAP_BYTES);
  });

  it.each(TRANSPORTS)("refuses more writes over %s and leaves the store unchanged", async (transport) => {
    const c = callerFor(transport, server.baseUrl, server.port);
    try {
      const before = server.engram.testHooks.fingerprint();
      const indexesBefore = await indexCounts();
      const tag = `refused${transport}`;
      expectStorageFull(await c.call(RPC.batchInsert, bulkBatch("bulk", tag), alice), transport);
      // Another owner is refused alike: the cap is the server's, and the message tells nothing of who fills it.
      expectStorageFull(await c.call(RPC.batchInsert, bulkBatch("other", `${tag}bob`), bob), transport);
      expect(server.engram.testHooks.fingerprint()).toEqual(before);
      // Nor did the refused entries reach the in-memory indexes.
      expect(await indexCounts()).toEqual(indexesBefore);
    } finally {
      c.close();
    }
  });

  it("answers a Connect refusal with the 507 hint header", async () => {
    const response = await fetch(new URL(`/${RPC.batchInsert}`, server.baseUrl), {
      method: "POST",
      headers: { authorization: `Bearer ${alice}`, "content-type": "application/json", "connect-protocol-version": "1" },
      body: JSON.stringify(bulkBatch("bulk", "rawconnect")),
    });
    expect(response.status).toBe(429);
    expect(response.headers.get("x-engram-http-status")).toBe("507");
    expect(((await response.json()) as JsonObject)["code"]).toBe("resource_exhausted");
  });

  it.each(TRANSPORTS)("keeps serving reads over %s", async (transport) => {
    const c = callerFor(transport, server.baseUrl, server.port);
    try {
      expect(await recallIds(c, bob, "keep", "Where does the heron fish?")).toContain(needle);
      const stats = await ok(c, "engram.v2.CoreService/GetStorageStats", {}, server.adminKey);
      expect(Number(stats["disk_size_bytes"])).toBeGreaterThan(0);
    } finally {
      c.close();
    }
  });

  it("compacts while full: every record stays and writes are still refused", async () => {
    const before = server.engram.testHooks.fingerprint();
    const r = await ok(rest, COMPACT, { wait: true }, server.adminKey);
    expect(r["started"]).toBe(true);
    expect(Number(r["disk_size_after_bytes"])).toBeLessThanOrEqual(Number(r["disk_size_before_bytes"]));
    const after = server.engram.testHooks.fingerprint();
    // The same records; `meta` also holds the compaction's finish time.
    expect({ ...after, meta: "" }).toEqual({ ...before, meta: "" });
    expectStorageFull(await rest.call(RPC.batchInsert, bulkBatch("bulk", "aftercompact"), alice), "rest");
  });

  it("deletes a lesson and a core node on the full store", async () => {
    await ok(rest, "engram.v2.LearningService/DeleteLesson", { lesson_id: lessonId }, alice);
    await ok(rest, "engram.v2.CoreService/DeleteNode", { id: nodeId }, alice);
  });

  it("resumes writes once deleting a run frees room, and compaction then shrinks the file", async () => {
    const deleted = await ok(rest, DELETE_RUN, { run_id: "bulk" }, alice);
    expect(deleted["deleted"]).toBe(true);
    // The run's entries are purged in the background; their pages are then free for new writes.
    await server.engram.testHooks.backgroundIdle();
    await ok(rest, RPC.batchInsert, bulkBatch("bulk2", "resumed"), alice);
    expect(await recallIds(rest, alice, "bulk2", "wresumedx2x5")).toHaveLength(4);
    const compacted = await ok(rest, COMPACT, { wait: true }, server.adminKey);
    expect(Number(compacted["disk_size_after_bytes"])).toBeLessThan(Number(compacted["disk_size_before_bytes"]));
    expect(await recallIds(rest, bob, "keep", "Where does the heron fish?")).toContain(needle);
  });

  it("starts again on a full store and serves reads, still refusing writes", async () => {
    expectStorageFull(await fillUntilRefused(rest, alice, "bulk3"), "rest");
    rest.close();
    await server.close();
    server = await startTestServer({ ...ENV, SERVICE_ADMIN_KEY: server.adminKey }, server.dataDir);
    rest = restCaller(server.baseUrl);
    expect(await recallIds(rest, bob, "keep", "Where does the heron fish?")).toContain(needle);
    const before = server.engram.testHooks.fingerprint();
    expectStorageFull(await rest.call(RPC.batchInsert, bulkBatch("bulk3", "afterrestart"), alice), "rest");
    expect(server.engram.testHooks.fingerprint()).toEqual(before);
  });
});
