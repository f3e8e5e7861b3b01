// Projects, agent definitions and versioned prompts over REST, Connect and gRPC: CRUD with paging, the prompt state
// table (candidate, active, retired, archived, rollback copies), at most one active version under concurrent
// activations, unified diffs, prompt owner resolution, project deletion (refused unless forced, then everything of
// it in one transaction), two-user isolation of every route, and all or nothing under a failure at every write.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { TRANSPORTS, grpcStream, type Caller, type JsonObject, type TransportName } from "./harness/callers.js";
import { expectInvalid, ok, expectCode } from "./harness/memory.js";
import { CallerPool, freshUsers } from "./harness/caller-pool.js";

const R = {
  createProject: "engram.v2.ResourcesService/CreateProject",
  listProjects: "engram.v2.ResourcesService/ListProjects",
  getProject: "engram.v2.ResourcesService/GetProject",
  updateProject: "engram.v2.ResourcesService/UpdateProject",
  deleteProject: "engram.v2.ResourcesService/DeleteProject",
  createAgent: "engram.v2.ResourcesService/CreateAgentDefinition",
  listAgents: "engram.v2.ResourcesService/ListAgentDefinitions",
  getAgent: "engram.v2.ResourcesService/GetAgentDefinition",
  updateAgent: "engram.v2.ResourcesService/UpdateAgentDefinition",
  deleteAgent: "engram.v2.ResourcesService/DeleteAgentDefinition",
  setPrompt: "engram.v2.ResourcesService/SetPrompt",
  getPrompt: "engram.v2.ResourcesService/GetPrompt",
  versions: "engram.v2.ResourcesService/ListPromptVersions",
  activate: "engram.v2.ResourcesService/ActivatePromptVersion",
  diff: "engram.v2.ResourcesService/GetPromptDiff",
  createSkill: "engram.v2.ResourcesService/CreateSkill",
  getSkill: "engram.v2.ResourcesService/GetSkill",
} as const;

let server: TestServer;
const pool = new CallerPool(() => server);
const on = (transport: TransportName): Caller => pool.on(transport);
const fresh = freshUsers(() => server);

beforeAll(async () => {
  server = await startTestServer({ SERVICE_EMBEDDER: "hashed" });
});

afterAll(async () => {
  pool.close();
  await server.close();
});


const obj = (body: JsonObject, field: string): JsonObject => body[field] as JsonObject;
const versionsOf = (body: JsonObject): JsonObject[] => (body["versions"] as JsonObject[] | undefined) ?? [];
const statuses = (body: JsonObject): [number, string, string][] => versionsOf(body).map((v) => [Number(v["version_number"]), String(v["status"]), String(v["source"])]);

async function project(c: Caller, key: string, name: string): Promise<string> {
  return String(obj(await ok(c, R.createProject, { name, description: `about ${name}` }, key), "project")["project_id"]);
}

