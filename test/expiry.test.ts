// Expiry and retention over a real server whose memory clock the test controls (no sleeps): ttl_seconds and
// expires_at on remember, ingest and batch_insert; an expired entry gone from every read at once (query, recall,
// context, activity, export, counts, the vector index); the background purge with a delete's lineage rules; retention
// policies per entry type, per run and per owner, isolated between owners; the run's policy on its listing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { callerFor, grpcStream, restCaller, type Caller, type JsonObject } from "./harness/callers.js";
import { RPC, evidenceOf, expectCode, expectInvalid, idsOf, ingestAndWait, ok } from "./harness/memory.js";

const ACTIVITY = "engram.v2.MemoryService/ListActivity";
const EXPORT = "engram.v2.MemoryService/ExportActivity";
const LIST_RUNS = "engram.v2.RunsService/ListRuns";
const RETENTION = {
  set: "engram.v2.RunsService/SetRetentionPolicy",
  get: "engram.v2.RunsService/GetRetentionPolicy",
  clear: "engram.v2.RunsService/ClearRetentionPolicy",
} as const;
const DAY_S = 86_400;

let server: TestServer;
let rest: Caller;
let alice: string;
let bob: string;
/** The memory's clock: advanced by the tests, never by waiting. */
let now = Date.now();

beforeAll(async () => {
  server = await startTestServer({ SERVICE_RETENTION_SWEEP_MS: "0" }, undefined, { memoryNow: () => now });
  rest = restCaller(server.baseUrl);
  alice = await createUser(server.baseUrl, server.adminKey, "alice-expiry");
  bob = await createUser(server.baseUrl, server.adminKey, "bob-expiry");
}, 60_000);

afterAll(async () => {
  await server.close();
});

async function restart(): Promise<void> {
  const { dataDir, adminKey } = server;
  await server.close();
  server = await startTestServer({ SERVICE_RETENTION_SWEEP_MS: "0", SERVICE_ADMIN_KEY: adminKey }, dataDir, { memoryNow: () => now });
  rest = restCaller(server.baseUrl);
}

function advance(seconds: number): void {
  now += seconds * 1000;
}

async function activity(key: string, runId: string): Promise<JsonObject[]> {
  return (await ok(rest, ACTIVITY, { run_id: runId, limit: 500 }, key))["entries"] as JsonObject[];
}

async function contents(key: string, runId: string): Promise<string[]> {
  return (await activity(key, runId)).map((e) => String(e["content"])).sort();
}

async function queryIds(key: string, runId: string, query: string, limit = 10): Promise<string[]> {
  return idsOf(evidenceOf(await ok(rest, RPC.query, { run_id: runId, query, limit }, key)));
}

async function runListed(key: string, runId: string): Promise<JsonObject | undefined> {
  const runs = (await ok(rest, LIST_RUNS, {}, key))["runs"] as JsonObject[];
  return runs.find((r) => r["run_id"] === runId);
}

