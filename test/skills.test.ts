// Versioned skills over REST, Connect and gRPC: create (JSON Schema checked by ajv), list, get, update (a new active
// version, or a candidate), delete, versions, activate (candidate in place, rollback copies, retired and archived
// moves, one active version under concurrent activations) and diff; the refusals, two-user isolation, the project
// cascade, the events, all or nothing under injected write faults, and the @mubit-ai/sdk's setSkill/getSkills.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@mubit-ai/sdk";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { CallerPool } from "./harness/caller-pool.js";
import { TRANSPORTS, grpcStream, type Caller, type JsonObject } from "./harness/callers.js";
import { expectInvalid, ok, expectCode } from "./harness/memory.js";

const R = (method: string): string => `engram.v2.ResourcesService/${method}`;
const SK = {
  create: R("CreateSkill"),
  list: R("ListSkills"),
  get: R("GetSkill"),
  update: R("UpdateSkill"),
  delete: R("DeleteSkill"),
  versions: R("ListSkillVersions"),
  activate: R("ActivateSkillVersion"),
  diff: R("GetSkillDiff"),
} as const;

const SEARCH_SCHEMA = { type: "object", properties: { query: { type: "string" }, limit: { type: "integer", minimum: 1 } }, required: ["query"] };

let server: TestServer;
let alice: string;
let bob: string;
const pool = new CallerPool(() => server);
const rest = (): Caller => pool.on("rest");
const connect = (): Caller => pool.on("connect");

beforeAll(async () => {
  server = await startTestServer({ SERVICE_EMBEDDER: "hashed" });
  alice = await createUser(server.baseUrl, server.adminKey, "alice");
  bob = await createUser(server.baseUrl, server.adminKey, "bob");
});

afterAll(async () => {
  pool.close();
  await server.close();
});

let projectCount = 0;
async function newProject(key: string, c: Caller = connect()): Promise<string> {
  const body = await ok(c, R("CreateProject"), { name: `skills-project-${++projectCount}` }, key);
  return String((body["project"] as JsonObject)["project_id"]);
}

async function newSkill(c: Caller, key: string, projectId: string, fields: JsonObject = {}): Promise<JsonObject> {
  const body = await ok(c, SK.create, { project_id: projectId, name: "search_tickets", description: "Search tickets", parameters_schema: JSON.stringify(SEARCH_SCHEMA), ...fields }, key);
  return body["skill"] as JsonObject;
}

async function versionsOf(c: Caller, key: string, skillId: string, extra: JsonObject = {}): Promise<JsonObject[]> {
  return (await ok(c, SK.versions, { skill_id: skillId, limit: 100, ...extra }, key))["versions"] as JsonObject[];
}

function statuses(versions: readonly JsonObject[]): string[] {
  return versions.map((v) => `${String(v["version_number"])}:${String(v["status"])}:${String(v["source"])}`);
}

/** A refusal with its code, and over REST and Connect its HTTP status. */