describe.each(TRANSPORTS)("projects and agent definitions over %s", (transport) => {
  it("create, get, list newest first in pages, rename and describe; names unique per owner", async () => {
    const c = on(transport);
    const key = await fresh(`proj-${transport}`);
    expectInvalid(await c.call(R.createProject, { description: "no name" }, key), "name");
    const created = obj(await ok(c, R.createProject, { name: "alpha", description: "first" }, key), "project");
    expect(created).toMatchObject({ name: "alpha", description: "first" });
    expect(String(created["project_id"])).toMatch(/^prj_\d+$/);
    expect(created["agent_ids"] ?? []).toEqual([]);
    expect(Date.parse(String(created["created_at"]))).not.toBeNaN();
    expectCode(await c.call(R.createProject, { name: "alpha" }, key), "already_exists", 409);
    const ids = [String(created["project_id"]), await project(c, key, "beta"), await project(c, key, "gamma")];

    const first = await ok(c, R.listProjects, { limit: 2 }, key);
    const second = await ok(c, R.listProjects, { limit: 2, page_token: first["next_page_token"] as string }, key);
    const listed = [...(first["projects"] as JsonObject[]), ...(second["projects"] as JsonObject[])].map((p) => p["project_id"]);
    expect(listed).toEqual([...ids].reverse());
    expect(second["next_page_token"] ?? "").toBe("");
    expectInvalid(await c.call(R.listProjects, { page_token: "!!" }, key), "page_token");

    const got = obj(await ok(c, R.getProject, { project_id: ids[0] as string }, key), "project");
    expect(got).toMatchObject({ name: "alpha", description: "first" });
    expectCode(await c.call(R.getProject, { project_id: "prj_999999" }, key), "not_found", 404);
    expectCode(await c.call(R.getProject, { project_id: "not-an-id" }, key), "not_found", 404);
    expectInvalid(await c.call(R.getProject, {}, key), "project_id");

    const renamed = obj(await ok(c, R.updateProject, { project_id: ids[0] as string, name: "alpha-2" }, key), "project");
    expect(renamed).toMatchObject({ name: "alpha-2", description: "first" });
    const described = obj(await ok(c, R.updateProject, { project_id: ids[0] as string, description: "" }, key), "project");
    expect(described).toMatchObject({ name: "alpha-2" });
    expect(described["description"] ?? "").toBe("");
    expectInvalid(await c.call(R.updateProject, { project_id: ids[0] as string, name: "" }, key), "name");
    expectCode(await c.call(R.updateProject, { project_id: ids[0] as string, name: "beta" }, key), "already_exists", 409);
    // The old name is free again.
    await project(c, key, "alpha");
  });

  it("agent definitions: the first prompt is active, updates write new active versions, list and delete", async () => {
    const c = on(transport);
    const key = await fresh(`agents-${transport}`);
    const p = await project(c, key, "crew");
    expectInvalid(await c.call(R.createAgent, { project_id: p }, key), "agent_id");
    expectInvalid(await c.call(R.createAgent, { agent_id: "a" }, key), "project_id");
    expectCode(await c.call(R.createAgent, { project_id: "prj_999999", agent_id: "a" }, key), "not_found", 404);
    const planner = obj(await ok(c, R.createAgent, { project_id: p, agent_id: "planner", role: "plans", description: "d", system_prompt_content: "You plan." }, key), "agent");
    expect(planner).toMatchObject({ agent_id: "planner", project_id: p, role: "plans", description: "d", system_prompt_content: "You plan." });
    expect(String(planner["active_prompt_version_id"])).toMatch(/^pv_/);
    expectCode(await c.call(R.createAgent, { project_id: p, agent_id: "planner" }, key), "already_exists", 409);
    await ok(c, R.createAgent, { project_id: p, agent_id: "coder" }, key);
    expect(obj(await ok(c, R.getProject, { project_id: p }, key), "project")["agent_ids"]).toEqual(["coder", "planner"]);
    const listed = (await ok(c, R.listAgents, { project_id: p }, key))["agents"] as JsonObject[];
    expect(listed.map((a) => a["agent_id"])).toEqual(["coder", "planner"]);
    expect(listed[0]?.["system_prompt_content"] ?? "").toBe("");

    const first = await ok(c, R.getPrompt, { agent_id: "planner", project_id: p }, key);
    expect(obj(first, "version")).toMatchObject({ content: "You plan.", status: "active", source: "manual", version_number: 1 });

    const updated = obj(await ok(c, R.updateAgent, { project_id: p, agent_id: "planner", role: "lead", system_prompt_content: "You plan carefully." }, key), "agent");
    expect(updated).toMatchObject({ role: "lead", description: "d", system_prompt_content: "You plan carefully." });
    expect(statuses(await ok(c, R.versions, { agent_id: "planner", project_id: p }, key))).toEqual([[2, "active", "manual"], [1, "retired", "manual"]]);
    // The same prompt again writes nothing.
    await ok(c, R.updateAgent, { project_id: p, agent_id: "planner", system_prompt_content: "You plan carefully." }, key);
    expect(versionsOf(await ok(c, R.versions, { agent_id: "planner", project_id: p }, key))).toHaveLength(2);
    expect(obj(await ok(c, R.getAgent, { project_id: p, agent_id: "planner" }, key), "agent")).toMatchObject({ role: "lead", system_prompt_content: "You plan carefully." });

    await ok(c, R.deleteAgent, { project_id: p, agent_id: "planner" }, key);
    expectCode(await c.call(R.getAgent, { project_id: p, agent_id: "planner" }, key), "not_found", 404);
    expectCode(await c.call(R.deleteAgent, { project_id: p, agent_id: "planner" }, key), "not_found", 404);
    // Its prompt versions went with it: the agent id now names a project-less agent without a prompt.
    expectCode(await c.call(R.getPrompt, { agent_id: "planner" }, key), "not_found", 404);
    expectCode(await c.call(R.getPrompt, { agent_id: "planner", project_id: p }, key), "not_found", 404);
  });
});