describe("expiry inputs", () => {
  it("stores ttl_seconds and expires_at from remember, ingest and batch_insert and shows expires_at", async () => {
    const run = "inputs";
    const remembered = await ok(rest, RPC.remember, { session_id: run, content: "The staging cache is warm.", ttl_seconds: 3600 }, alice);
    const at = new Date(now + 7200_000).toISOString();
    const [ingested] = await ingestAndWait(rest, alice, run, [{ text: "The deploy window is open.", expires_at: at }]);
    const batch = await ok(rest, RPC.batchInsert, { run_id: run, items: [{ text: "The canary is green.", ttl_seconds: 60 }, { text: "Kept forever." }] }, alice);
    const [batched, kept] = batch["entry_ids"] as string[];
    const byId = new Map((await activity(alice, run)).map((e) => [String(e["id"]), e]));
    expect(Date.parse(String(byId.get(String(remembered["entry_id"]))?.["expires_at"]))).toBe(now + 3600_000);
    expect(byId.get(ingested!)?.["expires_at"]).toBe(at);
    expect(Date.parse(String(byId.get(batched!)?.["expires_at"]))).toBe(now + 60_000);
    expect(byId.get(kept!)?.["expires_at"]).toBe("");
    const evidence = evidenceOf(await ok(rest, RPC.query, { run_id: run, query: "staging cache warm" }, alice));
    expect(evidence.find((e) => e["id"] === remembered["entry_id"])?.["expires_at"]).toBe(new Date(now + 3600_000).toISOString());
  });

  it("answers 400 naming the field for both set, a negative ttl and a past expires_at", async () => {
    const future = new Date(now + 60_000).toISOString();
    const past = new Date(now - 60_000).toISOString();
    expectInvalid(await rest.call(RPC.remember, { session_id: "bad", content: "x", ttl_seconds: 10, expires_at: future }, alice), "ttl_seconds");
    expectInvalid(await rest.call(RPC.remember, { session_id: "bad", content: "x", ttl_seconds: -5 }, alice), "ttl_seconds");
    expectInvalid(await rest.call(RPC.remember, { session_id: "bad", content: "x", expires_at: past }, alice), "expires_at");
    expectInvalid(await rest.call(RPC.ingest, { run_id: "bad", items: [{ text: "x", ttl_seconds: -1 }] }, alice), "items[0].ttl_seconds");
    expectInvalid(await rest.call(RPC.ingest, { run_id: "bad", items: [{ text: "x", expires_at: past }] }, alice), "items[0].expires_at");
    const batch = await ok(rest, RPC.batchInsert, { run_id: "bad", items: [{ text: "x", ttl_seconds: 5, expires_at: future }] }, alice);
    const [result] = batch["item_results"] as JsonObject[];
    expect(result).toMatchObject({ success: false });
    expect(String(result!["error"])).toContain("items[0].ttl_seconds");
    expect(await activity(alice, "bad")).toEqual([]);
  });
});

describe("expiry times", () => {
  it("take each entry out at its own time, in any order of writing", async () => {
    const run = "staggered";
    const ttls = [50, 10, 40, 20, 30];
    const ids = await ingestAndWait(rest, alice, run, ttls.map((ttl) => ({ text: `Lives ${ttl} seconds.`, ttl_seconds: ttl })));
    const alive = async (): Promise<string[]> => (await activity(alice, run)).map((e) => String(e["id"])).sort();
    for (const elapsed of [10, 20, 30, 40, 50]) {
      advance(10);
      const expected = ids.filter((_, i) => (ttls[i] as number) > elapsed).sort();
      expect(await alive(), `after ${elapsed} s`).toEqual(expected);
      expect((await ok(rest, RPC.ingestStats, { run_id: run }, alice))["total_ingested"]).toBe(expected.length);
    }
  });
});

