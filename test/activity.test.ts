// Activity browse, export and append over REST on a real server: limits, projection, order, time windows, filters,
// paging while entries are appended, page-token and filter errors, export lines, append, and per-user isolation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clusteredRun, startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface Reply {
  readonly status: number;
  readonly body: JsonObject;
}

interface Entry {
  readonly id: string;
  readonly run_id: string;
  readonly agent_id: string;
  readonly entry_type: string;
  readonly origin_entry_type: string;
  readonly content: string;
  readonly metadata_json: string;
  readonly created_at: string;
  readonly occurrence_time: string;
  readonly source: string;
  readonly importance: string;
  readonly derived: boolean;
  readonly is_stale: boolean;
}

interface Page {
  readonly entries: Entry[];
  readonly next_page_token: string;
  readonly total_visible: number;
}

let server: TestServer;
let alice: string;
let bob: string;

async function post(path: string, body: JsonObject, key: string): Promise<Reply> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: (text === "" ? {} : JSON.parse(text)) as JsonObject };
}

async function remember(key: string, sessionId: string, content: string, extra: JsonObject = {}): Promise<string> {
  const r = await post("/v2/control/remember", { session_id: sessionId, content, ...extra }, key);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return String(r.body["entry_id"]);
}

async function list(key: string, body: JsonObject): Promise<Page> {
  const r = await post("/v2/control/activity", body, key);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as unknown as Page;
}

async function listAll(key: string, body: JsonObject, between: () => Promise<void> = async () => {}): Promise<Entry[]> {
  const all: Entry[] = [];
  let token = "";
  for (let pages = 0; pages < 1000; pages += 1) {
    const page = await list(key, { ...body, page_token: token });
    all.push(...page.entries);
    if (page.next_page_token === "") return all;
    token = page.next_page_token;
    await between();
  }
  throw new Error("paging did not end");
}