describe.each(TRANSPORTS)("versioned prompts over %s", (transport) => {
  it("follows the state table: candidates, activation, retirement, archiving and rollback copies", async () => {
    const c = on(transport);
    const key = await fresh(`prompts-${transport}`);
    const p = await project(c, key, "states");
    await ok(c, R.createAgent, { project_id: p, agent_id: "bot", system_prompt_content: "v1 text" }, key);
    const ref = { agent_id: "bot", project_id: p };
    expectInvalid(await c.call(R.setPrompt, { ...ref, content: "" }, key), "content");
    expectInvalid(await c.call(R.setPrompt, { content: "x" }, key), "agent_id");

    const v2 = obj(await ok(c, R.setPrompt, { ...ref, content: "v2 text" }, key), "version");
    expect(v2).toMatchObject({ status: "candidate", source: "manual", version_number: 2 });
    const v3 = obj(await ok(c, R.setPrompt, { ...ref, content: "v3 text" }, key), "version");
    // Candidates do not change the active version.
    expect(obj(await ok(c, R.getPrompt, ref, key), "version")).toMatchObject({ content: "v1 text", version_number: 1 });

    // Activating v3: v1 retires, the older candidate v2 is archived.
    const act = await ok(c, R.activate, { ...ref, version_id: v3["version_id"] as string }, key);
    expect(obj(act, "version")).toMatchObject({ version_id: v3["version_id"], status: "active", source: "manual" });
    expect(obj(act, "version")["activated_at"]).toBeTruthy();
    expect(statuses(await ok(c, R.versions, ref, key))).toEqual([[3, "active", "manual"], [2, "archived", "manual"], [1, "retired", "manual"]]);

    // Activating the active version changes nothing.
    const again = await ok(c, R.activate, { ...ref, version_id: v3["version_id"] as string }, key);
    expect(again["retired_version_id"] ?? "").toBe("");

    // set with activate promotes at once.
    const v4 = obj(await ok(c, R.setPrompt, { ...ref, content: "v4 text", activate: true }, key), "version");
    expect(v4).toMatchObject({ status: "active", version_number: 4, parent_version_id: v3["version_id"] });

    // Rolling back to the retired v1 copies it into a new active version with source `rollback`.
    const list = versionsOf(await ok(c, R.versions, ref, key));
    const v1 = list.find((v) => v["version_number"] === 1) as JsonObject;
    const rollback = await ok(c, R.activate, { ...ref, version_id: v1["version_id"] as string }, key);
    expect(obj(rollback, "version")).toMatchObject({ version_number: 5, status: "active", source: "rollback", content: "v1 text", parent_version_id: v1["version_id"] });
    expect(rollback["retired_version_id"]).toBe(v4["version_id"]);
    expect(statuses(await ok(c, R.versions, ref, key))).toEqual([
      [5, "active", "rollback"],
      [4, "retired", "manual"],
      [3, "retired", "manual"],
      [2, "archived", "manual"],
      [1, "retired", "manual"],
    ]);
    // An archived version comes back the same way.
    const archived = await ok(c, R.activate, { ...ref, version_id: v2["version_id"] as string }, key);
    expect(obj(archived, "version")).toMatchObject({ version_number: 6, source: "rollback", content: "v2 text" });

    // Filters, pages, a specific version, and errors.
    expect(statuses(await ok(c, R.versions, { ...ref, status_filter: "retired" }, key)).map(([n]) => n)).toEqual([5, 4, 3, 1]);
    expectInvalid(await c.call(R.versions, { ...ref, status_filter: "bogus" }, key), "status_filter");
    const page1 = await ok(c, R.versions, { ...ref, limit: 4 }, key);
    const page2 = await ok(c, R.versions, { ...ref, limit: 4, page_token: page1["next_page_token"] as string }, key);
    expect([...statuses(page1), ...statuses(page2)].map(([n]) => n)).toEqual([6, 5, 4, 3, 2, 1]);
    expectInvalid(await c.call(R.versions, { ...ref, status_filter: "active", page_token: page1["next_page_token"] as string }, key), "page_token");
    expect(obj(await ok(c, R.getPrompt, { ...ref, version_id: v2["version_id"] as string }, key), "version")).toMatchObject({ content: "v2 text", status: "archived" });
    expectCode(await c.call(R.getPrompt, { ...ref, version_id: "pv_999999" }, key), "not_found", 404);
    expectCode(await c.call(R.activate, { ...ref, version_id: "pv_999999" }, key), "not_found", 404);
    expectCode(await c.call(R.setPrompt, { agent_id: "nobody", project_id: p, content: "x" }, key), "not_found", 404);
    expectInvalid(await c.call(R.activate, ref, key), "version_id");
  });

  it("diffs two versions as a unified diff; the active version by default", async () => {
    const c = on(transport);
    const key = await fresh(`diff-${transport}`);
    const p = await project(c, key, "diffs");
    await ok(c, R.createAgent, { project_id: p, agent_id: "bot", system_prompt_content: "Be brief.\nCite sources.\nNever guess." }, key);
    const ref = { agent_id: "bot", project_id: p };
    const a = obj(await ok(c, R.getPrompt, ref, key), "version");
    const b = obj(await ok(c, R.setPrompt, { ...ref, content: "Be brief.\nCite every source.\nNever guess.", activate: false }, key), "version");
    const d = await ok(c, R.diff, { ...ref, version_a_id: a["version_id"] as string, version_b_id: b["version_id"] as string }, key);
    const text = String(d["diff_text"]);
    expect(text).toContain(`--- ${String(a["version_id"])}`);
    expect(text).toContain(`+++ ${String(b["version_id"])}`);
    expect(text).toContain("@@ -1,3 +1,3 @@");
    expect(text).toContain("-Cite sources.");
    expect(text).toContain("+Cite every source.");
    expect(text).toContain(" Be brief.");
    expect(obj(d, "version_a")["version_id"]).toBe(a["version_id"]);
    // version_b empty: the active one (here a itself) → no difference.
    expect((await ok(c, R.diff, { ...ref, version_a_id: a["version_id"] as string }, key))["diff_text"] ?? "").toBe("");
    expectInvalid(await c.call(R.diff, ref, key), "version_a_id");
    expectCode(await c.call(R.diff, { ...ref, version_a_id: "pv_999999" }, key), "not_found", 404);
  });

  it("resolves the agent's project: project-less agents, one defining project, several (ambiguous)", async () => {
    const c = on(transport);
    const key = await fresh(`resolve-${transport}`);
    // The SDK's setPrompt sends only agent_id and content: a project-less agent.
    const solo = obj(await ok(c, R.setPrompt, { agent_id: "solo", content: "Alone.", activate: true }, key), "version");
    expect(solo).toMatchObject({ status: "active", version_number: 1 });
    expect(solo["project_id"] ?? "").toBe("");
    expect(obj(await ok(c, R.getPrompt, { agent_id: "solo" }, key), "version")["content"]).toBe("Alone.");
    expectCode(await c.call(R.getPrompt, { agent_id: "ghost" }, key), "not_found", 404);

    const p1 = await project(c, key, "one");
    const p2 = await project(c, key, "two");
    await ok(c, R.createAgent, { project_id: p1, agent_id: "shared", system_prompt_content: "In one." }, key);
    expect(obj(await ok(c, R.getPrompt, { agent_id: "shared" }, key), "version")).toMatchObject({ content: "In one.", project_id: p1 });
    await ok(c, R.createAgent, { project_id: p2, agent_id: "shared", system_prompt_content: "In two." }, key);
    expectInvalid(await c.call(R.getPrompt, { agent_id: "shared" }, key), "project_id");
    expectInvalid(await c.call(R.setPrompt, { agent_id: "shared", content: "x" }, key), "project_id");
    expect(obj(await ok(c, R.getPrompt, { agent_id: "shared", project_id: p2 }, key), "version")["content"]).toBe("In two.");
  });
});

