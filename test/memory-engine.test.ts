// The memory engine through its public routes on a real server: supersession, lanes, time bounds, filters before
// top-k, item limits, ingest jobs and stats, validation, caller vectors, exact references, archive byte equality,
// checkpoints, rule and lesson overlays, context telemetry, citations and direct bypass. One case table runs over
// REST, Connect and gRPC; memory health runs over REST.
import { createHash } from "node:crypto";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerFor, restCaller, TRANSPORTS, type Caller, type JsonObject } from "./harness/callers.js";
import {
  RPC,
  evidenceOf,
  expectInvalid,
  expectValidCitations,
  idsOf,
  ingestAndWait,
  ok,
  waitForJob,
} from "./harness/memory.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

interface Fixture {
  /** Caller of the main server (direct search off). */
  readonly c: Caller;
  /** Caller of the server started with SERVICE_CORE_ENABLE_DIRECT_SEARCH=true. */
  readonly direct: Caller;
  readonly alice: string;
  readonly bob: string;
  /** Alice's key on the direct-search server. */
  readonly directAlice: string;
  /**
   * A user of its own for global lessons: they are recalled in every run of their key owner, so written with
   * Alice's key they would join every later answer of hers.
   */
  readonly lessonOwner: string;
  /** Unique per transport, so the runs over each transport do not see each other's writes. */
  readonly scope: string;
}

type Case = readonly [string, (f: Fixture) => Promise<void>];

const JOB_STATES = ["queued", "running", "completed", "failed"];
/** Section titles of a structured context block, in priority order. */
const SECTION_TITLES = ["Active rules", "Lessons", "Facts", "Working memory", "Checkpoints", "Archive blocks", "Traces"];
const SECTION_KEYS = ["active_rules", "lessons", "facts", "working_memory", "checkpoints", "archive_blocks", "traces"];

function sha256(text: string): string {
  return createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");
}

function byId(body: JsonObject): Map<string, JsonObject> {
  return new Map(evidenceOf(body).map((e) => [String(e["id"]), e]));
}

function sorted(values: readonly string[]): string[] {
  return [...values].sort();
}

async function queryIds(f: Fixture, request: JsonObject): Promise<string[]> {
  return idsOf(evidenceOf(await ok(f.c, RPC.query, request, f.alice)));
}

async function stats(c: Caller, key: string, runId: string): Promise<JsonObject> {
  return ok(c, RPC.ingestStats, { run_id: runId }, key);
}

function sumOf(counts: JsonObject): number {
  return Object.values(counts).reduce<number>((total, n) => total + Number(n), 0);
}

function tally(items: readonly JsonObject[], field: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[String(item[field])] = (counts[String(item[field])] ?? 0) + 1;
  return counts;
}

/** `## <title>` headers of a structured context block, in order. */
function headers(block: string): string[] {
  return block.split("\n").filter((line) => line.startsWith("## ")).map((line) => line.slice(3));
}

/** The pressure-telemetry invariants every GetContext answer must satisfy. */
function expectContextTelemetry(body: JsonObject, budget: number): void {
  const sources = body["sources"] as JsonObject[];
  const block = String(body["context_block"]);
  const used = Number(body["budget_used"]);
  expect(Number(body["requested_token_budget"])).toBe(budget);
  expect(used).toBe(Number(body["token_estimate"]));
  expect(used).toBe(countTokens(block));
  if (budget > 0) {
    expect(used).toBeLessThanOrEqual(budget);
    expect(used + Number(body["budget_remaining"])).toBe(budget);
  } else {
    expect(Number(body["budget_remaining"])).toBe(0);
  }
  const byType = body["source_counts_by_entry_type"] as JsonObject;
  const byMode = body["source_counts_by_retrieval_mode"] as JsonObject;
  expect(sumOf(byType)).toBe(sources.length);
  expect(sumOf(byMode)).toBe(sources.length);
  expect(Object.fromEntries(Object.entries(byType).map(([k, v]) => [k, Number(v)]))).toEqual(tally(sources, "entry_type"));
  expect(Object.fromEntries(Object.entries(byMode).map(([k, v]) => [k, Number(v)]))).toEqual(tally(sources, "retrieval_mode"));
  expect(Number(body["evidence_candidates_considered"])).toBeGreaterThanOrEqual(sources.length + Number(body["evidence_dropped_by_budget"]));
  expect(Number(body["exact_references_surfaced"])).toBe(sources.filter((s) => s["referenceable"] === true).length);
  // Sources come in block order: each one's text is found after the previous one's.
  let from = 0;
  for (const source of sources) {
    const at = block.indexOf(String(source["content"]).replace(/\s*\n\s*/g, " ").trim(), from);
    expect(at, `source ${String(source["id"])} in block order`).toBeGreaterThanOrEqual(from);
    from = at;
  }
  const titles = headers(block);
  const order = titles.map((t) => SECTION_TITLES.indexOf(t));
  expect(order.every((i) => i >= 0)).toBe(true);
  expect(order).toEqual([...order].sort((a, b) => a - b));
  const summaryOrder = (body["section_summaries"] as JsonObject[]).map((s) => SECTION_KEYS.indexOf(String(s["section_name"])));
  expect(summaryOrder.every((i) => i >= 0)).toBe(true);
  expect(summaryOrder).toEqual([...summaryOrder].sort((a, b) => a - b));
}

/** A deterministic vector with `dims` components. */
function callerVector(dims: number, seed: number): number[] {
  return Array.from({ length: dims }, (_, i) => Math.sin((i + 1) * 12.9898 + seed * 78.233));
}

