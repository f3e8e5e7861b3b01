// Consolidation and forget: near-duplicate facts of one scope become one entry whose absorbed ids keep resolving;
// facts that differ by an identifier, a negation, a run, a user or an owner stay apart; upsert chains are shown; and
// Forget erases a subject of one owner exactly as previewed, with a receipt, leaving every other owner untouched.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, tempDataDir, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { TRANSPORTS, callerFor, restCaller, type Caller, type JsonObject } from "./harness/callers.js";
import { RPC, expectCode, expectInvalid, ok } from "./harness/memory.js";

const LIST_ACTIVITY = "engram.v2.MemoryService/ListActivity";
const FORGET = "engram.v2.MemoryService/Forget";
const LIST_RUNS = "engram.v2.RunsService/ListRuns";

let server: TestServer;
let rest: Caller;

beforeAll(async () => {
  server = await startTestServer();
  rest = restCaller(server.baseUrl);
});
afterAll(async () => server.close());

async function remember(c: Caller, key: string, run: string, content: string, extra: JsonObject = {}): Promise<string> {
  const r = await ok(c, RPC.remember, { session_id: run, content, ...extra }, key);
  return String(r["entry_id"]);
}

async function activity(key: string, run: string): Promise<JsonObject[]> {
  const r = await ok(rest, LIST_ACTIVITY, { run_id: run, limit: 100 }, key);
  return (r["entries"] ?? []) as JsonObject[];
}

async function factIds(key: string, run: string): Promise<string[]> {
  return (await activity(key, run)).filter((e) => e["entry_type"] === "fact").map((e) => String(e["id"]));
}

async function queryIds(c: Caller, key: string, run: string, query: string): Promise<string[]> {
  const r = await ok(c, RPC.query, { run_id: run, query }, key);
  return ((r["evidence"] ?? []) as JsonObject[]).map((e) => String(e["id"]));
}

describe.each(TRANSPORTS)("consolidation over %s", (transport) => {
  it("merges a repeated fact into the entry already there, and the absorbed id resolves to it", async () => {
    const c = callerFor(transport, server.baseUrl, server.port);
    const key = await createUser(server.baseUrl, server.adminKey, `merge-${transport}`);
    const run = "merge-run";
    const first = await remember(c, key, run, "The staging database listens on port 5432 at db.internal");
    const second = await remember(c, key, run, "The staging database listens on port 5432 at db.internal.");
    expect(second).not.toBe(first);

    expect(await factIds(key, run)).toEqual([first]);
    expect(await queryIds(c, key, run, "staging database port")).toEqual([first]);
    const [kept] = await activity(key, run);
    expect(kept?.["absorbed_ids"]).toEqual([second]);

    const resolved = await ok(c, RPC.dereference, { reference_id: second }, key);
    expect(resolved["found"]).toBe(true);
    const evidence = resolved["evidence"] as JsonObject;
    expect(evidence["id"]).toBe(first);
    expect(evidence["absorbed_ids"]).toEqual([second]);
  });
});

