// Planning and state over REST, Connect and gRPC: run-scoped variables with JSON values and compare-and-set (concurrent
// writers racing on one expected version: exactly one wins), concepts stored as searchable memory of the run, the
// deprecated goals, actions and decision cycles (with `Deprecation: true` on their HTTP answers), two-user isolation,
// the events of every change, and all or nothing under a failure injected at every write.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { TRANSPORTS, connectCaller, grpcStream, type Caller, type CallResult, type JsonObject, type TransportName } from "./harness/callers.js";
import { RPC, evidenceOf, expectInvalid, ok, expectCode } from "./harness/memory.js";
import { CallerPool, freshUsers } from "./harness/caller-pool.js";

const P = {
  setVar: "engram.v2.PlanningService/SetVariable",
  getVar: "engram.v2.PlanningService/GetVariable",
  listVars: "engram.v2.PlanningService/ListVariables",
  deleteVar: "engram.v2.PlanningService/DeleteVariable",
  define: "engram.v2.PlanningService/DefineConcept",
  concepts: "engram.v2.PlanningService/ListConcepts",
  addGoal: "engram.v2.PlanningService/AddGoal",
  updateGoal: "engram.v2.PlanningService/UpdateGoal",
  listGoals: "engram.v2.PlanningService/ListGoals",
  goalTree: "engram.v2.PlanningService/GetGoalTree",
  submit: "engram.v2.PlanningService/SubmitAction",
  actionLog: "engram.v2.PlanningService/GetActionLog",
  cycle: "engram.v2.PlanningService/RunCycle",
  cycles: "engram.v2.PlanningService/GetCycleHistory",
} as const;
const SUBSCRIBE = "engram.v2.EventsService/Subscribe";
const ENV = { SERVICE_EMBEDDER: "hashed" };

let server: TestServer;

const pool = new CallerPool(() => server);
const on = (transport: TransportName): Caller => pool.on(transport);

beforeAll(async () => {
  server = await startTestServer(ENV);
});

afterAll(async () => {
  pool.close();
  await server.close();
});

const fresh = freshUsers(() => server);

/** uint64 fields are JSON strings on REST/Connect and strings from the gRPC test client: compare as numbers. */
function num(value: unknown): number {
  return Number(value);
}


function variableOf(body: JsonObject): JsonObject {
  return body["variable"] as JsonObject;
}