/** Learns the server embedder's dimension from the INVALID_ARGUMENT a one-component query vector gets. */
async function embedderDimensions(f: Fixture): Promise<number> {
  const r = await f.c.call(RPC.query, { run_id: `${f.scope}-dims`, query: "dimension probe", embedding: [1] }, f.alice);
  expectInvalid(r, "embedding");
  const match = /must have (\d+) dimensions/.exec(r.message);
  expect(match, r.message).not.toBeNull();
  return Number((match as RegExpExecArray)[1]);
}

const CASES: readonly Case[] = [
  [
    "supersession: the same upsert_key in one run and user makes the old entry stale and ranks it below the new one",
    async (f) => {
      const run = `${f.scope}-supersede`;
      const about = "for the payments service";
      const [oldId] = await ingestAndWait(f.c, f.alice, run, [{ text: `The deploy target region is us-east-1 ${about}.`, upsert_key: "region", user_id: "u1" }]);
      const [newId] = await ingestAndWait(f.c, f.alice, run, [{ text: `The deploy target region is eu-west-1 ${about}.`, upsert_key: "region", user_id: "u1" }]);
      // The same key for another logical user, and in another run, supersede nothing.
      const [otherUserId] = await ingestAndWait(f.c, f.alice, run, [{ text: `The deploy target region is ap-south-1 ${about}.`, upsert_key: "region", user_id: "u2" }]);
      const [otherRunId] = await ingestAndWait(f.c, f.alice, `${run}-b`, [{ text: `The deploy target region is sa-east-1 ${about}.`, upsert_key: "region", user_id: "u1" }]);

      const r = await ok(f.c, RPC.query, { run_id: run, query: "What is the deploy target region of the payments service?", explain: true }, f.alice);
      const ids = idsOf(evidenceOf(r));
      const found = byId(r);
      expect(found.get(oldId as string)).toMatchObject({ is_stale: true, superseded_by: newId });
      expect(found.get(newId as string)).toMatchObject({ is_stale: false, superseded_by: "" });
      expect(found.get(otherUserId as string)).toMatchObject({ is_stale: false, superseded_by: "" });
      expect(ids.indexOf(newId as string)).toBeGreaterThanOrEqual(0);
      expect(ids.indexOf(newId as string)).toBeLessThan(ids.indexOf(oldId as string));
      expect(Number(found.get(oldId as string)?.["score"])).toBeLessThan(Number(found.get(newId as string)?.["score"]));
      expect((found.get(oldId as string)?.["explain_info"] as JsonObject)["stale_penalty_applied"]).toBe(true);
      expect((found.get(newId as string)?.["explain_info"] as JsonObject)["stale_penalty_applied"]).toBe(false);

      const elsewhere = byId(await ok(f.c, RPC.query, { run_id: `${run}-b`, query: "deploy target region" }, f.alice));
      expect(elsewhere.get(otherRunId as string)).toMatchObject({ is_stale: false, superseded_by: "" });

      // Within one ordered job, the later item supersedes the earlier one.
      const [first, second] = await ingestAndWait(f.c, f.alice, `${run}-ordered`, [
        { text: "The on-call engineer this week is Priya.", upsert_key: "oncall" },
        { text: "The on-call engineer this week is Tomas.", upsert_key: "oncall" },
      ]);
      const ordered = byId(await ok(f.c, RPC.query, { run_id: `${run}-ordered`, query: "Who is the on-call engineer this week?" }, f.alice));
      expect(ordered.get(first as string)).toMatchObject({ is_stale: true, superseded_by: second });
      expect(ordered.get(second as string)).toMatchObject({ is_stale: false });
    },
  ],
  [
    "lanes: entries without a lane are visible to every query, a lane's entries only without a lane filter or with theirs",
    async (f) => {
      const run = `${f.scope}-lanes`;
      const [open, alpha, beta] = await ingestAndWait(f.c, f.alice, run, [
        { text: "Kiwi harvest notes shared by every team." },
        { text: "Kiwi harvest notes of the alpha team.", lane: "alpha" },
        { text: "Kiwi harvest notes of the beta team.", lane: "beta" },
      ]);
      const visible = async (laneFilter: string): Promise<string[]> =>
        sorted(await queryIds(f, { run_id: run, query: "kiwi harvest notes", lane_filter: laneFilter }));
      expect(await visible("")).toEqual(sorted([open, alpha, beta] as string[]));
      expect(await visible("alpha")).toEqual(sorted([open, alpha] as string[]));
      expect(await visible("beta")).toEqual(sorted([open, beta] as string[]));
      expect(await visible("gamma")).toEqual([open]);
      const alphaHit = byId(await ok(f.c, RPC.query, { run_id: run, query: "kiwi harvest", lane_filter: "alpha" }, f.alice)).get(alpha as string);
      expect(alphaHit?.["lane"]).toBe("alpha");
      const context = await ok(f.c, RPC.context, { run_id: run, query: "kiwi harvest notes", lane_filter: "beta" }, f.alice);
      expect(sorted(idsOf(context["sources"] as JsonObject[]))).toEqual(sorted([open, beta] as string[]));
    },
  ],
  [
    "time bounds are inclusive on occurrence time, with the write time when occurrence_time is 0",
    async (f) => {
      const run = `${f.scope}-time`;
      const t = 1_700_000_000;
      const [early, middle, late] = await ingestAndWait(f.c, f.alice, run, [
        { text: "Reactor temperature reading logged at the north station.", occurrence_time: t },
        { text: "Reactor temperature reading logged at the east station.", occurrence_time: t + 100 },
        { text: "Reactor temperature reading logged at the south station.", occurrence_time: t + 200 },
      ]);
      const before = Math.floor(Date.now() / 1000);
      const [recent] = await ingestAndWait(f.c, f.alice, run, [{ text: "Reactor temperature reading logged at the west station." }]);
      const after = Math.ceil(Date.now() / 1000);
      const within = async (min: number, max: number): Promise<string[]> =>
        sorted(await queryIds(f, { run_id: run, query: "reactor temperature reading", min_timestamp: min, max_timestamp: max, limit: 20 }));
      expect(await within(t + 100, t + 100)).toEqual([middle]);
      expect(await within(t, t + 100)).toEqual(sorted([early, middle] as string[]));
      expect(await within(t + 1, t + 199)).toEqual([middle]);
      expect(await within(t + 101, t + 200)).toEqual([late]);
      expect(await within(t + 201, t + 1000)).toEqual([]);
      expect(await within(0, t - 1)).toEqual([]);
      expect(await within(0, t)).toEqual([early]);
      expect(await within(t + 200, 0)).toEqual(sorted([late, recent] as string[]));
      expect(await within(before, after)).toEqual([recent]);
      expect(await within(0, before - 1)).toEqual(sorted([early, middle, late] as string[]));
      const hits = byId(await ok(f.c, RPC.query, { run_id: run, query: "reactor temperature reading", limit: 20 }, f.alice));
      expect(Number(hits.get(middle as string)?.["occurrence_time"])).toBe(t + 100);
      const recentTime = Number(hits.get(recent as string)?.["occurrence_time"]);
      expect(recentTime).toBeGreaterThanOrEqual(before);
      expect(recentTime).toBeLessThanOrEqual(after);
      expectInvalid(await f.c.call(RPC.query, { run_id: run, query: "reactor", min_timestamp: t + 1, max_timestamp: t }, f.alice), "min_timestamp");
    },
  ],
  [
    "filters apply before top-k: a narrow lane or entry type still returns its best k among 200 stronger matches",
    async (f) => {
      const run = `${f.scope}-topk`;
      const strong = Array.from({ length: 200 }, (_, i) => ({
        text: `Quarterly revenue report of the widget division shows strong quarterly revenue growth in region ${i}.`,
        lane: "wide",
      }));
      const narrow = [0, 1, 2].map((i) => ({ text: `Memo ${i} of the archive mentions revenue once.`, lane: "narrow" }));
      const traces = [0, 1, 2].map((i) => ({ text: `Tool call ${i} fetched a revenue figure.`, entry_type: "trace", lane: "wide" }));
      const ids = await ingestAndWait(f.c, f.alice, run, [...strong, ...narrow, ...traces]);
      const narrowIds = sorted(ids.slice(200, 203));
      const traceIds = sorted(ids.slice(203, 206));
      const query = "quarterly revenue report growth of the widget division";
      // The setup is meaningful only if the weak items lose without a filter.
      const unfiltered = await queryIds(f, { run_id: run, query, limit: 3 });
      expect(unfiltered).toHaveLength(3);
      for (const id of unfiltered) expect([...narrowIds, ...traceIds]).not.toContain(id);
      for (const budget of ["low", "mid", "high"]) {
        expect(sorted(await queryIds(f, { run_id: run, query, limit: 3, lane_filter: "narrow", budget }))).toEqual(narrowIds);
        expect(sorted(await queryIds(f, { run_id: run, query, limit: 3, entry_types: ["trace"], budget }))).toEqual(traceIds);
      }
    },
  ],
  [
    "ingest and batch_insert accept 1000 items and reject 1001 naming items",
    async (f) => {
      const run = `${f.scope}-limit`;
      const items = (n: number): JsonObject[] => Array.from({ length: n }, (_, i) => ({ text: `bulk item number ${i}` }));
      expectInvalid(await f.c.call(RPC.ingest, { run_id: run, items: items(1001) }, f.alice), "items");
      expectInvalid(await f.c.call(RPC.batchInsert, { run_id: run, items: items(1001) }, f.alice), "items");
      expectInvalid(await f.c.call(RPC.ingest, { run_id: run, items: [] }, f.alice), "items");
      expectInvalid(await f.c.call(RPC.batchInsert, { run_id: run, items: [] }, f.alice), "items");
      const accepted = await ok(f.c, RPC.ingest, { run_id: run, items: items(1000) }, f.alice);
      const { job } = await waitForJob(f.c, f.alice, String(accepted["job_id"]));
      expect(job).toMatchObject({ status: "completed", item_count: 1000, entry_count: 1000 });
      expect(job["traces"] as JsonObject[]).toHaveLength(1000);
      const batch = await ok(f.c, RPC.batchInsert, { run_id: `${run}-batch`, items: items(1000) }, f.alice);
      expect(batch).toMatchObject({ success: true, count: 1000 });
      expect(new Set(batch["entry_ids"] as string[]).size).toBe(1000);
      expect((await stats(f.c, f.alice, run))["total_ingested"]).toBe(1000);
      expect((await stats(f.c, f.alice, `${run}-batch`))["total_ingested"]).toBe(1000);
    },
  ],
  [
    "ingest jobs: queued at once, then completed with ordered timestamps and traces whose record ids are evidence ids",
    async (f) => {
      const run = `${f.scope}-jobs`;
      const accepted = await ok(
        f.c,
        RPC.ingest,
        {
          run_id: run,
          agent_id: "loader",
          items: [
            { item_id: "a", text: "The lighthouse keeper logs the tide at dawn.", entry_type: "fact" },
            { item_id: "b", text: "The lighthouse keeper must never leave the lamp unattended.", intent: "rule" },
            { text: "The lighthouse keeper repaints the tower every spring." },
          ],
        },
        f.alice,
      );
      expect(accepted).toMatchObject({ accepted: true, deduplicated: false, status: "queued" });
      const jobId = String(accepted["job_id"]);
      const { job, states } = await waitForJob(f.c, f.alice, jobId);
      for (const state of states) expect(JOB_STATES).toContain(state);
      const ranks = states.map((s) => JOB_STATES.indexOf(s));
      expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
      expect(job).toMatchObject({ job_id: jobId, run_id: run, status: "completed", done: true, error: "", item_count: 3, entry_count: 3, ordered: true, agent_id: "loader" });
      const created = Date.parse(String(job["created_at"]));
      const started = Date.parse(String(job["started_at"]));
      const finished = Date.parse(String(job["finished_at"]));
      for (const t of [created, started, finished]) expect(Number.isNaN(t)).toBe(false);
      expect(created).toBeLessThanOrEqual(started);
      expect(started).toBeLessThanOrEqual(finished);
      const traces = job["traces"] as JsonObject[];
      expect(traces.map((t) => t["item_id"])).toEqual(["a", "b", "item-2"]);
      expect(traces.map((t) => t["selected_types"])).toEqual([["fact"], ["rule"], ["fact"]]);
      expect(traces.map((t) => t["reasoning"])).toEqual(["entry_type", "intent", "default"]);
      const recordIds = traces.map((t) => String(((t["writes"] as JsonObject[])[0] as JsonObject)["record_id"]));
      const evidence = await queryIds(f, { run_id: run, query: "What does the lighthouse keeper do?", limit: 10 });
      expect(sorted(evidence)).toEqual(sorted(recordIds));

      const unknown = await f.c.call(RPC.getIngestJob, { job_id: "job_doesnotexist" }, f.alice);
      expect(unknown.code).toBe("not_found");
      if (unknown.status !== undefined) expect(unknown.status).toBe(404);
      const foreign = await f.c.call(RPC.getIngestJob, { job_id: jobId }, f.bob);
      expect(foreign.code).toBe("not_found");
      if (foreign.status !== undefined) expect(foreign.status).toBe(404);
      expect((await f.c.call(RPC.getIngestJob, { job_id: jobId, run_id: `${run}-other` }, f.alice)).code).toBe("not_found");
      expect((await f.c.call(RPC.getIngestJob, { job_id: jobId, run_id: run }, f.alice)).code).toBe("ok");
    },
  ],
  [
    "idempotency_key: a repeat returns the first job, deduplicated, and stores nothing twice",
    async (f) => {
      const run = `${f.scope}-idem`;
      const request = { run_id: run, idempotency_key: "upload-7", items: [{ text: "Upload seven finished." }, { text: "Upload seven was checksummed." }] };
      const first = await ok(f.c, RPC.ingest, request, f.alice);
      const jobId = String(first["job_id"]);
      // At once, while the first job may still be queued, and again after it completed.
      const early = await ok(f.c, RPC.ingest, request, f.alice);
      expect(early).toMatchObject({ accepted: true, job_id: jobId, deduplicated: true });
      expect(JOB_STATES).toContain(early["status"]);
      await waitForJob(f.c, f.alice, jobId);
      const totalBefore = (await stats(f.c, f.alice, run))["total_ingested"];
      expect(totalBefore).toBe(2);
      const late = await ok(f.c, RPC.ingest, { ...request, items: [{ text: "A different body under the same key." }] }, f.alice);
      expect(late).toMatchObject({ job_id: jobId, deduplicated: true, status: "completed" });
      const after = await stats(f.c, f.alice, run);
      expect(after).toMatchObject({ total_ingested: 2, total_jobs: 1, completed_jobs: 1, deduplicated_jobs: 2, total_items: 2 });
      expect((await ok(f.c, RPC.getIngestJob, { job_id: jobId }, f.alice))["deduplicated"]).toBe(true);
      // Keys are per run: the same key elsewhere is a new job.
      const otherRun = await ok(f.c, RPC.ingest, { ...request, run_id: `${run}-b` }, f.alice);
      expect(otherRun["deduplicated"]).toBe(false);
      expect(otherRun["job_id"]).not.toBe(jobId);
      await waitForJob(f.c, f.alice, String(otherRun["job_id"]));
    },
  ],
  [
    "ingest stats count remember, ingest and batch_insert writes by type, with the latest write time",
    async (f) => {
      const run = `${f.scope}-stats`;
      const empty = await stats(f.c, f.alice, run);
      expect(empty).toMatchObject({ run_id: run, total_ingested: 0, by_type: {}, last_ingest_at: "", total_jobs: 0, stats_available: true });
      const start = Date.now();
      await ok(f.c, RPC.remember, { session_id: run, content: "The printer on floor two jams on glossy paper." }, f.alice);
      await ingestAndWait(f.c, f.alice, run, [
        { text: "Glossy paper jams need the rear tray opened.", entry_type: "lesson" },
        { text: "Never print glossy paper on floor two.", entry_type: "rule" },
      ]);
      const batch = await ok(
        f.c,
        RPC.batchInsert,
        {
          run_id: run,
          items: [
            { text: "Printed the quarterly deck on matte paper." },
            { text: "printer.status returned JAM", entry_type: "trace" },
            { text: "Current task: reprint the deck", entry_type: "working_memory" },
          ],
        },
        f.alice,
      );
      expect(batch["count"]).toBe(3);
      const end = Date.now();
      const s = await stats(f.c, f.alice, run);
      expect(s).toMatchObject({ total_ingested: 6, total_jobs: 1, completed_jobs: 1, failed_jobs: 0, total_items: 2 });
      expect(s["by_type"]).toEqual({ fact: 2, lesson: 1, rule: 1, trace: 1, working_memory: 1 });
      const last = Date.parse(String(s["last_ingest_at"]));
      expect(last).toBeGreaterThanOrEqual(start);
      expect(last).toBeLessThanOrEqual(end);
      // Another user's view of the same run name is empty.
      expect((await stats(f.c, f.bob, run))["total_ingested"]).toBe(0);
    },
  ],
  [
    "validation: a bad field in item i is invalid_argument naming items[i].<field>, and nothing is stored",
    async (f) => {
      const run = `${f.scope}-invalid`;
      const dims = await embedderDimensions(f);
      expect(dims).toBe(100);
      const bad: readonly [JsonObject, string][] = [
        [{ entry_type: "gossip" }, "items[1].entry_type"],
        [{ intent: "rumour" }, "items[1].intent"],
        [{ entry_type: "lesson", lesson_scope: "planet" }, "items[1].lesson_scope"],
        [{ entry_type: "lesson", lesson_type: "meh" }, "items[1].lesson_type"],
        [{ entry_type: "lesson", lesson_importance: "urgent" }, "items[1].lesson_importance"],
        // Lesson fields are validated on every item, not only on lessons: the whole request is checked up front.
        [{ lesson_scope: "planet" }, "items[1].lesson_scope"],
        [{ lesson_type: "meh" }, "items[1].lesson_type"],
        [{ lesson_importance: "urgent" }, "items[1].lesson_importance"],
        [{ importance: "urgent" }, "items[1].importance"],
        [{ source: "robot" }, "items[1].source"],
        [{ metadata_json: "{not json" }, "items[1].metadata_json"],
        [{ metadata_json: "[1, 2]" }, "items[1].metadata_json"],
        [{ text: "" }, "items[1].text"],
        [{ embedding: [0.5, 0.25] }, "items[1].embedding"],
        [{ embedding: callerVector(dims + 1, 1) }, "items[1].embedding"],
      ];
      for (const [patch, field] of bad) {
        const items = [{ text: "A valid first item." }, { text: "The second item.", ...patch }];
        expectInvalid(await f.c.call(RPC.ingest, { run_id: run, items }, f.alice), field);
      }
      expect(await stats(f.c, f.alice, run)).toMatchObject({ total_ingested: 0, total_jobs: 0 });
      expectInvalid(await f.c.call(RPC.ingest, { run_id: "", items: [{ text: "x" }] }, f.alice), "run_id");
      expectInvalid(await f.c.call(RPC.query, { run_id: run, query: "anything", budget: "huge" }, f.alice), "budget");
      expectInvalid(await f.c.call(RPC.context, { run_id: run, query: "anything", budget: "huge" }, f.alice), "budget");
      expectInvalid(await f.c.call(RPC.query, { run_id: run, query: "anything", embedding: [1, 2, 3] }, f.alice), "embedding");
      // BatchInsert fails only the bad item.
      const batch = await ok(
        f.c,
        RPC.batchInsert,
        { run_id: run, items: [{ text: "Stored despite its neighbour." }, { text: "Wrong vector.", embedding: [1, 2] }] },
        f.alice,
      );
      expect(batch).toMatchObject({ success: false, count: 1 });
      const results = batch["item_results"] as JsonObject[];
      expect(results[0]).toMatchObject({ success: true });
      expect(results[1]).toMatchObject({ success: false, entry_id: "" });
      expect(String(results[1]?.["error"])).toContain("items[1].embedding");
    },
  ],
  [
    "a caller vector of the embedder's dimension is stored, and a query with that exact vector ranks its entry first",
    async (f) => {
      const dims = await embedderDimensions(f);
      const vector = callerVector(dims, 7);
      const run = `${f.scope}-vector`;
      const ids = await ingestAndWait(f.c, f.alice, run, [
        { text: "Otters hold hands while they sleep." },
        { text: "Glaciers carve valleys over millennia." },
        { text: "Sourdough starters need regular feeding.", embedding: vector },
        { text: "Lighthouses guide ships along rocky coasts." },
        { text: "Bees communicate through waggle dances." },
      ]);
      // A query word no entry contains, so only the vector decides.
      const top = evidenceOf(await ok(f.c, RPC.query, { run_id: run, query: "zqxvjk", embedding: vector }, f.alice))[0];
      expect(top?.["id"]).toBe(ids[2]);
      const batch = await ok(f.c, RPC.batchInsert, { run_id: `${run}-batch`, items: [{ text: "Pottery kilns reach high heat.", embedding: vector }, { text: "Owls hunt at night." }] }, f.alice);
      expect(batch["success"]).toBe(true);
      const batchTop = evidenceOf(await ok(f.c, RPC.query, { run_id: `${run}-batch`, query: "zqxvjk", embedding: vector }, f.alice))[0];
      expect(batchTop?.["id"]).toBe((batch["entry_ids"] as string[])[0]);
    },
  ],
  [
    "a query naming an archive block's reference_id returns that entry first as an exact reference",
    async (f) => {
      const run = `${f.scope}-exact`;
      await ingestAndWait(f.c, f.alice, run, Array.from({ length: 10 }, (_, i) => ({ text: `Build log line ${i}: compiled module ${i} without warnings.` })));
      const content = "diff --git a/src/app.ts b/src/app.ts\n+export const retries = 3;\n";
      const archived = await ok(f.c, RPC.archive, { run_id: run, content, artifact_kind: "diff" }, f.alice);
      expect(archived).toMatchObject({ success: true, entry_type: "archive_block" });
      const ref = String(archived["reference_id"]);
      const r = await ok(f.c, RPC.query, { run_id: run, query: `Which module of the build log does ${ref} change?` }, f.alice);
      expect(evidenceOf(r)[0]).toMatchObject({
        reference_id: ref,
        retrieval_mode: "exact_reference",
        referenceable: true,
        origin_entry_type: "archive_block",
        content,
      });
      expectValidCitations(r);
      const foreign = await ok(f.c, RPC.query, { run_id: run, query: `Show ${ref}` }, f.bob);
      expect(evidenceOf(foreign).some((e) => e["reference_id"] === ref)).toBe(false);
    },
  ],
  [
    "archive and dereference round-trip unicode and exactly 1 MiB byte for byte; 1 MiB + 1 byte is rejected",
    async (f) => {
      const run = `${f.scope}-bytes`;
      const unicode =
        "  Emoji 😀👩‍👩‍👧‍👦🏳️‍🌈, combining e\u0301 a\u0308 n\u0303, CJK 漢字 かな カナ 한국어, RTL שלום עולם مرحبا بالعالم " +
        "\u202Emixed\u202C, math 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, zero width\u200B\u200Djoin, BOM \uFEFF, tabs\tand\r\nCRLF, lone CR\r, trailing   \n  ";
      const unit = "aé漢😀"; // 1 + 2 + 3 + 4 UTF-8 bytes
      const mebibyte = `${unit.repeat(104_857)}abcdef`;
      expect(Buffer.byteLength(mebibyte, "utf8")).toBe(1_048_576);
      for (const content of [unicode, mebibyte]) {
        const archived = await ok(f.c, RPC.archive, { run_id: run, content }, f.alice);
        expect(archived["content_sha256"]).toBe(sha256(content));
        const ref = String(archived["reference_id"]);
        const back = await ok(f.c, RPC.dereference, { reference_id: ref }, f.alice);
        expect(back["found"]).toBe(true);
        expect(back["content"] === content, "dereferenced content equals the archived content").toBe(true);
        expect(sha256(String(back["content"]))).toBe(sha256(content));
        const evidence = back["evidence"] as JsonObject;
        expect(evidence["content"] === content).toBe(true);
        expect(evidence).toMatchObject({ reference_id: ref, referenceable: true, retrieval_mode: "exact_reference", origin_entry_type: "archive_block" });
        expect((await ok(f.c, RPC.dereference, { reference_id: ref }, f.bob))).toMatchObject({ found: false, content: "" });
        expect((await ok(f.c, RPC.dereference, { reference_id: ref, run_id: `${run}-other` }, f.alice))["found"]).toBe(false);
      }
      expectInvalid(await f.c.call(RPC.archive, { run_id: run, content: `${mebibyte}x` }, f.alice), "content");
      expect(await ok(f.c, RPC.dereference, { reference_id: "arc_zzzzzzzz" }, f.alice)).toMatchObject({ found: false, content: "" });
      expectInvalid(await f.c.call(RPC.dereference, { reference_id: "" }, f.alice), "reference_id");
    },
  ],
  [
    "a checkpoint is dereferenceable by its id and surfaces in queries as a checkpoint",
    async (f) => {
      const run = `${f.scope}-checkpoint`;
      await ingestAndWait(f.c, f.alice, run, [
        { text: "The office plants are watered on Mondays." },
        { text: "The team lunch is on Fridays." },
      ]);
      const snapshot = "Checkpoint before compaction: migrating the billing service to Postgres 16; steps 1-3 of 5 are done, step 4 (backfill invoices) is next.";
      const saved = await ok(f.c, RPC.checkpoint, { run_id: run, label: "pre-compaction-1", context_snapshot: snapshot }, f.alice);
      expect(saved["success"]).toBe(true);
      expect(Number(saved["token_estimate"])).toBeGreaterThan(0);
      const id = String(saved["checkpoint_id"]);
      const back = await ok(f.c, RPC.dereference, { reference_id: id }, f.alice);
      expect(back).toMatchObject({ found: true, content: snapshot });
      expect(back["evidence"]).toMatchObject({ origin_entry_type: "checkpoint", reference_id: id, referenceable: true });
      const r = await ok(f.c, RPC.query, { run_id: run, query: "How far along is the billing service Postgres migration?" }, f.alice);
      const hit = evidenceOf(r).find((e) => e["reference_id"] === id);
      expect(hit).toMatchObject({ retrieval_mode: "checkpoint", origin_entry_type: "checkpoint", content: snapshot });
      expectInvalid(await f.c.call(RPC.checkpoint, { run_id: run, context_snapshot: "" }, f.alice), "context_snapshot");
    },
  ],
  [
    "the run's rules are overlaid on every answer, and the user's global lessons from other runs when they bear on it",
    async (f) => {
      const run = `${f.scope}-overlay`;
      const [ruleId] = await ingestAndWait(f.c, f.lessonOwner, run, [
        { text: "Always run the linter before committing code.", entry_type: "rule", user_id: "dev" },
        ...["The weather forecast for Tuesday is light rain.", "The weather on Wednesday will be sunny.", "Thursday brings strong winds.",
          "Friday's forecast calls for snow in the hills.", "Weekend weather looks mild."].map((text) => ({ text, user_id: "dev" })),
      ]);
      const [lessonId] = await ingestAndWait(f.c, f.lessonOwner, `${run}-earlier`, [
        { text: "Cache invalidation bugs hide behind CDN layers; purge the CDN first.", entry_type: "lesson", lesson_scope: "global", lesson_type: "failure", user_id: "dev" },
      ]);
      // A rule is a standing instruction: it joins even an answer about something else.
      const weather = { run_id: run, user_id: "dev", query: "What is the weather forecast for Tuesday?" };
      const small = await ok(f.c, RPC.query, { ...weather, limit: 3 }, f.lessonOwner);
      expect(evidenceOf(small).length).toBeLessThanOrEqual(3);
      expect(byId(small).get(ruleId as string)).toMatchObject({ retrieval_mode: "rule_overlay", origin_entry_type: "rule" });
      expectValidCitations(small);
      // A lesson joins from the run it was learnt in when the question bears on it; this run says nothing about it.
      const question = { run_id: run, user_id: "dev", query: "How should I track down cache invalidation bugs?" };
      const wide = await ok(f.c, RPC.query, { ...question, limit: 10 }, f.lessonOwner);
      expect(byId(wide).get(ruleId as string)).toMatchObject({ retrieval_mode: "rule_overlay" });
      expect(byId(wide).get(lessonId as string)).toMatchObject({ retrieval_mode: "lesson_overlay", origin_entry_type: "lesson", run_id: `${run}-earlier` });
      expectValidCitations(wide);
      const currentOnly = await ok(f.c, RPC.query, { ...question, limit: 10, prefer_current_run: true }, f.lessonOwner);
      expect(byId(currentOnly).has(lessonId as string)).toBe(false);
      const otherKeyOwner = await ok(f.c, RPC.query, { ...question, limit: 10 }, f.bob);
      expect(byId(otherKeyOwner).has(lessonId as string)).toBe(false);
    },
  ],
  [
    "context: the budget holds, telemetry adds up, sections keep their order, and the disclosure modes work",
    async (f) => {
      const run = `${f.scope}-context`;
      const of = (entryType: string, texts: string[]): JsonObject[] => texts.map((text) => ({ text, entry_type: entryType }));
      await ingestAndWait(f.c, f.alice, run, [
        ...of("rule", ["Project Atlas changes need two reviewers.", "Project Atlas deploys only on weekdays."]),
        ...of("lesson", ["Project Atlas builds fail when the cache is cold.", "Project Atlas tests flake under load.", "Project Atlas logs rotate hourly."]),
        ...of("fact", Array.from({ length: 20 }, (_, i) => `Project Atlas fact ${i}: service ${i} runs ${i + 2} replicas in the atlas cluster.`)),
        ...of("working_memory", ["Project Atlas current step: verify replicas.", "Project Atlas open question: the cache size."]),
        ...of("trace", ["Project Atlas tool call kubectl get pods.", "Project Atlas tool call helm status.", "Project Atlas tool call curl /health."]),
      ]);
      await ok(f.c, RPC.archive, { run_id: run, content: "Project Atlas deployment manifest: replicas 3, region eu-west-1." }, f.alice);
      await ok(f.c, RPC.checkpoint, { run_id: run, context_snapshot: "Project Atlas checkpoint: schema migration is halfway." }, f.alice);
      const ask = { run_id: run, query: "Project Atlas", limit: 5 };

      const unlimited = await ok(f.c, RPC.context, ask, f.alice);
      expectContextTelemetry(unlimited, 0);
      expect(headers(String(unlimited["context_block"]))).toEqual(SECTION_TITLES);
      expect((unlimited["section_summaries"] as JsonObject[]).map((s) => s["section_name"])).toEqual(SECTION_KEYS);
      expect(Number(unlimited["exact_references_surfaced"])).toBe(2);

      const full = Number(unlimited["budget_used"]);
      for (const budget of [Math.floor(full / 4), Math.floor(full / 2), full - 1]) {
        const tight = await ok(f.c, RPC.context, { ...ask, max_token_budget: budget }, f.alice);
        expectContextTelemetry(tight, budget);
        expect(Number(tight["evidence_dropped_by_budget"]), `budget ${budget} drops something`).toBeGreaterThan(0);
        expect(tight["empty_reason"]).toBe("budget_exhausted");
      }

      const summary = await ok(f.c, RPC.context, { ...ask, mode: "summary" }, f.alice);
      expect(summary["context_block"]).toBe("");
      expect(summary["sources"]).toEqual([]);
      expect((summary["section_summaries"] as JsonObject[]).map((s) => s["section_name"])).toEqual(SECTION_KEYS);
      expectContextTelemetry(summary, 0);

      const facts = await ok(f.c, RPC.context, { ...ask, mode: "sections", sections: ["facts"] }, f.alice);
      expect(headers(String(facts["context_block"]))).toEqual(["Facts"]);
      const factSources = facts["sources"] as JsonObject[];
      expect(factSources.length).toBeGreaterThan(0);
      for (const source of factSources) expect(source["entry_type"]).toBe("fact");
      expect((facts["section_summaries"] as JsonObject[]).map((s) => s["section_name"])).toEqual(["facts"]);
      expectContextTelemetry(facts, 0);

      expectInvalid(await f.c.call(RPC.context, { ...ask, mode: "everything" }, f.alice), "mode");
      expectInvalid(await f.c.call(RPC.context, { ...ask, mode: "sections" }, f.alice), "sections");
      expectInvalid(await f.c.call(RPC.context, { ...ask, mode: "sections", sections: ["gossip"] }, f.alice), "sections");
    },
  ],
  [
    "citations are valid indices, and a question memory cannot answer abstains with no citations and low confidence",
    async (f) => {
      const run = `${f.scope}-citations`;
      await ingestAndWait(f.c, f.alice, run, [
        { text: "The cafeteria opens at noon." },
        { text: "The parking garage closes at midnight." },
        { text: "Badge photos are taken in room 12 on Wednesdays." },
        { text: "The cafeteria serves soup on Mondays. The soup is vegetarian." },
      ]);
      const questions = ["When does the cafeteria open?", "Where are badge photos taken?", "What soup does the cafeteria serve?", "garage", "Which Kubernetes version runs in production?"];
      for (const query of questions) {
        const r = await ok(f.c, RPC.query, { run_id: run, query }, f.alice);
        expectValidCitations(r);
        const recall = await ok(f.c, RPC.recall, { session_id: run, query }, f.alice);
        expectValidCitations(recall);
      }
      const answered = await ok(f.c, RPC.query, { run_id: run, query: "When does the cafeteria open?" }, f.alice);
      expect((answered["citations"] as number[]).length).toBeGreaterThan(0);
      expect(String(answered["final_answer"])).toContain("noon");
      const abstained = await ok(f.c, RPC.query, { run_id: run, query: "Which Kubernetes version runs in production?" }, f.alice);
      expect(abstained["citations"]).toEqual([]);
      expect(Number(abstained["confidence"])).toBeLessThan(0.3);
    },
  ],
  [
    "explain adds a score breakdown; direct_bypass needs SERVICE_CORE_ENABLE_DIRECT_SEARCH and then skips the answer",
    async (f) => {
      const run = `${f.scope}-explain`;
      await ingestAndWait(f.c, f.alice, run, [{ text: "The coffee machine descales every Friday." }, { text: "The kettle is in the kitchen." }]);
      const explained = await ok(f.c, RPC.query, { run_id: run, query: "When does the coffee machine descale?", explain: true }, f.alice);
      expect(evidenceOf(explained).length).toBeGreaterThan(0);
      for (const e of evidenceOf(explained)) {
        const info = e["explain_info"] as JsonObject;
        const weights = info["fusion_weights_used"] as JsonObject;
        expect(Object.keys(weights).sort()).toEqual(["lexical", "recency", "semantic"]);
        expect(sumOf(weights)).toBeCloseTo(1, 6);
        expect(info["rank_by_mode"]).toBe("relevance");
      }
      const plain = await ok(f.c, RPC.query, { run_id: run, query: "When does the coffee machine descale?" }, f.alice);
      for (const e of evidenceOf(plain)) expect(e["explain_info"] ?? null).toBeNull();

      const denied = await f.c.call(RPC.query, { run_id: run, query: "coffee machine", mode: "direct_bypass" }, f.alice);
      expect(denied.code).toBe("permission_denied");
      if (denied.status !== undefined) expect(denied.status).toBe(403);
      expect(denied.message).toContain("SERVICE_CORE_ENABLE_DIRECT_SEARCH");

      await ingestAndWait(f.direct, f.directAlice, run, [{ text: "The coffee machine descales every Friday." }]);
      const bypass = await ok(f.direct, RPC.query, { run_id: run, query: "When does the coffee machine descale?", mode: "direct_bypass" }, f.directAlice);
      expect(bypass).toMatchObject({ mode: "direct_bypass", final_answer: "", citations: [] });
      expect(evidenceOf(bypass)[0]?.["content"]).toBe("The coffee machine descales every Friday.");
    },
  ],
];

