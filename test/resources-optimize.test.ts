// Prompt and skill optimization over REST, Connect and gRPC: the built-in composition from the agent's lessons and
// outcomes (no LLM), the candidate's source and status, activation only on request, the clamp of `timeout_ms`, a fake
// OpenAI-compatible model (success, timeout, invalid output → fallback), refusals naming fields, two-user isolation,
// and all or nothing under injected write faults.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { CallerPool } from "./harness/caller-pool.js";
import { TRANSPORTS, type Caller, type JsonObject } from "./harness/callers.js";
import { expectInvalid, ok } from "./harness/memory.js";
import { completion, startFakeLlm, type FakeLlm } from "./harness/fake-llm.js";

const R = (method: string): string => `engram.v2.ResourcesService/${method}`;
const REFLECT = "engram.v2.LearningService/Reflect";
const OUTCOME = "engram.v2.LearningService/RecordOutcome";

let plain: TestServer;
let withLlm: TestServer;
let llm: FakeLlm;
let alice: string;
let bob: string;
let carol: string;
const pool = new CallerPool(() => plain);
const llmPool = new CallerPool(() => withLlm);

beforeAll(async () => {
  llm = await startFakeLlm();
  plain = await startTestServer({ SERVICE_EMBEDDER: "hashed" });
  withLlm = await startTestServer({ SERVICE_EMBEDDER: "hashed", SERVICE_LLM_URL: llm.url, SERVICE_LLM_MODEL: "fake-model", SERVICE_LLM_TIMEOUT_MS: "5000" });
  alice = await createUser(plain.baseUrl, plain.adminKey, "alice");
  bob = await createUser(plain.baseUrl, plain.adminKey, "bob");
  carol = await createUser(withLlm.baseUrl, withLlm.adminKey, "carol");
});

afterAll(async () => {
  pool.close();
  llmPool.close();
  await plain.close();
  await withLlm.close();
  await llm.close();
});

let count = 0;
/** A project with agent `planner` (active prompt "You plan."), its lessons and one success and one failure outcome. */
async function agentWithLessons(c: Caller, key: string): Promise<{ projectId: string; lessonIds: string[] }> {
  const project = await ok(c, R("CreateProject"), { name: `opt-${++count}` }, key);
  const projectId = String((project["project"] as JsonObject)["project_id"]);
  await ok(c, R("CreateAgentDefinition"), { project_id: projectId, agent_id: "planner", system_prompt_content: "You plan." }, key);
  const runId = `opt-run-${count}`;
  const reflected = await ok(c, REFLECT, {
    run_id: runId,
    agent_id: "planner",
    lessons: [
      { content: "Never deploy on Fridays without a rollback plan.", lesson_type: "rule" },
      { content: "Splitting the plan into small steps finished the task quickly.", lesson_type: "success" },
    ],
  }, key);
  const lessonIds = (reflected["decisions"] as JsonObject[]).map((d) => String(d["lesson_id"]));
  // Another agent's lesson is not used.
  await ok(c, REFLECT, { run_id: runId, agent_id: "reviewer", lessons: [{ content: "Always ask for a second reviewer on schema changes.", lesson_type: "rule" }] }, key);
  await ok(c, OUTCOME, { run_id: runId, outcome: "success", signal: 1, agent_id: "planner" }, key);
  await ok(c, OUTCOME, { run_id: runId, outcome: "failure", signal: -1, agent_id: "planner" }, key);
  return { projectId, lessonIds };
}

async function activePrompt(c: Caller, key: string, projectId: string): Promise<JsonObject> {
  return (await ok(c, R("GetPrompt"), { project_id: projectId, agent_id: "planner" }, key))["version"] as JsonObject;
}