describe("at most one active version", () => {
  it("under ten concurrent activations of ten candidates", async () => {
    const c = on("connect");
    const key = await fresh("race");
    const p = await project(c, key, "race");
    await ok(c, R.createAgent, { project_id: p, agent_id: "bot", system_prompt_content: "base" }, key);
    const ref = { agent_id: "bot", project_id: p };
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(String(obj(await ok(c, R.setPrompt, { ...ref, content: `candidate ${i}` }, key), "version")["version_id"]));
    const results = await Promise.all(ids.map((id, i) => on(TRANSPORTS[i % 3] as TransportName).call(R.activate, { ...ref, version_id: id }, key)));
    for (const r of results) expect(r.code, r.message).toBe("ok");
    const all = versionsOf(await ok(c, R.versions, { ...ref, limit: 100 }, key));
    const active = all.filter((v) => v["status"] === "active");
    expect(active).toHaveLength(1);
    // Every other version is retired (was active), archived (a candidate passed over) — none is left a candidate
    // older than the active one — and the active one is what the agent reads.
    for (const v of all) if (v !== active[0]) expect(["retired", "archived"]).toContain(v["status"]);
    expect(obj(await ok(c, R.getAgent, { project_id: p, agent_id: "bot" }, key), "agent")["active_prompt_version_id"]).toBe(active[0]?.["version_id"]);
    expect(String(active[0]?.["content"])).toMatch(/^candidate \d$/);
  });
});

