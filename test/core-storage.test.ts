// Storage routes on a real server: admin-only statistics over every transport, admin-only compaction that reclaims space and
// records when it finished, one compaction at a time, and no acknowledged write lost while a compaction swaps the
// environment — checked before and after a restart on the same data directory.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { callerFor, restCaller, TRANSPORTS, type Caller, type JsonObject } from "./harness/callers.js";
import { evidenceOf, ok, RPC, waitForJob } from "./harness/memory.js";

const STATS = "engram.v2.CoreService/GetStorageStats";
const COMPACT = "engram.v2.CoreService/TriggerCompaction";
const ACTIVITY = "engram.v2.MemoryService/ListActivity";
const ENV = { SERVICE_EMBEDDER: "hashed" };
/** The hashed embedder's dimension. */
const DIMENSION = 384;

interface Stats {
  readonly diskSize: number;
  readonly keys: Map<string, number>;
  readonly indexes: Map<string, { entries: number; bytes: number }>;
  readonly vectorDimension: number;
  readonly lastCompactionAt: string;
  readonly compactionRunning: boolean;
}

let server: TestServer;
let rest: Caller;
let alice: string;

function statsOf(body: JsonObject): Stats {
  const databases = (body["databases"] ?? []) as JsonObject[];
  const indexes = (body["indexes"] ?? []) as JsonObject[];
  return {
    diskSize: Number(body["disk_size_bytes"] ?? 0),
    keys: new Map(databases.map((d) => [String(d["name"]), Number(d["key_count"] ?? 0)])),
    indexes: new Map(indexes.map((i) => [String(i["name"]), { entries: Number(i["entry_count"] ?? 0), bytes: Number(i["size_bytes"] ?? 0) }])),
    vectorDimension: Number(body["vector_dimension"] ?? 0),
    lastCompactionAt: String(body["last_compaction_at"] ?? ""),
    compactionRunning: body["compaction_running"] === true,
  };
}

/** Statistics as an admin reads them (they are server-wide, so a user may not). */
async function stats(c: Caller = rest, key = server.adminKey): Promise<Stats> {
  return statsOf(await ok(c, STATS, {}, key));
}

function keysOf(s: Stats, name: string): number {
  const count = s.keys.get(name);
  if (count === undefined) throw new Error(`no database ${name} in ${[...s.keys.keys()].join(", ")}`);
  return count;
}

async function remember(c: Caller, key: string, sessionId: string, content: string): Promise<string> {
  const body = await ok(c, RPC.remember, { session_id: sessionId, content }, key);
  return String(body["entry_id"]);
}

/** Every entry id of a run, oldest first, through ListActivity pages of 500. */
async function activityIds(c: Caller, key: string, runId: string): Promise<string[]> {
  const ids: string[] = [];
  let token = "";
  for (let pages = 0; pages < 100; pages++) {
    const page = await ok(c, ACTIVITY, { run_id: runId, limit: 500, sort: "asc", page_token: token }, key);
    ids.push(...((page["entries"] ?? []) as JsonObject[]).map((e) => String(e["id"])));
    token = String(page["next_page_token"] ?? "");
    if (token === "") return ids;
  }
  throw new Error("activity paging did not end");
}

/** Ingests `count` items of filler text in one job and waits for it: the job's stored items are deleted on completion, leaving free pages. */
async function ingestFiller(c: Caller, key: string, runId: string, count: number, tag: string): Promise<void> {
  const items = Array.from({ length: count }, (_, i) => ({ text: `${tag} filler item ${i} ${"lorem ipsum dolor sit amet ".repeat(20)}` }));
  const accepted = await ok(c, RPC.ingest, { run_id: runId, items }, key);
  const { job } = await waitForJob(c, key, String(accepted["job_id"]));
  expect(job["status"]).toBe("completed");
}

/** Restarts on the same data directory, leaving behind a half-written staged copy as a crash mid-compaction would. */
async function restart(): Promise<void> {
  rest.close();
  await server.close();
  const staging = path.join(server.dataDir, "lmdb-staging");
  fs.mkdirSync(staging, { recursive: true });
  fs.writeFileSync(path.join(staging, "data.mdb"), "half a copy");
  server = await startTestServer({ ...ENV, SERVICE_ADMIN_KEY: server.adminKey }, server.dataDir);
  rest = restCaller(server.baseUrl);
  expect(fs.existsSync(staging)).toBe(false);
}

beforeAll(async () => {
  server = await startTestServer(ENV);
  rest = restCaller(server.baseUrl);
  alice = await createUser(server.baseUrl, server.adminKey, "alice");
});
afterAll(async () => {
  rest.close();
  await server.close();
});