describe.each(TRANSPORTS)("variables over %s", (transport) => {
  it("set, get, list and delete JSON values of every type, with versions and access counts", async () => {
    const c = on(transport);
    const key = await fresh(`vars-${transport}`);
    const run = "plan-vars";
    const cases: [string, string, string][] = [
      ["a-number", "42", "number"],
      ["b-string", '"text"', "string"],
      ["c-object", '{"k":1,"n":{"x":[1,2]}}', "object"],
      ["d-array", "[1,\"two\",null]", "array"],
      ["e-null", "null", "null"],
      ["f-bool", "false", "boolean"],
    ];
    const versions: number[] = [];
    for (const [name, value, type] of cases) {
      const set = await ok(c, P.setVar, { run_id: run, name, value_json: value, source: name === "a-number" ? "reasoning" : "" }, key);
      expect(set["success"]).toBe(true);
      expect(variableOf(set)).toMatchObject({ name, value_json: value, var_type: type, access_count: 0, source: name === "a-number" ? "reasoning" : "explicit" });
      versions.push(num(variableOf(set)["version"]));
    }
    // Every write gets a new, higher version.
    expect([...versions].sort((a, b) => a - b)).toEqual(versions);
    expect(new Set(versions).size).toBe(versions.length);

    const first = await ok(c, P.getVar, { run_id: run, name: "c-object" }, key);
    expect(first).toMatchObject({ name: "c-object", value_json: '{"k":1,"n":{"x":[1,2]}}', var_type: "object", access_count: 1, source: "explicit" });
    expect(num(first["version"])).toBe(versions[2]);
    const second = await ok(c, P.getVar, { run_id: run, name: "c-object" }, key);
    expect(second["access_count"]).toBe(2);
    expect(num(second["version"])).toBe(versions[2]);

    // Replacing keeps the creation time and access count, and raises the version.
    const replaced = variableOf(await ok(c, P.setVar, { run_id: run, name: "c-object", value_json: "[]" }, key));
    expect(replaced).toMatchObject({ var_type: "array", value_json: "[]", access_count: 2, created_at: first["created_at"] });
    expect(num(replaced["version"])).toBeGreaterThan(versions[5] as number);

    // Listing is by name, paged, and does not count as access.
    const all = await ok(c, P.listVars, { run_id: run }, key);
    expect((all["variables"] as JsonObject[]).map((v) => v["name"])).toEqual(cases.map(([name]) => name));
    expect(all["next_page_token"]).toBe("");
    const pages: string[] = [];
    let token = "";
    for (let i = 0; i < 10; i++) {
      const page = await ok(c, P.listVars, { run_id: run, limit: 4, page_token: token }, key);
      pages.push(...(page["variables"] as JsonObject[]).map((v) => String(v["name"])));
      token = String(page["next_page_token"]);
      if (token === "") break;
    }
    expect(pages).toEqual(cases.map(([name]) => name));
    expect((await ok(c, P.getVar, { run_id: run, name: "c-object" }, key))["access_count"]).toBe(3);

    // Names are compared exactly, and any UTF-8 (up to 256 bytes) is a name.
    await ok(c, P.setVar, { run_id: run, name: "😀 emoji", value_json: "1" }, key);
    const listed = await ok(c, P.listVars, { run_id: run }, key);
    expect((listed["variables"] as JsonObject[]).map((v) => v["name"])).toContain("😀 emoji");

    expect((await ok(c, P.deleteVar, { run_id: run, name: "b-string" }, key))["success"]).toBe(true);
    expectCode(await c.call(P.getVar, { run_id: run, name: "b-string" }, key), "not_found", 404);
    expectCode(await c.call(P.deleteVar, { run_id: run, name: "b-string" }, key), "not_found", 404);
    // Another run of the same owner is another scope.
    expectCode(await c.call(P.getVar, { run_id: "plan-other", name: "a-number" }, key), "not_found", 404);
    expect((await ok(c, P.listVars, { run_id: "plan-other" }, key))["variables"]).toEqual([]);
  });

  it("compare-and-set: a write or delete at the wrong expected version is refused with 409 and changes nothing", async () => {
    const c = on(transport);
    const key = await fresh(`cas-${transport}`);
    const run = "plan-cas";
    const created = variableOf(await ok(c, P.setVar, { run_id: run, name: "counter", value_json: "1", expected_version: 0 }, key));
    const v1 = num(created["version"]);
    // 0 means "must not exist yet".
    expectCode(await c.call(P.setVar, { run_id: run, name: "counter", value_json: "99", expected_version: 0 }, key), "aborted", 409);
    expectCode(await c.call(P.setVar, { run_id: run, name: "counter", value_json: "99", expected_version: v1 + 1000 }, key), "aborted", 409);
    const v2 = num(variableOf(await ok(c, P.setVar, { run_id: run, name: "counter", value_json: "2", expected_version: v1 }, key))["version"]);
    expect(v2).toBeGreaterThan(v1);
    // The version read before is stale now.
    const stale = await c.call(P.setVar, { run_id: run, name: "counter", value_json: "99", expected_version: v1 }, key);
    expectCode(stale, "aborted", 409);
    expect(stale.message).toContain("expected_version");
    expectCode(await c.call(P.deleteVar, { run_id: run, name: "counter", expected_version: v1 }, key), "aborted", 409);
    const current = await ok(c, P.getVar, { run_id: run, name: "counter" }, key);
    expect(current["value_json"]).toBe("2");
    expect(num(current["version"])).toBe(v2);
    // A missing variable at a positive expected version is a lost race too.
    expectCode(await c.call(P.setVar, { run_id: run, name: "ghost", value_json: "1", expected_version: v2 }, key), "aborted", 409);
    await ok(c, P.deleteVar, { run_id: run, name: "counter", expected_version: v2 }, key);
    // Deleted and set again: versions never repeat, so a reader of v1 or v2 cannot win a compare-and-set.
    const again = num(variableOf(await ok(c, P.setVar, { run_id: run, name: "counter", value_json: "0", expected_version: 0 }, key))["version"]);
    expect(again).toBeGreaterThan(v2);
    expectCode(await c.call(P.setVar, { run_id: run, name: "counter", value_json: "99", expected_version: v2 }, key), "aborted", 409);
  });

  it("concurrent writers racing on the same expected version: exactly one wins, the others get 409", async () => {
    const c = on(transport);
    const key = await fresh(`race-${transport}`);
    const run = "plan-race";
    const writers = 12;
    // Creation race: expected_version 0.
    const creates = await Promise.all(
      Array.from({ length: writers }, (_, i) => c.call(P.setVar, { run_id: run, name: "leader", value_json: JSON.stringify(`writer-${i}`), expected_version: 0 }, key)),
    );
    expect(creates.filter((r) => r.code === "ok")).toHaveLength(1);
    for (const r of creates.filter((x) => x.code !== "ok")) expectCode(r, "aborted", 409);
    const winner = variableOf((creates.find((r) => r.code === "ok") as CallResult).body);
    const read = await ok(c, P.getVar, { run_id: run, name: "leader" }, key);
    expect(read["value_json"]).toBe(winner["value_json"]);

    // Update races, round after round, each on the version the previous round left.
    let version = num(winner["version"]);
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(
        Array.from({ length: writers }, (_, i) => c.call(P.setVar, { run_id: run, name: "leader", value_json: String(round * 100 + i), expected_version: version }, key)),
      );
      const wins = results.filter((r) => r.code === "ok");
      expect(wins, `round ${round}`).toHaveLength(1);
      for (const r of results.filter((x) => x.code !== "ok")) expectCode(r, "aborted", 409);
      const won = variableOf((wins[0] as CallResult).body);
      const now = await ok(c, P.getVar, { run_id: run, name: "leader" }, key);
      expect(now["value_json"]).toBe(won["value_json"]);
      expect(num(now["version"])).toBe(num(won["version"]));
      version = num(won["version"]);
    }

    // Delete races: exactly one delete at the current version succeeds.
    const deletes = await Promise.all(Array.from({ length: writers }, () => c.call(P.deleteVar, { run_id: run, name: "leader", expected_version: version }, key)));
    expect(deletes.filter((r) => r.code === "ok")).toHaveLength(1);
    for (const r of deletes.filter((x) => x.code !== "ok")) expect(["aborted", "not_found"]).toContain(r.code);
  });

  it("refuses bad input naming the field", async () => {
    const c = on(transport);
    const key = await fresh(`vbad-${transport}`);
    expectInvalid(await c.call(P.setVar, { name: "x", value_json: "1" }, key), "run_id");
    expectInvalid(await c.call(P.setVar, { run_id: "r", value_json: "1" }, key), "name");
    expectInvalid(await c.call(P.setVar, { run_id: "r", name: "x" }, key), "value_json");
    expectInvalid(await c.call(P.setVar, { run_id: "r", name: "x", value_json: "{not json" }, key), "value_json");
    expectInvalid(await c.call(P.setVar, { run_id: "r", name: "x", value_json: "1 2" }, key), "value_json");
    expectInvalid(await c.call(P.setVar, { run_id: "r", name: "x", value_json: JSON.stringify("y".repeat(65_535)) }, key), "value_json");
    expectInvalid(await c.call(P.setVar, { run_id: "r", name: "x", value_json: "1", source: "oracle" }, key), "source");
    expectInvalid(await c.call(P.setVar, { run_id: "r", name: "n".repeat(257), value_json: "1" }, key), "name");
    expectInvalid(await c.call(P.getVar, { run_id: "r" }, key), "name");
    expectInvalid(await c.call(P.deleteVar, { name: "x" }, key), "run_id");
    expectInvalid(await c.call(P.listVars, {}, key), "run_id");
    expectInvalid(await c.call(P.listVars, { run_id: "r", page_token: "not a token!" }, key), "page_token");
    // A value of exactly the limit is accepted.
    await ok(c, P.setVar, { run_id: "r", name: "big", value_json: JSON.stringify("y".repeat(65_534)) }, key);
    // Nothing refused was stored.
    expect((await ok(c, P.listVars, { run_id: "r" }, key))["variables"]).toHaveLength(1);
  });
});