async function expect400(path: string, body: JsonObject, field: string, key = alice): Promise<void> {
  const r = await post(path, body, key);
  expect(r.status, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`).toBe(400);
  expect(r.body["code"]).toBe("invalid_argument");
  expect(String(r.body["message"])).toMatch(new RegExp(`(^|\\] )${field.replace(".", "\\.")}:`));
}

beforeAll(async () => {
  server = await startTestServer();
  alice = await createUser(server.baseUrl, server.adminKey, "alice");
  bob = await createUser(server.baseUrl, server.adminKey, "bob");
});
afterAll(async () => server.close());

describe("ListActivity over REST", () => {
  it("clamps limit to [1, 500]; omitted and 0 resolve to 1", async () => {
    for (let start = 0; start < 505; start += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, 505 - start) }, (_, i) => remember(alice, "bulk", `bulk fact number ${start + i}`)),
      );
    }
    const omitted = await list(alice, { run_id: "bulk" });
    expect(omitted.entries).toHaveLength(1);
    expect(omitted.total_visible).toBe(505);
    expect(omitted.next_page_token).not.toBe("");
    expect((await list(alice, { run_id: "bulk", limit: 0 })).entries).toHaveLength(1);
    const big = await list(alice, { run_id: "bulk", limit: 1000 });
    expect(big.entries).toHaveLength(500);
    const rest = await list(alice, { run_id: "bulk", limit: 1000, page_token: big.next_page_token });
    expect(rest.entries).toHaveLength(5);
    expect(rest.next_page_token).toBe("");
  });

  it("lists newest first by default and oldest first with sort asc, with every documented field", async () => {
    const ids = [];
    for (const content of ["one", "two", "three"]) ids.push(await remember(alice, "order", content));
    const desc = await list(alice, { run_id: "order", limit: 10 });
    expect(desc.entries.map((e) => e.id)).toEqual([...ids].reverse());
    const asc = await list(alice, { run_id: "order", limit: 10, sort: "asc" });
    expect(asc.entries.map((e) => e.content)).toEqual(["one", "two", "three"]);
    expect(asc.total_visible).toBe(3);
    expect(asc.next_page_token).toBe("");
    expect(Object.keys(asc.entries[0] ?? {}).sort()).toEqual(
      ["id", "run_id", "user_id", "agent_id", "entry_type", "content", "source", "importance", "created_at", "metadata_json", "reference_id",
        "referenceable", "upsert_key", "origin_entry_type", "lane", "occurrence_time", "is_stale", "superseded_by", "derived", "source_entry_ids", "lineage_review",
        "provenance", "expires_at", "supersedes", "absorbed_ids"].sort(),
    );
    expect(asc.entries[0]).toMatchObject({ run_id: "order", entry_type: "fact", origin_entry_type: "fact", is_stale: false, derived: false });
    expect(Date.parse(asc.entries[0]?.created_at ?? "")).not.toBeNaN();
  });

  it("compact projection cuts content to 200 characters and empties metadata_json", async () => {
    const content = `${"a".repeat(199)}😀${"b".repeat(300)}`;
    await remember(alice, "compact", content, { metadata_json: '{"verbose":true}' });
    const compact = await list(alice, { run_id: "compact", projection: "compact" });
    expect(compact.entries[0]?.content).toBe(`${"a".repeat(199)}😀`);
    expect(compact.entries[0]?.metadata_json).toBe("");
    const full = await list(alice, { run_id: "compact", projection: "full" });
    expect(full.entries[0]?.content).toBe(content);
    expect(JSON.parse(full.entries[0]?.metadata_json ?? "{}")).toEqual({ verbose: true });
  });

  it("created_after and created_before are inclusive", async () => {
    await remember(alice, "window", "first");
    await new Promise((r) => setTimeout(r, 5));
    await remember(alice, "window", "second");
    await new Promise((r) => setTimeout(r, 5));
    await remember(alice, "window", "third");
    const all = (await list(alice, { run_id: "window", sort: "asc", limit: 10 })).entries;
    const at = all[1]?.created_at ?? "";
    expect((await list(alice, { run_id: "window", sort: "asc", limit: 10, created_after: at, created_before: at })).entries.map((e) => e.content))
      .toEqual(["second"]);
    expect((await list(alice, { run_id: "window", sort: "asc", limit: 10, created_after: at })).entries.map((e) => e.content))
      .toEqual(["second", "third"]);
    expect((await list(alice, { run_id: "window", sort: "asc", limit: 10, created_before: at })).entries.map((e) => e.content))
      .toEqual(["first", "second"]);
  });

  it("filters by entry_types and agent_id; exclude_derived keeps written entries", async () => {
    await remember(alice, "types", "a fact", { agent_id: "agent-x" });
    await remember(alice, "types", "a lesson", { intent: "lesson", agent_id: "agent-y" });
    const lessons = await list(alice, { run_id: "types", entry_types: ["lesson"], limit: 10 });
    expect(lessons.entries.map((e) => e.content)).toEqual(["a lesson"]);
    expect(lessons.total_visible).toBe(1);
    expect((await list(alice, { run_id: "types", agent_id: "agent-x", limit: 10 })).entries.map((e) => e.content)).toEqual(["a fact"]);
    expect((await list(alice, { run_id: "types", exclude_derived: true, limit: 10 })).total_visible).toBe(2);
  });

  for (const sort of ["asc", "desc"]) {
    it(`pages over every entry exactly once while entries are appended between pages (${sort})`, async () => {
      const run = `paging-${sort}`;
      const original: string[] = [];
      for (let i = 0; i < 17; i += 1) original.push(await remember(alice, run, `original ${i}`));
      let added = 0;
      const seen = await listAll(alice, { run_id: run, sort, limit: 3 }, async () => {
        added += 1;
        await remember(alice, run, `appended ${added}`);
      });
      const ids = seen.map((e) => e.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (const id of original) expect(ids).toContain(id);
      if (sort === "desc") expect(ids.filter((id) => !original.includes(id))).toEqual([]);
    });
  }

  it("rejects bad filters and page tokens, naming the field", async () => {
    const path = "/v2/control/activity";
    await expect400(path, { sort: "newest" }, "sort");
    await expect400(path, { projection: "tiny" }, "projection");
    await expect400(path, { entry_types: ["bogus"] }, "entry_types");
    await expect400(path, { created_after: "yesterday" }, "created_after");
    await expect400(path, { created_before: "2024-13-01T00:00:00Z" }, "created_before");
    await expect400(path, { run_id: "bulk", page_token: "garbage!" }, "page_token");
    await expect400(path, { run_id: "bulk", page_token: Buffer.from("{}").toString("base64url") }, "page_token");
    const first = await list(alice, { run_id: "bulk", limit: 2 });
    await expect400(path, { run_id: "bulk", limit: 2, sort: "asc", page_token: first.next_page_token }, "page_token");
    await expect400(path, { run_id: "bulk", limit: 2, agent_id: "someone", page_token: first.next_page_token }, "page_token");
    await expect400(path, { run_id: "bulk", limit: 2, page_token: first.next_page_token }, "page_token", bob);
  });
});

describe("isolation", () => {
  it("bob never sees alice's entries; the admin sees both", async () => {
    const aliceId = await remember(alice, "shared", "alice's secret");
    const bobId = await remember(bob, "shared", "bob's note");
    const bobAll = await listAll(bob, { limit: 500 });
    expect(bobAll.map((e) => e.id)).toContain(bobId);
    expect(bobAll.map((e) => e.id)).not.toContain(aliceId);
    expect(bobAll.some((e) => e.content.includes("alice"))).toBe(false);
    expect((await list(bob, { run_id: "bulk" })).total_visible).toBe(0);
    const aliceShared = await list(alice, { run_id: "shared", limit: 10 });
    expect(aliceShared.entries.map((e) => e.id)).toEqual([aliceId]);
    const adminShared = await list(server.adminKey, { run_id: "shared", limit: 10, sort: "asc" });
    // Clustered, alice and bob live on different shards, whose sequences interleave: across owners the order is per
    // shard (README, "Clustered mode"), so only the set is the same.
    if (clusteredRun()) expect(adminShared.entries.map((e) => e.id).sort()).toEqual([aliceId, bobId].sort());
    else expect(adminShared.entries.map((e) => e.id)).toEqual([aliceId, bobId]);
    const bobExport = await post("/v2/control/activity/export", {}, bob);
    expect(String(bobExport.body["content"])).not.toContain("alice's secret");
    const adminExport = await post("/v2/control/activity/export", { run_id: "shared" }, server.adminKey);
    expect(adminExport.body["entry_count"]).toBe(2);
  });
});

describe("ExportActivity over REST", () => {
  it("returns one JSON line per entry with proto field names; entry_count equals the lines", async () => {
    for (const content of ["first", "second", "third"]) await remember(alice, "export", content);
    const r = await post("/v2/control/activity/export", { run_id: "export", sort: "asc" }, alice);
    expect(r.status).toBe(200);
    expect(r.body["format"]).toBe("jsonl");
    const content = String(r.body["content"]);
    expect(content.endsWith("\n")).toBe(true);
    const lines = content.split("\n").slice(0, -1);
    expect(lines).toHaveLength(Number(r.body["entry_count"]));
    expect(lines.map((l) => (JSON.parse(l) as Entry).content)).toEqual(["first", "second", "third"]);
    expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ run_id: "export", entry_type: "fact", is_stale: false });
    const empty = await post("/v2/control/activity/export", { run_id: "nothing-here" }, alice);
    expect(empty.body).toMatchObject({ format: "jsonl", content: "", entry_count: 0 });
    await expect400("/v2/control/activity/export", { sort: "sideways" }, "sort");
    await expect400("/v2/control/activity/export", { created_after: "soon" }, "created_after");
  });
});

describe("AppendActivity over REST", () => {
  it("stores the record as a trace that ListActivity returns under its event_id", async () => {
    const r = await post(
      "/v2/control/activities/append",
      {
        run_id: "act",
        agent_id: "planner",
        activity: { type: "tool_call", payload: '{"city":"Oslo"}', tool_name: "weather", input_ref: "in-1", output_ref: "out-1", ts: "2024-05-01T12:00:00Z" },
      },
      alice,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body["success"]).toBe(true);
    const eventId = String(r.body["event_id"]);
    expect(eventId).not.toBe("");
    const traces = await list(alice, { run_id: "act", entry_types: ["trace"], limit: 10 });
    expect(traces.entries).toHaveLength(1);
    expect(traces.entries[0]).toMatchObject({
      id: eventId,
      entry_type: "trace",
      agent_id: "planner",
      content: '{"city":"Oslo"}',
      occurrence_time: String(Date.UTC(2024, 4, 1, 12) / 1000),
      source: "agent",
      importance: "medium",
    });
    expect(JSON.parse(traces.entries[0]?.metadata_json ?? "{}")).toMatchObject({ activity_type: "tool_call", tool_name: "weather", input_ref: "in-1", output_ref: "out-1" });
    expect((await list(bob, { run_id: "act" })).total_visible).toBe(0);
  });

  it("rejects missing or invalid fields naming them", async () => {
    const path = "/v2/control/activities/append";
    const activity = { type: "tool_call", payload: "x" };
    await expect400(path, { activity }, "run_id");
    await expect400(path, { run_id: "act" }, "activity");
    await expect400(path, { run_id: "act", activity: { payload: "x" } }, "activity.type");
    await expect400(path, { run_id: "act", activity: { type: "tool_call" } }, "activity.payload");
    await expect400(path, { run_id: "act", activity: { ...activity, ts: "last tuesday" } }, "activity.ts");
  });
});
