// Lookups by id are scoped to the caller: another user's node ids, core session ids, snapshot names and scratchpads
// answer on every core route exactly as ones that do not exist (same status, code and message, the id aside), or
// read as empty; and nothing of theirs changes. A read grant opens the nodes of the granted run, and only those.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CORE_ENV, CoreRest, uniqueRun, type RestResult } from "./harness/core.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

let server: TestServer;
let alice: CoreRest;
let bob: CoreRest;

/** Bob's records, which Alice must not be able to tell from missing ones. */
const bobs = { run: "", node: "", session: "", snapshot: "", pad: "" };
/** Ids of the same shapes that name nothing (node ids stay below 2^53, so they take the same path as real ones). */
const ghost = { node: "9007199254740000", session: `cs_${"0".repeat(24)}`, snapshot: "", pad: "" };
/** Alice's own records, used where a route needs one of hers alongside one of Bob's. */
const alices = { run: "", node: "", pad: "" };

beforeAll(async () => {
  server = await startTestServer({ ...CORE_ENV, SERVICE_CORE_ENABLE_DIRECT_PUBSUB: "true" });
  alice = new CoreRest(server.baseUrl, await createUser(server.baseUrl, server.adminKey, "alice"));
  bob = new CoreRest(server.baseUrl, await createUser(server.baseUrl, server.adminKey, "bob"));
  bobs.run = uniqueRun("bob");
  bobs.node = await bob.insert({ run_id: bobs.run, text: "bob's private node" });
  bobs.session = await bob.session();
  await bob.ok("/v2/core/insert", { node_id: bobs.node, text: "bob's staged update", session_id: bobs.session });
  bobs.snapshot = uniqueRun("bob-snap");
  await bob.ok(`/v2/core/session/${bobs.session}/snapshot`, { path: bobs.snapshot });
  bobs.pad = uniqueRun("bob-pad");
  await bob.ok(`/v2/core/memory/${bobs.pad}`, { content: "bob's note" });
  ghost.snapshot = uniqueRun("no-snap");
  ghost.pad = uniqueRun("no-pad");
  alices.run = uniqueRun("alice");
  alices.node = await alice.insert({ run_id: alices.run, text: "alice's node" });
  alices.pad = uniqueRun("alice-pad");
  await alice.ok(`/v2/core/memory/${alices.pad}`, { content: "alice's note" });
});
afterAll(async () => server?.close());

type Ids = typeof bobs;
type Probe = (ids: Ids) => Promise<RestResult>;

/** The answer with the probed ids replaced, so that Bob's and the ghost's answers compare equal when nothing leaks. */
function shape(r: RestResult, ids: Ids): RestResult {
  let text = JSON.stringify(r.body);
  // Whole words only: a small node id such as "1" must not match inside a session id.
  for (const value of [ids.node, ids.session, ids.snapshot, ids.pad]) text = text.replace(new RegExp(`\\b${value}\\b`, "g"), "<id>");
  return { status: r.status, body: JSON.parse(text) as RestResult["body"] };
}

const ghostIds = (): Ids => ({ ...bobs, ...ghost });

/** Alice's answer for Bob's ids equals her answer for ids naming nothing, and is NOT_FOUND saying nothing of Bob. */
async function expectIndistinguishable(probe: Probe): Promise<void> {
  const forBob = await probe(bobs);
  const forGhost = await probe(ghostIds());
  expect(forBob.status, JSON.stringify(forBob.body)).toBe(404);
  expect(forBob.body["code"]).toBe("not_found");
  expect(shape(forBob, bobs)).toEqual(shape(forGhost, ghostIds()));
  // The message names only what the caller sent: nothing of the owner or of why.
  expect(String(shape(forBob, bobs).body["message"])).not.toMatch(/bob|another user|owner|permission|grant/i);
}

