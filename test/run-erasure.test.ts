// delete_run erases a run in every plane at once and says what it erased: memory, outcomes, links, agents,
// handoffs, the control session, variables, concepts and goals — and another owner's run of the same id stays whole.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { TRANSPORTS, callerFor, type Caller, type JsonObject } from "./harness/callers.js";
import { ok } from "./harness/memory.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ SERVICE_CORE_ALLOW_ALL: "true" });
});
afterAll(async () => server.close());

/** Writes something of the run into every plane; returns the ids needed to look for it afterwards. */
async function fillRun(c: Caller, key: string, run: string): Promise<{ handoff: string; node: string }> {
  await ok(c, "engram.v2.SessionsService/CreateControlSession", { run_id: run, agent_id: "planner" }, key);
  await ok(c, "engram.v2.MemoryService/BatchInsert", { run_id: run, items: [{ text: "The ledger export runs at 02:00.", entry_type: "fact" }] }, key);
  await ok(c, "engram.v2.LearningService/RecordStepOutcome", { run_id: run, step_id: "s1", outcome: "success" }, key);
  await ok(c, "engram.v2.LearningService/RecordOutcome", { run_id: run, outcome: "success", idempotency_key: `${run}-done` }, key);
  await ok(c, "engram.v2.RunsService/LinkRun", { run_id: run, linked_run_id: `${run}-child` }, key);
  await ok(c, "engram.v2.CoordinationService/RegisterAgent", { run_id: run, agent_id: "planner", role: "planner" }, key);
  await ok(c, "engram.v2.CoordinationService/RegisterAgent", { run_id: run, agent_id: "coder", role: "coder" }, key);
  const handoff = await ok(
    c,
    "engram.v2.CoordinationService/CreateHandoff",
    { run_id: run, task_id: "t1", from_agent_id: "planner", to_agent_id: "coder", content: "Export the ledger" },
    key,
  );
  await ok(c, "engram.v2.PlanningService/SetVariable", { run_id: run, name: "attempts", value_json: "3" }, key);
  await ok(c, "engram.v2.PlanningService/DefineConcept", { run_id: run, name: "ledger", definition: "The books of record." }, key);
  await ok(c, "engram.v2.PlanningService/AddGoal", { run_id: run, description: "Ship the export" }, key);
  const node = await ok(c, "engram.v2.CoreService/InsertNode", { run_id: run, text: "a node of the run" }, key);
  return { handoff: String(handoff["handoff_id"]), node: String(node["node_id"]) };
}

describe.each(TRANSPORTS)("delete_run over %s", (transport) => {
  it("erases the run in every plane, returns the receipt, and leaves another owner's run of the same id whole", async () => {
    const c = callerFor(transport, server.baseUrl, server.port);
    const alice = await createUser(server.baseUrl, server.adminKey, `alice-${transport}`);
    const bob = await createUser(server.baseUrl, server.adminKey, `bob-${transport}`);
    const run = "erase-me";
    const alices = await fillRun(c, alice, run);
    const bobs = await fillRun(c, bob, run);

    const deleted = await ok(c, "engram.v2.RunsService/DeleteRun", { run_id: run }, alice);
    expect(deleted["deleted"]).toBe(true);
    expect(deleted["erased"]).toMatchObject({
      outcomes: 2,
      links: 1,
      agents: 2,
      handoffs: 1,
      control_sessions: 1,
      variables: 1,
      concepts: 1,
      goals: 1,
      core_nodes: 1,
    });
    expect(Number((deleted["erased"] as JsonObject)["entries"])).toBeGreaterThanOrEqual(2);

    // Nothing of alice's run is found by any route.
    expect((await ok(c, "engram.v2.CoordinationService/ListAgents", { run_id: run }, alice))["agents"]).toEqual([]);
    expect((await ok(c, "engram.v2.CoordinationService/ListHandoffs", { run_id: run }, alice))["handoffs"]).toEqual([]);
    expect((await ok(c, "engram.v2.PlanningService/ListVariables", { run_id: run }, alice))["variables"]).toEqual([]);
    expect((await ok(c, "engram.v2.PlanningService/ListGoals", { run_id: run }, alice))["goals"]).toEqual([]);
    expect((await c.call("engram.v2.SessionsService/GetControlSession", { session_id: run }, alice)).code).toBe("not_found");
    const query = await ok(c, "engram.v2.MemoryService/Query", { run_id: run, query: "ledger export" }, alice);
    expect(query["evidence"]).toEqual([]);
    const reflected = await ok(c, "engram.v2.LearningService/Reflect", { run_id: run }, alice);
    expect(reflected["evidence_items"]).toBe(0);
    // The idempotency key went with the outcome: the same key applies anew.
    const again = await ok(c, "engram.v2.LearningService/RecordOutcome", { run_id: run, outcome: "success", idempotency_key: `${run}-done` }, alice);
    expect(again["deduplicated"]).toBe(false);
    expect((await c.call("engram.v2.CoreService/GetNode", { id: alices.node }, alice)).code).toBe("not_found");
    expect((await ok(c, "engram.v2.CoreService/GetNode", { id: bobs.node }, bob))["node"]).toBeDefined();

    // Bob's run of the same id is untouched.
    expect((await ok(c, "engram.v2.CoordinationService/ListAgents", { run_id: run }, bob))["agents"]).toHaveLength(2);
    expect((await ok(c, "engram.v2.PlanningService/ListVariables", { run_id: run }, bob))["variables"]).toHaveLength(1);
    expect((await ok(c, "engram.v2.SessionsService/GetControlSession", { session_id: run }, bob))["session"]).toBeDefined();
    const bobsQuery = await ok(c, "engram.v2.MemoryService/Query", { run_id: run, query: "ledger export" }, bob);
    expect((bobsQuery["evidence"] as JsonObject[]).length).toBeGreaterThan(0);
  });
});