describe.each(TRANSPORTS)("skills over %s", (transport) => {
  it("create, get, list, update, versions, activate (rollback), diff and delete", async () => {
    const c = pool.on(transport);
    const projectId = await newProject(alice, c);
    const skill = await newSkill(c, alice, projectId, { instructions: "Use for ticket lookups." });
    const skillId = String(skill["skill_id"]);
    expect(skill).toMatchObject({ project_id: projectId, agent_id: "", name: "search_tickets", description: "Search tickets", skill_type: "tool", instructions: "Use for ticket lookups." });
    expect(JSON.parse(String(skill["parameters_schema"]))).toEqual(SEARCH_SCHEMA);
    const v1 = String(skill["active_version_id"]);

    expect((await ok(c, SK.get, { skill_id: skillId }, alice))["skill"]).toEqual(skill);
    expect(((await ok(c, SK.list, { project_id: projectId }, alice))["skills"] as JsonObject[]).map((s) => s["skill_id"])).toEqual([skillId]);

    const updated = (await ok(c, SK.update, { skill_id: skillId, description: "Search support tickets", name: "find_tickets" }, alice))["skill"] as JsonObject;
    expect(updated).toMatchObject({ name: "find_tickets", description: "Search support tickets" });
    const v2 = String(updated["active_version_id"]);
    expect(v2).not.toBe(v1);
    expect(statuses(await versionsOf(c, alice, skillId))).toEqual(["2:active:manual", "1:retired:manual"]);

    const diff = await ok(c, SK.diff, { skill_id: skillId, version_a_id: v1, version_b_id: v2 }, alice);
    expect(String(diff["diff_text"])).toContain(`--- ${v1}`);
    expect(String(diff["diff_text"])).toContain(`+++ ${v2}`);
    expect(String(diff["diff_text"])).toContain("-Search tickets\n+Search support tickets");

    const rollback = await ok(c, SK.activate, { skill_id: skillId, version_id: v1 }, alice);
    expect(rollback).toMatchObject({ success: true, retired_version_id: v2 });
    expect(rollback["version"]).toMatchObject({ version_number: 3, status: "active", source: "rollback", parent_version_id: v1, description: "Search tickets" });
    expect(statuses(await versionsOf(c, alice, skillId))).toEqual(["3:active:rollback", "2:retired:manual", "1:retired:manual"]);
    expect((await ok(c, SK.diff, { skill_id: skillId, version_a_id: v1 }, alice))["diff_text"]).toBe("");

    expect(await ok(c, SK.delete, { skill_id: skillId, project_id: projectId }, alice)).toMatchObject({ success: true });
    expectCode(await c.call(SK.get, { skill_id: skillId }, alice), "not_found", 404);
    expectCode(await c.call(SK.versions, { skill_id: skillId }, alice), "not_found", 404);
  });

  it("refuses bad input naming the field, unknown ids with NOT_FOUND and duplicate names with ALREADY_EXISTS", async () => {
    const c = pool.on(transport);
    const projectId = await newProject(alice, c);
    expectInvalid(await c.call(SK.create, { project_id: "", name: "x" }, alice), "project_id");
    expectInvalid(await c.call(SK.create, { project_id: projectId, name: " " }, alice), "name");
    expectInvalid(await c.call(SK.create, { project_id: projectId, name: "x", skill_type: "macro" }, alice), "skill_type");
    expectInvalid(await c.call(SK.create, { project_id: projectId, name: "x", parameters_schema: "{not json" }, alice), "parameters_schema");
    expectInvalid(await c.call(SK.create, { project_id: projectId, name: "x", parameters_schema: "[]" }, alice), "parameters_schema");
    const badType = await c.call(SK.create, { project_id: projectId, name: "x", parameters_schema: '{"type":"strang"}' }, alice);
    expectInvalid(badType, "parameters_schema");
    expect(badType.message).toContain("must be equal to one of the allowed values");
    expectCode(await c.call(SK.create, { project_id: "prj_999999", name: "x" }, alice), "not_found", 404);
    expectCode(await c.call(SK.create, { project_id: projectId, name: "x", agent_id: "no-such-agent" }, alice), "not_found", 404);
    expectInvalid(await c.call(SK.list, {}, alice), "project_id");
    expectInvalid(await c.call(SK.get, {}, alice), "skill_id");
    expectInvalid(await c.call(SK.update, { skill_id: "" }, alice), "skill_id");
    expectInvalid(await c.call(SK.delete, {}, alice), "skill_id");
    expectInvalid(await c.call(SK.versions, {}, alice), "skill_id");
    expectInvalid(await c.call(SK.activate, { skill_id: "skl_x" }, alice), "version_id");
    expectInvalid(await c.call(SK.diff, { skill_id: "skl_x" }, alice), "version_a_id");

    const skill = await newSkill(c, alice, projectId);
    const skillId = String(skill["skill_id"]);
    expectInvalid(await c.call(SK.versions, { skill_id: skillId, status_filter: "live" }, alice), "status_filter");
    expectInvalid(await c.call(SK.update, { skill_id: skillId, name: "" }, alice), "name");
    expectInvalid(await c.call(SK.update, { skill_id: skillId, parameters_schema: '{"properties":{"a":{"minLength":-1}}}' }, alice), "parameters_schema");
    expectCode(await c.call(SK.create, { project_id: projectId, name: "search_tickets" }, alice), "already_exists", 409);
    expectCode(await c.call(SK.get, { skill_id: skillId, project_id: "prj_999999" }, alice), "not_found", 404);
    expectCode(await c.call(SK.activate, { skill_id: skillId, version_id: "skv_000000000000000000000000_1" }, alice), "not_found", 404);
    expectCode(await c.call(SK.diff, { skill_id: skillId, version_a_id: "nope" }, alice), "not_found", 404);
    // Nothing of the refused update was stored.
    expect(statuses(await versionsOf(c, alice, skillId))).toEqual(["1:active:manual"]);
  });
});