describe.each(TRANSPORTS)("optimization without an LLM over %s", (transport) => {
  it("composes a candidate from the agent's lessons and outcomes, and activates only when asked", async () => {
    const c = pool.on(transport);
    const { projectId, lessonIds } = await agentWithLessons(c, alice);
    const before = await activePrompt(c, alice, projectId);

    const out = await ok(c, R("OptimizePrompt"), { project_id: projectId, agent_id: "planner" }, alice);
    expect(out).toMatchObject({ success: true, activated: false });
    const candidate = out["candidate"] as JsonObject;
    expect(candidate).toMatchObject({ status: "candidate", source: "optimization", agent_id: "planner", parent_version_id: before["version_id"], version_number: 2 });
    const text = String(candidate["content"]);
    expect(text.startsWith("You plan.")).toBe(true);
    expect(text).toContain("Avoid / Always: Never deploy on Fridays without a rollback plan.");
    expect(text).toContain("Keep doing: Splitting the plan into small steps finished the task quickly.");
    // Outcomes are the agent's (by agent id, across the caller's runs): one success per failure in each setup.
    expect(text).toMatch(/- Track record: (\d+) of \d+ recent outcomes were successes \(50%\)/);
    expect(text).not.toContain("second reviewer");
    const summary = String(out["optimization_summary"]);
    for (const id of lessonIds) expect(summary).toContain(id);
    expect(candidate["optimization_summary"]).toBe(summary);
    expect(out["confidence"]).toBeCloseTo(0.5);
    expect(await activePrompt(c, alice, projectId)).toEqual(before);

    const activated = await ok(c, R("OptimizePrompt"), { project_id: projectId, agent_id: "planner", auto_activate: true }, alice);
    expect(activated).toMatchObject({ success: true, activated: true, candidate: { status: "active", source: "optimization", version_number: 3 } });
    // The learned section is replaced, not stacked.
    expect(String((activated["candidate"] as JsonObject)["content"]).split("## Learned from outcomes")).toHaveLength(2);
    const versions = (await ok(c, R("ListPromptVersions"), { project_id: projectId, agent_id: "planner" }, alice))["versions"] as JsonObject[];
    expect(versions.map((v) => `${String(v["version_number"])}:${String(v["status"])}`)).toEqual(["3:active", "2:archived", "1:retired"]);
  });

  it("optimizes a skill's instructions into a candidate", async () => {
    const c = pool.on(transport);
    const { projectId, lessonIds } = await agentWithLessons(c, alice);
    const created = await ok(c, R("CreateSkill"), { project_id: projectId, agent_id: "planner", name: "deploy", description: "Deploys", instructions: "Run the deploy script." }, alice);
    const skill = created["skill"] as JsonObject;
    const out = await ok(c, R("OptimizeSkill"), { skill_id: String(skill["skill_id"]), project_id: projectId }, alice);
    expect(out).toMatchObject({ success: true, activated: false, candidate: { status: "candidate", source: "optimization", description: "Deploys", version_number: 2 } });
    expect(String((out["candidate"] as JsonObject)["instructions"])).toContain("Avoid / Always: Never deploy on Fridays");
    expect(String(out["optimization_summary"])).toContain(String(lessonIds[0]));
    const got = (await ok(c, R("GetSkill"), { skill_id: String(skill["skill_id"]) }, alice))["skill"] as JsonObject;
    expect(got["active_version_id"]).toBe(skill["active_version_id"]);
    const activated = await ok(c, R("OptimizeSkill"), { skill_id: String(skill["skill_id"]), auto_activate: true }, alice);
    expect(activated).toMatchObject({ activated: true, candidate: { status: "active", version_number: 3 } });
  });

  it("refuses bad requests naming the field, and keeps owners apart", async () => {
    const c = pool.on(transport);
    const { projectId } = await agentWithLessons(c, alice);
    expectInvalid(await c.call(R("OptimizePrompt"), { project_id: projectId }, alice), "agent_id");
    expectInvalid(await c.call(R("OptimizePrompt"), { agent_id: "planner" }, alice), "project_id");
    expectInvalid(await c.call(R("OptimizePrompt"), { project_id: projectId, agent_id: "planner", llm_override: { provider: "mystery" } }, alice), "llm_override.provider");
    expectInvalid(await c.call(R("OptimizeSkill"), {}, alice), "skill_id");
    expect((await c.call(R("OptimizePrompt"), { project_id: projectId, agent_id: "planner" }, bob)).code).toBe("not_found");
    // Bob's own agent has nothing to learn from: alice's lessons and outcomes are not his.
    const bobProject = String(((await ok(c, R("CreateProject"), { name: `bob-${++count}` }, bob))["project"] as JsonObject)["project_id"]);
    await ok(c, R("CreateAgentDefinition"), { project_id: bobProject, agent_id: "planner", system_prompt_content: "Bob plans." }, bob);
    expect((await c.call(R("OptimizePrompt"), { project_id: bobProject, agent_id: "planner" }, bob)).code).toBe("failed_precondition");
  });
});