describe.each(TRANSPORTS)("deleting a project over %s", (transport) => {
  it("is refused while it holds agents or skills, and with force takes them all", async () => {
    const c = on(transport);
    const key = await fresh(`delete-${transport}`);
    const empty = await project(c, key, "empty");
    expect(await ok(c, R.deleteProject, { project_id: empty }, key)).toMatchObject({ success: true });
    expectCode(await c.call(R.getProject, { project_id: empty }, key), "not_found", 404);
    expectCode(await c.call(R.deleteProject, { project_id: empty }, key), "not_found", 404);

    const p = await project(c, key, "full");
    await ok(c, R.createAgent, { project_id: p, agent_id: "a1", system_prompt_content: "one" }, key);
    await ok(c, R.createAgent, { project_id: p, agent_id: "a2", system_prompt_content: "two" }, key);
    await ok(c, R.setPrompt, { agent_id: "a1", project_id: p, content: "one, revised" }, key);
    const skill = await c.call(R.createSkill, { project_id: p, name: "search_tickets", parameters_schema: "{\"type\":\"object\"}" }, key);
    expect(skill.code, skill.message).toBe("ok");
    const refused = await c.call(R.deleteProject, { project_id: p }, key);
    expectCode(refused, "failed_precondition", 400);
    expect(refused.message).toContain("2 agent definitions and 1 skills");
    expect(obj(await ok(c, R.getProject, { project_id: p }, key), "project")["agent_ids"]).toEqual(["a1", "a2"]);

    const deleted = await ok(c, R.deleteProject, { project_id: p, force: true }, key);
    expect(deleted).toMatchObject({ success: true, agent_definitions_deleted: 2, prompt_versions_deleted: 3 });
    expectCode(await c.call(R.getProject, { project_id: p }, key), "not_found", 404);
    expectCode(await c.call(R.getAgent, { project_id: p, agent_id: "a1" }, key), "not_found", 404);
    expectCode(await c.call(R.getPrompt, { agent_id: "a1", project_id: p }, key), "not_found", 404);
    expectCode(await c.call(R.getPrompt, { agent_id: "a2" }, key), "not_found", 404);
    expect(deleted["skills_deleted"]).toBe(1);
    expectCode(await c.call(R.getSkill, { skill_id: obj(skill.body, "skill")["skill_id"] as string }, key), "not_found", 404);
    // The name is free again.
    await project(c, key, "full");
  });
});