let server: TestServer;
let directServer: TestServer;
let alice: string;
let bob: string;
let directAlice: string;
const lessonOwners = new Map<string, string>();

beforeAll(async () => {
  [server, directServer] = await Promise.all([startTestServer(), startTestServer({ SERVICE_CORE_ENABLE_DIRECT_SEARCH: "true" })]);
  alice = await createUser(server.baseUrl, server.adminKey, "alice");
  bob = await createUser(server.baseUrl, server.adminKey, "bob");
  directAlice = await createUser(directServer.baseUrl, directServer.adminKey, "alice");
  for (const transport of TRANSPORTS) lessonOwners.set(transport, await createUser(server.baseUrl, server.adminKey, `lessons-${transport}`));
});

afterAll(async () => {
  await Promise.all([server?.close(), directServer?.close()]);
});

describe.each(TRANSPORTS)("memory engine over %s", (transport) => {
  let c: Caller;
  let direct: Caller;

  beforeAll(() => {
    c = callerFor(transport, server.baseUrl, server.port);
    direct = callerFor(transport, directServer.baseUrl, directServer.port);
  });

  afterAll(() => {
    c.close();
    direct.close();
  });

  it.each(CASES)("%s", async (_name, run) => {
    await run({ c, direct, alice, bob, directAlice, lessonOwner: lessonOwners.get(transport) ?? "", scope: transport });
  });
});