describe.each(TRANSPORTS)("optimization with a language model over %s", (transport) => {
  it("uses the model's answer, clamps timeout_ms and passes the override", async () => {
    const c = llmPool.on(transport);
    const { projectId } = await agentWithLessons(c, carol);
    llm.reply = () => completion(JSON.stringify({ content: "You plan in small steps and never deploy on Fridays.", summary: "Added the Friday rule.", confidence: 0.8 }));
    const seen = llm.prompts.length;
    const out = await ok(c, R("OptimizePrompt"), { project_id: projectId, agent_id: "planner", llm_override: { model: "tuned", timeout_ms: 5, max_tokens: 300, temperature: 0.3 } }, carol);
    expect(out).toMatchObject({ success: true, confidence: 0.8, candidate: { content: "You plan in small steps and never deploy on Fridays.", status: "candidate", source: "optimization" } });
    expect(String(out["optimization_summary"])).toContain("timeout 1000 ms");
    const body = JSON.parse(String(llm.prompts[seen])) as JsonObject;
    expect(body).toMatchObject({ model: "tuned", max_tokens: 300, temperature: 0.3 });
    expect(JSON.stringify(body["messages"])).toContain("Never deploy on Fridays");
    const high = await ok(c, R("OptimizePrompt"), { project_id: projectId, agent_id: "planner", llm_override: { timeout_ms: 99_000_000 } }, carol);
    expect(String(high["optimization_summary"])).toContain("timeout 600000 ms");
  });

  it("falls back to the built-in composition on invalid output, errors and timeouts", async () => {
    const c = llmPool.on(transport);
    const { projectId } = await agentWithLessons(c, carol);
    llm.reply = () => completion("I would rather not.");
    const invalid = await ok(c, R("OptimizePrompt"), { project_id: projectId, agent_id: "planner" }, carol);
    expect(String(invalid["optimization_summary"])).toMatch(/LLM optimization failed .*not a JSON object.*fell back/);
    expect(String((invalid["candidate"] as JsonObject)["content"])).toContain("Avoid / Always: Never deploy on Fridays");
    llm.reply = () => completion(JSON.stringify({ summary: "no content" }));
    expect(String((await ok(c, R("OptimizePrompt"), { project_id: projectId, agent_id: "planner" }, carol))["optimization_summary"])).toContain('no non-empty string "content"');
    llm.reply = () => ({ status: 503, body: { error: { message: "overloaded" } } });
    expect(String((await ok(c, R("OptimizePrompt"), { project_id: projectId, agent_id: "planner" }, carol))["optimization_summary"])).toContain("HTTP 503");
    llm.reply = () => ({ ...completion("{}"), delayMs: 3000 });
    const slow = await ok(c, R("OptimizePrompt"), { project_id: projectId, agent_id: "planner", llm_override: { timeout_ms: 1000 } }, carol);
    expect(String(slow["optimization_summary"])).toContain("timed out after 1000 ms");
    expect(slow).toMatchObject({ success: true, candidate: { status: "candidate", source: "optimization" } });
  });
});

describe("optimization is all or nothing", () => {
  it("leaves nothing behind when a write fails", async () => {
    const c = pool.on("connect");
    const { projectId } = await agentWithLessons(c, alice);
    const faults = plain.engram.testHooks.writeFaults;
    for (let nth = 1; ; nth++) {
      const before = plain.engram.testHooks.fingerprint();
      faults.failAt(nth);
      const result = await c.call(R("OptimizePrompt"), { project_id: projectId, agent_id: "planner", auto_activate: true }, alice);
      const reached = faults.writesSeen >= nth;
      faults.failAt(0);
      if (!reached) {
        expect(result.code).toBe("ok");
        break;
      }
      expect(result.code).not.toBe("ok");
      expect(plain.engram.testHooks.fingerprint()).toEqual(before);
    }
  });

  it("leaves nothing behind when a write of a skill's optimization fails", async () => {
    const c = pool.on("connect");
    const { projectId } = await agentWithLessons(c, alice);
    const created = await ok(c, R("CreateSkill"), { project_id: projectId, agent_id: "planner", name: "atomic-skill", description: "d", instructions: "Run it." }, alice);
    const skillId = String((created["skill"] as JsonObject)["skill_id"]);
    const faults = plain.engram.testHooks.writeFaults;
    for (let nth = 1; ; nth++) {
      const before = plain.engram.testHooks.fingerprint();
      faults.failAt(nth);
      const result = await c.call(R("OptimizeSkill"), { skill_id: skillId, auto_activate: true }, alice);
      const reached = faults.writesSeen >= nth;
      faults.failAt(0);
      if (!reached) {
        expect(result.code).toBe("ok");
        break;
      }
      expect(result.code).not.toBe("ok");
      expect(plain.engram.testHooks.fingerprint()).toEqual(before);
    }
  });
});
