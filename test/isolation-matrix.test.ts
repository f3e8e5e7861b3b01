// No tenant sees or sways another. Users A and B write data crafted to collide (same words, run ids, lanes, upsert
// keys, speaker labels and agent ids; B names an agent after a word of A's query). Every read route answers A
// byte for byte the same before and after B writes (ids and timings normalised; `explain` included), over REST and
// over gRPC and Connect; and A can neither read, list, count, update nor delete anything of B's.
//
// Before statistics were kept per owner, B's agent "payments" took the word "payments" out of A's query "payments
// friday" (an author name is matched through authorship), and B's hundreds of "deploy" entries lowered the BM25
// weight of "deploy" in A's scores: the query answers below then changed when B wrote.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerFor, type Caller, type CallResult, type Json, type JsonObject, type TransportName } from "./harness/callers.js";
import { ingestAndWait, ok, RPC, waitForJob } from "./harness/memory.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

const ENV = { SERVICE_CORE_ALLOW_ALL: "true", SERVICE_CORE_ENABLE_DIRECT_SEARCH: "true", SERVICE_EMBEDDER: "hashed" };

const RUN = "shared-run";
const OTHER_RUN = "notes";
/** 2024-03-01, and one day in seconds: fixed occurrence times, so nothing ranked depends on when the test runs. */
const T0 = 1_709_251_200;
const DAY = 86_400;

const CORE = {
  insert: "engram.v2.CoreService/InsertNode",
  get: "engram.v2.CoreService/GetNode",
  delete: "engram.v2.CoreService/DeleteNode",
  search: "engram.v2.CoreService/SearchNodes",
} as const;
const READS = {
  activity: "engram.v2.MemoryService/ListActivity",
  exportActivity: "engram.v2.MemoryService/ExportActivity",
  snapshot: "engram.v2.RunsService/GetContextSnapshot",
  listRuns: "engram.v2.RunsService/ListRuns",
  deleteRun: "engram.v2.RunsService/DeleteRun",
  listLessons: "engram.v2.LearningService/ListLessons",
  updateLesson: "engram.v2.LearningService/UpdateLesson",
  deleteLesson: "engram.v2.LearningService/DeleteLesson",
} as const;

/** Fields that measure time spent, or time since something happened: they differ between two identical reads. */
const TIMING_FIELD = /(latency|elapsed|duration|took|_ms$|age_hours|uptime|generated_at)/;

/** A read's result with timings dropped, so two reads of unchanged data compare equal. */
function normalise(value: Json): Json {
  if (Array.isArray(value)) return value.map(normalise);
  if (value === null || typeof value !== "object") return value;
  const out: JsonObject = {};
  for (const [key, field] of Object.entries(value)) {
    if (TIMING_FIELD.test(key)) continue;
    out[key] = normalise(field);
  }
  return out;
}

function outcome(r: CallResult): Json {
  return r.code === "ok" ? normalise(r.body) : { failed_with: r.code, message: r.message };
}

interface OwnedData {
  entryIds: string[];
  jobIds: string[];
  references: string[];
  nodeIds: string[];
  lessonIds: string[];
}