describe("an expired entry", () => {
  const run = "ephemeral";
  let expiring: string;
  let expired: string[];
  let checkpoint: string;

  beforeAll(async () => {
    // Three entries that expire and three that stay, all about the same thing, so that a top-3 query must reach past
    // the expired ones to still find three live entries.
    const expiringIds = await ingestAndWait(rest, alice, run, [
      { text: "Zebra migration plan: move the zebra herd database first.", ttl_seconds: 600 },
      { text: "Zebra migration plan: move the zebra cache second.", ttl_seconds: 600 },
      { text: "Zebra migration plan: move the zebra queue third.", ttl_seconds: 600 },
      { text: "Quokka the unique mascot lives in the lobby.", ttl_seconds: 600, entry_type: "working_memory" },
    ]);
    expiring = expiringIds[3]!;
    expired = expiringIds;
    await ingestAndWait(rest, alice, run, [
      { text: "Zebra migration notes: the zebra herd needs a window." },
      { text: "Zebra migration notes: the zebra cache is small." },
      { text: "Zebra migration notes: the zebra queue drains fast." },
    ]);
    const made = await ok(rest, RPC.checkpoint, { run_id: run, context_snapshot: "Summary of the zebra plan.", source_entry_ids: [expiringIds[0]!] }, alice);
    checkpoint = String(made["checkpoint_id"] ?? made["reference_id"] ?? "");
    expect((await activity(alice, run)).length).toBe(8);
    advance(601);
  });

  it("is gone from query, recall and context at once, and the vector search still fills the top k", async () => {
    expect(await queryIds(alice, run, "Quokka unique mascot lobby")).not.toContain(expiring);
    const top3 = await queryIds(alice, run, "zebra migration plan move", 3);
    expect(top3).toHaveLength(3);
    for (const id of expired) expect(top3).not.toContain(id);
    const recalled = await ok(rest, RPC.recall, { session_id: run, query: "Quokka mascot" }, alice);
    expect(idsOf(evidenceOf(recalled))).not.toContain(expiring);
    const context = await ok(rest, RPC.context, { run_id: run, query: "Quokka mascot zebra", include_working_memory: true }, alice);
    const sources = (context["sources"] as JsonObject[]).map((s) => String(s["id"]));
    expect(sources).not.toContain(expiring);
    expect(String(context["context_block"])).not.toContain("Quokka");
    expect(String(context["context_block"])).not.toContain("move the zebra");
  });

  it("is gone from activity, export, dereference and every count", async () => {
    const listed = await activity(alice, run);
    expect(listed.map((e) => e["id"])).not.toContain(expiring);
    expect(listed.length).toBe(4);
    expect((await ok(rest, ACTIVITY, { run_id: run, limit: 2 }, alice))["total_visible"]).toBe(4);
    const exported = await ok(rest, EXPORT, { run_id: run }, alice);
    expect(exported["entry_count"]).toBe(4);
    expect(String(exported["content"])).not.toContain("Quokka");
    expect(await ok(rest, RPC.dereference, { run_id: run, reference_id: expiring }, alice)).toMatchObject({ found: false });
    const health = await ok(rest, RPC.memoryHealth, { run_id: run }, alice);
    expect(health["entries_inspected"]).toBe(4);
    expect(health["entry_counts"]).not.toHaveProperty("working_memory");
    const stats = await ok(rest, RPC.ingestStats, { run_id: run }, alice);
    expect(stats["total_ingested"]).toBe(4);
    expect((await runListed(alice, run))?.["entry_count"]).toBe(4);
  });

  it("is purged by the sweep, and what was derived from it awaits review", async () => {
    const removed = await server.engram.testHooks.expirySweep();
    expect(removed).toBeGreaterThanOrEqual(4);
    expect(await server.engram.testHooks.expirySweep()).toBe(0);
    expect(await ok(rest, RPC.dereference, { run_id: run, reference_id: expiring }, alice)).toMatchObject({ found: false });
    const derived = (await activity(alice, run)).find((e) => e["entry_type"] === "checkpoint");
    expect(derived, checkpoint).toMatchObject({ lineage_review: "source_deleted" });
    expect(await queryIds(alice, run, "zebra migration plan move", 3)).toHaveLength(3);
  });
});