describe("near-duplicates", () => {
  it("keeps the more complete wording and moves lineage to it: a checkpoint naming the absorbed id still resolves", async () => {
    const key = await createUser(server.baseUrl, server.adminKey, "merge-lineage");
    const run = "lineage-run";
    const short = await remember(rest, key, run, "The release branch is cut from main every Tuesday at 10:00 UTC");
    const checkpoint = await ok(rest, RPC.checkpoint, { run_id: run, context_snapshot: "before the release", source_entry_ids: [short] }, key);
    const longer = await remember(rest, key, run, "The release branch is always cut from main every Tuesday at 10:00 UTC");

    expect(await factIds(key, run)).toEqual([longer]);
    const resolved = await ok(rest, RPC.dereference, { reference_id: short }, key);
    expect((resolved["evidence"] as JsonObject)["id"]).toBe(longer);
    expect(resolved["content"]).toBe("The release branch is always cut from main every Tuesday at 10:00 UTC");

    const stored = (await activity(key, run)).find((e) => e["entry_type"] === "checkpoint");
    expect(stored?.["reference_id"]).toBe(checkpoint["checkpoint_id"]);
    expect(stored?.["source_entry_ids"]).toEqual([short]);
    // Merged, not deleted: the checkpoint is not sent for review, and its source id still names the fact.
    expect(stored?.["lineage_review"]).toBe("");
    const source = await ok(rest, RPC.dereference, { reference_id: String((stored?.["source_entry_ids"] as string[])[0]) }, key);
    expect((source["evidence"] as JsonObject)["id"]).toBe(longer);

    // A new checkpoint may name the absorbed id: it records the kept one.
    const later = await ok(rest, RPC.checkpoint, { run_id: run, context_snapshot: "after the release", source_entry_ids: [short] }, key);
    const laterEntry = (await activity(key, run)).find((e) => e["reference_id"] === later["checkpoint_id"]);
    expect(laterEntry?.["source_entry_ids"]).toEqual([longer]);
  });

  it("never merges facts that differ by an identifier, a negation or a number", async () => {
    const key = await createUser(server.baseUrl, server.adminKey, "merge-identifiers");
    const run = "identifier-run";
    const pairs: [string, string][] = [
      ["The staging database listens on port 5432 at db.internal", "The staging database listens on port 5433 at db.internal"],
      ["The failing build was introduced by commit 9f3c2a1e in the payments service", "The failing build was introduced by commit 9f3c2a1f in the payments service"],
      ["The worker writes its logs to /var/log/engram/worker.log on every host", "The worker writes its logs to /var/log/engram/worker2.log on every host"],
      ["The nightly export job for the finance ledger should run on weekends as well", "The nightly export job for the finance ledger should not run on weekends as well"],
      ["Requests to the billing API time out after 30 seconds under load", "Requests to the billing API time out after 300 seconds under load"],
      ["Set FEATURE_FLAG_CHECKOUT=true in the deploy config of the web tier", "Set FEATURE_FLAG_CHECKOUT=false in the deploy config of the web tier"],
    ];
    // A long shared tail: word overlap and vectors alone would call each pair the same fact.
    const tail = ", as the runbook the platform team published last quarter says for every production service";
    const written: string[] = [];
    for (const [a, b] of pairs) written.push(await remember(rest, key, run, a + tail), await remember(rest, key, run, b + tail));
    expect((await factIds(key, run)).sort()).toEqual([...written].sort());
    for (const entry of await activity(key, run)) expect(entry["absorbed_ids"] ?? []).toEqual([]);
  });

  it("never merges across runs, users, lanes or owners", async () => {
    const alice = await createUser(server.baseUrl, server.adminKey, "merge-alice");
    const bob = await createUser(server.baseUrl, server.adminKey, "merge-bob");
    const text = "The cache warms up in about ninety seconds after a deploy";
    const a1 = await remember(rest, alice, "scope-a", text);
    const a2 = await remember(rest, alice, "scope-b", text);
    const a3 = await remember(rest, alice, "scope-a", text, { user_id: "someone-else" });
    const b1 = await remember(rest, bob, "scope-a", text);
    const batch = await ok(rest, RPC.batchInsert, { run_id: "scope-a", items: [{ text, entry_type: "fact", lane: "ops" }] }, alice);
    const laned = String((batch["entry_ids"] as string[])[0]);
    expect(await factIds(alice, "scope-a")).toEqual(expect.arrayContaining([a1, a3]));
    expect(await factIds(alice, "scope-a")).toHaveLength(3);
    expect(await factIds(alice, "scope-b")).toEqual([a2]);
    expect(await factIds(bob, "scope-a")).toEqual([b1]);
    expect(await factIds(alice, "scope-a")).toContain(laned);
    // Bob cannot reach Alice's entries through an id, absorbed or not.
    const foreign = await ok(rest, RPC.dereference, { reference_id: a1 }, bob);
    expect(foreign["found"]).toBe(false);
  });

  it("shows the ids an entry superseded through its upsert key, newest first", async () => {
    const key = await createUser(server.baseUrl, server.adminKey, "supersedes");
    const run = "upsert-run";
    const ids: string[] = [];
    // Archive blocks of one family replace each other through their upsert key.
    for (const version of ["1.0", "1.1", "1.2"]) {
      await ok(rest, RPC.archive, { run_id: run, content: `The current release is ${version}`, family: "release" }, key);
    }
    ids.push(...(await activity(key, run)).map((e) => String(e["id"])).sort((a, b) => parseInt(a.slice(4), 36) - parseInt(b.slice(4), 36)));
    const entries = await activity(key, run);
    const newest = entries.find((e) => e["id"] === ids[2]);
    expect(newest?.["supersedes"]).toEqual([ids[1], ids[0]]);
    expect(entries.find((e) => e["id"] === ids[1])?.["superseded_by"]).toBe(ids[2]);
    const evidence = ((await ok(rest, RPC.query, { run_id: run, query: "current release" }, key))["evidence"] ?? []) as JsonObject[];
    expect(evidence.find((e) => e["id"] === ids[2])?.["supersedes"]).toEqual([ids[1], ids[0]]);
  });
});