describe.each(TRANSPORTS)("concepts over %s", (transport) => {
  it("define and list concepts; the definition is searchable memory of the run and a redefinition replaces it", async () => {
    const c = on(transport);
    const key = await fresh(`concepts-${transport}`);
    const run = "plan-concepts";
    const defined = await ok(
      c,
      P.define,
      {
        run_id: run,
        name: "flaky test",
        definition: "A test that passes and fails on the same commit because of timing or shared state.",
        related_concepts: ["quarantine", "retry budget", "quarantine", ""],
        schema_json: '{"type":"object"}',
      },
      key,
    );
    const concept = defined["concept"] as JsonObject;
    expect(concept).toMatchObject({ name: "flaky test", related_concepts: ["quarantine", "retry budget"], schema_json: '{"type":"object"}' });
    const firstEntry = String(concept["entry_id"]);
    expect(firstEntry).toMatch(/^ent_/);
    await ok(c, P.define, { run_id: run, name: "artifact", description: "A file a build produces and publishes." }, key);

    const listed = await ok(c, P.concepts, { run_id: run }, key);
    expect((listed["concepts"] as JsonObject[]).map((x) => x["name"])).toEqual(["artifact", "flaky test"]);
    expect((listed["concepts"] as JsonObject[])[0]).toMatchObject({ definition: "A file a build produces and publishes.", description: "A file a build produces and publishes.", schema_json: "{}" });
    const paged = await ok(c, P.concepts, { run_id: run, limit: 1 }, key);
    expect((paged["concepts"] as JsonObject[]).map((x) => x["name"])).toEqual(["artifact"]);
    const rest = await ok(c, P.concepts, { run_id: run, limit: 1, page_token: paged["next_page_token"] as string }, key);
    expect((rest["concepts"] as JsonObject[]).map((x) => x["name"])).toEqual(["flaky test"]);
    expect(rest["next_page_token"]).toBe("");

    // Query finds the definition as memory of the run.
    const found = evidenceOf(await ok(c, RPC.query, { run_id: run, query: "What is a flaky test that passes and fails on the same commit?" }, key));
    const hit = found.find((e) => e["id"] === firstEntry);
    expect(hit, JSON.stringify(found.map((e) => e["content"]))).toBeDefined();
    expect(String(hit?.["content"])).toContain("flaky test: A test that passes and fails");
    expect(String(hit?.["content"])).toContain("Related concepts: quarantine, retry budget");

    // Redefining updates the concept and supersedes its memory entry.
    const redefined = (await ok(c, P.define, { run_id: run, name: "flaky test", definition: "A test whose verdict depends on scheduling order, not on the code under test." }, key))["concept"] as JsonObject;
    expect(redefined["entry_id"]).not.toBe(firstEntry);
    expect(redefined["created_at"]).toBe(concept["created_at"]);
    expect(redefined["related_concepts"]).toEqual([]);
    const relisted = await ok(c, P.concepts, { run_id: run }, key);
    expect((relisted["concepts"] as JsonObject[]).find((x) => x["name"] === "flaky test")).toMatchObject({ definition: "A test whose verdict depends on scheduling order, not on the code under test." });
    const after = evidenceOf(await ok(c, RPC.query, { run_id: run, query: "flaky test verdict depends on scheduling order" }, key));
    const current = after.findIndex((e) => e["id"] === redefined["entry_id"]);
    expect(current).toBeGreaterThanOrEqual(0);
    expect(after[current]?.["is_stale"] ?? false).toBe(false);
    // The old definition is superseded: if still returned, it is stale, names its successor and ranks below it.
    const old = after.findIndex((e) => e["id"] === firstEntry);
    if (old >= 0) {
      expect(after[old]).toMatchObject({ is_stale: true, superseded_by: redefined["entry_id"] });
      expect(old).toBeGreaterThan(current);
    }
  });

  it("refuses bad input naming the field", async () => {
    const c = on(transport);
    const key = await fresh(`cbad-${transport}`);
    expectInvalid(await c.call(P.define, { name: "x" }, key), "run_id");
    expectInvalid(await c.call(P.define, { run_id: "r" }, key), "name");
    expectInvalid(await c.call(P.define, { run_id: "r", name: "x", schema_json: "[1]" }, key), "schema_json");
    expectInvalid(await c.call(P.define, { run_id: "r", name: "x", schema_json: "{" }, key), "schema_json");
    expectInvalid(await c.call(P.define, { run_id: "r", name: "x", definition: "d".repeat(16_385) }, key), "definition");
    expectInvalid(await c.call(P.define, { run_id: "r", name: "x", related_concepts: Array.from({ length: 33 }, (_, i) => `c${i}`) }, key), "related_concepts");
    expectInvalid(await c.call(P.define, { run_id: "r", name: "x", related_concepts: ["r".repeat(257)] }, key), "related_concepts[0]");
    expectInvalid(await c.call(P.concepts, {}, key), "run_id");
    expect((await ok(c, P.concepts, { run_id: "r" }, key))["concepts"]).toEqual([]);
  });
});