describe("thousands of entries expiring at one instant", () => {
  const run = "mass";
  const LIVE = 40;
  const expiringIds = new Set<string>();
  const liveIds: string[] = [];

  /**
   * Everything a caller can read of the run. Lists and counts read the same before and after the purge, since expiry
   * already hid it all; ranked results (`ranked`) may order differently once the purge drops the expired entries' terms
   * from the lexical index's document frequencies.
   */
  async function surfaces(key: string): Promise<{ ranked: Record<string, string[]>; listed: Record<string, unknown> }> {
    const listed = await activity(key, run);
    const exported = await ok(rest, EXPORT, { run_id: run }, key);
    const health = await ok(rest, RPC.memoryHealth, { run_id: run }, key);
    const evidence = evidenceOf(await ok(rest, RPC.query, { run_id: run, query: "pelican harbour crane schedule", limit: 100 }, key));
    const recalled = evidenceOf(await ok(rest, RPC.recall, { session_id: run, query: "pelican harbour crane", limit: 100 }, key));
    const context = await ok(rest, RPC.context, { run_id: run, query: "pelican harbour crane schedule" }, key);
    const lessons = (await ok(rest, "engram.v2.LearningService/ListLessons", { run_id: run }, key))["lessons"] as JsonObject[];
    const listing = await runListed(key, run);
    const ranked = { query: idsOf(evidence), recall: idsOf(recalled), context: (context["sources"] as JsonObject[]).map((s) => String(s["id"])) };
    return {
      ranked,
      listed: {
        activity: listed.map((e) => String(e["id"])).sort(),
        totalVisible: (await ok(rest, ACTIVITY, { run_id: run, limit: 1 }, key))["total_visible"],
        exported: exported["entry_count"],
        exportedIds: String(exported["content"]).split("\n").filter((l) => l !== "").map((l) => String((JSON.parse(l) as JsonObject)["id"])).sort(),
        health: [health["entries_inspected"], health["entry_counts"]],
        ingested: (await ok(rest, RPC.ingestStats, { run_id: run }, key))["total_ingested"],
        lessons: idsOf(lessons).sort(),
        listing: listing === undefined ? undefined : [listing["entry_count"], listing["entry_counts"], [...(listing["agent_ids"] as string[])].sort()],
      },
    };
  }

  /** Ranked results hold live entries only, and some. */
  function expectLive(ranked: Record<string, string[]>): void {
    for (const [name, ids] of Object.entries(ranked)) {
      expect(ids.length, name).toBeGreaterThan(0);
      expect(ids.filter((id) => expiringIds.has(id)), name).toEqual([]);
    }
  }

  it("hides them from every read and count at once, and the purge then changes nothing anyone reads", async () => {
    const words = ["pelican", "harbour", "crane", "schedule"];
    const text = (i: number, kind: string): string => `${kind} note ${i}: the ${words[i % 4]} ${words[(i + 1) % 4]} ${words[(i + 2) % 4]} shift ${i}.`;
    // Two batches of 1,000 sharing a TTL each (one expiry time per batch, as a bulk load gives), rules among them,
    // and lessons written through ingest.
    for (const batch of [0, 1]) {
      const items = Array.from({ length: 1000 }, (_, i) => ({ text: text(batch * 1000 + i, "expiring"), ttl_seconds: 300, entry_type: i % 10 === 0 ? "rule" : i % 3 === 0 ? "trace" : "fact" }));
      const written = await ok(rest, RPC.batchInsert, { run_id: run, items, agent_id: "short-lived", consolidate: false }, alice);
      expect((written["item_results"] as JsonObject[]).filter((r) => r["success"] !== true).slice(0, 2)).toEqual([]);
      for (const id of written["entry_ids"] as string[]) expiringIds.add(id);
    }
    const lessons = Array.from({ length: 60 }, (_, i) => ({ text: text(i, "lesson"), entry_type: "lesson", ...(i < 50 ? { ttl_seconds: 300 } : {}) }));
    const lessonIds = await ingestAndWait(rest, alice, run, lessons);
    lessonIds.slice(0, 50).forEach((id) => expiringIds.add(id));
    liveIds.push(...lessonIds.slice(50));
    const kept = await ok(rest, RPC.batchInsert, {
      run_id: run,
      items: Array.from({ length: LIVE }, (_, i) => ({ text: text(i, "kept"), entry_type: i % 8 === 0 ? "rule" : "fact" })),
      agent_id: "keeper",
      consolidate: false,
    }, alice);
    liveIds.push(...(kept["entry_ids"] as string[]));
    // Bob's entries in a run of the same name: his counts and results are his own throughout.
    await ok(rest, RPC.batchInsert, { run_id: run, items: Array.from({ length: 300 }, (_, i) => ({ text: text(i, "bob's expiring"), ttl_seconds: 300 })), agent_id: "bob", consolidate: false }, bob);
    await ok(rest, RPC.batchInsert, { run_id: run, items: Array.from({ length: 10 }, (_, i) => ({ text: text(i, "bob's kept") })), agent_id: "bob", consolidate: false }, bob);
    expect(expiringIds.size).toBe(2050);
    expect((await ok(rest, ACTIVITY, { run_id: run, limit: 1 }, alice))["total_visible"]).toBe(2050 + LIVE + 10);

    advance(301);
    const { ranked, listed: hidden } = await surfaces(alice);
    expectLive(ranked);
    expect(hidden["activity"]).toEqual([...liveIds].sort());
    expect(hidden["exportedIds"]).toEqual([...liveIds].sort());
    const counts = { fact: 35, rule: 5, lesson: 10 };
    expect(hidden).toMatchObject({ totalVisible: LIVE + 10, exported: LIVE + 10, ingested: LIVE + 10, health: [LIVE + 10, counts], listing: [LIVE + 10, counts, ["keeper"]] });
    // Lessons and rules: the ten kept lessons and the kept batch's rules (every eighth item).
    const keptRules = (kept["entry_ids"] as string[]).filter((_, i) => i % 8 === 0);
    expect(hidden["lessons"]).toEqual([...lessonIds.slice(50), ...keptRules].sort());
    const bobs = await surfaces(bob);
    expect(bobs.listed).toMatchObject({ totalVisible: 10, exported: 10, ingested: 10, listing: [10, { fact: 10 }, ["bob"]] });
    expect(bobs.ranked["query"]).toHaveLength(10);

    expect(await server.engram.testHooks.expirySweep()).toBe(2350);
    const purged = await surfaces(alice);
    expectLive(purged.ranked);
    expect(purged.listed).toEqual(hidden);
    expect((await surfaces(bob)).listed).toEqual(bobs.listed);
  });
});