describe("GetStorageStats", () => {
  it.each(TRANSPORTS)("reports databases, indexes, the vector dimension and no compaction yet over %s", async (transport) => {
    const c = callerFor(transport, server.baseUrl, server.port);
    try {
      const s = await stats(c);
      expect(s.diskSize).toBeGreaterThan(0);
      for (const name of ["meta", "users", "keys", "entries", "entry_terms", "vectors", "ingest_jobs", "core_nodes", "core_scratchpad", "acl_grants"]) {
        expect(s.keys.has(name), name).toBe(true);
      }
      expect(keysOf(s, "users")).toBeGreaterThanOrEqual(2);
      expect(keysOf(s, "meta")).toBeGreaterThanOrEqual(1);
      expect([...s.indexes.keys()].sort()).toEqual(["catalog", "node_vector", "sparse", "vector"]);
      for (const index of s.indexes.values()) {
        expect(index.entries).toBeGreaterThanOrEqual(0);
        expect(index.bytes).toBeGreaterThanOrEqual(0);
      }
      expect(s.vectorDimension).toBe(DIMENSION);
      expect(s.lastCompactionAt).toBe("");
      expect(s.compactionRunning).toBe(false);
    } finally {
      c.close();
    }
  });

  it.each(TRANSPORTS)("refuses a caller who is not an admin with PERMISSION_DENIED over %s: the figures count every user's records", async (transport) => {
    const c = callerFor(transport, server.baseUrl, server.port);
    try {
      const r = await c.call(STATS, {}, alice);
      expect(r.code).toBe("permission_denied");
      expect(r.message).toContain("admin");
      if (r.status !== undefined) expect(r.status).toBe(403);
    } finally {
      c.close();
    }
  });

  it("key counts and index sizes grow with writes made through remember and ingest", async () => {
    const before = await stats();
    for (let i = 0; i < 5; i++) await remember(rest, alice, "stats-growth", `The tide chart number ${i} lists the spring tides.`);
    await ingestFiller(rest, alice, "stats-growth", 3, "growth");
    const after = await stats();
    expect(keysOf(after, "entries")).toBe(keysOf(before, "entries") + 8);
    expect(keysOf(after, "vectors")).toBe(keysOf(before, "vectors") + 8);
    expect(keysOf(after, "entries_by_owner_run")).toBe(keysOf(before, "entries_by_owner_run") + 8);
    expect(keysOf(after, "ingest_jobs")).toBe(keysOf(before, "ingest_jobs") + 1);
    expect(keysOf(after, "ingest_job_items")).toBe(keysOf(before, "ingest_job_items"));
    // One record of index terms per entry; the in-memory BM25 lists grow by their postings.
    expect(keysOf(after, "entry_terms")).toBe(keysOf(before, "entry_terms") + 8);
    expect(after.indexes.get("catalog")?.entries).toBe((before.indexes.get("catalog")?.entries ?? 0) + 8);
    expect(after.indexes.get("sparse")?.entries).toBeGreaterThan((before.indexes.get("sparse")?.entries ?? 0) + 8);
    expect(after.indexes.get("vector")?.bytes).toBeGreaterThan(0);
    expect(after.diskSize).toBeGreaterThanOrEqual(before.diskSize);
  });
});