describe.each(TRANSPORTS)("deprecated goals, actions and cycles over %s", (transport) => {
  it("goals: add, update, list with a status filter, and the nested tree", async () => {
    const c = on(transport);
    const key = await fresh(`goals-${transport}`);
    const run = "plan-goals";
    const root = await ok(c, P.addGoal, { run_id: run, description: "Ship the release", priority: "high" }, key);
    expect(root).toMatchObject({ description: "Ship the release", priority: "high", status: "active", parent_id: "" });
    const rootId = String(root["id"]);
    const child = await ok(c, P.addGoal, { run_id: run, description: "Fix the flaky tests", parent_id: rootId }, key);
    expect(child).toMatchObject({ priority: "medium", parent_id: rootId });
    const grandchild = await ok(c, P.addGoal, { run_id: run, description: "Quarantine the worst one", parent_goal_id: String(child["id"]), priority: "LOW" }, key);
    expect(grandchild).toMatchObject({ priority: "low", parent_id: child["id"] });
    const second = await ok(c, P.addGoal, { run_id: run, description: "Write the changelog", parent_id: rootId, parent_goal_id: rootId }, key);
    const other = await ok(c, P.addGoal, { run_id: run, description: "Plan the next sprint" }, key);

    const updated = await ok(c, P.updateGoal, { run_id: run, goal_id: String(second["id"]), status: "achieved" }, key);
    expect(updated["success"]).toBe(true);
    expect(updated["goal"]).toMatchObject({ id: second["id"], status: "achieved", description: "Write the changelog" });
    const edited = await ok(c, P.updateGoal, { run_id: run, goal_id: String(other["id"]), description: "Plan the next two sprints", priority: "critical" }, key);
    expect(edited["goal"]).toMatchObject({ status: "active", description: "Plan the next two sprints", priority: "critical" });
    // Statuses are labels: an achieved goal may be reopened.
    await ok(c, P.updateGoal, { run_id: run, goal_id: String(other["id"]), status: "suspended" }, key);

    const all = (await ok(c, P.listGoals, { run_id: run }, key))["goals"] as JsonObject[];
    expect(all.map((g) => g["id"])).toEqual([rootId, child["id"], grandchild["id"], second["id"], other["id"]]);
    const achieved = (await ok(c, P.listGoals, { run_id: run, status_filter: "achieved" }, key))["goals"] as JsonObject[];
    expect(achieved.map((g) => g["id"])).toEqual([second["id"]]);

    const tree = (await ok(c, P.goalTree, { run_id: run }, key))["goals"] as JsonObject[];
    expect(tree.map((n) => (n["goal"] as JsonObject)["id"])).toEqual([rootId, other["id"]]);
    const rootNode = tree[0] as JsonObject;
    expect(rootNode["depth"]).toBe(0);
    const children = rootNode["children"] as JsonObject[];
    expect(children.map((n) => (n["goal"] as JsonObject)["id"])).toEqual([child["id"], second["id"]]);
    expect((children[0] as JsonObject)["depth"]).toBe(1);
    const grand = (children[0] as JsonObject)["children"] as JsonObject[];
    expect(grand.map((n) => [(n["goal"] as JsonObject)["id"], n["depth"]])).toEqual([[grandchild["id"], 2]]);
    const subtree = (await ok(c, P.goalTree, { run_id: run, root_goal_id: String(child["id"]) }, key))["goals"] as JsonObject[];
    expect(subtree.map((n) => [(n["goal"] as JsonObject)["id"], n["depth"], (n["children"] as JsonObject[]).length])).toEqual([[child["id"], 0, 1]]);

    expectCode(await c.call(P.addGoal, { run_id: run, description: "orphan", parent_id: "goal_zzzz" }, key), "not_found", 404);
    expectCode(await c.call(P.addGoal, { run_id: "plan-elsewhere", description: "wrong run", parent_id: rootId }, key), "not_found", 404);
    expectCode(await c.call(P.updateGoal, { run_id: run, goal_id: "goal_zzzz", status: "failed" }, key), "not_found", 404);
    expectCode(await c.call(P.updateGoal, { run_id: run, goal_id: "not-a-goal-id" }, key), "not_found", 404);
    expectCode(await c.call(P.goalTree, { run_id: run, root_goal_id: "goal_zzzz" }, key), "not_found", 404);
    expectInvalid(await c.call(P.addGoal, { run_id: run }, key), "description");
    expectInvalid(await c.call(P.addGoal, { description: "x" }, key), "run_id");
    expectInvalid(await c.call(P.addGoal, { run_id: run, description: "x", priority: "urgent" }, key), "priority");
    expectInvalid(await c.call(P.addGoal, { run_id: run, description: "x", parent_id: rootId, parent_goal_id: String(child["id"]) }, key), "parent_goal_id");
    expectInvalid(await c.call(P.updateGoal, { run_id: run, goal_id: rootId, status: "done" }, key), "status");
    expectInvalid(await c.call(P.updateGoal, { run_id: run }, key), "goal_id");
    expectInvalid(await c.call(P.listGoals, { run_id: run, status_filter: "done" }, key), "status_filter");
    expectInvalid(await c.call(P.goalTree, {}, key), "run_id");
    expect(((await ok(c, P.listGoals, { run_id: run }, key))["goals"] as JsonObject[]).length).toBe(5);
  });

  it("goals nest at most 16 levels deep", async () => {
    const c = on(transport);
    const key = await fresh(`deep-${transport}`);
    let parent = "";
    for (let level = 1; level <= 16; level++) parent = String((await ok(c, P.addGoal, { run_id: "plan-deep", description: `level ${level}`, parent_id: parent }, key))["id"]);
    expectInvalid(await c.call(P.addGoal, { run_id: "plan-deep", description: "level 17", parent_id: parent }, key), "parent_id");
  });

  it("actions are recorded, not executed, and read back newest first", async () => {
    const c = on(transport);
    const key = await fresh(`actions-${transport}`);
    const run = "plan-actions";
    const first = await ok(c, P.submit, { run_id: run, agent_id: "planner", action_type: "retrieve", action_json: '{"q":"deploy"}' }, key);
    expect(first).toMatchObject({ success: true, result_json: "", error: "", duration_ms: 0 });
    const second = await ok(c, P.submit, { run_id: run, action_type: "REASON" }, key);
    const log = (await ok(c, P.actionLog, { run_id: run }, key))["entries"] as JsonObject[];
    expect(log.map((e) => e["action_id"])).toEqual([second["action_id"], first["action_id"]]);
    expect(log[1]).toMatchObject({ action_type: "retrieve", action_json: '{"q":"deploy"}', success: true, cycle_number: 0, agent_id: "planner" });
    expect(log[0]).toMatchObject({ action_type: "reason", action_json: "{}" });
    const filtered = (await ok(c, P.actionLog, { run_id: run, action_type_filter: "retrieve" }, key))["entries"] as JsonObject[];
    expect(filtered.map((e) => e["action_id"])).toEqual([first["action_id"]]);
    expect(((await ok(c, P.actionLog, { run_id: run, limit: 1 }, key))["entries"] as JsonObject[]).length).toBe(1);
    expectInvalid(await c.call(P.submit, { run_id: run }, key), "action_type");
    expectInvalid(await c.call(P.submit, { run_id: run, action_type: "execute" }, key), "action_type");
    expectInvalid(await c.call(P.submit, { run_id: run, action_type: "learn", action_json: "{" }, key), "action_json");
    expectInvalid(await c.call(P.submit, { action_type: "learn" }, key), "run_id");
    expectInvalid(await c.call(P.actionLog, { run_id: run, action_type_filter: "execute" }, key), "action_type_filter");
    expect(((await ok(c, P.actionLog, { run_id: run }, key))["entries"] as JsonObject[]).length).toBe(2);
  });

  it("a decision cycle records observation → decision (best score, first on a tie) → action", async () => {
    const c = on(transport);
    const key = await fresh(`cycles-${transport}`);
    const run = "plan-cycles";
    const one = await ok(
      c,
      P.cycle,
      {
        run_id: run,
        agent_id: "planner",
        observation: "CI is red on main",
        candidates: [
          { action_type: "reason", action_json: '{"about":"logs"}', score: 0.4, rationale: "think first" },
          { action_type: "retrieve", action_json: '{"q":"last green"}', score: 0.9, rationale: "find the last green build" },
          { action_type: "ground", action_json: "{}", score: 0.9, rationale: "a tie, proposed later" },
        ],
      },
      key,
    );
    expect(one["cycle_number"]).toBe(1);
    expect(one["selected_action"]).toMatchObject({ action_type: "retrieve", action_json: '{"q":"last green"}', score: 0.9, rationale: "find the last green build" });
    const result = one["action_result"] as JsonObject;
    expect(result).toMatchObject({ success: true, result_json: "" });
    expect(one["execution_time_ms"]).toBe(0);

    const empty = await ok(c, P.cycle, { run_id: run, observation: "nothing to do" }, key);
    expect(empty["cycle_number"]).toBe(2);
    expect(empty["selected_action"] ?? null).toBeNull();
    expect(empty["action_result"] ?? null).toBeNull();

    const history = (await ok(c, P.cycles, { run_id: run }, key))["cycles"] as JsonObject[];
    expect(history.map((h) => h["cycle_number"])).toEqual([2, 1]);
    expect(history[1]).toMatchObject({ observation: "CI is red on main", agent_id: "planner", selected_action: { action_type: "retrieve" }, action_result: { action_id: result["action_id"] } });
    expect(history[0]).toMatchObject({ observation: "nothing to do" });
    expect(((await ok(c, P.cycles, { run_id: run, limit: 1 }, key))["cycles"] as JsonObject[]).length).toBe(1);
    // The decision is in the action log with its cycle's number.
    const log = (await ok(c, P.actionLog, { run_id: run }, key))["entries"] as JsonObject[];
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ action_id: result["action_id"], action_type: "retrieve", cycle_number: 1 });

    expectInvalid(await c.call(P.cycle, { run_id: run, candidates: [{ action_type: "dance", score: 1 }] }, key), "candidates[0].action_type");
    expectInvalid(await c.call(P.cycle, { run_id: run, candidates: [{ action_type: "reason" }, { action_type: "learn", action_json: "nope" }] }, key), "candidates[1].action_json");
    expectInvalid(await c.call(P.cycle, { run_id: run, candidates: Array.from({ length: 101 }, () => ({ action_type: "reason" })) }, key), "candidates");
    expectInvalid(await c.call(P.cycle, {}, key), "run_id");
    expectInvalid(await c.call(P.cycles, {}, key), "run_id");
    expect(((await ok(c, P.cycles, { run_id: run }, key))["cycles"] as JsonObject[]).length).toBe(2);
  });
});