describe("expired knowledge", () => {
  it("leaves the context's rules and lessons, the lessons listing and the tenant export", async () => {
    const run = "knowledge";
    const [rule, lesson] = await ingestAndWait(rest, alice, run, [
      { text: "Always pin the walrus provider version.", entry_type: "rule", ttl_seconds: 120 },
      { text: "Walrus upgrades broke the build last time.", entry_type: "lesson", ttl_seconds: 120 },
    ]);
    const contextIds = async (): Promise<string[]> =>
      ((await ok(rest, RPC.context, { run_id: run, query: "walrus provider upgrade" }, alice))["sources"] as JsonObject[]).map((x) => String(x["id"]));
    const lessonIds = async (): Promise<string[]> =>
      ((await ok(rest, "engram.v2.LearningService/ListLessons", { run_id: run }, alice))["lessons"] as JsonObject[]).map((x) => String(x["id"]));
    const exported = async (): Promise<string> => {
      const lines: string[] = [];
      let token = "";
      do {
        const page = await ok(rest, "engram.v2.TenantService/ExportTenant", { page_token: token, limit: 1000 }, alice);
        lines.push(...(page["lines"] as string[]));
        token = String(page["next_page_token"] ?? "");
      } while (token !== "");
      return lines.join("\n");
    };
    expect(await contextIds()).toEqual(expect.arrayContaining([rule, lesson]));
    expect(await lessonIds()).toContain(lesson);
    expect(await exported()).toContain("walrus provider");
    advance(121);
    expect(await contextIds()).not.toContain(rule);
    expect(await contextIds()).not.toContain(lesson);
    expect(await lessonIds()).not.toContain(lesson);
    expect(await exported()).not.toContain("alrus");
  });
});