describe("versions and activation", () => {
  it("an update with activate false writes a candidate; activating it retires the active one and archives older candidates", async () => {
    const c = connect();
    const projectId = await newProject(alice);
    const skillId = String((await newSkill(c, alice, projectId))["skill_id"]);
    for (const n of [1, 2, 3]) await ok(c, SK.update, { skill_id: skillId, instructions: `candidate ${n}`, activate: false }, alice);
    const candidates = await versionsOf(c, alice, skillId, { status_filter: "candidate" });
    expect(candidates.map((v) => v["instructions"])).toEqual(["candidate 3", "candidate 2", "candidate 1"]);
    // The skill still reads its active version.
    expect((await ok(c, SK.get, { skill_id: skillId }, alice))["skill"]).toMatchObject({ instructions: "" });

    const second = candidates[1] as JsonObject;
    const activated = await ok(c, SK.activate, { skill_id: skillId, version_id: String(second["version_id"]) }, alice);
    expect(activated["version"]).toMatchObject({ version_number: 3, status: "active", source: "manual" });
    expect(statuses(await versionsOf(c, alice, skillId))).toEqual(["4:candidate:manual", "3:active:manual", "2:archived:manual", "1:retired:manual"]);
    expect((await ok(c, SK.get, { skill_id: skillId }, alice))["skill"]).toMatchObject({ instructions: "candidate 2", active_version_id: second["version_id"] });
    // Activating the active version leaves everything as it is.
    const again = await ok(c, SK.activate, { skill_id: skillId, version_id: String(second["version_id"]) }, alice);
    expect(again).toMatchObject({ success: true, retired_version_id: "" });
    expect(statuses(await versionsOf(c, alice, skillId, { limit: 2 }))).toEqual(["4:candidate:manual", "3:active:manual"]);
    // An update that changes nothing writes no version.
    await ok(c, SK.update, { skill_id: skillId, instructions: "candidate 2" }, alice);
    expect(await versionsOf(c, alice, skillId)).toHaveLength(4);
  });

  it("at most one version is active after ten concurrent activations", async () => {
    const c = connect();
    const projectId = await newProject(alice);
    const skillId = String((await newSkill(c, alice, projectId))["skill_id"]);
    for (let n = 1; n <= 10; n++) await ok(c, SK.update, { skill_id: skillId, description: `variant ${n}`, activate: false }, alice);
    const candidates = await versionsOf(c, alice, skillId, { status_filter: "candidate" });
    expect(candidates).toHaveLength(10);
    const results = await Promise.all(candidates.map((v) => c.call(SK.activate, { skill_id: skillId, version_id: String(v["version_id"]) }, alice)));
    for (const r of results) expect([r.code, r.message]).toEqual(["ok", ""]);
    const versions = await versionsOf(c, alice, skillId);
    const active = versions.filter((v) => v["status"] === "active");
    expect(active).toHaveLength(1);
    expect((await ok(c, SK.get, { skill_id: skillId }, alice))["skill"]).toMatchObject({ active_version_id: (active[0] as JsonObject)["version_id"] });
    // Activations that came after a candidate archived it copied it as a rollback version: every call succeeded.
    expect(versions.filter((v) => v["source"] === "rollback").length).toBe(versions.length - 11);
  });

  it("lists a project's skills by name; an agent sees the shared ones and its own", async () => {
    const c = connect();
    const projectId = await newProject(alice);
    await ok(c, R("CreateAgentDefinition"), { project_id: projectId, agent_id: "triager" }, alice);
    await ok(c, R("CreateAgentDefinition"), { project_id: projectId, agent_id: "coder" }, alice);
    await newSkill(c, alice, projectId, { name: "zeta" });
    await newSkill(c, alice, projectId, { name: "alpha", agent_id: "triager" });
    await newSkill(c, alice, projectId, { name: "mid", agent_id: "coder", skill_type: "playbook" });
    // The same name for another agent is another skill.
    await newSkill(c, alice, projectId, { name: "zeta", agent_id: "coder" });
    const names = async (req: JsonObject): Promise<string[]> =>
      ((await ok(c, SK.list, { project_id: projectId, ...req }, alice))["skills"] as JsonObject[]).map((s) => `${String(s["name"])}@${String(s["agent_id"])}`);
    expect(await names({})).toEqual(["alpha@triager", "mid@coder", "zeta@", "zeta@coder"]);
    expect(await names({ agent_id: "triager" })).toEqual(["alpha@triager", "zeta@"]);
    expect(await names({ limit: 2 })).toEqual(["alpha@triager", "mid@coder"]);
    expectCode(await c.call(SK.list, { project_id: "prj_999999" }, alice), "not_found", 404);
  });
});

