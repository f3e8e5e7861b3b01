// Provenance on every entry, through the public routes: where a text came from (origin, tool, URL), who wrote it
// (key, agent) and its trust level are shown in query and recall evidence, context sources, activity listings and
// exports and lesson listings; the `origins` and `trust` filters narrow query, recall, context and activity inside
// the search (counts and overlays included) on every transport; the trust policy and stated trust decide the level;
// a tenant export and import keeps provenance; one owner's entries never show through another's filters.
import path from "node:path";
import { open } from "lmdb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DATABASE_NAMES } from "../src/storage/database.js";
import { decodeEntry } from "../src/storage/entry-record.js";
import { TRANSPORTS, callerFor, restCaller, type Caller, type Json, type JsonObject } from "./harness/callers.js";
import { RPC, evidenceOf, expectInvalid, idsOf, exportTenantLines, ingestAndWait, ok } from "./harness/memory.js";
import { clusteredRun, startTestServer, tempDataDir, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

const R = {
  ...RPC,
  listActivity: "engram.v2.MemoryService/ListActivity",
  exportActivity: "engram.v2.MemoryService/ExportActivity",
  appendActivity: "engram.v2.MemoryService/AppendActivity",
  listLessons: "engram.v2.LearningService/ListLessons",
  exportTenant: "engram.v2.TenantService/ExportTenant",
  importTenant: "engram.v2.TenantService/ImportTenant",
} as const;

const RUN = "prov-run";
const QUESTION = "deploy window Friday evening";

/** The key id of an API key `mem_<instance_tag>_<key_id>_<secret>`: what provenance names as the writer. */
function keyIdOf(key: string): string {
  return key.split("_")[2] as string;
}

function provenanceOf(item: JsonObject | undefined): JsonObject {
  expect(item, "item present").toBeDefined();
  return (item as JsonObject)["provenance"] as JsonObject;
}

function byId(items: readonly JsonObject[], id: string): JsonObject | undefined {
  return items.find((item) => item["id"] === id);
}

async function activity(c: Caller, key: string, filters: JsonObject = {}): Promise<{ ids: string[]; total: number; entries: JsonObject[] }> {
  const page = await ok(c, R.listActivity, { run_id: RUN, limit: 500, ...filters }, key);
  const entries = page["entries"] as JsonObject[];
  return { ids: idsOf(entries).sort(), total: Number(page["total_visible"]), entries };
}

async function queryIds(c: Caller, key: string, filters: JsonObject = {}): Promise<string[]> {
  const body = await ok(c, R.query, { run_id: RUN, query: QUESTION, limit: 50, ...filters }, key);
  return idsOf(evidenceOf(body));
}

async function contextSources(c: Caller, key: string, filters: JsonObject = {}): Promise<JsonObject[]> {
  const body = await ok(c, R.context, { run_id: RUN, query: QUESTION, limit: 50, ...filters }, key);
  return body["sources"] as JsonObject[];
}


describe("provenance on the memory routes", () => {
  let server: TestServer;
  let rest: Caller;
  let alice: string;
  let bob: string;
  /** Alice's entries of RUN, by what they are. */
  const ids = { user: "", tool: "", web: "", lesson: "", archive: "", checkpoint: "", trace: "" };
  let bobTool = "";

  beforeAll(async () => {
    server = await startTestServer();
    rest = restCaller(server.baseUrl);
    alice = await createUser(server.baseUrl, server.adminKey, "prov-alice");
    bob = await createUser(server.baseUrl, server.adminKey, "prov-bob");
    const remembered = async (key: string, content: string, extra: JsonObject): Promise<string> =>
      String((await ok(rest, R.remember, { session_id: RUN, agent_id: "planner", content, ...extra }, key))["entry_id"]);
    ids.user = await remembered(alice, "The deploy window is Friday evening after six.", { provenance: { origin: "user" } });
    const [tool = "", web = ""] = await ingestAndWait(
      rest,
      alice,
      RUN,
      [
        { text: "Status page says the deploy window is Friday evening.", provenance: { origin: "tool", tool_name: "web_fetch" } },
        // Stated trust overrides the policy's `untrusted` for web pages.
        { text: "Runbook: the deploy window opens Friday evening.", provenance: { origin: "web", url: "https://runbook.example/deploy", trust: "trusted" } },
      ],
      { agent_id: "fetcher" },
    );
    ids.tool = tool;
    ids.web = web;
    ids.lesson = await remembered(alice, "Before a deploy on Friday evening, check the status page.", {
      intent: "lesson",
      provenance: { origin: "web", url: "https://blog.example/tips" },
    });
    const archived = await ok(rest, R.archive, { run_id: RUN, agent_id: "planner", content: "build log: 42 tests passed", source_tool: "bash" }, alice);
    const idOfReference = async (referenceId: Json | undefined): Promise<string> =>
      String(((await ok(rest, R.dereference, { reference_id: String(referenceId) }, alice))["evidence"] as JsonObject)["id"]);
    ids.archive = await idOfReference(archived["reference_id"]);
    const checkpoint = await ok(rest, R.checkpoint, { run_id: RUN, agent_id: "planner", context_snapshot: "halfway through the deploy checklist" }, alice);
    ids.checkpoint = await idOfReference(checkpoint["checkpoint_id"]);
    const appended = await ok(rest, R.appendActivity, { run_id: RUN, agent_id: "planner", activity: { type: "tool_call", tool_name: "grep", payload: "3 matches" } }, alice);
    ids.trace = String(appended["event_id"]);
    // Bob writes a tool output of the same words into a run of the same name: never visible to Alice.
    [bobTool = ""] = await ingestAndWait(rest, bob, RUN, [{ text: "Status page says the deploy window is Friday evening.", provenance: { origin: "tool", tool_name: "web_fetch" } }], {
      agent_id: "fetcher",
    });
  });

  afterAll(async () => {
    rest.close();
    await server.close();
  });

  it("shows a tool output's origin, tool, trust, writing key and agent in query, recall, context and activity", async () => {
    const expected = { origin: "tool", tool_name: "web_fetch", trust: "untrusted", key_id: keyIdOf(alice), agent_id: "fetcher" };
    const query = await ok(rest, R.query, { run_id: RUN, query: QUESTION, limit: 50 }, alice);
    expect(provenanceOf(byId(evidenceOf(query), ids.tool))).toMatchObject(expected);
    const recall = await ok(rest, R.recall, { session_id: RUN, query: QUESTION, limit: 50 }, alice);
    expect(provenanceOf(byId(evidenceOf(recall), ids.tool))).toMatchObject(expected);
    expect(provenanceOf(byId(await contextSources(rest, alice), ids.tool))).toMatchObject(expected);
    expect(provenanceOf(byId((await activity(rest, alice)).entries, ids.tool))).toMatchObject(expected);
    const exported = await ok(rest, R.exportActivity, { run_id: RUN }, alice);
    const lines = String(exported["content"]).trim().split("\n").map((l) => JSON.parse(l) as JsonObject);
    expect(provenanceOf(byId(lines, ids.tool))).toMatchObject(expected);
  });

  it("takes a trust stated on the write over the policy, and gives every write path its origin and key", async () => {
    const { entries } = await activity(rest, alice);
    const key_id = keyIdOf(alice);
    expect(provenanceOf(byId(entries, ids.user))).toMatchObject({ origin: "user", trust: "trusted", key_id, agent_id: "planner" });
    expect(provenanceOf(byId(entries, ids.web))).toMatchObject({ origin: "web", url: "https://runbook.example/deploy", trust: "trusted", key_id });
    expect(provenanceOf(byId(entries, ids.lesson))).toMatchObject({ origin: "web", url: "https://blog.example/tips", trust: "untrusted", key_id });
    expect(provenanceOf(byId(entries, ids.archive))).toMatchObject({ origin: "tool", tool_name: "bash", trust: "untrusted", key_id });
    expect(provenanceOf(byId(entries, ids.checkpoint))).toMatchObject({ origin: "agent", tool_name: "", trust: "trusted", key_id });
    expect(provenanceOf(byId(entries, ids.trace))).toMatchObject({ origin: "tool", tool_name: "grep", trust: "untrusted", key_id });
    for (const entry of entries) expect(provenanceOf(entry)["flags"]).toEqual([]);
  });

  it("shows a stored lesson's provenance in the lesson listing", async () => {
    const body = await ok(rest, R.listLessons, { run_id: RUN, limit: 50 }, alice);
    const lesson = byId(body["lessons"] as JsonObject[], ids.lesson);
    expect(provenanceOf(lesson)).toMatchObject({ origin: "web", url: "https://blog.example/tips", trust: "untrusted", key_id: keyIdOf(alice), agent_id: "planner" });
  });

  it("filters activity by origins and trust, with totals that count only the matches of the caller", async () => {
    const all = await activity(rest, alice);
    expect(all.total).toBe(7);
    expect(await activity(rest, alice, { origins: ["tool"] })).toMatchObject({ ids: [ids.tool, ids.archive, ids.trace].sort(), total: 3 });
    expect(await activity(rest, alice, { trust: "untrusted" })).toMatchObject({ ids: [ids.tool, ids.lesson, ids.archive, ids.trace].sort(), total: 4 });
    expect(await activity(rest, alice, { origins: ["user", "agent"] })).toMatchObject({ ids: [ids.user, ids.checkpoint].sort(), total: 2 });
    expect(await activity(rest, alice, { origins: ["web"], trust: "trusted" })).toMatchObject({ ids: [ids.web], total: 1 });
    // Bob's tool output in a run of the same name is his alone.
    expect(await activity(rest, bob, { origins: ["tool"] })).toMatchObject({ ids: [bobTool], total: 1 });
    // Paging keeps the filter: two pages of the untrusted entries, and a token of other filters is refused.
    const first = await ok(rest, R.listActivity, { run_id: RUN, limit: 2, trust: "untrusted" }, alice);
    expect(first["total_visible"]).toBe(4);
    const second = await ok(rest, R.listActivity, { run_id: RUN, limit: 2, trust: "untrusted", page_token: first["next_page_token"] as string }, alice);
    expect([...idsOf(first["entries"] as JsonObject[]), ...idsOf(second["entries"] as JsonObject[])].sort()).toEqual([ids.tool, ids.lesson, ids.archive, ids.trace].sort());
    expectInvalid(await rest.call(R.listActivity, { run_id: RUN, limit: 2, trust: "trusted", page_token: first["next_page_token"] as string }, alice), "page_token");
    const exported = await ok(rest, R.exportActivity, { run_id: RUN, origins: ["tool"] }, alice);
    expect(exported["entry_count"]).toBe(3);
  });

  it("filters query and recall inside the search: rule and lesson overlays and other owners included", async () => {
    const everything = await queryIds(rest, alice);
    expect(everything).toEqual(expect.arrayContaining([ids.user, ids.tool, ids.web, ids.lesson]));
    expect(everything).not.toContain(bobTool);
    const trusted = await queryIds(rest, alice, { trust: "trusted" });
    expect(trusted).toEqual(expect.arrayContaining([ids.user, ids.web]));
    // The untrusted lesson is not overlaid as guidance once the reader asks for trusted entries only.
    for (const id of [ids.tool, ids.lesson, ids.archive, ids.trace, bobTool]) expect(trusted).not.toContain(id);
    const tools = await queryIds(rest, alice, { origins: ["tool"] });
    expect(tools[0]).toBe(ids.tool);
    expect(tools.every((id) => [ids.tool, ids.archive, ids.trace].includes(id))).toBe(true);
    expect((await queryIds(rest, alice, { origins: ["web"], trust: "untrusted" }))).toEqual([ids.lesson]);
    const recall = await ok(rest, R.recall, { session_id: RUN, query: QUESTION, origins: ["user"], limit: 50 }, alice);
    expect(idsOf(evidenceOf(recall))).toEqual([ids.user]);
    expect(await queryIds(rest, bob, { origins: ["tool"] })).toEqual([bobTool]);
  });

  it("filters context sources, the recency fallback included", async () => {
    const trusted = idsOf(await contextSources(rest, alice, { trust: "trusted" }));
    expect(trusted).toEqual(expect.arrayContaining([ids.user, ids.web]));
    for (const id of [ids.tool, ids.lesson, ids.archive, ids.trace, bobTool]) expect(trusted).not.toContain(id);
    // No topic: the newest entries that pass the filters.
    const body = await ok(rest, R.context, { run_id: RUN, query: "", origins: ["tool"], limit: 50 }, alice);
    expect(idsOf(body["sources"] as JsonObject[]).sort()).toEqual([ids.tool, ids.archive, ids.trace].sort());
    expect(body["context_block"]).not.toContain("deploy window opens");
  });

  it.each(TRANSPORTS.filter((t) => t !== "rest"))("filters by origins and trust over %s", async (transport) => {
    const c = callerFor(transport, server.baseUrl, server.port);
    try {
      const tools = await queryIds(c, alice, { origins: ["tool"] });
      expect(tools[0]).toBe(ids.tool);
      expect(tools.every((id) => [ids.tool, ids.archive, ids.trace].includes(id))).toBe(true);
      expect(await activity(c, alice, { trust: "untrusted" })).toMatchObject({ total: 4 });
      const sources = await contextSources(c, alice, { origins: ["web"], trust: "trusted" });
      expect(idsOf(sources)).toEqual([ids.web]);
      expect(provenanceOf(sources[0])).toMatchObject({ origin: "web", trust: "trusted", key_id: keyIdOf(alice), agent_id: "fetcher" });
      expectInvalid(await c.call(R.query, { run_id: RUN, query: QUESTION, origins: ["robot"] }, alice), "origins");
    } finally {
      c.close();
    }
  });

  it("refuses unknown origins and trust levels with 400 naming the field", async () => {
    const cases: [string, JsonObject][] = [
      [R.query, { run_id: RUN, query: QUESTION }],
      [R.recall, { session_id: RUN, query: QUESTION }],
      [R.context, { run_id: RUN, query: QUESTION }],
      [R.listActivity, { run_id: RUN }],
      [R.exportActivity, { run_id: RUN }],
    ];
    for (const [rpc, request] of cases) {
      expectInvalid(await rest.call(rpc, { ...request, origins: ["tool", "robot"] }, alice), "origins");
      expectInvalid(await rest.call(rpc, { ...request, trust: "somewhat" }, alice), "trust");
    }
    const longTool = { run_id: RUN, activity: { type: "tool_call", tool_name: "t".repeat(257), payload: "x" } };
    expectInvalid(await rest.call(R.appendActivity, longTool, alice), "activity.tool_name");
  });

  it("records the writing key on concepts and on a session's final checkpoint, which stays as untrusted as what it quotes", async () => {
    const dave = await createUser(server.baseUrl, server.adminKey, "prov-dave");
    const run = "prov-session";
    await ok(rest, "engram.v2.SessionsService/CreateControlSession", { run_id: run, agent_id: "worker" }, dave);
    await ok(rest, "engram.v2.PlanningService/DefineConcept", { run_id: run, name: "canary", definition: "a small first deploy" }, dave);
    await ingestAndWait(rest, dave, run, [{ text: "curl said: ignore the runbook", provenance: { origin: "tool", tool_name: "curl" } }]);
    await ok(rest, "engram.v2.SessionsService/CloseControlSession", { session_id: run }, dave);
    const page = await ok(rest, R.listActivity, { run_id: run, limit: 50 }, dave);
    const entries = page["entries"] as JsonObject[];
    const key_id = keyIdOf(dave);
    const concept = entries.find((e) => String(e["content"]).startsWith("canary"));
    expect(provenanceOf(concept)).toMatchObject({ origin: "agent", trust: "trusted", key_id });
    const closing = entries.find((e) => e["entry_type"] === "checkpoint");
    expect(provenanceOf(closing)).toMatchObject({ origin: "system", trust: "untrusted", key_id, agent_id: "worker" });
  });

  it("keeps provenance through a tenant export and import, recording the importing key", async () => {
    const carol = await createUser(server.baseUrl, server.adminKey, "prov-carol");
    const lines = await exportTenantLines(rest, alice);
    const imported = await ok(rest, R.importTenant, { lines }, carol);
    expect(imported).toBeDefined();
    const { entries } = await activity(rest, carol);
    expect(entries).toHaveLength(7);
    const byContent = (text: string): JsonObject | undefined => entries.find((e) => String(e["content"]).startsWith(text));
    const key_id = keyIdOf(carol);
    expect(provenanceOf(byContent("Status page says"))).toMatchObject({ origin: "tool", tool_name: "web_fetch", trust: "untrusted", key_id, agent_id: "fetcher" });
    expect(provenanceOf(byContent("Runbook:"))).toMatchObject({ origin: "web", url: "https://runbook.example/deploy", trust: "trusted", key_id });
    expect(provenanceOf(byContent("Before a deploy"))).toMatchObject({ origin: "web", trust: "untrusted", key_id });
    // A line's provenance is checked as a write's would be.
    const entryLine = lines.map((l) => JSON.parse(l) as JsonObject).find((l) => l["kind"] === "entry") as { record: JsonObject };
    const bad = { ...entryLine, id: "ent_bad", record: { ...entryLine.record, provenance: { ...(entryLine.record["provenance"] as JsonObject), origin: "robot" } } };
    expectInvalid(await rest.call(R.importTenant, { lines: [JSON.stringify(bad)] }, carol), "lines[0].record.provenance.origin");
    const long = { ...entryLine, id: "ent_long", record: { ...entryLine.record, provenance: { ...(entryLine.record["provenance"] as JsonObject), toolName: "t".repeat(257) } } };
    expectInvalid(await rest.call(R.importTenant, { lines: [JSON.stringify(long)] }, carol), "lines[0].record.provenance.toolName");
    // The imported entries filter as the originals did.
    expect(await activity(rest, carol, { trust: "untrusted" })).toMatchObject({ total: 4 });
    expect(await activity(rest, alice, { trust: "untrusted" })).toMatchObject({ total: 4 });
  });
});

describe("the trust policy", () => {
  let server: TestServer;
  let rest: Caller;
  let key: string;

  beforeAll(async () => {
    server = await startTestServer({ SERVICE_TRUST_POLICY: "tool=trusted,import=untrusted" });
    rest = restCaller(server.baseUrl);
    key = await createUser(server.baseUrl, server.adminKey, "policy-user");
  });

  afterAll(async () => {
    rest.close();
    await server.close();
  });

  it("gives each origin the trust SERVICE_TRUST_POLICY names, unless the write states one", async () => {
    const [tool, web, stated] = await ingestAndWait(rest, key, RUN, [
      { text: "tool output one", provenance: { origin: "tool", tool_name: "ls" } },
      { text: "web page one", provenance: { origin: "web", url: "https://example.org/" } },
      { text: "tool output two", provenance: { origin: "tool", trust: "untrusted" } },
    ]);
    const { entries } = await activity(rest, key);
    expect(provenanceOf(byId(entries, tool as string))["trust"]).toBe("trusted");
    expect(provenanceOf(byId(entries, web as string))["trust"]).toBe("untrusted");
    expect(provenanceOf(byId(entries, stated as string))["trust"]).toBe("untrusted");
    expect(await activity(rest, key, { origins: ["tool"], trust: "trusted" })).toMatchObject({ ids: [tool], total: 1 });
  });

  it("imports lines exported before provenance existed as origin import, with the policy's trust for imports", async () => {
    const source = await createUser(server.baseUrl, server.adminKey, "policy-source");
    const target = await createUser(server.baseUrl, server.adminKey, "policy-target");
    await ok(rest, R.remember, { session_id: RUN, content: "an old fact from before provenance" }, source);
    const lines = (await exportTenantLines(rest, source)).map((l) => JSON.parse(l) as JsonObject);
    // A line as a server before provenance wrote it: record version 3, no provenance, flags, expiry or absorbed ids.
    const old = lines.map((line) => {
      if (line["kind"] !== "entry") return JSON.stringify(line);
      const { provenance: _p, flags: _f, expiresAt: _e, absorbedIds: _a, ...record } = line["record"] as JsonObject;
      return JSON.stringify({ ...line, record: { ...record, v: 3 } });
    });
    await ok(rest, R.importTenant, { lines: old }, target);
    const { entries } = await activity(rest, target);
    expect(entries).toHaveLength(1);
    expect(provenanceOf(entries[0])).toMatchObject({ origin: "import", trust: "untrusted", key_id: keyIdOf(target) });
    expect(await activity(rest, target, { origins: ["import"] })).toMatchObject({ total: 1 });
  });
});

describe("entries written before provenance existed", () => {
  // Clustered servers rebuild their store from the shard log, which holds the record as it was written.
  it.skipIf(clusteredRun())("read with origin from their source, the trust the server's policy gives it and no key", async () => {
    const dataDir = tempDataDir();
    const policy = { SERVICE_TRUST_POLICY: "agent=untrusted" };
    let server = await startTestServer(policy, dataDir);
    const key = await createUser(server.baseUrl, server.adminKey, "legacy-user");
    let rest = restCaller(server.baseUrl);
    const id = String((await ok(rest, R.remember, { session_id: RUN, content: "written by an older build" }, key))["entry_id"]);
    await server.close();
    // Rewrite the stored record as a version-3 build wrote it: every field but provenance, flags, expiry and absorbed ids.
    const root = open({ path: path.join(dataDir, "lmdb"), noSubdir: false, maxDbs: 64, compression: false });
    const entries = root.openDB<Record<string, unknown>, number>({ name: DATABASE_NAMES.entries });
    await root.transaction(() => {
      for (const { key: seq, value } of entries.getRange()) {
        const { provenance: _p, flags: _f, expiresAt: _e, absorbedIds: _a, ...old } = decodeEntry(value, seq);
        void entries.put(seq, { ...old, v: 3 });
      }
    });
    await root.close();
    server = await startTestServer(policy, dataDir);
    rest = restCaller(server.baseUrl);
    try {
      const listed = await activity(rest, key);
      expect(provenanceOf(byId(listed.entries, id))).toMatchObject({ origin: "agent", trust: "untrusted", key_id: "", tool_name: "", url: "", flags: [] });
      expect(await activity(rest, key, { trust: "untrusted", origins: ["agent"] })).toMatchObject({ ids: [id], total: 1 });
      expect(await queryIds(rest, key, { trust: "trusted" })).toEqual([]);
      expect(await queryIds(rest, key, { trust: "untrusted" })).toEqual([id]);
    } finally {
      await server.close();
    }
  });
});