describe("retention policies", () => {
  it("hide old traces but keep facts, for existing entries too, and never reach another owner", async () => {
    const run = "retained";
    const [trace, fact] = await ingestAndWait(rest, alice, run, [
      { text: "Ran the flaky integration suite twice.", entry_type: "trace" },
      { text: "The integration suite needs the fixtures bucket.", entry_type: "fact" },
    ]);
    const [bobsTrace] = await ingestAndWait(rest, bob, run, [{ text: "Bob ran the flaky integration suite.", entry_type: "trace" }]);
    advance(2 * DAY_S);
    // Bob keeps traces a day: his policy leaves Alice's entries alone.
    await ok(rest, RETENTION.set, { policy: { rules: [{ entry_type: "trace", max_age_seconds: DAY_S }] } }, bob);
    expect((await activity(alice, run)).map((e) => e["id"]).sort()).toEqual([trace, fact].sort());
    expect((await activity(bob, run)).map((e) => e["id"])).not.toContain(bobsTrace);

    const set = await ok(rest, RETENTION.set, { policy: { rules: [{ entry_type: "trace", max_age_seconds: DAY_S }, { entry_type: "working_memory", max_age_seconds: 3600 }] } }, alice);
    expect((set["policy"] as JsonObject)["rules"]).toHaveLength(2);
    expect((await activity(alice, run)).map((e) => e["id"])).toEqual([fact]);
    expect(await queryIds(alice, run, "flaky integration suite")).not.toContain(trace);
    expect((await runListed(alice, run))?.["entry_counts"]).toEqual({ fact: 1 });

    // New traces live a day; expires_at shows the policy's limit.
    const [fresh] = await ingestAndWait(rest, alice, run, [{ text: "Ran the suite a third time.", entry_type: "trace" }]);
    const shown = (await activity(alice, run)).find((e) => e["id"] === fresh);
    expect(Date.parse(String(shown?.["expires_at"]))).toBe(now + DAY_S * 1000);
    expect(await server.engram.testHooks.expirySweep()).toBeGreaterThanOrEqual(2);
    expect(await ok(rest, RETENTION.clear, {}, alice)).toMatchObject({ cleared: true });
    expect(await ok(rest, RETENTION.clear, {}, alice)).toMatchObject({ cleared: false });
    expect(await ok(rest, RETENTION.get, {}, alice)).not.toHaveProperty("policy");
    // Clearing does not bring back what expired.
    expect((await activity(alice, run)).map((e) => e["id"]).sort()).toEqual([fact, fresh].sort());
    await ok(rest, RETENTION.clear, {}, bob);
  });

  it("of a run win over the owner's, show on the run, and are validated", async () => {
    const run = "run-policy";
    await ingestAndWait(rest, alice, run, [{ text: "Short-lived fact of the run.", entry_type: "fact" }]);
    await ingestAndWait(rest, alice, "other-run", [{ text: "A fact of another run.", entry_type: "fact" }]);
    await ok(rest, RETENTION.set, { run_id: run, policy: { rules: [{ entry_type: "fact", max_age_seconds: 3600 }] } }, alice);
    const listed = await runListed(alice, run);
    expect(listed?.["retention"]).toMatchObject({ rules: [{ entry_type: "fact", max_age_seconds: "3600" }] });
    expect((await runListed(alice, "other-run"))?.["retention"]).toBeUndefined();
    expect(await ok(rest, RETENTION.get, { run_id: run }, alice)).toMatchObject({ policy: { rules: [{ entry_type: "fact" }] } });
    expect(await ok(rest, RETENTION.get, { run_id: run }, bob)).not.toHaveProperty("policy");
    advance(3601);
    expect(await contents(alice, run)).toEqual([]);
    expect(await contents(alice, "other-run")).toEqual(["A fact of another run."]);

    expectInvalid(await rest.call(RETENTION.set, { run_id: run, project_id: "prj_1", policy: { rules: [{ entry_type: "fact", max_age_seconds: 1 }] } }, alice), "project_id");
    expectInvalid(await rest.call(RETENTION.set, { policy: { rules: [] } }, alice), "policy.rules");
    expectInvalid(await rest.call(RETENTION.set, { policy: { rules: [{ entry_type: "memo", max_age_seconds: 1 }] } }, alice), "policy.rules[0].entry_type");
    expectInvalid(await rest.call(RETENTION.set, { policy: { rules: [{ entry_type: "fact", max_age_seconds: 0 }] } }, alice), "policy.rules[0].max_age_seconds");
    expectInvalid(
      await rest.call(RETENTION.set, { policy: { rules: [{ entry_type: "fact", max_age_seconds: 5 }, { entry_type: "fact", max_age_seconds: 6 }] } }, alice),
      "policy.rules[1].entry_type",
    );
    expectCode(await rest.call(RETENTION.set, { project_id: "prj_zz", policy: { rules: [{ entry_type: "fact", max_age_seconds: 5 }] } }, alice), "not_found", 404);

    // Deleting the run deletes its policy: a new run of the same id keeps its facts.
    const deleted = await ok(rest, "engram.v2.RunsService/DeleteRun", { run_id: run }, alice);
    expect((deleted["erased"] as JsonObject)["retention_policies"]).toBe(1);
    expect(await ok(rest, RETENTION.get, { run_id: run }, alice)).not.toHaveProperty("policy");
    await ingestAndWait(rest, alice, run, [{ text: "A fact of the run's second life.", entry_type: "fact" }]);
    advance(3601);
    expect(await contents(alice, run)).toEqual(["A fact of the run's second life."]);
  });

  it("of a project apply to the runs whose control session names the project, under the run's own", async () => {
    const created = await ok(rest, "engram.v2.ResourcesService/CreateProject", { name: "retention-project" }, alice);
    const projectId = String((created["project"] as JsonObject)["project_id"]);
    await ok(rest, "engram.v2.SessionsService/CreateControlSession", { run_id: "in-project", project_id: projectId }, alice);
    await ingestAndWait(rest, alice, "in-project", [{ text: "Project trace.", entry_type: "trace" }, { text: "Project fact.", entry_type: "fact" }]);
    await ingestAndWait(rest, alice, "outside-project", [{ text: "Outside trace.", entry_type: "trace" }]);
    await ok(rest, RETENTION.set, { project_id: projectId, policy: { rules: [{ entry_type: "trace", max_age_seconds: 60 }] } }, alice);
    expect(await ok(rest, RETENTION.get, { project_id: projectId }, alice)).toMatchObject({ policy: { rules: [{ entry_type: "trace" }] } });
    advance(61);
    expect(await contents(alice, "in-project")).toEqual(["Project fact."]);
    expect(await contents(alice, "outside-project")).toEqual(["Outside trace."]);
    // A run joining the project later: its existing traces fall under the project's policy at once.
    await ingestAndWait(rest, alice, "joins-later", [{ text: "Late trace.", entry_type: "trace" }]);
    advance(61);
    expect(await contents(alice, "joins-later")).toEqual(["Late trace."]);
    await ok(rest, "engram.v2.SessionsService/CreateControlSession", { run_id: "joins-later", project_id: projectId }, alice);
    expect(await contents(alice, "joins-later")).toEqual([]);
    expect(await ok(rest, RETENTION.clear, { project_id: projectId }, alice)).toMatchObject({ cleared: true });
  });

  it("work over gRPC and Connect, and a TTL written over Connect expires", async () => {
    for (const transport of ["grpc", "connect"] as const) {
      const c = callerFor(transport, server.baseUrl, server.port);
      try {
        const run = `over-${transport}`;
        const written = await ok(c, RPC.remember, { session_id: run, content: `Expiring over ${transport}.`, ttl_seconds: 30 }, alice);
        await ok(c, RETENTION.set, { run_id: run, policy: { rules: [{ entry_type: "trace", max_age_seconds: 10 }] } }, alice);
        expect(await ok(c, RETENTION.get, { run_id: run }, alice)).toMatchObject({ policy: { rules: [{ entry_type: "trace" }] } });
        expect((await activity(alice, run)).map((e) => e["id"])).toEqual([written["entry_id"]]);
        advance(31);
        const evidence = evidenceOf(await ok(c, RPC.query, { run_id: run, query: `Expiring over ${transport}` }, alice));
        expect(idsOf(evidence)).not.toContain(written["entry_id"]);
        expectInvalid(await c.call(RETENTION.set, { run_id: run, policy: { rules: [{ entry_type: "trace", max_age_seconds: -1 }] } }, alice), "policy.rules[0].max_age_seconds");
      } finally {
        c.close();
      }
    }
  });
});

