// Core nodes, search and scratchpads through a real server: insert, update, get, delete, batch limits and
// atomicity, metadata validation, search by text and by vector with run and metadata filters, scratchpad keys,
// expiry and paging, access by a second user before and after a grant, gRPC, and survival across a restart and
// across kill -9.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintApiKey } from "../src/auth/api-key.js";
import { ensureBuilt, startChild } from "./harness/child-server.js";
import { callerFor, type Caller, type JsonObject } from "./harness/callers.js";
import { CORE_ENV, CoreRest, DIMENSIONS, axis, expectError, expectInvalidField, uniqueRun } from "./harness/core.js";
import { pause } from "./harness/memory.js";
import { startTestServer, tempDataDir, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

const RPC = {
  insert: "engram.v2.CoreService/InsertNode",
  batch: "engram.v2.CoreService/BatchInsertNodes",
  get: "engram.v2.CoreService/GetNode",
  search: "engram.v2.CoreService/SearchNodes",
} as const;
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

let server: TestServer;
let alice: CoreRest;
let bob: CoreRest;
let aliceKey: string;

beforeAll(async () => {
  server = await startTestServer(CORE_ENV);
  aliceKey = await createUser(server.baseUrl, server.adminKey, "alice");
  alice = new CoreRest(server.baseUrl, aliceKey);
  bob = new CoreRest(server.baseUrl, await createUser(server.baseUrl, server.adminKey, "bob"));
});
afterAll(async () => server?.close());

function norm(values: readonly number[]): number {
  return Math.sqrt(values.reduce((sum, x) => sum + x * x, 0));
}

describe("nodes", () => {
  it("inserts a node and returns it with every field", async () => {
    const run = uniqueRun("insert");
    const inserted = await alice.ok("/v2/core/insert", { run_id: run, text: "the cat sat on the mat", metadata_json: '{"source":"test"}' });
    expect(inserted["success"]).toBe(true);
    const id = String(inserted["node_id"]);
    expect(id).toMatch(/^[1-9]\d*$/);
    const node = await alice.node(id);
    expect(node).toMatchObject({ node_id: id, run_id: run, metadata_json: '{"source":"test"}', text: "the cat sat on the mat" });
    expect(node?.["created_at"]).toMatch(RFC3339);
    expect(node?.["updated_at"]).toBe(node?.["created_at"]);
    const vector = node?.["vector"] as number[];
    expect(vector).toHaveLength(DIMENSIONS);
    expect(norm(vector)).toBeCloseTo(1, 4);
    expect(inserted["node"]).toEqual(node);
  });

  it("updates a node by id: keeps its run and created_at, replaces text and metadata, sets updated_at", async () => {
    const run = uniqueRun("update");
    const id = await alice.insert({ run_id: run, text: "first version", metadata_json: '{"v":1}' });
    const before = await alice.node(id);
    await pause(5);
    const updated = await alice.ok("/v2/core/insert", { node_id: id, text: "second version", metadata_json: '{"v":2}' });
    expect(updated["node_id"]).toBe(id);
    const after = await alice.node(id);
    expect(after).toMatchObject({ node_id: id, run_id: run, text: "second version", metadata_json: '{"v":2}', created_at: before?.["created_at"] });
    expect(Date.parse(String(after?.["updated_at"]))).toBeGreaterThan(Date.parse(String(before?.["updated_at"])));
    // The run may be repeated but not changed; unknown ids are not found.
    await alice.ok("/v2/core/insert", { node_id: id, run_id: run, text: "third version" });
    expectInvalidField(await alice.post("/v2/core/insert", { node_id: id, run_id: "elsewhere", text: "moved" }), "run_id");
    expectError(await alice.post("/v2/core/insert", { node_id: "999999999", text: "ghost" }), 404, "not_found");
    expectError(await alice.post("/v2/core/insert", { node_id: "18446744073709551615", text: "ghost" }), 404, "not_found");
  });

  it("validates metadata_json, text, vector and run_id, naming the field", async () => {
    const run = uniqueRun("validate");
    expectInvalidField(await alice.post("/v2/core/insert", { run_id: run, text: "x", metadata_json: "not json" }), "metadata_json");
    expectInvalidField(await alice.post("/v2/core/insert", { run_id: run, text: "x", metadata_json: "[1,2]" }), "metadata_json");
    expectInvalidField(await alice.post("/v2/core/insert", { run_id: run, text: "x", metadata_json: '"text"' }), "metadata_json");
    expectInvalidField(await alice.post("/v2/core/insert", { run_id: run }), "text");
    expectInvalidField(await alice.post("/v2/core/insert", { text: "no run" }), "run_id");
    expectInvalidField(await alice.post("/v2/core/insert", { run_id: run, vector: [1, 2, 3] }), "vector");
    expectInvalidField(await alice.post("/v2/core/insert", { run_id: run, vector: new Array(DIMENSIONS).fill(0) }), "vector");
    expectInvalidField(await alice.get("/v2/core/node/0"), "id");
    // Empty metadata means {}; a vector alone is enough.
    const id = await alice.insert({ run_id: run, vector: axis(3) });
    expect(await alice.node(id)).toMatchObject({ metadata_json: "{}", text: "" });
    expect(await alice.search({ vector: axis(3), run_id: run, k: 1 })).toHaveLength(1);
  });

  it("deletes a node, and every node of a run", async () => {
    const run = uniqueRun("delete");
    const ids = [await alice.insert({ run_id: run, text: "one" }), await alice.insert({ run_id: run, text: "two" }), await alice.insert({ run_id: run, text: "three" })];
    const other = await alice.insert({ run_id: uniqueRun("keep"), text: "kept" });
    const deleted = await alice.delete(`/v2/core/node/${ids[0]}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body["success"]).toBe(true);
    expect(await alice.node(String(ids[0]))).toBeUndefined();
    expectError(await alice.delete(`/v2/core/node/${ids[0]}`), 404, "not_found");
    const runDeleted = await alice.delete(`/v2/core/runs/${run}`);
    expect(runDeleted.status).toBe(200);
    expect(runDeleted.body["count"]).toBe(2);
    for (const id of ids) expect(await alice.node(String(id))).toBeUndefined();
    expect(await alice.node(other)).toBeDefined();
    expect((await alice.delete(`/v2/core/runs/${run}`)).body["count"]).toBe(0);
    expect(await alice.search({ query_text: "one two three", run_id: run })).toEqual([]);
    // A new node never reuses a deleted id.
    const fresh = await alice.insert({ run_id: run, text: "four" });
    expect(BigInt(fresh)).toBeGreaterThan(BigInt(String(ids[2])));
  });
});

describe("batch insert", () => {
  it("inserts and updates many nodes in one write, in request order", async () => {
    const run = uniqueRun("batch");
    const existing = await alice.insert({ run_id: run, text: "to update" });
    const body = await alice.ok("/v2/core/batch_insert", {
      nodes: [
        { run_id: run, text: "alpha" },
        { node_id: existing, text: "updated in batch" },
        { run_id: run, vector: axis(7), metadata_json: '{"k":"v"}' },
      ],
    });
    expect(body["count"]).toBe(3);
    const ids = body["node_ids"] as string[];
    expect(ids[1]).toBe(existing);
    expect(await alice.node(String(ids[0]))).toMatchObject({ text: "alpha", run_id: run });
    expect(await alice.node(existing)).toMatchObject({ text: "updated in batch" });
    expect(await alice.node(String(ids[2]))).toMatchObject({ metadata_json: '{"k":"v"}' });
    expect((await alice.ok("/v2/core/batch_insert", { nodes: [] }))["count"]).toBe(0);
  });

  it("refuses more than 1000 nodes with 400 naming nodes", async () => {
    const run = uniqueRun("limit");
    const nodes = Array.from({ length: 1001 }, (_, i) => ({ run_id: run, text: `n${i}` }));
    expectInvalidField(await alice.post("/v2/core/batch_insert", { nodes }), "nodes");
    expect(await alice.search({ query_text: "n1", run_id: run })).toEqual([]);
    const thousand = await alice.ok("/v2/core/batch_insert", { nodes: nodes.slice(0, 1000) });
    expect(thousand["count"]).toBe(1000);
  });

  it("validates the whole batch first and writes nothing when one node fails", async () => {
    const run = uniqueRun("atomic");
    const bad = await alice.post("/v2/core/batch_insert", {
      nodes: [
        { run_id: run, text: "good one" },
        { run_id: run, text: "bad one", metadata_json: "{broken" },
      ],
    });
    expectInvalidField(bad, "nodes[1].metadata_json");
    const missing = await alice.post("/v2/core/batch_insert", {
      nodes: [
        { run_id: run, text: "good one" },
        { node_id: "987654321", text: "no such node" },
      ],
    });
    expectError(missing, 404, "not_found", /nodes\[1\]\.node_id/);
    expect((await alice.delete(`/v2/core/runs/${run}`)).body["count"]).toBe(0);
  });
});

describe("search", () => {
  let runA: string;
  let runB: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    runA = uniqueRun("searchA");
    runB = uniqueRun("searchB");
    ids["cats"] = await alice.insert({ run_id: runA, text: "cats purr and chase mice around the barn", metadata_json: '{"topic":"animals","lang":"en"}' });
    ids["rockets"] = await alice.insert({ run_id: runA, text: "rockets launch satellites into orbit", metadata_json: '{"topic":"space","lang":"en"}' });
    ids["dogs"] = await alice.insert({ run_id: runB, text: "dogs bark and chase cats in the yard", metadata_json: '{"topic":"animals","lang":"en","tags":["pets"]}' });
    ids["x"] = await alice.insert({ run_id: runB, vector: axis(0), metadata_json: '{"topic":"axis"}' });
    ids["xy"] = await alice.insert({ run_id: runB, vector: axis(0, 1, 1), metadata_json: '{"topic":"axis"}' });
  });

  it("finds nodes by text, best first, with cosine scores", async () => {
    const results = await alice.search({ query_text: "rockets launch into orbit", run_id: runA });
    expect(results[0]?.["node_id"]).toBe(ids["rockets"]);
    expect(results[0]).toMatchObject({ run_id: runA, text: "rockets launch satellites into orbit", metadata_json: '{"topic":"space","lang":"en"}' });
    const scores = results.map((r) => Number(r["similarity"]));
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    for (const score of scores) expect(Math.abs(score)).toBeLessThanOrEqual(1.0001);
  });

  it("finds nodes by vector with exact cosine similarity", async () => {
    const results = await alice.search({ vector: axis(0), run_id: runB, filter_json: '{"topic":"axis"}' });
    expect(results.map((r) => r["node_id"])).toEqual([ids["x"], ids["xy"]]);
    expect(Number(results[0]?.["similarity"])).toBeCloseTo(1, 5);
    expect(Number(results[1]?.["similarity"])).toBeCloseTo(Math.SQRT1_2, 5);
    // A vector that is not unit length is scaled: the score is still cosine.
    const scaled = await alice.search({ vector: axis(0).map((x) => x * 7), run_id: runB, k: 1 });
    expect(Number(scaled[0]?.["similarity"])).toBeCloseTo(1, 5);
  });

  it("filters by run and by top-level metadata equality", async () => {
    const all = (await alice.search({ query_text: "chase cats", k: 100 })).map((r) => r["node_id"]);
    expect(all).toEqual(expect.arrayContaining([ids["cats"], ids["dogs"]]));
    const inA = (await alice.search({ query_text: "chase cats", run_id: runA })).map((r) => r["node_id"]);
    expect(inA).toContain(ids["cats"]);
    expect(inA).not.toContain(ids["dogs"]);
    const animals = (await alice.search({ query_text: "chase cats", filter_json: '{"topic":"animals"}', k: 100 })).map((r) => r["node_id"]);
    expect(new Set(animals)).toEqual(new Set([ids["cats"], ids["dogs"]]));
    const tagged = await alice.search({ query_text: "chase", filter_json: '{"tags":["pets"],"lang":"en"}', k: 100 });
    expect(tagged.map((r) => r["node_id"])).toEqual([ids["dogs"]]);
    expect(await alice.search({ query_text: "chase", filter_json: '{"topic":"nothing"}' })).toEqual([]);
  });

  it("applies k: default 10, clamped to [1, 100]", async () => {
    const run = uniqueRun("k");
    await alice.ok("/v2/core/batch_insert", { nodes: Array.from({ length: 120 }, (_, i) => ({ run_id: run, vector: axis(i % DIMENSIONS, (i + 1) % DIMENSIONS, 0.5) })) });
    expect(await alice.search({ vector: axis(5), run_id: run })).toHaveLength(10);
    expect(await alice.search({ vector: axis(5), run_id: run, k: 1000 })).toHaveLength(100);
    expect(await alice.search({ vector: axis(5), run_id: run, k: 3 })).toHaveLength(3);
  });

  it("needs exactly one of query_text and vector, and a JSON object filter", async () => {
    expectInvalidField(await alice.post("/v2/core/search", {}), "query_text");
    expectInvalidField(await alice.post("/v2/core/search", { query_text: "x", vector: axis(1) }), "query_text");
    expectInvalidField(await alice.post("/v2/core/search", { vector: [1, 0] }), "vector");
    expectInvalidField(await alice.post("/v2/core/search", { query_text: "x", filter_json: "[1]" }), "filter_json");
  });
});

describe("scratchpad", () => {
  it("writes, reads oldest first, replaces by key, filters and clears", async () => {
    const pad = uniqueRun("pad");
    const first = await alice.ok(`/v2/core/memory/${pad}`, { content: "first note", agent_id: "planner", metadata: { step: "1" } });
    expect(first["success"]).toBe(true);
    expect(first["entry"]).toMatchObject({ session_id: pad, content: "first note", agent_id: "planner", metadata: { step: "1" }, expires_at: "0" });
    await alice.ok(`/v2/core/memory/${pad}`, { key: "plan", entry_json: '{"steps":["a","b"]}', agent_id: "planner" });
    await alice.ok(`/v2/core/memory/${pad}`, { content: "third", agent_id: "critic" });
    await alice.ok(`/v2/core/memory/${pad}`, { key: "plan", entry_json: '{"steps":["c"]}', agent_id: "planner" });
    const entries = await alice.entries(pad);
    expect(entries.map((e) => e["content"] || e["entry_json"])).toEqual(["first note", "third", '{"steps":["c"]}']);
    const times = entries.map((e) => Number(e["timestamp"]));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(new Set(times).size).toBe(times.length);
    expect((await alice.entries(pad, { key: "plan" })).map((e) => e["entry_json"])).toEqual(['{"steps":["c"]}']);
    expect((await alice.entries(pad, { agent_id: "critic" })).map((e) => e["content"])).toEqual(["third"]);
    expect((await alice.entries(pad, { limit: "2" })).length).toBe(2);
    const after = await alice.entries(pad, { after_timestamp: String(times[0]) });
    expect(after.map((e) => e["id"])).toEqual(entries.slice(1).map((e) => e["id"]));
    // Another user's scratchpad of the same name is their own.
    expect(await bob.entries(pad)).toEqual([]);
    const cleared = await alice.delete(`/v2/core/memory/${pad}`);
    expect(cleared.body).toMatchObject({ success: true, cleared_count: 3 });
    expect(await alice.entries(pad)).toEqual([]);
  });

  it("hides entries once their ttl has passed", async () => {
    const pad = uniqueRun("ttl");
    await alice.ok(`/v2/core/memory/${pad}`, { content: "short-lived", ttl_seconds: 1 });
    await alice.ok(`/v2/core/memory/${pad}`, { content: "kept" });
    const written = await alice.entries(pad);
    expect(written.map((e) => e["content"])).toEqual(["short-lived", "kept"]);
    expect(Number(written[0]?.["expires_at"])).toBe(Number(written[0]?.["timestamp"]) + 1000);
    const deadline = Number(written[0]?.["expires_at"]);
    while (Date.now() <= deadline) await pause(Math.max(1, deadline - Date.now() + 1));
    expect((await alice.entries(pad)).map((e) => e["content"])).toEqual(["kept"]);
  });

  it("validates content, entry_json and ttl_seconds", async () => {
    const pad = uniqueRun("bad");
    expectInvalidField(await alice.post(`/v2/core/memory/${pad}`, {}), "content");
    expectInvalidField(await alice.post(`/v2/core/memory/${pad}`, { content: "a", entry_json: "{}" }), "content");
    expectInvalidField(await alice.post(`/v2/core/memory/${pad}`, { entry_json: "{oops" }), "entry_json");
    expectInvalidField(await alice.post(`/v2/core/memory/${pad}`, { content: "a", ttl_seconds: -1 }), "ttl_seconds");
    expectError(await alice.post(`/v2/core/memory/${pad}`, { content: "a", txn_session_id: "cs_nope" }), 404, "not_found");
  });
});

describe("access by another user", () => {
  it("answers 404 for another user's nodes until a grant, then honours read and write grants", async () => {
    const run = uniqueRun("shared");
    const id = await alice.insert({ run_id: run, text: "alice's private plan", metadata_json: '{"owner":"alice"}' });
    expectError(await bob.get(`/v2/core/node/${id}`), 404, "not_found");
    expectError(await bob.delete(`/v2/core/node/${id}`), 404, "not_found");
    expectError(await bob.post("/v2/core/insert", { node_id: id, text: "bob was here" }), 404, "not_found");
    expect(await bob.search({ query_text: "alice's private plan", run_id: run })).toEqual([]);
    expect((await bob.delete(`/v2/core/runs/${run}`)).body["count"]).toBe(0);

    await alice.ok("/v2/core/acl/grant", { principal_type: "user", principal_id: "bob", run_id: run, permission: "read" });
    expect(await bob.node(id)).toMatchObject({ node_id: id, text: "alice's private plan" });
    expect((await bob.search({ query_text: "alice's private plan", run_id: run })).map((r) => r["node_id"])).toEqual([id]);
    // Without run_id a search covers only the caller's own nodes.
    expect((await bob.search({ query_text: "alice's private plan", k: 100 })).map((r) => r["node_id"])).not.toContain(id);
    expectError(await bob.post("/v2/core/insert", { node_id: id, text: "bob was here" }), 403, "permission_denied");
    expectError(await bob.delete(`/v2/core/node/${id}`), 403, "permission_denied");

    await alice.ok("/v2/core/acl/grant", { principal_type: "user", principal_id: "bob", run_id: run, permission: "write" });
    await bob.ok("/v2/core/insert", { node_id: id, text: "bob was here" });
    expect(await alice.node(id)).toMatchObject({ text: "bob was here", run_id: run });
    await alice.ok("/v2/core/acl/revoke", { principal_type: "user", principal_id: "bob", run_id: run });
    expectError(await bob.get(`/v2/core/node/${id}`), 404, "not_found");
  });
});

describe("over gRPC", () => {
  let grpc: Caller;
  beforeAll(() => {
    grpc = callerFor("grpc", server.baseUrl, server.port);
  });
  afterAll(() => grpc.close());

  it("inserts, gets, searches and refuses oversized batches", async () => {
    const run = uniqueRun("grpc");
    const inserted = await grpc.call(RPC.insert, { run_id: run, text: "grpc node about gardening tomatoes", metadata_json: '{"via":"grpc"}' }, aliceKey);
    expect(inserted.code, inserted.message).toBe("ok");
    const id = String(inserted.body["node_id"]);
    const got = await grpc.call(RPC.get, { id }, aliceKey);
    expect(got.code).toBe("ok");
    expect(got.body["node"]).toMatchObject({ node_id: id, run_id: run, metadata_json: '{"via":"grpc"}' });
    const found = await grpc.call(RPC.search, { query_text: "gardening tomatoes", run_id: run }, aliceKey);
    expect((found.body["results"] as JsonObject[])[0]?.["node_id"]).toBe(id);
    const big = await grpc.call(RPC.batch, { nodes: Array.from({ length: 1001 }, () => ({ run_id: run, text: "x" })) }, aliceKey);
    expect(big.code).toBe("invalid_argument");
    expect(big.message).toMatch(/^nodes:/);
    const bad = await grpc.call(RPC.insert, { run_id: run, text: "x", metadata_json: "[]" }, aliceKey);
    expect(bad.code).toBe("invalid_argument");
    expect(bad.message).toMatch(/^metadata_json:/);
  });
});

describe("after a restart", () => {
  it("keeps nodes, their vectors and their search index", async () => {
    const dir = tempDataDir();
    const first = await startTestServer(CORE_ENV, dir);
    const key = await createUser(first.baseUrl, first.adminKey, "carol");
    let carol = new CoreRest(first.baseUrl, key);
    const run = uniqueRun("restart");
    const id = await carol.insert({ run_id: run, text: "durable node about lighthouses", metadata_json: '{"n":1}' });
    const updated = await carol.insert({ run_id: run, vector: axis(9) });
    await carol.ok("/v2/core/insert", { node_id: updated, vector: axis(10) });
    const gone = await carol.insert({ run_id: run, vector: axis(11) });
    await carol.delete(`/v2/core/node/${gone}`);
    const before = await carol.node(id);
    await first.close();

    const second = await startTestServer({ ...CORE_ENV, SERVICE_ADMIN_KEY: first.adminKey }, dir);
    try {
      carol = new CoreRest(second.baseUrl, key);
      expect(await carol.node(id)).toEqual(before);
      expect((await carol.search({ query_text: "lighthouses", run_id: run }))[0]?.["node_id"]).toBe(id);
      expect((await carol.search({ vector: axis(10), run_id: run, k: 1 }))[0]).toMatchObject({ node_id: updated });
      expect(Number((await carol.search({ vector: axis(10), run_id: run, k: 1 }))[0]?.["similarity"])).toBeCloseTo(1, 5);
      expect(await carol.node(gone)).toBeUndefined();
      expect((await carol.search({ vector: axis(11), run_id: run, k: 10 })).map((r) => r["node_id"])).not.toContain(gone);
      const next = await carol.insert({ run_id: run, text: "after restart" });
      expect(BigInt(next)).toBeGreaterThan(BigInt(gone));
    } finally {
      await second.close();
    }
  });
});

describe("durability", () => {
  beforeAll(() => ensureBuilt(), 120_000);

  it("every acknowledged node, scratchpad and session write survives kill -9", async () => {
    const admin = mintApiKey("local");
    const env = { ...CORE_ENV, SERVICE_DATA_DIR: tempDataDir(), SERVICE_ADMIN_KEY: admin.key, SERVICE_LOG_LEVEL: "error" };
    const first = await startChild(env);
    const api = new CoreRest(first.baseUrl, admin.key);
    const run = uniqueRun("crash");
    const session = await api.session();
    const staged = await api.insert({ run_id: run, text: "staged before the crash", session_id: session });
    const acknowledged: { id: string; text: string }[] = [];
    const notes: string[] = [];
    const writes = Array.from({ length: 40 }, async (_, i) => {
      const text = `crash node ${i}`;
      const r = await api.post("/v2/core/insert", { run_id: run, text });
      if (r.status === 200) acknowledged.push({ id: String(r.body["node_id"]), text });
      const n = await api.post(`/v2/core/memory/${run}`, { content: `note ${i}` });
      if (n.status === 200) notes.push(`note ${i}`);
    });
    const settled = Promise.allSettled(writes);
    await Promise.all(writes.slice(0, 20));
    await first.kill("SIGKILL");
    await settled;
    expect(acknowledged.length).toBeGreaterThanOrEqual(20);

    const second = await startChild(env);
    try {
      const after = new CoreRest(second.baseUrl, admin.key);
      for (const { id, text } of acknowledged) expect(await after.node(id)).toMatchObject({ text, run_id: run });
      const found = (await after.search({ query_text: "crash node", run_id: run, k: 100 })).map((r) => r["node_id"]);
      expect(found).toEqual(expect.arrayContaining(acknowledged.map((a) => a.id)));
      expect((await after.entries(run, { limit: "1000" })).map((e) => e["content"])).toEqual(expect.arrayContaining(notes));
      expect(await after.node(staged, session)).toMatchObject({ text: "staged before the crash" });
      expect(await after.node(staged)).toBeUndefined();
    } finally {
      await second.kill("SIGTERM");
    }
  });
});