describe("the Deprecation header over HTTP", () => {
  const DEPRECATED: [string, JsonObject][] = [
    ["/v2/control/goals/add", { run_id: "dep", description: "a goal" }],
    ["/v2/control/goals/update", { run_id: "dep", goal_id: "goal_zzzz" }],
    ["/v2/control/goals/list", { run_id: "dep" }],
    ["/v2/control/goals/tree", { run_id: "dep" }],
    ["/v2/control/actions/submit", { run_id: "dep", action_type: "reason" }],
    ["/v2/control/actions/log", { run_id: "dep" }],
    ["/v2/control/cycles/run", { run_id: "dep" }],
    ["/v2/control/cycles/history", { run_id: "dep" }],
    ["/v2/control/goals/add", {}],
  ];
  const SUPPORTED: [string, JsonObject][] = [
    ["/v2/control/variables/set", { run_id: "dep", name: "x", value_json: "1" }],
    ["/v2/control/variables/get", { run_id: "dep", name: "x" }],
    ["/v2/control/variables/list", { run_id: "dep" }],
    ["/v2/control/variables/delete", { run_id: "dep", name: "x" }],
    ["/v2/control/concepts/define", { run_id: "dep", name: "x" }],
    ["/v2/control/concepts/list", { run_id: "dep" }],
  ];

  async function post(path: string, body: JsonObject, key: string): Promise<Response> {
    return fetch(new URL(path, server.baseUrl), { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  }

  it("is `true` on every answer of a deprecated route, success or error, and absent on supported routes", async () => {
    const key = await fresh("deprecation");
    for (const [path, body] of DEPRECATED) {
      const response = await post(path, body, key);
      await response.text();
      expect(response.headers.get("deprecation"), `${path} ${response.status}`).toBe("true");
    }
    // The update of a missing goal (404) and a request without run_id (400) carry it too.
    const missing = await post("/v2/control/goals/update", { run_id: "dep", goal_id: "goal_zzzz" }, key);
    expect([missing.status, missing.headers.get("deprecation")]).toEqual([404, "true"]);
    const invalid = await post("/v2/control/goals/add", {}, key);
    expect([invalid.status, invalid.headers.get("deprecation")]).toEqual([400, "true"]);
    for (const [path, body] of SUPPORTED) {
      const response = await post(path, body, key);
      await response.text();
      expect(response.headers.get("deprecation"), path).toBeNull();
    }
  });
});

describe.each(TRANSPORTS)("two users over %s", (transport) => {
  it("never see, change or count each other's planning state, even under the same run and names", async () => {
    const c = on(transport);
    const alice = await fresh(`iso-alice-${transport}`);
    const bob = await fresh(`iso-bob-${transport}`);
    const run = "plan-shared";
    const aliceVar = variableOf(await ok(c, P.setVar, { run_id: run, name: "secret", value_json: '"alice only"' }, alice));
    await ok(c, P.define, { run_id: run, name: "zephyrine", definition: "Alice's private codename zephyrine for the migration." }, alice);
    const goal = await ok(c, P.addGoal, { run_id: run, description: "Alice's goal" }, alice);
    await ok(c, P.submit, { run_id: run, action_type: "learn" }, alice);
    await ok(c, P.cycle, { run_id: run, candidates: [{ action_type: "reason", score: 1 }] }, alice);

    expectCode(await c.call(P.getVar, { run_id: run, name: "secret" }, bob), "not_found", 404);
    expectCode(await c.call(P.deleteVar, { run_id: run, name: "secret" }, bob), "not_found", 404);
    expect((await ok(c, P.listVars, { run_id: run }, bob))["variables"]).toEqual([]);
    // Bob's compare-and-set sees his own (absent) variable: 0 succeeds, Alice's version does not.
    expectCode(await c.call(P.setVar, { run_id: run, name: "secret", value_json: "1", expected_version: num(aliceVar["version"]) }, bob), "aborted", 409);
    await ok(c, P.setVar, { run_id: run, name: "secret", value_json: '"bob"', expected_version: 0 }, bob);
    expect((await ok(c, P.concepts, { run_id: run }, bob))["concepts"]).toEqual([]);
    expect(JSON.stringify(evidenceOf(await ok(c, RPC.query, { run_id: run, query: "zephyrine codename migration" }, bob)))).not.toContain("zephyrine");
    expect((await ok(c, P.listGoals, { run_id: run }, bob))["goals"]).toEqual([]);
    expect((await ok(c, P.goalTree, { run_id: run }, bob))["goals"]).toEqual([]);
    expectCode(await c.call(P.updateGoal, { run_id: run, goal_id: String(goal["id"]), status: "failed" }, bob), "not_found", 404);
    expectCode(await c.call(P.goalTree, { run_id: run, root_goal_id: String(goal["id"]) }, bob), "not_found", 404);
    expectCode(await c.call(P.addGoal, { run_id: run, description: "hijack", parent_id: String(goal["id"]) }, bob), "not_found", 404);
    expect((await ok(c, P.actionLog, { run_id: run }, bob))["entries"]).toEqual([]);
    expect((await ok(c, P.cycles, { run_id: run }, bob))["cycles"]).toEqual([]);
    // Bob's own cycle numbering starts at 1.
    expect((await ok(c, P.cycle, { run_id: run }, bob))["cycle_number"]).toBe(1);

    // Alice's state is untouched.
    const mine = await ok(c, P.getVar, { run_id: run, name: "secret" }, alice);
    expect(mine["value_json"]).toBe('"alice only"');
    expect(num(mine["version"])).toBe(num(aliceVar["version"]));
    expect(((await ok(c, P.listGoals, { run_id: run }, alice))["goals"] as JsonObject[])[0]).toMatchObject({ status: "active" });
    expect(((await ok(c, P.cycles, { run_id: run }, alice))["cycles"] as JsonObject[]).map((x) => x["cycle_number"])).toEqual([1]);
  });
});

interface EventLog {
  readonly events: JsonObject[];
  until(match: (e: JsonObject) => boolean, from?: number): Promise<JsonObject>;
  close(): void;
}

async function subscribe(key: string): Promise<EventLog> {
  const events: JsonObject[] = [];
  const wakers: (() => void)[] = [];
  const stream = grpcStream(server.port, SUBSCRIBE, {}, key);
  stream.on("data", (event: JsonObject) => {
    events.push(event);
    for (const wake of wakers.splice(0)) wake();
  });
  stream.on("error", () => undefined);
  const log: EventLog = {
    events,
    async until(match, from = 0) {
      for (;;) {
        const found = events.slice(from).find(match);
        if (found !== undefined) return found;
        await new Promise<void>((resolve) => wakers.push(resolve));
      }
    },
    close: () => stream.cancel(),
  };
  await log.until((e) => e["type"] === "subscribed");
  return log;
}

function payloadOf(event: JsonObject): JsonObject {
  return JSON.parse(String(event["payload"])) as JsonObject;
}

describe("events", () => {
  it("every planning change reaches the owner's stream after its commit, in order, and never another user's", async () => {
    const c = on("connect");
    const alice = await fresh("ev-alice");
    const bob = await fresh("ev-bob");
    const aliceEvents = await subscribe(alice);
    const bobEvents = await subscribe(bob);
    try {
      const run = "plan-events";
      const set = variableOf(await ok(c, P.setVar, { run_id: run, name: "phase", value_json: '"build"' }, alice));
      await ok(c, P.deleteVar, { run_id: run, name: "phase" }, alice);
      const concept = (await ok(c, P.define, { run_id: run, name: "canary", definition: "A small first rollout." }, alice))["concept"] as JsonObject;
      const goal = await ok(c, P.addGoal, { run_id: run, description: "Roll out", priority: "high" }, alice);
      await ok(c, P.updateGoal, { run_id: run, goal_id: String(goal["id"]), status: "achieved" }, alice);
      const last = await aliceEvents.until((e) => e["type"] === "goal.updated");
      const planning = aliceEvents.events.filter((e) => e["run_id"] === run && e["type"] !== "entry.created");
      expect(planning.map((e) => e["type"])).toEqual(["variable.set", "variable.deleted", "concept.defined", "goal.added", "goal.updated"]);
      expect(payloadOf(planning[0] as JsonObject)).toEqual({ name: "phase", var_type: "string", version: num(set["version"]) });
      expect(payloadOf(planning[1] as JsonObject)).toEqual({ name: "phase" });
      expect(payloadOf(planning[2] as JsonObject)).toEqual({ name: "canary", entry_id: concept["entry_id"] });
      expect(payloadOf(planning[3] as JsonObject)).toEqual({ goal_id: goal["id"], description: "Roll out", priority: "high", parent_id: "" });
      expect(payloadOf(last)).toEqual({ goal_id: goal["id"], status: "achieved" });
      // The concept's memory entry is announced as an entry too.
      expect(aliceEvents.events.some((e) => e["type"] === "entry.created" && payloadOf(e)["entry_id"] === concept["entry_id"])).toBe(true);

      await ok(c, RPC.remember, { session_id: "bob-marker", content: "marker" }, bob);
      await bobEvents.until((e) => e["run_id"] === "bob-marker");
      expect(bobEvents.events.filter((e) => e["type"] !== "subscribed").every((e) => e["run_id"] === "bob-marker")).toBe(true);
    } finally {
      aliceEvents.close();
      bobEvents.close();
    }
  });
});

describe("all or nothing", () => {
  interface WriteCase {
    readonly name: string;
    readonly rpc: string;
    readonly request: (ids: Record<string, string>) => JsonObject;
    readonly setup?: (key: string) => Promise<Record<string, string>>;
  }
  const run = "plan-atom";
  const CASES: WriteCase[] = [
    { name: "variable set", rpc: P.setVar, request: () => ({ run_id: run, name: "v", value_json: '{"a":1}' }) },
    {
      name: "variable set with compare-and-set",
      rpc: P.setVar,
      setup: async (key) => ({ version: String((variableOf(await ok(connectCaller(server.baseUrl), P.setVar, { run_id: run, name: "cas", value_json: "1" }, key)))["version"]) }),
      request: (ids) => ({ run_id: run, name: "cas", value_json: "2", expected_version: Number(ids["version"]) }),
    },
    {
      name: "variable get (counts the access)",
      rpc: P.getVar,
      setup: async (key) => (await ok(connectCaller(server.baseUrl), P.setVar, { run_id: run, name: "read", value_json: "1" }, key), {}),
      request: () => ({ run_id: run, name: "read" }),
    },
    {
      name: "variable delete",
      rpc: P.deleteVar,
      setup: async (key) => (await ok(connectCaller(server.baseUrl), P.setVar, { run_id: run, name: "gone", value_json: "1" }, key), {}),
      request: () => ({ run_id: run, name: "gone" }),
    },
    { name: "concept define", rpc: P.define, request: () => ({ run_id: run, name: "atomicity", definition: "All of a write or none of it.", related_concepts: ["durability"] }) },
    {
      name: "concept redefine",
      rpc: P.define,
      setup: async (key) => (await ok(connectCaller(server.baseUrl), P.define, { run_id: run, name: "redefined", definition: "first" }, key), {}),
      request: () => ({ run_id: run, name: "redefined", definition: "second" }),
    },
    { name: "goal add", rpc: P.addGoal, request: () => ({ run_id: run, description: "atomic goal" }) },
    {
      name: "goal update",
      rpc: P.updateGoal,
      setup: async (key) => ({ id: String((await ok(connectCaller(server.baseUrl), P.addGoal, { run_id: run, description: "to update" }, key))["id"]) }),
      request: (ids) => ({ run_id: run, goal_id: ids["id"] as string, status: "failed" }),
    },
    { name: "action submit", rpc: P.submit, request: () => ({ run_id: run, action_type: "ground", action_json: "{}" }) },
    { name: "cycle run", rpc: P.cycle, request: () => ({ run_id: run, observation: "o", candidates: [{ action_type: "reason", score: 1 }] }) },
  ];

  it("a failure at any write of a planning write route leaves no record, memory entry or event", async () => {
    const c = connectCaller(server.baseUrl);
    const key = await fresh("atom");
    const events = await subscribe(key);
    const faults = server.engram.testHooks.writeFaults;
    /** Writes a marker and waits for its event: every event published before it has then arrived. */
    const barrier = async (): Promise<number> => {
      const from = events.events.length;
      await ok(c, RPC.remember, { session_id: "barriers", content: "barrier" }, key);
      await events.until((e) => e["run_id"] === "barriers", from);
      return events.events.length;
    };
    try {
      for (const wc of CASES) {
        for (let nth = 1; ; nth++) {
          const ids = wc.setup === undefined ? {} : await wc.setup(key);
          const eventsBefore = await barrier();
          const before = server.engram.testHooks.fingerprint();
          faults.failAt(nth);
          const result = await c.call(wc.rpc, wc.request(ids), key);
          const reached = faults.writesSeen >= nth;
          faults.failAt(0);
          if (!reached) {
            expect(result.code, `${wc.name} without a fault: ${result.message}`).toBe("ok");
            expect(nth, `${wc.name} wrote nothing`).toBeGreaterThan(1);
            break;
          }
          expect(result.code, `${wc.name} failing at write ${nth}`).not.toBe("ok");
          expect(result.message).not.toMatch(/LMDB|lmdb|injected/);
          expect(server.engram.testHooks.fingerprint(), `${wc.name}: store changed by a write failing at ${nth}`).toEqual(before);
          const eventsAfter = await barrier();
          const published = events.events.slice(eventsBefore, eventsAfter - 1).filter((e) => e["run_id"] !== "barriers");
          expect(published, `${wc.name}: events of a failed write`).toEqual([]);
        }
      }
    } finally {
      faults.failAt(0);
      events.close();
    }
  });

  it("a refused compare-and-set or a refused input leaves the store as it was", async () => {
    const c = connectCaller(server.baseUrl);
    const key = await fresh("atom-refused");
    const v = num(variableOf(await ok(c, P.setVar, { run_id: run, name: "held", value_json: "1" }, key))["version"]);
    const before = server.engram.testHooks.fingerprint();
    expectCode(await c.call(P.setVar, { run_id: run, name: "held", value_json: "2", expected_version: v + 1 }, key), "aborted", 409);
    expectCode(await c.call(P.deleteVar, { run_id: run, name: "held", expected_version: v + 1 }, key), "aborted", 409);
    expectInvalid(await c.call(P.define, { run_id: run, name: "bad", schema_json: "[]" }, key), "schema_json");
    expectCode(await c.call(P.addGoal, { run_id: run, description: "orphan", parent_id: "goal_zzzz" }, key), "not_found", 404);
    expect(server.engram.testHooks.fingerprint()).toEqual(before);
  });
});

describe("bounds", () => {
  it("a run holds at most 1,000 variables (429 beyond, updates still allowed) and its action log keeps the latest 1,000", async () => {
    const c = connectCaller(server.baseUrl);
    const key = await fresh("bounds");
    const run = "plan-bounds";
    // Writes in concurrent batches share flushes (group commit), so a thousand of them stay quick.
    for (let batch = 0; batch < 10; batch++) {
      const results = await Promise.all(Array.from({ length: 100 }, (_, i) => c.call(P.setVar, { run_id: run, name: `v${String(batch * 100 + i).padStart(4, "0")}`, value_json: "0" }, key)));
      expect(results.every((r) => r.code === "ok")).toBe(true);
    }
    const over = await c.call(P.setVar, { run_id: run, name: "one-too-many", value_json: "0" }, key);
    expectCode(over, "resource_exhausted", 429);
    expect(over.message).toContain("1000");
    await ok(c, P.setVar, { run_id: run, name: "v0000", value_json: "1" }, key);
    // Another run of the same owner has room of its own.
    await ok(c, P.setVar, { run_id: "plan-bounds-2", name: "one-too-many", value_json: "0" }, key);
    const page = await ok(c, P.listVars, { run_id: run }, key);
    expect(page["variables"]).toHaveLength(1000);
    expect(page["next_page_token"]).toBe("");

    // 100 `learn` actions, then 999 `reason` ones: 1,099 in all, so the log keeps only the newest `learn` one.
    const learned = (await Promise.all(Array.from({ length: 100 }, () => ok(c, P.submit, { run_id: run, action_type: "learn" }, key)))).map((r) => String(r["action_id"]));
    const reasoned: string[] = [];
    for (let batch = 0; batch < 10; batch++) {
      const size = batch === 9 ? 99 : 100;
      const results = await Promise.all(Array.from({ length: size }, () => ok(c, P.submit, { run_id: run, action_type: "reason" }, key)));
      reasoned.push(...results.map((r) => String(r["action_id"])));
    }
    const idOrder = (a: string, b: string): number => parseInt(a.slice(4), 36) - parseInt(b.slice(4), 36);
    const keptLearn = (await ok(c, P.actionLog, { run_id: run, action_type_filter: "learn", limit: 500 }, key))["entries"] as JsonObject[];
    expect(keptLearn.map((e) => e["action_id"])).toEqual([[...learned].sort(idOrder).at(-1)]);
    const log = (await ok(c, P.actionLog, { run_id: run, limit: 500 }, key))["entries"] as JsonObject[];
    expect(log.map((e) => e["action_id"])).toEqual([...reasoned].sort(idOrder).slice(-500).reverse());
  });
});