describe("after a restart", () => {
  it("an expired entry not purged yet stays invisible, a run's policy still applies, and the sweep then purges", async () => {
    const run = "restarted";
    const [short, long] = await ingestAndWait(rest, alice, run, [
      { text: "Expires before the restart.", ttl_seconds: 100 },
      { text: "Outlives the restart but not the policy.", entry_type: "trace" },
    ]);
    await ok(rest, RETENTION.set, { run_id: run, policy: { rules: [{ entry_type: "trace", max_age_seconds: 500 }] } }, alice);
    advance(101);
    expect((await activity(alice, run)).map((e) => e["id"])).toEqual([long]);
    await restart();
    expect((await activity(alice, run)).map((e) => e["id"])).toEqual([long]);
    expect(await ok(rest, RPC.dereference, { run_id: run, reference_id: short! }, alice)).toMatchObject({ found: false });
    advance(400);
    expect(await activity(alice, run)).toEqual([]);
    expect(await ok(rest, RETENTION.get, { run_id: run }, alice)).toMatchObject({ policy: { rules: [{ entry_type: "trace", max_age_seconds: "500" }] } });
    expect(await server.engram.testHooks.expirySweep()).toBeGreaterThanOrEqual(2);
    expect(await server.engram.testHooks.expirySweep()).toBe(0);
  });
});