/** A's and B's writes share words, runs, lanes, upsert keys and speaker labels; only B writes as agent "payments". */
async function writeA(c: Caller, key: string): Promise<OwnedData> {
  const data: OwnedData = { entryIds: [], jobIds: [], references: [], nodeIds: [], lessonIds: [] };
  const ingest = async (runId: string, agentId: string, items: JsonObject[]): Promise<void> => {
    const accepted = await ok(c, RPC.ingest, { run_id: runId, agent_id: agentId, items }, key);
    data.jobIds.push(String(accepted["job_id"]));
    const { job } = await waitForJob(c, key, String(accepted["job_id"]));
    expect(job["status"], String(job["error"])).toBe("completed");
    for (const trace of job["traces"] as JsonObject[]) {
      for (const write of trace["writes"] as JsonObject[]) data.entryIds.push(String(write["record_id"]));
    }
  };
  await ingest(RUN, "billing", [
    { text: "The payments service deploys every friday at noon.", lane: "ops", upsert_key: "deploy-day", occurrence_time: T0 },
    { text: "Friday deploys need a second reviewer from the platform team.", lane: "ops", occurrence_time: T0 + DAY },
    { text: "Caroline: I moved the standup to friday morning.", occurrence_time: T0 + 2 * DAY },
    { text: "The API rate limit is 100 requests per minute.", upsert_key: "rate-limit", occurrence_time: T0 + 3 * DAY },
    { text: "Never deploy payments on a public holiday.", intent: "rule", occurrence_time: T0 + 4 * DAY },
    { text: "Retry payment webhooks with exponential backoff.", intent: "lesson", lesson_scope: "global", lesson_type: "success", occurrence_time: T0 + 5 * DAY },
    { text: "Melanie: the ledger reconciles nightly after the deploy window.", lane: "finance", occurrence_time: T0 + 6 * DAY },
    { text: "Gateway deploy checklist: drain, deploy, verify, reopen.", lane: "ops", occurrence_time: T0 + 7 * DAY },
    { text: "Reviewer rotation for payments changes every quarter.", occurrence_time: T0 + 8 * DAY },
    { text: "Current task: prepare the friday payments release notes.", intent: "working_memory", occurrence_time: T0 + 9 * DAY },
  ]);
  await ingest(RUN, "billing", [{ text: "The API rate limit is 120 requests per minute.", upsert_key: "rate-limit", occurrence_time: T0 + 10 * DAY }]);
  await ingest(OTHER_RUN, "deployer", [{ text: "Payments deploy freeze starts on friday before the holidays.", occurrence_time: T0 + 11 * DAY }]);
  data.references.push(String((await ok(c, RPC.archive, { run_id: RUN, content: "Runbook: restart the payments pods, then verify the friday deploy." }, key))["reference_id"]));
  data.references.push(String((await ok(c, RPC.checkpoint, { run_id: RUN, label: "before-release", context_snapshot: "Payments release pending review." }, key))["checkpoint_id"]));
  for (const text of ["payments friday deploy node", "ledger reconciliation node"]) {
    const inserted = await ok(c, CORE.insert, { run_id: RUN, text, metadata_json: '{"lane":"ops"}' }, key);
    data.nodeIds.push(String(inserted["node_id"]));
  }
  // The global lesson of the first job.
  data.lessonIds.push(data.entryIds[5] as string);
  return data;
}

/** B's colliding data: many entries with A's words, B's agent named "payments", same runs, lanes and upsert keys. */
async function writeB(c: Caller, key: string): Promise<OwnedData> {
  const data: OwnedData = { entryIds: [], jobIds: [], references: [], nodeIds: [], lessonIds: [] };
  const words = ["deploy", "friday", "payments", "reviewer", "ledger", "gateway", "standup", "limit"];
  const items = (n: number, offset: number): JsonObject[] =>
    Array.from({ length: n }, (_, i) => ({
      text: `${i % 5 === 0 ? "Caroline: " : ""}Deploy note ${i + offset}: ${words[i % words.length]} ${words[(i * 3) % words.length]} deploy friday window.`,
      lane: i % 2 === 0 ? "ops" : "finance",
      occurrence_time: T0 + (i % 30) * DAY,
      ...(i % 7 === 0 ? { upsert_key: "deploy-day" } : i % 11 === 0 ? { upsert_key: "rate-limit" } : {}),
      ...(i % 13 === 0 ? { intent: "rule" } : i % 17 === 0 ? { intent: "lesson", lesson_scope: "global" } : {}),
    }));
  for (const [runId, agentId, n, offset] of [
    [RUN, "payments", 400, 0],
    [RUN, "billing", 100, 1000],
    [OTHER_RUN, "payments", 100, 2000],
  ] as const) {
    const written = items(n, offset);
    const ids = await ingestAndWait(c, key, runId, written, { agent_id: agentId });
    data.entryIds.push(...ids);
    data.lessonIds.push(...ids.filter((_, i) => written[i]?.["intent"] === "lesson"));
  }
  const job = await ok(c, RPC.ingest, { run_id: RUN, items: [{ text: "Payments friday deploy marker." }] }, key);
  data.jobIds.push(String(job["job_id"]));
  await waitForJob(c, key, String(job["job_id"]));
  data.entryIds.push(String((await ok(c, RPC.remember, { session_id: RUN, content: "Friday payments deploy was rolled back.", agent_id: "payments" }, key))["entry_id"]));
  data.references.push(String((await ok(c, RPC.archive, { run_id: RUN, content: "Runbook: restart the payments pods, then verify the friday deploy." }, key))["reference_id"]));
  data.references.push(String((await ok(c, RPC.checkpoint, { run_id: RUN, label: "before-release", context_snapshot: "Payments release pending review." }, key))["checkpoint_id"]));
  for (const text of ["payments friday deploy node", "payments friday deploy node, again", "ledger reconciliation node"]) {
    data.nodeIds.push(String((await ok(c, CORE.insert, { run_id: RUN, text }, key))["node_id"]));
  }
  return data;
}

type Read = readonly [name: string, rpc: string, request: JsonObject];