describe("projects and agents own their skills", () => {
  it("deleting an agent deletes its skills; deleting a project (forced) deletes all of them", async () => {
    const c = connect();
    const projectId = await newProject(alice);
    await ok(c, R("CreateAgentDefinition"), { project_id: projectId, agent_id: "triager" }, alice);
    const shared = String((await newSkill(c, alice, projectId, { name: "shared" }))["skill_id"]);
    const bound = String((await newSkill(c, alice, projectId, { name: "bound", agent_id: "triager" }))["skill_id"]);
    await ok(c, R("DeleteAgentDefinition"), { project_id: projectId, agent_id: "triager" }, alice);
    expectCode(await c.call(SK.get, { skill_id: bound }, alice), "not_found", 404);
    await ok(c, SK.get, { skill_id: shared }, alice);
    expect((await c.call(R("DeleteProject"), { project_id: projectId }, alice)).code).toBe("failed_precondition");
    await ok(c, R("DeleteProject"), { project_id: projectId, force: true }, alice);
    expectCode(await c.call(SK.get, { skill_id: shared }, alice), "not_found", 404);
  });
});

describe("two users", () => {
  it("another owner's skills answer NOT_FOUND on every route and never appear in lists", async () => {
    const c = connect();
    const projectId = await newProject(alice);
    const skill = await newSkill(c, alice, projectId);
    const skillId = String(skill["skill_id"]);
    const versionId = String(skill["active_version_id"]);
    const before = await versionsOf(c, alice, skillId);
    for (const transport of TRANSPORTS) {
      const t = pool.on(transport);
      expectCode(await t.call(SK.get, { skill_id: skillId }, bob), "not_found", 404);
      expectCode(await t.call(SK.list, { project_id: projectId }, bob), "not_found", 404);
      expectCode(await t.call(SK.create, { project_id: projectId, name: "intruder" }, bob), "not_found", 404);
      expectCode(await t.call(SK.update, { skill_id: skillId, description: "hijacked" }, bob), "not_found", 404);
      expectCode(await t.call(SK.versions, { skill_id: skillId }, bob), "not_found", 404);
      expectCode(await t.call(SK.activate, { skill_id: skillId, version_id: versionId }, bob), "not_found", 404);
      expectCode(await t.call(SK.diff, { skill_id: skillId, version_a_id: versionId }, bob), "not_found", 404);
      expectCode(await t.call(SK.delete, { skill_id: skillId }, bob), "not_found", 404);
    }
    // Bob's own project of the same name holds none of alice's skills.
    const bobProject = await newProject(bob);
    expect((await ok(c, SK.list, { project_id: bobProject }, bob))["skills"]).toEqual([]);
    expect(await versionsOf(c, alice, skillId)).toEqual(before);
  });
});