describe("TriggerCompaction", () => {
  it.each(TRANSPORTS)("refuses a caller who is not an admin with PERMISSION_DENIED over %s", async (transport) => {
    const c = callerFor(transport, server.baseUrl, server.port);
    try {
      const r = await c.call(COMPACT, { wait: true }, alice);
      expect(r.code).toBe("permission_denied");
      if (r.status !== undefined) expect(r.status).toBe(403);
      expect((await stats(c)).lastCompactionAt).toBe("");
    } finally {
      c.close();
    }
  });

  it("compacts for an admin: size does not grow, every record stays, the finish time is recorded", async () => {
    for (let job = 0; job < 4; job++) await ingestFiller(rest, alice, "compact-me", 200, `batch${job}`);
    const needle = await remember(rest, alice, "compact-me", "The albatross nests on the southern cliff every October.");
    const before = await stats();
    const r = await ok(rest, COMPACT, { wait: true }, server.adminKey);
    expect(r["started"]).toBe(true);
    const sizeBefore = Number(r["disk_size_before_bytes"]);
    const sizeAfter = Number(r["disk_size_after_bytes"]);
    expect(sizeBefore).toBeGreaterThan(0);
    expect(sizeAfter).toBeGreaterThan(0);
    expect(sizeAfter).toBeLessThanOrEqual(sizeBefore);
    const finishedAt = String(r["finished_at"]);
    expect(finishedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
    const after = await stats();
    expect(after.lastCompactionAt).toBe(finishedAt);
    expect(after.compactionRunning).toBe(false);
    expect(after.diskSize).toBeLessThanOrEqual(before.diskSize);
    // The same records, plus the compaction time in `meta`.
    for (const [name, count] of before.keys) expect(keysOf(after, name), name).toBe(name === "meta" ? count + 1 : count);
    const answer = await ok(rest, RPC.recall, { session_id: "compact-me", query: "Where does the albatross nest?" }, alice);
    expect(evidenceOf(answer).map((e) => String(e["id"]))).toContain(needle);
  });

  it("runs one compaction at a time: concurrent calls made while one runs return started false", async () => {
    const replies = await Promise.all(Array.from({ length: 8 }, () => ok(rest, COMPACT, {}, server.adminKey)));
    const started = replies.filter((r) => r["started"] === true);
    const refused = replies.filter((r) => r["started"] !== true);
    expect(started.length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const r of refused) {
      expect(String(r["message"])).toMatch(/already running/);
      expect(Number(r["disk_size_after_bytes"] ?? 0)).toBe(0);
    }
    for (const r of started) {
      // Without `wait` the call answers once started: no size after, no finish time.
      expect(Number(r["disk_size_before_bytes"])).toBeGreaterThan(0);
      expect(Number(r["disk_size_after_bytes"] ?? 0)).toBe(0);
      expect(String(r["finished_at"] ?? "")).toBe("");
    }
    for (let poll = 0; (await stats()).compactionRunning; poll++) {
      expect(poll).toBeLessThan(500);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  });

  it("loses no write made during a compaction, before or after a restart, and queries keep answering", async () => {
    // Enough data that the copy takes a while, so writes arrive while it runs.
    for (let job = 0; job < 3; job++) await ingestFiller(rest, alice, "race-base", 300, `base${job}`);
    const remembered: { id: string; content: string }[] = [];
    const jobIds: string[] = [];
    const INGEST_RUN = "race-ingest";
    let compaction: Promise<JsonObject> | undefined;
    let compactionDone = false;
    let ackedAfterCompaction = 0;
    const writes = Array.from({ length: 300 }, (_, i) => i);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < writes.length) {
        const i = next++;
        if (i === 60) compaction = ok(rest, COMPACT, { wait: true }, server.adminKey).finally(() => (compactionDone = true));
        const issuedDuringCompaction = compaction !== undefined && !compactionDone;
        if (i % 10 === 9) {
          const accepted = await ok(rest, RPC.ingest, { run_id: INGEST_RUN, items: Array.from({ length: 5 }, (_, k) => ({ text: `race job ${i} item ${k}: the heron fishes at the weir` })) }, alice);
          jobIds.push(String(accepted["job_id"]));
        } else {
          const content = `race note ${i}: the ferry to the island leaves at ${i} minutes past`;
          remembered.push({ id: await remember(rest, alice, "race-remember", content), content });
        }
        if (issuedDuringCompaction && compactionDone) ackedAfterCompaction++;
      }
    };
    await Promise.all(Array.from({ length: 24 }, worker));
    const compacted = await (compaction as Promise<JsonObject>);
    expect(compacted["started"]).toBe(true);
    // Some writes were issued while the compaction ran and acknowledged after it: they were held, then applied.
    expect(ackedAfterCompaction).toBeGreaterThan(0);
    for (const jobId of jobIds) expect((await waitForJob(rest, alice, jobId)).job["status"]).toBe("completed");
    expect(remembered).toHaveLength(270);
    expect(jobIds).toHaveLength(30);

    const check = async (): Promise<void> => {
      const stored = new Set(await activityIds(rest, alice, "race-remember"));
      for (const { id } of remembered) expect(stored.has(id), id).toBe(true);
      expect(stored.size).toBe(remembered.length);
      expect(await activityIds(rest, alice, INGEST_RUN)).toHaveLength(150);
      const ingestStats = await ok(rest, RPC.ingestStats, { run_id: INGEST_RUN }, alice);
      expect(Number(ingestStats["total_ingested"])).toBe(150);
      expect(Number(ingestStats["completed_jobs"])).toBe(30);
      const probe = remembered[137] as { id: string; content: string };
      const answer = await ok(rest, RPC.recall, { session_id: "race-remember", query: probe.content, limit: 5 }, alice);
      expect(evidenceOf(answer).map((e) => String(e["id"]))).toContain(probe.id);
    };
    await check();
    const beforeRestart = await stats();
    await restart();
    await check();
    const afterRestart = await stats();
    expect(afterRestart.lastCompactionAt).toBe(beforeRestart.lastCompactionAt);
    for (const [name, count] of beforeRestart.keys) expect(keysOf(afterRestart, name), name).toBe(count);
    // Writes keep working on the swapped-in environment after the restart.
    const later = await remember(rest, alice, "race-remember", "A write after the restart.");
    expect(await activityIds(rest, alice, "race-remember")).toContain(later);
  });
});