describe.each(TRANSPORTS)("two users over %s", (transport) => {
  it("never see each other's projects, agents or prompts", async () => {
    const c = on(transport);
    const alice = await fresh(`alice-${transport}`);
    const bob = await fresh(`bob-${transport}`);
    const p = await project(c, alice, "secret");
    await ok(c, R.createAgent, { project_id: p, agent_id: "spy", system_prompt_content: "classified" }, alice);
    const v = obj(await ok(c, R.setPrompt, { agent_id: "spy", project_id: p, content: "candidate" }, alice), "version");
    // Bob may use the same names without conflict.
    await project(c, bob, "secret");
    expect(((await ok(c, R.listProjects, {}, bob))["projects"] as JsonObject[]).map((x) => x["project_id"])).not.toContain(p);
    const ref = { project_id: p, agent_id: "spy" };
    const denied: [string, JsonObject][] = [
      [R.getProject, { project_id: p }],
      [R.updateProject, { project_id: p, name: "mine" }],
      [R.deleteProject, { project_id: p, force: true }],
      [R.createAgent, { project_id: p, agent_id: "mole" }],
      [R.listAgents, { project_id: p }],
      [R.getAgent, ref],
      [R.updateAgent, { ...ref, role: "mine" }],
      [R.deleteAgent, ref],
      [R.setPrompt, { ...ref, content: "overwrite" }],
      [R.getPrompt, ref],
      [R.versions, ref],
      [R.activate, { ...ref, version_id: v["version_id"] as string }],
      [R.diff, { ...ref, version_a_id: v["version_id"] as string }],
    ];
    for (const [rpc, request] of denied) expectCode(await c.call(rpc, request, bob), "not_found", 404);
    // Without project_id, bob's "spy" is his own project-less agent, which has no prompt.
    expectCode(await c.call(R.getPrompt, { agent_id: "spy" }, bob), "not_found", 404);
    expect(obj(await ok(c, R.getPrompt, ref, alice), "version")["content"]).toBe("classified");
    expect(versionsOf(await ok(c, R.versions, ref, alice))).toHaveLength(2);
  });
});