describe("consolidate: false", () => {
  it("keeps a batch's repeated facts as written", async () => {
    const key = await createUser(server.baseUrl, server.adminKey, "merge-opt-out");
    const text = "The search index is rebuilt nightly from the primary replica";
    const batch = await ok(rest, RPC.batchInsert, { run_id: "opt-out", consolidate: false, items: [{ text }, { text }] }, key);
    expect((await factIds(key, "opt-out")).sort()).toEqual([...(batch["entry_ids"] as string[])].sort());
    const merged = await ok(rest, RPC.batchInsert, { run_id: "opt-in", items: [{ text }, { text }] }, key);
    expect(await factIds(key, "opt-in")).toEqual([(merged["entry_ids"] as string[])[0]]);
  });
});

describe("SERVICE_CONSOLIDATION=off, then the background pass", () => {
  it("keeps repeated facts as written; SERVICE_CONSOLIDATION_SWEEP merges them at the next start", async () => {
    const dataDir = tempDataDir();
    const off = await startTestServer({ SERVICE_CONSOLIDATION: "off" }, dataDir);
    const adminKey = off.adminKey;
    let a = "";
    let b = "";
    let key = "";
    try {
      const c = restCaller(off.baseUrl);
      key = await createUser(off.baseUrl, off.adminKey, "no-merge");
      a = await remember(c, key, "r", "The queue drains every five minutes");
      b = await remember(c, key, "r", "The queue drains every five minutes");
      await remember(c, key, "r", "The queue drains every six minutes");
      const listed = await ok(c, LIST_ACTIVITY, { run_id: "r", limit: 10 }, key);
      expect(((listed["entries"] ?? []) as JsonObject[]).map((e) => e["id"])).toEqual(expect.arrayContaining([a, b]));
    } finally {
      await off.close();
    }
    const swept = await startTestServer({ SERVICE_CONSOLIDATION_SWEEP: "on", SERVICE_ADMIN_KEY: adminKey }, dataDir);
    try {
      await swept.engram.testHooks.backgroundIdle();
      const c = restCaller(swept.baseUrl);
      const listed = ((await ok(c, LIST_ACTIVITY, { run_id: "r", limit: 10 }, key))["entries"] ?? []) as JsonObject[];
      expect(listed).toHaveLength(2);
      expect(listed.find((e) => e["id"] === a)?.["absorbed_ids"]).toEqual([b]);
      const resolved = await ok(c, RPC.dereference, { reference_id: b }, key);
      expect((resolved["evidence"] as JsonObject)["id"]).toBe(a);
    } finally {
      await swept.close();
    }
  });
});

async function forget(c: Caller, key: string, request: JsonObject): Promise<JsonObject> {
  return ok(c, FORGET, request, key);
}

async function runCount(key: string, run: string): Promise<number> {
  const r = await ok(rest, LIST_RUNS, {}, key);
  const found = ((r["runs"] ?? []) as JsonObject[]).find((s) => s["run_id"] === run);
  return Number(found?.["entry_count"] ?? 0);
}