describe("the purge's events", () => {
  it("announce each purged entry to its owner as a delete does, with reason expired, and to no one else", async () => {
    const received = new Map<string, JsonObject[]>([["alice", []], ["bob", []]]);
    const wakers: (() => void)[] = [];
    const cancels: (() => void)[] = [];
    for (const [name, key] of [["alice", alice], ["bob", bob]] as const) {
      const stream = grpcStream(server.port, "engram.v2.EventsService/Subscribe", {}, key);
      stream.on("data", (event: JsonObject) => {
        received.get(name)?.push(event);
        for (const wake of wakers.splice(0)) wake();
      });
      stream.on("error", () => undefined);
      cancels.push(() => stream.cancel());
    }
    const until = async (name: string, match: (e: JsonObject) => boolean): Promise<void> => {
      while (!(received.get(name) ?? []).some(match)) await new Promise<void>((resolve) => wakers.push(resolve));
    };
    try {
      await until("alice", (e) => e["type"] === "subscribed");
      await until("bob", (e) => e["type"] === "subscribed");
      const [fact, lesson] = await ingestAndWait(rest, alice, "evented", [
        { text: "A fact that expires.", ttl_seconds: 5 },
        { text: "A lesson that expires.", entry_type: "lesson", ttl_seconds: 5 },
      ]);
      advance(6);
      expect(await server.engram.testHooks.expirySweep()).toBe(2);
      await until("alice", (e) => e["type"] === "lesson.deleted");
      const deleted = (received.get("alice") ?? []).filter((e) => e["type"] === "entry.deleted" || e["type"] === "lesson.deleted");
      expect(deleted.map((e) => [e["type"], JSON.parse(String(e["payload"]))["entry_id"], JSON.parse(String(e["payload"]))["reason"]]).sort()).toEqual(
        [["entry.deleted", fact, "expired"], ["lesson.deleted", lesson, "expired"]].sort(),
      );
      await ok(rest, RPC.remember, { session_id: "bob-marker", content: "marker" }, bob);
      await until("bob", (e) => e["run_id"] === "bob-marker");
      expect((received.get("bob") ?? []).filter((e) => e["type"] !== "subscribed").every((e) => e["run_id"] === "bob-marker")).toBe(true);
    } finally {
      for (const cancel of cancels) cancel();
    }
  });
});