describe("the context snapshot carries the run's plan", () => {
  it("returns its open goals and its variables", async () => {
    const c = callerFor("rest", server.baseUrl, server.port);
    const key = await createUser(server.baseUrl, server.adminKey, "snapshot-plan");
    await ok(c, "engram.v2.PlanningService/AddGoal", { run_id: "plan-run", description: "Ship the export" }, key);
    await ok(c, "engram.v2.PlanningService/SetVariable", { run_id: "plan-run", name: "attempts", value_json: "2" }, key);
    const snapshot = (await ok(c, "engram.v2.RunsService/GetContextSnapshot", { run_id: "plan-run" }, key))["snapshot"] as JsonObject;
    expect((snapshot["goals"] as JsonObject[]).map((g) => g["description"])).toEqual(["Ship the export"]);
    expect(((snapshot["working_memory"] as JsonObject)["variables"] as JsonObject[]).map((v) => [v["name"], v["value_json"]])).toEqual([["attempts", "2"]]);
  });
});

describe("the SDK's forget(session_id)", () => {
  it("deletes the run in every plane", async () => {
    const { Client } = await import("@mubit-ai/sdk");
    const key = await createUser(server.baseUrl, server.adminKey, "sdk-forget");
    const c = callerFor("rest", server.baseUrl, server.port);
    await fillRun(c, key, "sdk-forgotten");
    const client = new Client({ transport: "http", endpoint: server.baseUrl, api_key: key });
    expect(await client.forget({ session_id: "sdk-forgotten" })).toMatchObject({ deleted: true, erased: { agents: 2, variables: 1 } });
    expect((await ok(c, "engram.v2.CoordinationService/ListAgents", { run_id: "sdk-forgotten" }, key))["agents"]).toEqual([]);
  });
});

describe("knowledge promoted beyond a deleted run", () => {
  it("outlives the run: global lessons are kept out of it, marked for review when learned from it; run-scoped ones go", async () => {
    const c = callerFor("rest", server.baseUrl, server.port);
    const key = await createUser(server.baseUrl, server.adminKey, "promoted-kept");
    await ok(c, "engram.v2.MemoryService/BatchInsert", { run_id: "taught", items: [{ text: "task: rotate the signing keys", entry_type: "trace" }] }, key);
    await ok(
      c,
      "engram.v2.LearningService/RecordStepOutcome",
      { run_id: "taught", step_id: "rotate", outcome: "failure", rationale: "old key still cached", directive_hint: "Flush the key cache after rotating signing keys" },
      key,
    );
    const reflected = await ok(c, "engram.v2.LearningService/Reflect", { run_id: "taught" }, key);
    const learned = String((reflected["lessons"] as JsonObject[])[0]?.["lesson_id"]);
    await ok(c, "engram.v2.LearningService/UpdateLesson", { lesson_id: learned, scope: "global" }, key);
    const stated = await ok(c, "engram.v2.LearningService/Reflect", { run_id: "taught", lessons: [{ content: "Keep run notes short." }] }, key);
    const runScoped = String((stated["lessons"] as JsonObject[])[0]?.["lesson_id"]);

    const deleted = await ok(c, "engram.v2.RunsService/DeleteRun", { run_id: "taught" }, key);
    expect((deleted["erased"] as JsonObject)["lessons_kept"]).toBe(1);
    const lessons = (await ok(c, "engram.v2.LearningService/ListLessons", { limit: 100 }, key))["lessons"] as JsonObject[];
    expect(lessons.map((l) => l["id"])).toEqual([learned]);
    expect(lessons[0]).toMatchObject({ source_run_id: "", scope: "global", lineage_review: "source_deleted" });
    // Still guidance in other runs; the deleted run itself is gone from the run listing.
    const diagnosis = await ok(c, "engram.v2.LearningService/Diagnose", { error_text: "old key still cached after rotating" }, key);
    expect((diagnosis["failure_lessons"] as JsonObject[]).map((l) => l["id"])).toContain(learned);
    expect(((await ok(c, "engram.v2.RunsService/ListRuns", {}, key))["runs"] as JsonObject[]).map((r) => r["run_id"])).not.toContain("taught");
    expect(lessons.map((l) => l["id"])).not.toContain(runScoped);
  });
});