describe("memory health over REST", () => {
  it("counts types, stale entries, contradicting lessons and section health in context order", async () => {
    const c = restCaller(server.baseUrl);
    const run = "health";
    await ingestAndWait(c, alice, run, [
      { text: "The build server has 16 GB of memory.", upsert_key: "build-memory" },
      { text: "The build server has 32 GB of memory.", upsert_key: "build-memory" },
      { text: "The build server runs Ubuntu." },
      { text: "Never deploy on Fridays.", entry_type: "rule" },
    ]);
    const [success, failure, unrelated] = await ingestAndWait(c, alice, run, [
      { text: "Using the staging cache for the integration tests made the suite pass reliably.", entry_type: "lesson", lesson_type: "success" },
      { text: "Using the staging cache for the integration tests made the suite fail reliably.", entry_type: "lesson", lesson_type: "failure" },
      { text: "Prefer tabs in Makefiles.", entry_type: "lesson", lesson_type: "preference" },
    ]);
    const health = await ok(c, RPC.memoryHealth, { run_id: run }, alice);
    expect(health["entry_counts"]).toEqual({ fact: 3, rule: 1, lesson: 3 });
    expect(health["stale_entries"]).toBe(1);
    expect(health["entries_inspected"]).toBe(7);
    const contradictions = health["contradictions"] as JsonObject[];
    const pair = contradictions.find((p) => sorted([String(p["lesson_a_id"]), String(p["lesson_b_id"])]).join() === sorted([success, failure] as string[]).join());
    expect(pair, JSON.stringify(contradictions)).toBeDefined();
    expect(pair).toMatchObject({ lesson_a_id: success, lesson_b_id: failure, lesson_a_type: "success", lesson_b_type: "failure" });
    expect(Number(pair?.["similarity"])).toBeGreaterThanOrEqual(0.8);
    for (const p of contradictions) {
      expect([p["lesson_a_id"], p["lesson_b_id"]]).not.toContain(unrelated);
    }
    const sections = health["section_health"] as JsonObject[];
    expect(sections.map((s) => s["section_name"])).toEqual(["active_rules", "lessons", "facts"]);
    expect(sections.map((s) => s["count"])).toEqual([1, 3, 3]);
    expect(sections.find((s) => s["section_name"] === "facts")?.["stale_count"]).toBe(1);
    // Another user sees nothing of it.
    expect((await ok(c, RPC.memoryHealth, { run_id: run }, bob))["entries_inspected"]).toBe(0);
  });
});