describe("events", () => {
  it("announce creation, update, activation and deletion to the owner only, after the commit", async () => {
    const received: Record<string, JsonObject[]> = { alice: [], bob: [] };
    const streams = (["alice", "bob"] as const).map((who) => {
      const stream = grpcStream(server.port, "engram.v2.EventsService/Subscribe", { event_types: ["skill.*"] }, who === "alice" ? alice : bob);
      stream.on("data", (event: JsonObject) => received[who]?.push(event));
      stream.on("error", () => undefined);
      return stream;
    });
    try {
      // Subscription confirmed before the writes.
      await until(() => received["alice"]?.some((e) => e["type"] === "subscribed") === true && received["bob"]?.some((e) => e["type"] === "subscribed") === true);
      const c = connect();
      const projectId = await newProject(alice);
      const skillId = String((await newSkill(c, alice, projectId))["skill_id"]);
      const v1 = String(((await ok(c, SK.get, { skill_id: skillId }, alice))["skill"] as JsonObject)["active_version_id"]);
      await ok(c, SK.update, { skill_id: skillId, description: "changed" }, alice);
      await ok(c, SK.activate, { skill_id: skillId, version_id: v1 }, alice);
      await ok(c, SK.delete, { skill_id: skillId }, alice);
      await until(() => received["alice"]?.some((e) => e["type"] === "skill.deleted") === true);
      const mine = (received["alice"] ?? []).filter((e) => String(e["type"]).startsWith("skill."));
      expect(mine.map((e) => e["type"])).toEqual(["skill.created", "skill.updated", "skill.version.activated", "skill.deleted"]);
      expect(JSON.parse(String(mine[2]?.["payload"]))).toMatchObject({ skill_id: skillId, project_id: projectId, source: "rollback" });
      expect((received["bob"] ?? []).filter((e) => String(e["type"]).startsWith("skill."))).toEqual([]);
    } finally {
      for (const stream of streams) stream.cancel();
    }
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

describe("all or nothing", () => {
  interface Case {
    readonly name: string;
    readonly rpc: string;
    request(ids: { projectId: string; skillId: string; v1: string }): JsonObject;
  }
  const CASES: Case[] = [
    { name: "create", rpc: SK.create, request: (ids) => ({ project_id: ids.projectId, name: "another", parameters_schema: JSON.stringify(SEARCH_SCHEMA) }) },
    { name: "update (rename and new version)", rpc: SK.update, request: (ids) => ({ skill_id: ids.skillId, name: "renamed", description: "new" }) },
    { name: "activate (rollback)", rpc: SK.activate, request: (ids) => ({ skill_id: ids.skillId, version_id: ids.v1 }) },
    { name: "delete", rpc: SK.delete, request: (ids) => ({ skill_id: ids.skillId }) },
  ];
  for (const c of CASES) {
    it(c.name, async () => {
      const faults = server.engram.testHooks.writeFaults;
      for (let nth = 1; ; nth++) {
        const projectId = await newProject(alice);
        const created = await newSkill(connect(), alice, projectId);
        const skillId = String(created["skill_id"]);
        const v1 = String(created["active_version_id"]);
        await ok(connect(), SK.update, { skill_id: skillId, description: "second" }, alice);
        const ids = { projectId, skillId, v1 };
        const before = server.engram.testHooks.fingerprint();
        faults.failAt(nth);
        const result = await rest().call(c.rpc, c.request(ids), alice);
        const reached = faults.writesSeen >= nth;
        faults.failAt(0);
        if (!reached) {
          expect(result.code, `${c.name} without a fault: ${result.message}`).toBe("ok");
          expect(nth, `${c.name} wrote nothing`).toBeGreaterThan(1);
          break;
        }
        expect(result.code, `${c.name} failing at write ${nth}`).not.toBe("ok");
        expect(result.message).not.toMatch(/LMDB|lmdb|injected/);
        expect(server.engram.testHooks.fingerprint(), `${c.name}: store changed by a write failing at ${nth}`).toEqual(before);
      }
    });
  }
});

describe("@mubit-ai/sdk", () => {
  it("setSkill creates skills and getSkills returns them in OpenAI tool format", async () => {
    const projectId = await newProject(alice);
    await ok(connect(), R("CreateAgentDefinition"), { project_id: projectId, agent_id: "sdk-agent" }, alice);
    const { MubitContext, SessionContext, setContext } = await import("@mubit-ai/sdk/context");
    const context = new MubitContext({ client: new Client({ transport: "http", endpoint: server.baseUrl, api_key: alice, run_id: "sdk-skills" }), autoInstrument: false });
    context.rootSession = new SessionContext({ sessionId: "sdk-skills", agentId: "sdk-agent", runId: "sdk-skills" });
    setContext(context);
    const helpers = await import("@mubit-ai/sdk/helpers");
    const created = (await helpers.setSkill("search_tickets", "Search the ticket tracker", { projectId, parametersSchema: SEARCH_SCHEMA })) as { success: boolean; skill: { skill_id: string } };
    expect(created.success).toBe(true);
    await helpers.setSkill("triage_playbook", "How to triage", { projectId, agentId: "sdk-agent", skillType: "playbook", instructions: "1. Read the ticket." });
    await expect(helpers.setSkill("broken", "x", { projectId, parametersSchema: '{"type":"strang"}' })).rejects.toThrow(/parameters_schema/);

    const tools = await helpers.getSkills({ projectId });
    expect(tools).toEqual([
      { type: "function", function: { name: "search_tickets", description: "Search the ticket tracker", parameters: SEARCH_SCHEMA } },
      { type: "function", function: { name: "triage_playbook", description: "How to triage", parameters: {} } },
    ]);
    const raw = (await helpers.getSkills({ projectId, format: "raw" })) as { skill_id: string; skill_type: string }[];
    expect(raw.map((s) => s.skill_type)).toEqual(["tool", "playbook"]);
    expect(raw[0]?.skill_id).toBe(created.skill.skill_id);
  });
});