/** Every read route A has, over the data A wrote: queries with and without `explain`, every budget and filter. */
function readsOf(a: OwnedData): Read[] {
  const query = (name: string, request: JsonObject): Read => [`query ${name}`, RPC.query, { run_id: RUN, limit: 20, ...request }];
  return [
    query("payments friday, explained", { query: "payments friday", explain: true }),
    query("payments friday, high budget", { query: "payments friday", budget: "high", explain: true }),
    query("payments friday, low budget", { query: "payments friday", budget: "low", explain: true }),
    query("deploy reviewer", { query: "deploy reviewer", explain: true }),
    query("what did Caroline say about the standup", { query: "What did Caroline say about the standup?", explain: true }),
    query("rate limit by freshness", { query: "rate limit", rank_by: "freshness", explain: true }),
    query("balanced, ops lane", { query: "gateway deploy", rank_by: "balanced", lane_filter: "ops", explain: true }),
    query("facts only", { query: "ledger deploy window", entry_types: ["fact"], explain: true }),
    query("current run only", { query: "payments webhooks retry", prefer_current_run: true }),
    query("direct bypass", { query: "payments friday deploy", mode: "direct_bypass" }),
    query("naming an entry", { query: `what does ${a.entryIds[1]} say?`, explain: true }),
    query("naming a reference", { query: `open ${a.references[0]}` }),
    query("in another run", { query: "payments deploy freeze", run_id: OTHER_RUN, explain: true }),
    ["recall", RPC.recall, { session_id: RUN, query: "payments friday" }],
    ["recall, budget low", RPC.recall, { session_id: RUN, query: "deploy reviewer", budget: "low" }],
    ["context", RPC.context, { run_id: RUN, query: "payments friday deploy", max_token_budget: 400 }],
    ["context, sections", RPC.context, { run_id: RUN, query: "deploy", mode: "sections", sections: ["active_rules", "lessons", "facts"] }],
    ["context, no query", RPC.context, { run_id: RUN, max_token_budget: 300 }],
    ["activity", READS.activity, { run_id: RUN, limit: 100 }],
    ["activity, compact, every run", READS.activity, { limit: 100, projection: "compact" }],
    ["activity, by agent", READS.activity, { run_id: RUN, agent_id: "payments", limit: 100 }],
    ["activity export", READS.exportActivity, { run_id: RUN }],
    ...a.references.map((reference): Read => [`dereference ${reference}`, RPC.dereference, { run_id: RUN, reference_id: reference }]),
    ["memory health of the run", RPC.memoryHealth, { run_id: RUN }],
    ["memory health of every run", RPC.memoryHealth, {}],
    ["ingest stats", RPC.ingestStats, { run_id: RUN }],
    ["ingest stats, other run", RPC.ingestStats, { run_id: OTHER_RUN }],
    ...a.jobIds.map((jobId): Read => [`ingest job ${jobId}`, RPC.getIngestJob, { job_id: jobId }]),
    ...a.nodeIds.map((id): Read => [`core node ${id}`, CORE.get, { id }]),
    ["core search in the run", CORE.search, { query_text: "payments friday deploy", k: 10, run_id: RUN }],
    ["core search everywhere", CORE.search, { query_text: "ledger reconciliation", k: 10 }],
    ["context snapshot", READS.snapshot, { run_id: RUN }],
    ["runs", READS.listRuns, {}],
    ["lessons", READS.listLessons, { run_id: RUN }],
  ];
}

async function readAll(c: Caller, key: string, reads: readonly Read[]): Promise<Record<string, Json>> {
  const out: Record<string, Json> = {};
  for (const [name, rpc, request] of reads) out[name] = outcome(await c.call(rpc, request, key));
  return out;
}

/** Reads worth repeating over the other transports: the ranked ones. */
const RANKED = (name: string): boolean => /^(query|recall|context)/.test(name);