describe.each(TRANSPORTS)("forget over %s", (transport) => {
  it("previews, erases exactly what was previewed with a receipt, and leaves another owner's identical text", async () => {
    const c = callerFor(transport, server.baseUrl, server.port);
    const alice = await createUser(server.baseUrl, server.adminKey, `forget-alice-${transport}`);
    const bob = await createUser(server.baseUrl, server.adminKey, `forget-bob-${transport}`);
    const secret = "Customer Jane Roe lives at 12 Elm Street";
    await remember(c, alice, "forget-1", secret);
    await remember(c, alice, "forget-2", "Jane Roe prefers email over phone calls");
    await remember(c, alice, "forget-1", "The deploy window opens at 09:00");
    await remember(c, bob, "forget-1", secret);

    const preview = await forget(c, alice, { query: "Jane Roe" });
    expect(preview["dry_run"]).toBe(true);
    expect(preview["matched"]).toBe(2);
    const sample = (preview["sample"] ?? []) as JsonObject[];
    expect(sample.map((s) => s["run_id"]).sort()).toEqual(["forget-1", "forget-2"]);
    expect(sample.some((s) => String(s["snippet"]).includes("Elm Street"))).toBe(true);
    expect(preview["erased"] ?? {}).toEqual({});
    // A preview erases nothing.
    expect(await runCount(alice, "forget-1")).toBe(2);

    const erased = await forget(c, alice, { query: "Jane Roe", dry_run: false, preview_token: preview["preview_token"] as string });
    expect(erased["dry_run"] ?? false).toBe(false);
    expect(erased["matched"]).toBe(2);
    expect(erased["erased"]).toEqual({ entries: 2, fact: 2 });
    expect(String(erased["receipt_id"])).toMatch(/^fgt_/);
    expect(Number.isNaN(Date.parse(String(erased["erased_at"])))).toBe(false);

    expect(await queryIds(c, alice, "forget-1", "Jane Roe Elm Street")).not.toContain(expect.anything());
    expect((await activity(alice, "forget-1")).map((e) => e["content"])).toEqual(["The deploy window opens at 09:00"]);
    expect(await activity(alice, "forget-2")).toEqual([]);
    expect(await runCount(alice, "forget-1")).toBe(1);
    expect((await forget(c, alice, { query: "Jane Roe" }))["matched"] ?? 0).toBe(0);

    // Bob's identical text is untouched, and Alice's forget never counted it.
    expect((await activity(bob, "forget-1")).map((e) => e["content"])).toEqual([secret]);
    expect((await forget(c, bob, { query: "Jane Roe" }))["matched"]).toBe(1);
  });

  it("refuses an erasure whose preview no longer matches memory, erasing nothing", async () => {
    const c = callerFor(transport, server.baseUrl, server.port);
    const key = await createUser(server.baseUrl, server.adminKey, `forget-stale-${transport}`);
    await remember(c, key, "stale", "Project Falcon ships in March");
    const preview = await forget(c, key, { query: "falcon" });
    expect(preview["matched"]).toBe(1);
    await remember(c, key, "stale", "Project Falcon needs two more reviewers");
    const refused = await c.call(FORGET, { query: "falcon", dry_run: false, preview_token: preview["preview_token"] as string }, key);
    expectCode(refused, "aborted", 409);
    expect(await factIds(key, "stale")).toHaveLength(2);
  });
});

describe("forget", () => {
  it("limits by runs and entry types, and validates its input", async () => {
    const key = await createUser(server.baseUrl, server.adminKey, "forget-filters");
    await remember(rest, key, "keep", "The Orion cluster runs on three nodes");
    await remember(rest, key, "drop", "The Orion cluster runs on three nodes in staging");
    await remember(rest, key, "drop", "Orion lesson: restart the nodes one at a time", { intent: "lesson" });
    const preview = await forget(rest, key, { query: "orion nodes", run_ids: ["drop"], entry_types: ["fact"] });
    expect(preview["matched"]).toBe(1);
    const erased = await forget(rest, key, { query: "orion nodes", run_ids: ["drop"], entry_types: ["fact"], dry_run: false, preview_token: preview["preview_token"] as string });
    expect(erased["erased"]).toEqual({ entries: 1, fact: 1 });
    expect(await factIds(key, "keep")).toHaveLength(1);
    expect((await activity(key, "drop")).map((e) => e["entry_type"])).toEqual(["lesson"]);
    // The token names one request's subject: another filter does not take it.
    const again = await forget(rest, key, { query: "orion nodes" });
    expectCode(await rest.call(FORGET, { query: "orion nodes", run_ids: ["keep"], dry_run: false, preview_token: again["preview_token"] as string }, key), "aborted", 409);

    expectInvalid(await rest.call(FORGET, { query: "" }, key), "query");
    expectInvalid(await rest.call(FORGET, { query: "orion", run_ids: Array.from({ length: 101 }, (_, i) => `r${i}`) }, key), "run_ids");
    expectInvalid(await rest.call(FORGET, { query: "the of and" }, key), "query");
    expectInvalid(await rest.call(FORGET, { query: "orion", entry_types: ["nope"] }, key), "entry_types");
    expectInvalid(await rest.call(FORGET, { query: "orion", dry_run: false }, key), "preview_token");
  });
});

describe("forget beyond its bound", () => {
  it("refuses a subject matching more than 10,000 entries with FAILED_PRECONDITION, erasing nothing", async () => {
    const key = await createUser(server.baseUrl, server.adminKey, "forget-broad");
    for (let batch = 0; batch < 11; batch++) {
      const items = Array.from({ length: 1000 }, (_, i) => ({ text: `Zebra sighting number ${batch * 1000 + i}`, entry_type: "fact" }));
      await ok(rest, RPC.batchInsert, { run_id: "broad", consolidate: false, items }, key);
    }
    expectCode(await rest.call(FORGET, { query: "zebra sighting" }, key), "failed_precondition", 400);
    const narrowed = await forget(rest, key, { query: "zebra sighting", entry_types: ["lesson"] });
    expect(narrowed["matched"] ?? 0).toBe(0);
    const listed = await ok(rest, LIST_ACTIVITY, { run_id: "broad", limit: 1 }, key);
    expect(listed["total_visible"]).toBe(11_000);
  });
});
