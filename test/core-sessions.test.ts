// Transactional core sessions through a real server: staged writes invisible outside the session and visible
// through it, atomic commit of many writes, conflicts refused with 409 ABORTED (changing nothing) unless a merge
// strategy is named, drop, nesting, snapshot and load (also across a restart), ownership, and gRPC.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerFor, type Caller } from "./harness/callers.js";
import { CORE_ENV, CoreRest, axis, expectError, expectInvalidField, uniqueRun } from "./harness/core.js";
import { startTestServer, tempDataDir, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

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

function commit(c: CoreRest, session: string, mergeStrategy = "") {
  return c.post(`/v2/core/session/${session}/commit`, mergeStrategy === "" ? {} : { merge_strategy: mergeStrategy });
}

function texts(entries: readonly { [key: string]: unknown }[]): unknown[] {
  return entries.map((e) => e["content"]);
}

describe("isolation", () => {
  it("stages writes invisibly to reads without the session and visibly through it", async () => {
    const run = uniqueRun("iso");
    const pad = uniqueRun("pad");
    const kept = await alice.insert({ run_id: run, text: "stored node about glaciers" });
    const doomed = await alice.insert({ run_id: run, text: "stored node about deserts" });
    const session = await alice.session();

    const staged = await alice.ok("/v2/core/insert", { run_id: run, text: "staged node about volcanoes", session_id: session });
    const stagedId = String(staged["node_id"]);
    await alice.ok("/v2/core/insert", { node_id: kept, text: "glaciers, revised in the session", session_id: session });
    expect((await alice.delete(`/v2/core/node/${doomed}`, { session_id: session })).status).toBe(200);
    await alice.ok(`/v2/core/memory/${pad}`, { content: "staged note", txn_session_id: session });

    // Outside the session: nothing happened.
    expect(await alice.node(stagedId)).toBeUndefined();
    expect(await alice.node(kept)).toMatchObject({ text: "stored node about glaciers" });
    expect(await alice.node(doomed)).toBeDefined();
    expect((await alice.search({ query_text: "volcanoes", run_id: run })).map((r) => r["node_id"])).not.toContain(stagedId);
    expect(await alice.entries(pad)).toEqual([]);

    // Through the session: staged versions win, staged deletes hide.
    expect(await alice.node(stagedId, session)).toMatchObject({ text: "staged node about volcanoes", run_id: run });
    expect(await alice.node(kept, session)).toMatchObject({ text: "glaciers, revised in the session" });
    expect(await alice.node(doomed, session)).toBeUndefined();
    const seen = (await alice.search({ query_text: "volcanoes glaciers deserts", run_id: run, session_id: session, k: 10 })).map((r) => r["node_id"]);
    expect(seen).toEqual(expect.arrayContaining([stagedId, kept]));
    expect(seen).not.toContain(doomed);
    expect(texts(await alice.entries(pad, { txn_session_id: session }))).toEqual(["staged note"]);

    // Another user cannot use the session at all.
    expectError(await bob.get(`/v2/core/node/${stagedId}`, { session_id: session }), 404, "not_found");
    expectError(await bob.post("/v2/core/insert", { run_id: run, text: "intruder", session_id: session }), 404, "not_found");
    expectError(await commit(bob, session), 404, "not_found");
    expectError(await bob.delete(`/v2/core/session/${session}/drop`), 404, "not_found");
    expectError(await bob.post(`/v2/core/session/${session}/snapshot`, { path: "stolen" }), 404, "not_found");
    expectError(await bob.post("/v2/core/session/create", { parent_session_id: session }), 404, "not_found");
    expectError(await alice.get(`/v2/core/node/${stagedId}`, { session_id: "cs_unknown" }), 404, "not_found");
    await alice.delete(`/v2/core/session/${session}/drop`);
  });
});

describe("commit", () => {
  it("applies every staged write at once and closes the session", async () => {
    const run = uniqueRun("commit");
    const pad = uniqueRun("pad");
    const updated = await alice.insert({ run_id: run, text: "before the commit", metadata_json: '{"v":1}' });
    const deleted = await alice.insert({ run_id: run, text: "deleted by the commit" });
    const before = await alice.node(updated);
    const session = await alice.session();
    const batch = await alice.ok("/v2/core/batch_insert", { session_id: session, nodes: [{ run_id: run, text: "new one" }, { run_id: run, text: "new two" }] });
    const newIds = batch["node_ids"] as string[];
    await alice.ok("/v2/core/insert", { node_id: updated, text: "after the commit", metadata_json: '{"v":2}', session_id: session });
    await alice.delete(`/v2/core/node/${deleted}`, { session_id: session });
    await alice.ok(`/v2/core/memory/${pad}`, { content: "committed note", key: "k", txn_session_id: session });

    const committed = await commit(alice, session);
    expect(committed.status, JSON.stringify(committed.body)).toBe(200);
    expect(committed.body).toMatchObject({ success: true, applied_writes: 5, skipped_writes: 0 });

    for (const [i, id] of newIds.entries()) expect(await alice.node(String(id))).toMatchObject({ text: i === 0 ? "new one" : "new two", run_id: run });
    const after = await alice.node(updated);
    expect(after).toMatchObject({ text: "after the commit", metadata_json: '{"v":2}', created_at: before?.["created_at"] });
    expect(after?.["updated_at"]).not.toBe(before?.["updated_at"]);
    expect(await alice.node(deleted)).toBeUndefined();
    expect(texts(await alice.entries(pad))).toEqual(["committed note"]);
    expect((await alice.search({ query_text: "new one", run_id: run, k: 10 })).map((r) => r["node_id"])).toEqual(expect.arrayContaining(newIds));
    // The session is closed.
    expectError(await commit(alice, session), 404, "not_found");
    expectError(await alice.get(`/v2/core/node/${updated}`, { session_id: session }), 404, "not_found");
  });

  it("refuses a conflicting commit with 409 ABORTED naming the node, applying none of its writes", async () => {
    const run = uniqueRun("conflict");
    const pad = uniqueRun("pad");
    const contested = await alice.insert({ run_id: run, text: "original" });
    const session = await alice.session();
    const stagedNew = String((await alice.ok("/v2/core/insert", { run_id: run, text: "staged insert", session_id: session }))["node_id"]);
    await alice.ok("/v2/core/insert", { node_id: contested, text: "the session's version", session_id: session });
    await alice.ok(`/v2/core/memory/${pad}`, { content: "staged note", txn_session_id: session });
    // Meanwhile, outside the session:
    await alice.ok("/v2/core/insert", { node_id: contested, text: "changed outside" });

    const refused = await commit(alice, session);
    expectError(refused, 409, "aborted", new RegExp(`node ${contested} \\(changed\\)`));
    // Nothing was applied: not the insert, not the scratchpad write, not the update.
    expect(await alice.node(stagedNew)).toBeUndefined();
    expect(await alice.entries(pad)).toEqual([]);
    expect(await alice.node(contested)).toMatchObject({ text: "changed outside" });
    // The session is unchanged and still open.
    expect(await alice.node(contested, session)).toMatchObject({ text: "the session's version" });
    expect(await alice.node(stagedNew, session)).toMatchObject({ text: "staged insert" });
    expectError(await commit(alice, session), 409, "aborted");

    expectInvalidField(await commit(alice, session, "merge"), "merge_strategy");
    const merged = await commit(alice, session, "overwrite");
    expect(merged.status, JSON.stringify(merged.body)).toBe(200);
    expect(merged.body).toMatchObject({ applied_writes: 3, skipped_writes: 0 });
    expect(await alice.node(contested)).toMatchObject({ text: "the session's version" });
    expect(await alice.node(stagedNew)).toMatchObject({ text: "staged insert" });
    expect(texts(await alice.entries(pad))).toEqual(["staged note"]);
  });

  it("refuses a commit whose node was deleted outside, and skips it under a merge strategy", async () => {
    const run = uniqueRun("deleted");
    const node = await alice.insert({ run_id: run, text: "to be deleted outside" });
    const other = await alice.insert({ run_id: run, text: "untouched outside" });
    const session = await alice.session();
    await alice.ok("/v2/core/insert", { node_id: node, text: "edited in session", session_id: session });
    await alice.ok("/v2/core/insert", { node_id: other, text: "also edited", session_id: session });
    await alice.delete(`/v2/core/node/${node}`);
    expectError(await commit(alice, session), 409, "aborted", new RegExp(`node ${node} \\(deleted\\)`));
    expect(await alice.node(other)).toMatchObject({ text: "untouched outside" });
    const merged = await commit(alice, session, "overwrite");
    expect(merged.body).toMatchObject({ applied_writes: 1, skipped_writes: 1 });
    expect(await alice.node(node)).toBeUndefined();
    expect(await alice.node(other)).toMatchObject({ text: "also edited" });
  });

  it("merges conflicting vectors with average and bundle", async () => {
    const run = uniqueRun("merge");
    const a = await alice.insert({ run_id: run, vector: axis(0) });
    const b = await alice.insert({ run_id: run, vector: axis(0) });
    const session = await alice.session();
    await alice.ok("/v2/core/insert", { node_id: a, vector: axis(1), text: "from session a", session_id: session });
    await alice.ok("/v2/core/insert", { node_id: b, vector: axis(1), text: "from session b", session_id: session });
    await alice.ok("/v2/core/insert", { node_id: a, vector: axis(2) });
    await alice.ok("/v2/core/insert", { node_id: b, vector: axis(2) });
    expect((await commit(alice, session, "average")).status).toBe(200);
    const averaged = await alice.node(a);
    expect(averaged?.["text"]).toBe("from session a");
    const v = averaged?.["vector"] as number[];
    expect(v[1]).toBeCloseTo(0.5, 5);
    expect(v[2]).toBeCloseTo(0.5, 5);

    const second = await alice.session();
    await alice.ok("/v2/core/insert", { node_id: b, vector: axis(3), session_id: second });
    await alice.ok("/v2/core/insert", { node_id: b, vector: axis(4) });
    expect((await commit(alice, second, "bundle")).status).toBe(200);
    const bundled = (await alice.node(b))?.["vector"] as number[];
    expect(bundled[3]).toBeCloseTo(Math.SQRT1_2, 5);
    expect(bundled[4]).toBeCloseTo(Math.SQRT1_2, 5);
    // Search scores are cosine whatever the stored length.
    expect(Number((await alice.search({ vector: axis(1, 2, 1), run_id: run, k: 1 }))[0]?.["similarity"])).toBeCloseTo(1, 5);
  });
});

describe("drop and nesting", () => {
  it("drop discards staged writes and closes the session", async () => {
    const run = uniqueRun("drop");
    const kept = await alice.insert({ run_id: run, text: "stays as is" });
    const session = await alice.session();
    const staged = String((await alice.ok("/v2/core/insert", { run_id: run, text: "never applied", session_id: session }))["node_id"]);
    await alice.delete(`/v2/core/node/${kept}`, { session_id: session });
    const dropped = await alice.delete(`/v2/core/session/${session}/drop`);
    expect(dropped.status).toBe(200);
    expect(dropped.body["success"]).toBe(true);
    expect(await alice.node(staged)).toBeUndefined();
    expect(await alice.node(kept)).toMatchObject({ text: "stays as is" });
    expectError(await commit(alice, session), 404, "not_found");
    expectError(await alice.delete(`/v2/core/session/${session}/drop`), 404, "not_found");
    // The dropped insert's id is not reused.
    expect(BigInt(await alice.insert({ run_id: run, text: "later" }))).toBeGreaterThan(BigInt(staged));
  });

  it("a child commits into its parent, and the parent into the store", async () => {
    const run = uniqueRun("nested");
    const parent = await alice.session();
    const child = await alice.session(parent);
    const fromChild = String((await alice.ok("/v2/core/insert", { run_id: run, text: "written in the child", session_id: child }))["node_id"]);
    expect(await alice.node(fromChild, parent)).toBeUndefined();
    expectError(await commit(alice, parent), 400, "failed_precondition", /open child/);
    expect((await commit(alice, child)).status).toBe(200);
    expect(await alice.node(fromChild, parent)).toMatchObject({ text: "written in the child" });
    expect(await alice.node(fromChild)).toBeUndefined();
    expect((await commit(alice, parent)).status).toBe(200);
    expect(await alice.node(fromChild)).toMatchObject({ text: "written in the child" });
  });

  it("a child's commit conflicts with its parent's later change of the same node", async () => {
    const run = uniqueRun("nested-conflict");
    const node = await alice.insert({ run_id: run, text: "base" });
    const parent = await alice.session();
    const child = await alice.session(parent);
    await alice.ok("/v2/core/insert", { node_id: node, text: "child version", session_id: child });
    await alice.ok("/v2/core/insert", { node_id: node, text: "parent version", session_id: parent });
    expectError(await commit(alice, child), 409, "aborted", new RegExp(`node ${node}`));
    expect(await alice.node(node, parent)).toMatchObject({ text: "parent version" });
    expect((await commit(alice, child, "overwrite")).status).toBe(200);
    expect(await alice.node(node, parent)).toMatchObject({ text: "child version" });
    expect(await alice.node(node)).toMatchObject({ text: "base" });
    expect((await commit(alice, parent)).status).toBe(200);
    expect(await alice.node(node)).toMatchObject({ text: "child version" });
  });

  it("dropping a parent closes its open children", async () => {
    const parent = await alice.session();
    const child = await alice.session(parent);
    const grandchild = await alice.session(child);
    expect((await alice.delete(`/v2/core/session/${parent}/drop`)).status).toBe(200);
    expectError(await commit(alice, grandchild), 404, "not_found");
    expectError(await commit(alice, child), 404, "not_found");
  });
});

describe("snapshots", () => {
  it("validates snapshot names: never a file path", async () => {
    const session = await alice.session();
    for (const path of ["../etc/passwd", "/tmp/x", "a b", "x".repeat(129)]) {
      expectInvalidField(await alice.post(`/v2/core/session/${session}/snapshot`, { path }), "path");
    }
    expectInvalidField(await alice.post("/v2/core/session/load", { path: "" }), "path");
    expectInvalidField(await alice.post("/v2/core/session/load", { path: "../../x" }), "path");
    expectError(await alice.post("/v2/core/session/load", { path: "never-saved" }), 404, "not_found");
    const auto = await alice.ok(`/v2/core/session/${session}/snapshot`, {});
    expect(String(auto["path"])).toMatch(/^[A-Za-z0-9._-]{1,128}$/);
    await alice.delete(`/v2/core/session/${session}/drop`);
  });

  it("snapshots staged writes and loads them into a new session, also after a restart", async () => {
    const dir = tempDataDir();
    const first = await startTestServer(CORE_ENV, dir);
    const key = await createUser(first.baseUrl, first.adminKey, "dana");
    let dana = new CoreRest(first.baseUrl, key);
    const run = uniqueRun("snap");
    const pad = uniqueRun("pad");
    const stored = await dana.insert({ run_id: run, text: "stored before the session" });
    const session = await dana.session();
    const staged = String((await dana.ok("/v2/core/insert", { run_id: run, text: "staged for the snapshot", session_id: session }))["node_id"]);
    await dana.ok("/v2/core/insert", { node_id: stored, text: "stored, edited in the session", session_id: session });
    await dana.ok(`/v2/core/memory/${pad}`, { content: "staged note", txn_session_id: session });
    const snap = await dana.ok(`/v2/core/session/${session}/snapshot`, { path: "plan-v1.draft" });
    expect(snap).toMatchObject({ success: true, path: "plan-v1.draft", write_count: 3 });

    const loaded = String((await dana.ok("/v2/core/session/load", { path: "plan-v1.draft" }))["session_id"]);
    expect(loaded).not.toBe(session);
    expect(await dana.node(staged, loaded)).toMatchObject({ text: "staged for the snapshot" });
    expect(await dana.node(staged)).toBeUndefined();
    // Another user has no snapshot of that name.
    const erin = new CoreRest(first.baseUrl, await createUser(first.baseUrl, first.adminKey, "erin"));
    expectError(await erin.post("/v2/core/session/load", { path: "plan-v1.draft" }), 404, "not_found");
    await first.close();

    const second = await startTestServer({ ...CORE_ENV, SERVICE_ADMIN_KEY: first.adminKey }, dir);
    try {
      dana = new CoreRest(second.baseUrl, key);
      // Open sessions survive the restart…
      expect(await dana.node(staged, session)).toMatchObject({ text: "staged for the snapshot" });
      expect(await dana.node(stored, loaded)).toMatchObject({ text: "stored, edited in the session" });
      // …and so do snapshots.
      const reloaded = String((await dana.ok("/v2/core/session/load", { path: "plan-v1.draft" }))["session_id"]);
      expect(await dana.node(stored, reloaded)).toMatchObject({ text: "stored, edited in the session" });
      expect(texts(await dana.entries(pad, { txn_session_id: reloaded }))).toEqual(["staged note"]);
      const committed = await commit(dana, reloaded);
      expect(committed.status, JSON.stringify(committed.body)).toBe(200);
      expect(await dana.node(staged)).toMatchObject({ text: "staged for the snapshot" });
      expect(await dana.node(stored)).toMatchObject({ text: "stored, edited in the session" });
      expect(texts(await dana.entries(pad))).toEqual(["staged note"]);
      // The other sessions staged the same writes over the old versions: they now conflict.
      expectError(await commit(dana, session), 409, "aborted", new RegExp(`node ${stored}`));
      expectError(await commit(dana, loaded), 409, "aborted", new RegExp(`node ${staged}`));
    } finally {
      await second.close();
    }
  });

  it("a child's snapshot holds what the child sees, its parent's staged writes included", async () => {
    const run = uniqueRun("snap-child");
    const parent = await alice.session();
    const fromParent = String((await alice.ok("/v2/core/insert", { run_id: run, text: "parent staged", session_id: parent }))["node_id"]);
    const child = await alice.session(parent);
    const fromChild = String((await alice.ok("/v2/core/insert", { run_id: run, text: "child staged", session_id: child }))["node_id"]);
    const name = uniqueRun("child-snap");
    expect((await alice.ok(`/v2/core/session/${child}/snapshot`, { path: name }))["write_count"]).toBe(2);
    const loaded = String((await alice.ok("/v2/core/session/load", { path: name }))["session_id"]);
    expect(await alice.node(fromParent, loaded)).toMatchObject({ text: "parent staged" });
    expect(await alice.node(fromChild, loaded)).toMatchObject({ text: "child staged" });
    await alice.delete(`/v2/core/session/${parent}/drop`);
    await alice.delete(`/v2/core/session/${loaded}/drop`);
  });
});

describe("sessions and grants", () => {
  it("a grantee stages writes on the owner's node; a revoked grant blocks the commit", async () => {
    const run = uniqueRun("granted");
    const node = await alice.insert({ run_id: run, text: "alice's node" });
    const session = await bob.session();
    expectError(await bob.post("/v2/core/insert", { node_id: node, text: "bob's edit", session_id: session }), 404, "not_found");
    await alice.ok("/v2/core/acl/grant", { principal_type: "user", principal_id: "bob", run_id: run, permission: "write" });
    await bob.ok("/v2/core/insert", { node_id: node, text: "bob's edit", session_id: session });
    expect(await alice.node(node)).toMatchObject({ text: "alice's node" });
    await alice.ok("/v2/core/acl/revoke", { principal_type: "user", principal_id: "bob", run_id: run, permission: "write" });
    expectError(await commit(bob, session), 403, "permission_denied");
    expect(await alice.node(node)).toMatchObject({ text: "alice's node" });
    await alice.ok("/v2/core/acl/grant", { principal_type: "user", principal_id: "bob", run_id: run, permission: "write" });
    expect((await commit(bob, session)).status).toBe(200);
    expect(await alice.node(node)).toMatchObject({ text: "bob's edit", run_id: run });
  });
});

describe("over gRPC", () => {
  let grpc: Caller;
  beforeAll(() => {
    grpc = callerFor("grpc", server.baseUrl, server.port);
  });
  afterAll(() => grpc.close());

  it("stages, refuses a conflicting commit with ABORTED and commits with a merge strategy", async () => {
    const run = uniqueRun("grpc");
    const node = await alice.insert({ run_id: run, text: "grpc base" });
    const created = await grpc.call("engram.v2.CoreService/CreateCoreSession", {}, aliceKey);
    expect(created.code).toBe("ok");
    const session = String(created.body["session_id"]);
    const staged = await grpc.call("engram.v2.CoreService/InsertNode", { node_id: node, text: "grpc staged", session_id: session }, aliceKey);
    expect(staged.code, staged.message).toBe("ok");
    const got = await grpc.call("engram.v2.CoreService/GetNode", { id: node }, aliceKey);
    expect((got.body["node"] as { text: string }).text).toBe("grpc base");
    await alice.ok("/v2/core/insert", { node_id: node, text: "changed over REST" });
    const refused = await grpc.call("engram.v2.CoreService/CommitCoreSession", { id: session }, aliceKey);
    expect(refused.code).toBe("aborted");
    expect(refused.message).toContain(`node ${node}`);
    const merged = await grpc.call("engram.v2.CoreService/CommitCoreSession", { id: session, merge_strategy: "overwrite" }, aliceKey);
    expect(merged.code, merged.message).toBe("ok");
    expect(merged.body["applied_writes"]).toBe(1);
    expect(await alice.node(node)).toMatchObject({ text: "grpc staged" });
  });
});