const NOT_FOUND_PROBES: Record<string, Probe> = {
  "get a node": (ids) => alice.get(`/v2/core/node/${ids.node}`),
  "get a node through a session": (ids) => alice.get(`/v2/core/node/${alices.node}`, { session_id: ids.session }),
  "delete a node": (ids) => alice.delete(`/v2/core/node/${ids.node}`),
  "delete a node in a session": (ids) => alice.delete(`/v2/core/node/${alices.node}`, { session_id: ids.session }),
  "update a node by id (insert with an existing id)": (ids) => alice.post("/v2/core/insert", { node_id: ids.node, text: "taken over" }),
  "update a node by id in a batch": (ids) => alice.post("/v2/core/batch_insert", { nodes: [{ node_id: ids.node, text: "taken over" }] }),
  "insert into a session": (ids) => alice.post("/v2/core/insert", { run_id: alices.run, text: "staged", session_id: ids.session }),
  "search through a session": (ids) => alice.post("/v2/core/search", { query_text: "private", session_id: ids.session }),
  "commit a session": (ids) => alice.post(`/v2/core/session/${ids.session}/commit`, {}),
  "commit a session named in the body": (ids) => alice.post(`/v2/core/session/${ids.session}/commit`, { session_id: ids.session }),
  "drop a session": (ids) => alice.delete(`/v2/core/session/${ids.session}/drop`),
  "snapshot a session": (ids) => alice.post(`/v2/core/session/${ids.session}/snapshot`, { path: uniqueRun("alice-snap") }),
  "open a child of a session": (ids) => alice.post("/v2/core/session/create", { parent_session_id: ids.session }),
  "load a snapshot": (ids) => alice.post("/v2/core/session/load", { path: ids.snapshot }),
  "read a scratchpad through a session": (ids) => alice.get(`/v2/core/memory/${alices.pad}`, { txn_session_id: ids.session }),
  "write a scratchpad entry into a session": (ids) => alice.post(`/v2/core/memory/${alices.pad}`, { content: "staged", txn_session_id: ids.session }),
  "grant on the run of a node": (ids) => alice.post("/v2/core/acl/grant", { node_id: ids.node, principal_id: "bob", permission: "read" }),
  "check a permission on the run of a node": (ids) => alice.post("/v2/core/acl/check", { node_id: ids.node, principal_id: "alice", permission: "read" }),
  "subscribe to a node": (ids) => alice.post("/v2/core/pubsub/subscribe", { filter_type: "node", node_id: ids.node }),
};

describe("another user's records are indistinguishable from missing ones", () => {
  for (const [name, probe] of Object.entries(NOT_FOUND_PROBES)) {
    it(name, async () => expectIndistinguishable(probe));
  }

  it("reads another user's scratchpad as empty, and clearing it clears nothing", async () => {
    for (const ids of [bobs, ghostIds()]) {
      expect(await alice.entries(ids.pad)).toEqual([]);
      const cleared = await alice.delete(`/v2/core/memory/${ids.pad}`);
      expect(cleared.status, JSON.stringify(cleared.body)).toBe(200);
      expect(cleared.body["cleared_count"]).toBe(0);
    }
  });

  it("leaves every one of the other user's records as it was", async () => {
    expect(await bob.node(bobs.node)).toMatchObject({ node_id: bobs.node, text: "bob's private node" });
    expect(await bob.node(bobs.node, bobs.session)).toMatchObject({ text: "bob's staged update" });
    expect((await bob.entries(bobs.pad)).map((e) => e["content"])).toEqual(["bob's note"]);
    const loaded = await bob.ok("/v2/core/session/load", { path: bobs.snapshot });
    expect(await bob.node(bobs.node, String(loaded["session_id"]))).toMatchObject({ text: "bob's staged update" });
    await bob.ok(`/v2/core/session/${String(loaded["session_id"])}/commit`, {});
    expect(await bob.node(bobs.node)).toMatchObject({ text: "bob's staged update" });
  });
});

describe("a grant opens what it grants, and no more", () => {
  it("lets a reader get the granted run's node but still not reach the owner's sessions or scratchpads", async () => {
    await bob.ok("/v2/core/acl/grant", { run_id: bobs.run, principal_id: "alice", permission: "read" });
    try {
      expect(await alice.node(bobs.node)).toMatchObject({ node_id: bobs.node, run_id: bobs.run });
      // Reading is granted, writing is not: now that Alice may see the node, she is told why she may not change it.
      const update = await alice.post("/v2/core/insert", { node_id: bobs.node, text: "taken over" });
      expect(update.status, JSON.stringify(update.body)).toBe(403);
      expect(update.body["code"]).toBe("permission_denied");
      // Grants are on runs: sessions and scratchpads stay their owner's alone.
      const session = await bob.session();
      const forBob = await alice.post(`/v2/core/session/${session}/commit`, {});
      const forGhost = await alice.post(`/v2/core/session/${ghost.session}/commit`, {});
      expect(shape(forBob, { ...bobs, session })).toEqual(shape(forGhost, ghostIds()));
      expect(forBob.status).toBe(404);
      expect(await alice.entries(bobs.pad)).toEqual([]);
    } finally {
      await bob.ok("/v2/core/acl/revoke", { run_id: bobs.run, principal_id: "alice" });
    }
    expect(await alice.node(bobs.node)).toBeUndefined();
  });
});