describe("isolation matrix: B's data neither shows in nor changes A's answers", () => {
  let server: TestServer;
  let keyA: string;
  let keyB: string;
  const callers = new Map<TransportName, Caller>();
  const rest = (): Caller => callers.get("rest") as Caller;
  let a: OwnedData;
  let b: OwnedData;
  let reads: Read[];
  const before = new Map<TransportName, Record<string, Json>>();
  const after = new Map<TransportName, Record<string, Json>>();

  beforeAll(async () => {
    server = await startTestServer(ENV);
    for (const transport of ["rest", "connect", "grpc"] as const) callers.set(transport, callerFor(transport, server.baseUrl, server.port));
    keyA = await createUser(server.baseUrl, server.adminKey, "tenant-a");
    keyB = await createUser(server.baseUrl, server.adminKey, "tenant-b");
    a = await writeA(rest(), keyA);
    reads = readsOf(a);
    for (const [transport, caller] of callers) before.set(transport, await readAll(caller, keyA, transport === "rest" ? reads : reads.filter(([name]) => RANKED(name))));
    b = await writeB(rest(), keyB);
    for (const [transport, caller] of callers) after.set(transport, await readAll(caller, keyA, transport === "rest" ? reads : reads.filter(([name]) => RANKED(name))));
  }, 120_000);

  afterAll(async () => {
    for (const caller of callers.values()) caller.close();
    await server.close();
  });

  it("A's reads succeed and find A's data (the comparison below is not of empty answers)", () => {
    const answers = before.get("rest") as Record<string, JsonObject>;
    const evidence = (name: string): JsonObject[] => ((answers[name] as JsonObject)["evidence"] as JsonObject[] | undefined) ?? [];
    expect(evidence("query payments friday, explained").length).toBeGreaterThan(3);
    expect(evidence("query payments friday, explained").some((e) => String(e["content"]).includes("payments service deploys every friday"))).toBe(true);
    expect(evidence("query naming an entry")[0]?.["id"]).toBe(a.entryIds[1]);
    // Routes still being built answer `unimplemented` (the same before and after); every other read succeeds.
    for (const [name, answer] of Object.entries(answers)) {
      const error = (answer as JsonObject)["failed_with"];
      if (error !== "unimplemented") expect(error, `${name}: ${String((answer as JsonObject)["message"])}`).toBeUndefined();
    }
    // B really wrote colliding data: B's own query sees it.
    expect(b.entryIds.length).toBeGreaterThan(500);
  });

  for (const transport of ["rest", "connect", "grpc"] as const) {
    it(`every read of A answers the same after B's writes, over ${transport}`, () => {
      const was = before.get(transport) as Record<string, Json>;
      const is = after.get(transport) as Record<string, Json>;
      for (const name of Object.keys(was)) expect(is[name], name).toEqual(was[name]);
    });
  }

  it("no answer to A carries anything of B's", () => {
    const text = JSON.stringify([...after.values()]);
    for (const id of [...b.entryIds, ...b.references, ...b.jobIds]) expect(text.includes(`"${id}"`), id).toBe(false);
    expect(text).not.toContain("Deploy note");
    expect(text).not.toContain("rolled back");
  });

  it("A cannot read B's entries, references, jobs, nodes or lessons by id", async () => {
    const c = rest();
    const named = await ok(c, RPC.query, { run_id: RUN, query: `what does ${b.entryIds[0]} say?`, limit: 50 }, keyA);
    expect((named["evidence"] as JsonObject[]).map((e) => e["id"])).not.toContain(b.entryIds[0]);
    for (const reference of b.references) {
      const r = await c.call(RPC.dereference, { run_id: RUN, reference_id: reference }, keyA);
      expect(r.code === "not_found" || (r.code === "ok" && r.body["found"] === false), `${reference}: ${r.code}`).toBe(true);
    }
    for (const jobId of b.jobIds) expect((await c.call(RPC.getIngestJob, { job_id: jobId }, keyA)).code).toBe("not_found");
    for (const id of b.nodeIds) expect((await c.call(CORE.get, { id }, keyA)).code).toBe("not_found");
    const search = await ok(c, CORE.search, { query_text: "payments friday deploy node, again", k: 50, run_id: RUN }, keyA);
    const found = JSON.stringify(search);
    for (const id of b.nodeIds) expect(found.includes(`"${id}"`)).toBe(false);
  });

  it("A cannot update or delete B's records, and A deleting its run leaves B's run whole", async () => {
    const c = rest();
    for (const id of b.nodeIds) expect((await c.call(CORE.delete, { id }, keyA)).code).toBe("not_found");
    expect(b.lessonIds.length).toBeGreaterThan(0);
    for (const lessonId of b.lessonIds) {
      for (const [rpc, request] of [
        [READS.updateLesson, { lesson_id: lessonId, stale: true, reason: "not yours" }],
        [READS.deleteLesson, { lesson_id: lessonId }],
      ] as const) {
        const r = await c.call(rpc, request, keyA);
        expect(r.code, `${rpc} ${lessonId}`).toBe("not_found");
      }
    }
    const readsOfB: Read[] = [
      ["activity", READS.activity, { run_id: RUN, limit: 1000 }],
      ["query", RPC.query, { run_id: RUN, query: "payments friday", explain: true, limit: 30 }],
      ["stats", RPC.ingestStats, { run_id: RUN }],
      ["health", RPC.memoryHealth, { run_id: RUN }],
      ["lessons", READS.listLessons, { run_id: RUN }],
      ...b.nodeIds.map((id): Read => [`node ${id}`, CORE.get, { id }]),
    ];
    const bBefore = await readAll(c, keyB, readsOfB);
    expect((await c.call(READS.deleteRun, { run_id: RUN }, keyA)).code).toBe("ok");
    expect(await readAll(c, keyB, readsOfB)).toEqual(bBefore);
    // And A's run is gone for A.
    const gone = await ok(c, READS.activity, { run_id: RUN, limit: 10 }, keyA);
    expect(gone["entries"]).toEqual([]);
  });
});