describe("all or nothing", () => {
  interface Case {
    readonly name: string;
    readonly rpc: string;
    readonly setup: (key: string) => Promise<JsonObject>;
  }
  const c = (): Caller => on("connect");
  const withAgent = async (key: string, name: string): Promise<string> => {
    const p = await project(c(), key, name);
    await ok(c(), R.createAgent, { project_id: p, agent_id: "bot", system_prompt_content: "base" }, key);
    return p;
  };
  let n = 0;
  const CASES: Case[] = [
    { name: "create project", rpc: R.createProject, setup: () => Promise.resolve({ name: `atom-${++n}` }) },
    { name: "update project", rpc: R.updateProject, setup: async (key) => ({ project_id: await project(c(), key, `atom-${++n}`), name: `renamed-${n}` }) },
    { name: "create agent with prompt", rpc: R.createAgent, setup: async (key) => ({ project_id: await project(c(), key, `atom-${++n}`), agent_id: "bot", system_prompt_content: "hello" }) },
    { name: "update agent prompt", rpc: R.updateAgent, setup: async (key) => ({ project_id: await withAgent(key, `atom-${++n}`), agent_id: "bot", role: "r", system_prompt_content: "new" }) },
    { name: "set prompt and activate", rpc: R.setPrompt, setup: async (key) => ({ project_id: await withAgent(key, `atom-${++n}`), agent_id: "bot", content: "next", activate: true }) },
    {
      name: "activate a candidate over older candidates",
      rpc: R.activate,
      setup: async (key) => {
        const p = await withAgent(key, `atom-${++n}`);
        await ok(c(), R.setPrompt, { project_id: p, agent_id: "bot", content: "older" }, key);
        const v = obj(await ok(c(), R.setPrompt, { project_id: p, agent_id: "bot", content: "newer" }, key), "version");
        return { project_id: p, agent_id: "bot", version_id: v["version_id"] as string };
      },
    },
    {
      name: "rollback",
      rpc: R.activate,
      setup: async (key) => {
        const p = await withAgent(key, `atom-${++n}`);
        const first = obj(await ok(c(), R.getPrompt, { project_id: p, agent_id: "bot" }, key), "version");
        await ok(c(), R.setPrompt, { project_id: p, agent_id: "bot", content: "second", activate: true }, key);
        return { project_id: p, agent_id: "bot", version_id: first["version_id"] as string };
      },
    },
    { name: "delete agent", rpc: R.deleteAgent, setup: async (key) => ({ project_id: await withAgent(key, `atom-${++n}`), agent_id: "bot" }) },
    {
      name: "delete project with force",
      rpc: R.deleteProject,
      setup: async (key) => {
        const p = await withAgent(key, `atom-${++n}`);
        await ok(c(), R.createAgent, { project_id: p, agent_id: "other", system_prompt_content: "x" }, key);
        await c().call(R.createSkill, { project_id: p, name: "tool_a" }, key);
        return { project_id: p, force: true };
      },
    },
  ];

  let key: string;
  const events: JsonObject[] = [];
  let cancel: () => void = () => undefined;
  beforeAll(async () => {
    key = await fresh("atomic");
    const stream = grpcStream(server.port, "engram.v2.EventsService/Subscribe", {}, key);
    stream.on("data", (event: JsonObject) => events.push(event));
    stream.on("error", () => undefined);
    cancel = () => stream.cancel();
    while (!events.some((e) => e["type"] === "subscribed")) await new Promise((resolve) => setTimeout(resolve, 5));
  });
  afterAll(() => cancel());
  let barriers = 0;
  /** Writes a marker and waits for its event: every event published before it has then arrived. */
  const barrier = async (): Promise<number> => {
    const agent = `barrier-${++barriers}`;
    await ok(c(), R.setPrompt, { agent_id: agent, content: "marker" }, key);
    while (!events.some((e) => e["type"] === "prompt.version.created" && e["agent_id"] === agent)) await new Promise((resolve) => setTimeout(resolve, 5));
    return events.length;
  };

  for (const k of CASES) {
    it(k.name, async () => {
      const faults = server.engram.testHooks.writeFaults;
      for (let nth = 1; ; nth++) {
        const request = await k.setup(key);
        const eventsBefore = await barrier();
        const before = server.engram.testHooks.fingerprint();
        faults.failAt(nth);
        const result = await c().call(k.rpc, request, key);
        const reached = faults.writesSeen >= nth;
        faults.failAt(0);
        if (!reached) {
          expect(result.code, `${k.name} without a fault: ${result.message}`).toBe("ok");
          expect(nth).toBeGreaterThan(1);
          break;
        }
        expect(result.code, `${k.name} failing at write ${nth}`).not.toBe("ok");
        expect(result.message).not.toMatch(/LMDB|lmdb|injected/);
        expect(server.engram.testHooks.fingerprint(), `${k.name}: store changed by a write failing at ${nth}`).toEqual(before);
        // Events are published only after the commit: none of a failed write.
        const eventsAfter = await barrier();
        expect(events.slice(eventsBefore, eventsAfter - 1)).toEqual([]);
      }
    });
  }
});
