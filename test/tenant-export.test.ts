// Export and import of a user's whole memory. A user of server A with data in every plane (written through the REST
// routes) is exported with the `engram export` command and imported with `engram import` into a fresh user of a fresh
// server B; then every read route answers B as it answers A, once A's server-assigned ids are mapped to B's (the ids
// the id policy replaces), and nothing else differs. Importing again changes nothing; another user's export holds
// nothing of this one's; a malformed line is refused naming it, with nothing stored; a large memory pages.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restCaller, type Caller, type Json, type JsonObject } from "./harness/callers.js";
import { ensureBuilt } from "./harness/child-server.js";
import { expectCode, exportTenantLines, ingestAndWait, ok, RPC } from "./harness/memory.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

const ENV = { SERVICE_EMBEDDER: "hashed", SERVICE_CORE_ALLOW_ALL: "true", SERVICE_CORE_ENABLE_DIRECT_SEARCH: "true" };
/** 2024-03-01: fixed occurrence times, so nothing ranked depends on when the test runs. */
const T0 = 1_709_251_200;
const DAY = 86_400;

const R = {
  exportTenant: "engram.v2.TenantService/ExportTenant",
  importTenant: "engram.v2.TenantService/ImportTenant",
  activity: "engram.v2.MemoryService/ListActivity",
  reflect: "engram.v2.LearningService/Reflect",
  outcome: "engram.v2.LearningService/RecordOutcome",
  step: "engram.v2.LearningService/RecordStepOutcome",
  lessons: "engram.v2.LearningService/ListLessons",
  diagnose: "engram.v2.LearningService/Diagnose",
  strategies: "engram.v2.LearningService/SurfaceStrategies",
  register: "engram.v2.CoordinationService/RegisterAgent",
  agents: "engram.v2.CoordinationService/ListAgents",
  handoff: "engram.v2.CoordinationService/CreateHandoff",
  feedback: "engram.v2.CoordinationService/SubmitFeedback",
  handoffs: "engram.v2.CoordinationService/ListHandoffs",
  link: "engram.v2.RunsService/LinkRun",
  runs: "engram.v2.RunsService/ListRuns",
  snapshot: "engram.v2.RunsService/GetContextSnapshot",
  createSession: "engram.v2.SessionsService/CreateControlSession",
  getSession: "engram.v2.SessionsService/GetControlSession",
  closeSession: "engram.v2.SessionsService/CloseControlSession",
  setVariable: "engram.v2.PlanningService/SetVariable",
  variables: "engram.v2.PlanningService/ListVariables",
  defineConcept: "engram.v2.PlanningService/DefineConcept",
  concepts: "engram.v2.PlanningService/ListConcepts",
  addGoal: "engram.v2.PlanningService/AddGoal",
  goals: "engram.v2.PlanningService/ListGoals",
  goalTree: "engram.v2.PlanningService/GetGoalTree",
  submitAction: "engram.v2.PlanningService/SubmitAction",
  actionLog: "engram.v2.PlanningService/GetActionLog",
  runCycle: "engram.v2.PlanningService/RunCycle",
  cycles: "engram.v2.PlanningService/GetCycleHistory",
  createProject: "engram.v2.ResourcesService/CreateProject",
  projects: "engram.v2.ResourcesService/ListProjects",
  project: "engram.v2.ResourcesService/GetProject",
  createAgentDefinition: "engram.v2.ResourcesService/CreateAgentDefinition",
  agentDefinitions: "engram.v2.ResourcesService/ListAgentDefinitions",
  runHistory: "engram.v2.ResourcesService/ListRunHistory",
  setPrompt: "engram.v2.ResourcesService/SetPrompt",
  getPrompt: "engram.v2.ResourcesService/GetPrompt",
  promptVersions: "engram.v2.ResourcesService/ListPromptVersions",
  promptDiff: "engram.v2.ResourcesService/GetPromptDiff",
  createSkill: "engram.v2.ResourcesService/CreateSkill",
  updateSkill: "engram.v2.ResourcesService/UpdateSkill",
  skills: "engram.v2.ResourcesService/ListSkills",
  skillVersions: "engram.v2.ResourcesService/ListSkillVersions",
  skillDiff: "engram.v2.ResourcesService/GetSkillDiff",
  insertNode: "engram.v2.CoreService/InsertNode",
  getNode: "engram.v2.CoreService/GetNode",
  searchNodes: "engram.v2.CoreService/SearchNodes",
  writePad: "engram.v2.CoreService/WriteScratchpad",
  readPad: "engram.v2.CoreService/ReadScratchpad",
  grant: "engram.v2.CoreService/GrantPermission",
  check: "engram.v2.CoreService/CheckPermission",
  setRetention: "engram.v2.RunsService/SetRetentionPolicy",
  getRetention: "engram.v2.RunsService/GetRetentionPolicy",
  clearRetention: "engram.v2.RunsService/ClearRetentionPolicy",
} as const;

/** A vector of the hashed embedder's dimension, as a caller would send one. */
const CALLER_VECTOR = Array.from({ length: 384 }, (_, i) => ((i * 37) % 11) / 11 - 0.45);

/** The runs the seeded user writes to. */
const RUNS = ["alpha", "beta", "gamma", "sess-closed", "sess-open"] as const;

let a: TestServer;
let b: TestServer;
let ca: Caller;
let cb: Caller;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "engram-tenant-"));

beforeAll(async () => {
  ensureBuilt();
  [a, b] = await Promise.all([startTestServer(ENV), startTestServer(ENV)]);
  ca = restCaller(a.baseUrl);
  cb = restCaller(b.baseUrl);
}, 180_000);

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  fs.rmSync(work, { recursive: true, force: true });
});

interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the built `engram` command against a server with the caller's key. */
function cli(server: TestServer, key: string, args: readonly string[]): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["dist/src/cli/main.js", ...args], {
      env: { PATH: process.env["PATH"] ?? "", SERVICE_ENDPOINT: server.baseUrl, SERVICE_API_KEY: key },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Seeds the user with data in every plane, through the REST routes; resolves what the comparisons need. */
async function seed(c: Caller, key: string, reader: string): Promise<{ nodeIds: string[] }> {
  await ingestAndWait(c, key, "alpha", [
    { text: "The payments service deploys every friday at noon.", upsert_key: "deploy-day", lane: "ops", occurrence_time: T0 },
    { text: "The API rate limit is 100 requests per minute.", upsert_key: "rate-limit", occurrence_time: T0 + DAY },
    { text: "Never deploy payments on a public holiday.", intent: "rule", occurrence_time: T0 + 2 * DAY },
    { text: "Retry payment webhooks with exponential backoff.", intent: "lesson", lesson_scope: "global", lesson_type: "success", occurrence_time: T0 + 3 * DAY },
    { text: "Current task: prepare the friday payments release notes.", intent: "working_memory", occurrence_time: T0 + 4 * DAY },
  ]);
  // A newer value of an upsert key supersedes the older entry.
  await ingestAndWait(c, key, "alpha", [{ text: "The API rate limit is 120 requests per minute.", upsert_key: "rate-limit", occurrence_time: T0 + 5 * DAY }]);
  await ingestAndWait(c, key, "beta", [
    { text: "Ledger reconciliation runs nightly after the deploy window.", occurrence_time: T0 + 6 * DAY },
    { text: "Release notes for the mobile train are due on thursday.", occurrence_time: T0 + 7 * DAY },
    // The caller's own embedding: an import keeps it rather than embedding the text again.
    { text: "Escalations go to the on-call lead.", embedding: CALLER_VECTOR, occurrence_time: T0 + 7 * DAY },
  ]);
  await ok(c, RPC.remember, { session_id: "alpha", content: "Caroline owns the gateway deploy checklist.", agent_id: "planner" }, key);
  await ok(c, RPC.archive, { run_id: "alpha", content: "Runbook: restart the payments pods, then verify the friday deploy.", family: "runbook", labels: ["ops"] }, key);

  // A lesson reflected in alpha, credited by outcomes from its run and others until it is promoted to global.
  const reflected = await ok(c, R.reflect, { run_id: "alpha", lessons: [{ content: "When the artifact upload returns 413, split the bundle into chunks under fifty megabytes.", lesson_type: "failure", scope: "run" }], confidence: 0.6 }, key);
  const lessonId = String(((reflected["decisions"] as JsonObject[])[0] as JsonObject)["lesson_id"]);
  await ok(c, R.outcome, { run_id: "alpha", reference_id: lessonId, outcome: "success", idempotency_key: "deploy-42", rationale: "the split upload went through" }, key);
  await ok(c, R.outcome, { run_id: "alpha", reference_id: lessonId, outcome: "success" }, key);
  await ok(c, R.outcome, { run_id: "beta", reference_id: lessonId, outcome: "success" }, key);
  await ok(c, R.outcome, { run_id: "gamma", entry_ids: [lessonId], outcome: "success" }, key);
  await ok(c, R.outcome, { run_id: "beta", outcome: "failure", rationale: "the ledger job timed out" }, key);
  await ok(c, R.step, { run_id: "alpha", step_id: "upload", step_name: "upload artifacts", outcome: "failure", signal: -0.5, rationale: "HTTP 413 from the artifact store", directive_hint: "split the bundle" }, key);
  await ok(c, R.step, { run_id: "alpha", step_id: "verify", step_name: "verify deploy", outcome: "success", signal: 1 }, key);
  await ingestAndWait(c, key, "gamma", [{ text: "The artifact store refuses uploads over fifty megabytes.", occurrence_time: T0 + 8 * DAY }]);

  await ok(c, R.register, { run_id: "alpha", agent_id: "planner", role: "planner", capabilities: ["plan"], shared_memory_lanes: ["ops"], metadata_json: '{"team":"payments"}' }, key);
  await ok(c, R.register, { run_id: "alpha", agent_id: "coder", role: "coder", read_scopes: ["fact", "lesson"] }, key);
  const activity = await ok(c, R.activity, { run_id: "alpha", sort: "asc", limit: 100 }, key);
  const firstEntry = String(((activity["entries"] as JsonObject[])[0] as JsonObject)["id"]);
  const handoff = await ok(c, R.handoff, { run_id: "alpha", task_id: "t-1", from_agent_id: "planner", to_agent_id: "coder", content: "Split the upload.", requested_action: "execute", entry_ids: [firstEntry, "not-an-entry"] }, key);
  const handoffId = String(handoff["handoff_id"]);
  await ok(c, R.feedback, { run_id: "alpha", handoff_id: handoffId, verdict: "acknowledge", from_agent_id: "coder", comments: "on it" }, key);
  await ok(c, R.link, { run_id: "alpha", linked_run_id: "beta" }, key);

  const project = await ok(c, R.createProject, { name: "Payments", description: "The payments platform" }, key);
  const projectId = String((project["project"] as JsonObject)["project_id"]);
  await ok(c, R.createProject, { name: "Ledger", description: "" }, key);
  await ok(c, R.createAgentDefinition, { project_id: projectId, agent_id: "reviewer", role: "reviewer", system_prompt_content: "You review payment changes.\nBe strict.", description: "Reviews diffs" }, key);
  await ok(c, R.setPrompt, { project_id: projectId, agent_id: "reviewer", content: "You review payment changes.\nBe strict and kind.", activate: false }, key);
  await ok(c, R.setPrompt, { agent_id: "solo", content: "You work alone.", activate: true }, key);
  const skill = await ok(c, R.createSkill, { project_id: projectId, agent_id: "reviewer", name: "diff-review", description: "Reviews a diff", parameters_schema: '{"type":"object"}', instructions: "Read the diff." }, key);
  const skillId = String((skill["skill"] as JsonObject)["skill_id"]);
  await ok(c, R.updateSkill, { project_id: projectId, skill_id: skillId, instructions: "Read the diff twice." }, key);

  await ok(c, R.createSession, { run_id: "sess-closed", agent_id: "planner", description: "release prep", project_id: projectId }, key);
  await ok(c, RPC.remember, { session_id: "sess-closed", content: "The release branch is cut on monday." }, key);
  await ok(c, RPC.remember, { session_id: "sess-closed", content: "QA signs off on wednesday." }, key);
  await ok(c, R.closeSession, { session_id: "sess-closed" }, key);
  await ok(c, R.createSession, { run_id: "sess-open", agent_id: "coder", description: "hotfix" }, key);
  await ok(c, RPC.remember, { session_id: "sess-open", content: "The hotfix touches the refund path." }, key);
  // Retention policies of every scope, long enough that nothing seeded expires: entries show their limits.
  await ok(c, R.setRetention, { policy: { rules: [{ entry_type: "trace", max_age_seconds: 3650 * DAY }] } }, key);
  await ok(c, R.setRetention, { project_id: projectId, policy: { rules: [{ entry_type: "working_memory", max_age_seconds: 1000 * DAY }, { entry_type: "fact", max_age_seconds: 2000 * DAY }] } }, key);
  await ok(c, R.setRetention, { run_id: "beta", policy: { rules: [{ entry_type: "fact", max_age_seconds: 3000 * DAY }] } }, key);

  await ok(c, R.setVariable, { run_id: "alpha", name: "release", value_json: '{"version":"2.4.1"}', source: "explicit" }, key);
  await ok(c, R.setVariable, { run_id: "alpha", name: "attempts", value_json: "3" }, key);
  await ok(c, R.defineConcept, { run_id: "alpha", name: "deploy window", definition: "The hours in which deploys are allowed.", related_concepts: ["freeze"] }, key);
  const root = await ok(c, R.addGoal, { run_id: "alpha", description: "Ship release 2.4.1", priority: "high" }, key);
  const rootId = String(root["id"]);
  await ok(c, R.addGoal, { run_id: "alpha", description: "Fix the upload", parent_id: rootId }, key);
  await ok(c, R.submitAction, { run_id: "alpha", agent_id: "planner", action_type: "retrieve", action_json: '{"query":"upload limits"}' }, key);
  await ok(c, R.runCycle, { run_id: "alpha", agent_id: "planner", observation: "the upload failed", candidates: [{ action_type: "reason", action_json: '{"why":"413"}', score: 0.9, rationale: "find out why" }] }, key);

  const nodeIds: string[] = [];
  for (const [text, metadata] of [["payments friday deploy node", '{"lane":"ops"}'], ["ledger reconciliation node", "{}"]] as const) {
    nodeIds.push(String((await ok(c, R.insertNode, { run_id: "alpha", text, metadata_json: metadata }, key))["node_id"]));
  }
  // A node of the caller's own vector, without text.
  nodeIds.push(String((await ok(c, R.insertNode, { run_id: "alpha", vector: CALLER_VECTOR, metadata_json: '{"kind":"raw"}' }, key))["node_id"]));
  await ok(c, R.writePad, { session_id: "pad-1", key: "plan", content: "step one", agent_id: "planner" }, key);
  await ok(c, R.writePad, { session_id: "pad-1", entry_json: '{"n":1}' }, key);
  await ok(c, R.grant, { principal_type: "user", principal_id: reader, run_id: "alpha", permission: "read" }, key);
  await ok(c, R.grant, { principal_type: "agent", principal_id: "auditor", run_id: "beta", lane: "ops", permission: "write" }, key);
  return { nodeIds };
}

/** Fields that measure time spent or elapsed since something: they differ between two identical reads. */
const TIMING_FIELD = /(latency|elapsed|duration|took|_ms$|age_hours|age_seconds|uptime|generated_at)/;

/** Answer fields whose text the server writes as it answers, naming the ids of the records it compares. */
const GENERATED_TEXT: ReadonlySet<string> = new Set(["diff_text"]);

/** A's server-assigned ids → B's, learnt by reading the same listings on both servers. */
class IdMap {
  readonly #ids = new Map<string, string>();

  pair(from: Json | undefined, to: Json | undefined): void {
    if (typeof from !== "string" || typeof to !== "string" || from === "") return;
    const known = this.#ids.get(from);
    expect(known === undefined || known === to, `${from} maps to one id only`).toBe(true);
    this.#ids.set(from, to);
  }

  /** Pairs the `field` of two listings item by item; they must be as long. */
  pairAll(from: Json | undefined, to: Json | undefined, ...fields: string[]): void {
    const left = (from ?? []) as JsonObject[];
    const right = (to ?? []) as JsonObject[];
    expect(right.length).toBe(left.length);
    left.forEach((item, i) => {
      for (const field of fields) this.pair(item[field], (right[i] as JsonObject)[field]);
    });
  }

  /** Pairs whose ids differ: B's sequences were ahead of A's, so a reference left unmapped would show. */
  get changed(): number {
    return [...this.#ids].filter(([from, to]) => from !== to).length;
  }

  /**
   * A value of A's with every string that is one of A's ids replaced by B's. Stored text that merely quotes an id is
   * kept as it was; only text the server generates when it answers (a diff's header) names the ids it holds now.
   */
  translate(value: Json, key = ""): Json {
    if (typeof value === "string") {
      if (GENERATED_TEXT.has(key)) return value.replace(/\b[a-z]+_[0-9a-z_]+\b/g, (id) => this.#ids.get(id) ?? id);
      return this.#ids.get(value) ?? value;
    }
    if (Array.isArray(value)) return value.map((v) => this.translate(v));
    if (value === null || typeof value !== "object") return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.translate(v, k)]));
  }
}

/** Drops timing fields, and the fields `drop` names (values the id policy replaces that no listing pairs). */
function normalise(value: Json, drop: ReadonlySet<string> = new Set()): Json {
  if (Array.isArray(value)) return value.map((v) => normalise(v, drop));
  if (value === null || typeof value !== "object") return value;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value)) if (!TIMING_FIELD.test(k) && !drop.has(k)) out[k] = normalise(v, drop);
  return out;
}

describe("export and import", () => {
  let keyA = "";
  let keyB = "";
  let nodeIdsA: string[] = [];
  const ids = new IdMap();
  const file = path.join(work, "a.jsonl");
  let exportSummary: { exported: Record<string, number> } = { exported: {} };

  beforeAll(async () => {
    keyA = await createUser(a.baseUrl, a.adminKey, "tenant-a");
    await createUser(a.baseUrl, a.adminKey, "reader-x");
    ({ nodeIds: nodeIdsA } = await seed(ca, keyA, "reader-x"));
    const exported = await cli(a, keyA, ["export", "--output", file]);
    expect(exported.code, exported.stderr).toBe(0);
    exportSummary = JSON.parse(exported.stdout) as typeof exportSummary;
    // Grants name users by username: the reader exists on both servers.
    await createUser(b.baseUrl, b.adminKey, "reader-x");
    // Another user of B wrote first, so that B's sequences are ahead of A's: ids that were not remapped would show.
    await seed(cb, await createUser(b.baseUrl, b.adminKey, "bystander"), "reader-x");
    keyB = await createUser(b.baseUrl, b.adminKey, "tenant-b");
    const imported = await cli(b, keyB, ["import", file]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toEqual({ imported: exportSummary.exported, unchanged: {} });
  }, 120_000);

  /** Calls `rpc` on both servers (B's request with A's ids mapped) and expects the same answer once mapped. */
  async function same(rpc: string, request: JsonObject, drop: readonly string[] = []): Promise<JsonObject> {
    const fromA = await ok(ca, rpc, request, keyA);
    const fromB = await ok(cb, rpc, ids.translate(request) as JsonObject, keyB);
    const skip = new Set(drop);
    expect(normalise(fromB, skip), `${rpc} ${JSON.stringify(request)}`).toEqual(normalise(ids.translate(fromA), skip));
    return fromA;
  }

  it("exports a line per record of every kind, after a header, and imports each of them", () => {
    const lines = fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "");
    const header = JSON.parse(lines[0] as string) as JsonObject;
    expect(header).toMatchObject({ kind: "header", format: "engram-export", version: 1 });
    const kinds = lines.slice(1).map((l) => String((JSON.parse(l) as JsonObject)["kind"]));
    for (const kind of ["project", "agent_definition", "prompt_version", "prompt_head", "skill", "skill_version", "entry", "outcome", "step_outcome", "agent", "handoff", "run_link", "control_session", "retention_policy", "variable", "concept", "goal", "action", "cycle", "core_node", "scratchpad", "grant"]) {
      expect(kinds, kind).toContain(kind);
      expect(exportSummary.exported[kind], kind).toBe(kinds.filter((k) => k === kind).length);
    }
    // Records carry no owner: the importing key decides it.
    for (const line of lines.slice(1)) expect((JSON.parse(line) as { record: JsonObject }).record).not.toHaveProperty("owner");
  });

  it("answers every read route on B as on A, the replaced ids mapped", async () => {
    // Pair A's server-assigned ids with B's through the listings that show them.
    for (const run of RUNS) {
      const list = { run_id: run, sort: "asc", limit: 500 };
      const [fromA, fromB] = [await ok(ca, R.activity, list, keyA), await ok(cb, R.activity, list, keyB)];
      ids.pairAll(fromA["entries"], fromB["entries"], "id", "reference_id");
    }
    // The importing key is what wrote the entries into B's memory (provenance `key_id`).
    ids.pair(keyA.split("_")[2], keyB.split("_")[2]);
    const alpha = { run_id: "alpha" };
    const [handoffsA, handoffsB] = [(await ok(ca, R.handoffs, alpha, keyA))["handoffs"] as JsonObject[], (await ok(cb, R.handoffs, alpha, keyB))["handoffs"] as JsonObject[]];
    ids.pairAll(handoffsA, handoffsB, "handoff_id");
    handoffsA.forEach((h, i) => ids.pairAll(h["feedback"], (handoffsB[i] as JsonObject)["feedback"], "feedback_id"));
    ids.pairAll((await ok(ca, R.goals, alpha, keyA))["goals"], (await ok(cb, R.goals, alpha, keyB))["goals"], "id");
    ids.pairAll((await ok(ca, R.actionLog, alpha, keyA))["entries"], (await ok(cb, R.actionLog, alpha, keyB))["entries"], "action_id");
    const projectsA = (await ok(ca, R.projects, {}, keyA))["projects"] as JsonObject[];
    ids.pairAll(projectsA, (await ok(cb, R.projects, {}, keyB))["projects"], "project_id");
    const project = String((projectsA.find((p) => p["name"] === "Payments") as JsonObject)["project_id"]);
    const reviewer = { project_id: project, agent_id: "reviewer" };
    const solo = { agent_id: "solo" };
    for (const agent of [reviewer, solo]) {
      ids.pairAll((await ok(ca, R.promptVersions, agent, keyA))["versions"], (await ok(cb, R.promptVersions, ids.translate(agent) as JsonObject, keyB))["versions"], "version_id");
    }
    const skillsRequest = { project_id: project };
    const skillsA = (await ok(ca, R.skills, skillsRequest, keyA))["skills"] as JsonObject[];
    ids.pairAll(skillsA, (await ok(cb, R.skills, ids.translate(skillsRequest) as JsonObject, keyB))["skills"], "skill_id");
    const skill = String((skillsA[0] as JsonObject)["skill_id"]);
    ids.pairAll((await ok(ca, R.skillVersions, { skill_id: skill }, keyA))["versions"], (await ok(cb, R.skillVersions, ids.translate({ skill_id: skill }) as JsonObject, keyB))["versions"], "version_id");
    const pad = { session_id: "pad-1" };
    ids.pairAll((await ok(ca, R.readPad, pad, keyA))["entries"], (await ok(cb, R.readPad, pad, keyB))["entries"], "id");
    expect(ids.changed).toBeGreaterThan(30);

    // Memory: activity, query (with linked runs), recall, context, dereference, runs and snapshots.
    for (const run of RUNS) await same(R.activity, { run_id: run, sort: "desc", limit: 100 });
    for (const query of ["when do payments deploy", "API rate limit", "artifact upload 413", "release notes"]) {
      await same(RPC.query, { run_id: "alpha", query, include_linked_runs: true, limit: 10 });
      await same(RPC.query, { run_id: "gamma", query, limit: 10, explain: true });
      await same(RPC.recall, { session_id: "alpha", query, limit: 10 });
      await same(RPC.context, { run_id: "alpha", query, include_linked_runs: true });
    }
    const byVector = await same(RPC.query, { run_id: "beta", query: "on-call", embedding: CALLER_VECTOR, limit: 5 });
    expect((byVector["evidence"] as JsonObject[])[0]).toMatchObject({ content: "Escalations go to the on-call lead." });
    const archive = (await ok(ca, R.activity, { run_id: "alpha", entry_types: ["archive_block"] }, keyA))["entries"] as JsonObject[];
    await same(RPC.dereference, { reference_id: String((archive[0] as JsonObject)["reference_id"]) });
    await same(R.runs, { limit: 50 });
    await same(R.snapshot, alpha, ["version"]);
    await same(RPC.memoryHealth, alpha);

    // Learning: lessons with their confidence, promotion and audit trail; outcomes through diagnosis and strategies.
    const lessons = await same(R.lessons, { limit: 100 });
    const promoted = (lessons["lessons"] as JsonObject[]).find((l) => String(l["content"]).includes("artifact upload"));
    expect(promoted).toMatchObject({ scope: "global" });
    expect((promoted?.["audit_trail"] as JsonObject[]).length).toBeGreaterThan(3);
    await same(R.lessons, { run_id: "alpha", limit: 100 });
    await same(R.diagnose, { run_id: "alpha", error_text: "HTTP 413 from the artifact store on upload" });
    // A strategy's id is a digest of its lessons' ids: it follows theirs.
    const strategies = await same(R.strategies, { run_id: "alpha", min_supporting_lessons: 1 }, ["strategy_id"]);
    expect((strategies["strategies"] as JsonObject[]).length).toBeGreaterThan(0);

    // Coordination, runs, control sessions.
    await same(R.agents, alpha);
    await same(R.handoffs, alpha);
    await same(R.getSession, { session_id: "sess-closed" });
    await same(R.getSession, { session_id: "sess-open" });
    // Retention policies, the project's under the project's new id.
    for (const scope of [{}, { project_id: project }, { run_id: "beta" }] as JsonObject[]) expect((await same(R.getRetention, scope))["policy"], JSON.stringify(scope)).toBeDefined();

    // Planning: variables keep their values (their versions are the importing server's), concepts, goals, log.
    await same(R.variables, alpha, ["version"]);
    await same(R.concepts, alpha);
    await same(R.goals, alpha);
    await same(R.goalTree, alpha);
    await same(R.actionLog, alpha);
    await same(R.cycles, alpha);

    // Resources: projects, agent definitions, prompts, skills, run history.
    await same(R.projects, {});
    await same(R.project, { project_id: project });
    await same(R.agentDefinitions, { project_id: project });
    await same(R.runHistory, { project_id: project });
    for (const agent of [reviewer, solo]) {
      const versions = (await same(R.promptVersions, agent))["versions"] as JsonObject[];
      await same(R.getPrompt, agent);
      expect(versions.filter((v) => v["status"] === "active")).toHaveLength(1);
      for (const version of versions) await same(R.getPrompt, { ...agent, version_id: String(version["version_id"]) });
      if (versions.length === 2) {
        await same(R.promptDiff, { ...agent, version_a_id: String((versions[1] as JsonObject)["version_id"]), version_b_id: String((versions[0] as JsonObject)["version_id"]) });
      }
    }
    await same(R.skills, { project_id: project });
    const skillVersions = (await same(R.skillVersions, { skill_id: skill }))["versions"] as JsonObject[];
    await same(R.skillDiff, { skill_id: skill, version_a_id: String((skillVersions[1] as JsonObject)["version_id"]), version_b_id: String((skillVersions[0] as JsonObject)["version_id"]) });

    // Core: nodes by their new ids (found by search), scratchpad, access checks.
    expect(nodeIdsA).toHaveLength(3);
    for (const nodeId of nodeIdsA) {
      const nodeA = (await ok(ca, R.getNode, { id: nodeId }, keyA))["node"] as JsonObject;
      expect((nodeA["vector"] as number[]).length).toBe(384);
      // The node index of B finds the imported node by its vector (kept as it was), under its new id.
      const found = (await ok(cb, R.searchNodes, { vector: nodeA["vector"] as Json, run_id: "alpha", k: 3 }, keyB))["results"] as JsonObject[];
      const match = found.find((r) => r["text"] === nodeA["text"] && r["metadata_json"] === nodeA["metadata_json"]) as JsonObject;
      expect(match, String(nodeA["text"])).toBeDefined();
      expect(match["node_id"]).not.toBe(nodeId);
      const nodeB = (await ok(cb, R.getNode, { id: String(match["node_id"]) }, keyB))["node"] as JsonObject;
      const withoutId = ({ id: _id, node_id: _nodeId, ...rest }: JsonObject): JsonObject => rest;
      expect(normalise(withoutId(nodeB))).toEqual(normalise(withoutId(nodeA)));
    }
    await same(R.readPad, pad);
    await same(R.check, { principal_type: "user", principal_id: "reader-x", run_id: "alpha", permission: "read" });
    await same(R.check, { principal_type: "agent", principal_id: "auditor", run_id: "beta", lane: "ops", permission: "write" });
    await same(R.check, { principal_type: "user", principal_id: "reader-x", run_id: "beta", permission: "read" });
  });

  it("importing again creates nothing: every line is unchanged and the store is as it was", async () => {
    const before = b.engram.testHooks.fingerprint();
    const again = await cli(b, keyB, ["import", file]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ imported: {}, unchanged: exportSummary.exported });
    expect(b.engram.testHooks.fingerprint()).toEqual(before);
    for (const run of RUNS) {
      const list = { run_id: run, sort: "asc", limit: 500 };
      const [fromA, fromB] = [await ok(ca, R.activity, list, keyA), await ok(cb, R.activity, list, keyB)];
      expect((fromB["entries"] as JsonObject[]).length).toBe((fromA["entries"] as JsonObject[]).length);
    }
  });

  it("exports nothing of another user: an empty memory exports its header only", async () => {
    const other = await createUser(a.baseUrl, a.adminKey, "tenant-other");
    // Every page, to the end: a page is cut by time as well as size, so a loaded machine may need more than one.
    const empty = await exportTenantLines(ca, other);
    expect(empty).toHaveLength(1);
    expect((JSON.parse(empty[0] ?? "{}") as JsonObject)["kind"]).toBe("header");
    await ingestAndWait(ca, other, "alpha", [{ text: "The other tenant's own note about deploys." }]);
    await ok(ca, R.setVariable, { run_id: "alpha", name: "release", value_json: '"other"' }, other);
    const lines = await exportTenantLines(ca, other);
    const text = lines.join("\n");
    expect(text).toContain("The other tenant's own note");
    // Words of the first user's memory (all in its export) appear nowhere in this one's.
    const seededA = fs.readFileSync(file, "utf8");
    for (const needle of ["payments", "Payments", "reviewer", "artifact", "pad-1", "reader-x", "2.4.1"]) {
      expect(seededA, needle).toContain(needle);
      expect(text, needle).not.toContain(needle);
    }
    expect(lines.map((l) => (JSON.parse(l) as JsonObject)["kind"])).toEqual(["header", "entry", "variable"]);
  });
});

describe("import refusals", () => {
  let lines: JsonObject[] = [];
  let key = "";
  const lineOf = (kind: string): string => JSON.stringify(lines.find((l) => l["kind"] === kind));

  beforeAll(async () => {
    // An export of a small memory of A: a project with an agent, a skill with a version, entries, a grant.
    const source = await createUser(a.baseUrl, a.adminKey, "refusal-source");
    await ingestAndWait(ca, source, "r1", [{ text: "A fact to import." }, { text: "Another fact to import." }]);
    const project = await ok(ca, R.createProject, { name: "Imported", description: "" }, source);
    const projectId = String((project["project"] as JsonObject)["project_id"]);
    await ok(ca, R.createSkill, { project_id: projectId, name: "lint", instructions: "Run the linter." }, source);
    await ok(ca, R.grant, { principal_type: "user", principal_id: "reader-x", run_id: "r1", permission: "read" }, source);
    lines = (await exportTenantLines(ca, source)).map((l) => JSON.parse(l) as JsonObject);
    key = await createUser(b.baseUrl, b.adminKey, "refusal-target");
    await ok(cb, R.createProject, { name: "Taken", description: "" }, key);
  });

  /** Imports `batch` and expects a 400 (or `code`) naming `field`, with nothing of the batch stored. */
  async function refused(batch: readonly string[], field: string, code = "invalid_argument", status = 400): Promise<void> {
    const before = b.engram.testHooks.fingerprint();
    const r = await cb.call(R.importTenant, { lines: [...batch] }, key);
    expectCode(r, code, status);
    expect(r.message).toMatch(new RegExp(`^${field.replace(/[[\].]/g, "\\$&")}: `));
    expect(b.engram.testHooks.fingerprint()).toEqual(before);
  }

  it("refuses a line that is not JSON, of an unknown kind or without a field, naming it", async () => {
    const header = JSON.stringify(lines[0]);
    await refused([header, lineOf("project"), "{not json"], "lines[2]");
    await refused([lineOf("project"), JSON.stringify({ kind: "spaceship", id: "x", record: {} })], "lines[1].kind");
    await refused([lineOf("project"), JSON.stringify({ kind: "entry", record: {} })], "lines[1].id");
    const entry = lines.find((l) => l["kind"] === "entry") as { record: JsonObject };
    const { runId: _runId, ...withoutRun } = entry.record;
    await refused([lineOf("project"), JSON.stringify({ ...entry, record: withoutRun })], "lines[1].record.runId");
    await refused([lineOf("entry"), JSON.stringify({ ...entry, record: { ...entry.record, vector: "???" } })], "lines[1].record.vector");
    await refused([JSON.stringify({ ...lines[0], version: 99 })], "lines[0].version");
    await refused(Array.from({ length: 501 }, () => header), "lines");
  });

  it("answers malformed request bodies with a 4xx on both routes, never a server error", async () => {
    for (const route of ["/v2/control/tenant/export", "/v2/control/tenant/import"]) {
      for (const body of ["null", "[]", '{"lines":"x"}', '{"lines":[null]}', '{"lines":[5]}', '{"page_token":"!!!","limit":-1}', '{"page_token":5}', '{"limit":"abc"}']) {
        const response = await fetch(`${b.baseUrl}${route}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
        expect(response.status, `${route} ${body}`).toBeGreaterThanOrEqual(400);
        expect(response.status, `${route} ${body}`).toBeLessThan(500);
      }
    }
  });

  it("refuses a line whose references or names do not fit, after others were written: nothing of the batch is stored", async () => {
    // The project and the entries are written first in the transaction, then the skill version fails.
    await refused([lineOf("project"), lineOf("entry"), lineOf("skill_version")], "lines[2].record.skillId");
    // A grant to a user this server does not have.
    const grant = lines.find((l) => l["kind"] === "grant") as { record: JsonObject };
    await refused([lineOf("entry"), JSON.stringify({ ...grant, record: { ...grant.record, principalId: "nobody-here" } })], "lines[1].record.principalId");
    // A project named like one the caller already has.
    const project = lines.find((l) => l["kind"] === "project") as { record: JsonObject };
    await refused([lineOf("entry"), JSON.stringify({ ...project, record: { ...project.record, name: "Taken" } })], "lines[1].record.name", "already_exists", 409);
    // The whole export imports once the lines are right, and again changes nothing.
    const all = lines.map((l) => JSON.stringify(l));
    const first = await ok(cb, R.importTenant, { lines: all }, key);
    expect(first["unchanged"]).toEqual({});
    const again = await ok(cb, R.importTenant, { lines: all }, key);
    expect(again["imported"]).toEqual({});
    expect(again["unchanged"]).toEqual(first["imported"]);
  });

  it("imports retention policies whole or not at all, refuses one that contradicts the caller's, and applies them at once", async () => {
    const source = await createUser(a.baseUrl, a.adminKey, "policy-source");
    await ingestAndWait(ca, source, "kept-a-day", [{ text: "A fact written long ago." }]);
    await ok(ca, R.setRetention, { run_id: "kept-a-day", policy: { rules: [{ entry_type: "fact", max_age_seconds: DAY }] } }, source);
    const exported = (await exportTenantLines(ca, source)).map((l) => JSON.parse(l) as { kind: string; record: JsonObject });
    const policyLine = exported.find((l) => l.kind === "retention_policy") as { kind: string; id: string; record: JsonObject };
    expect(policyLine).toMatchObject({ id: '["run","kept-a-day"]', record: { scope: "run", scopeId: "kept-a-day", rules: [{ entryType: "fact", maxAgeSeconds: DAY }] } });
    // The entry as if written in 2024: the day its run keeps facts is long over.
    const entry = exported.find((l) => l.kind === "entry") as { record: JsonObject };
    const oldEntry = JSON.stringify({ ...entry, record: { ...entry.record, createdAt: T0 * 1000, updatedAt: T0 * 1000 } });
    const policy = JSON.stringify(policyLine);
    const listed = async (): Promise<JsonObject[]> => (await ok(cb, R.activity, { run_id: "kept-a-day" }, key))["entries"] as JsonObject[];

    await refused([oldEntry, policy, JSON.stringify({ kind: "spaceship", id: "x", record: {} })], "lines[2].kind");
    await refused([JSON.stringify({ ...policyLine, record: { ...policyLine.record, rules: [{ entryType: "fact", maxAgeSeconds: 0 }] } })], "lines[0].record.rules[0].maxAgeSeconds");
    await refused([JSON.stringify({ ...policyLine, record: { ...policyLine.record, scope: "planet" } })], "lines[0].record.scope");
    // The caller's own policy of the run says otherwise: refused, naming the line; the caller clears it to import.
    await ok(cb, R.setRetention, { run_id: "kept-a-day", policy: { rules: [{ entry_type: "fact", max_age_seconds: 2 * DAY }] } }, key);
    await refused([oldEntry, policy], "lines[1].record.rules", "already_exists", 409);
    await ok(cb, R.clearRetention, { run_id: "kept-a-day" }, key);
    expect(await ok(cb, R.getRetention, { run_id: "kept-a-day" }, key)).not.toHaveProperty("policy");

    // The entry first: visible, nothing limits its run yet; then the policy, which expires it at once.
    expect((await ok(cb, R.importTenant, { lines: [oldEntry] }, key))["imported"]).toEqual({ entry: 1 });
    expect(await listed()).toHaveLength(1);
    expect((await ok(cb, R.importTenant, { lines: [oldEntry, policy] }, key))["imported"]).toEqual({ retention_policy: 1 });
    expect(await listed()).toEqual([]);
    expect(await ok(cb, R.getRetention, { run_id: "kept-a-day" }, key)).toMatchObject({ policy: { rules: [{ entry_type: "fact", max_age_seconds: String(DAY) }] } });
    expect(await ok(cb, R.importTenant, { lines: [oldEntry, policy] }, key)).toMatchObject({ imported: {}, unchanged: { entry: 1, retention_policy: 1 } });
  });
});

describe("paging", () => {
  it("pages a large memory: bounded pages, every record exactly once, the CLI writes them all", async () => {
    const key = await createUser(a.baseUrl, a.adminKey, "tenant-big");
    const total = 1500;
    for (let start = 0; start < total; start += 500) {
      const items = Array.from({ length: 500 }, (_, i) => ({ text: `Entry ${start + i}: the deploy of service ${(start + i) % 37} went fine.`, occurrence_time: T0 + start + i }));
      await ok(ca, RPC.batchInsert, { run_id: `bulk-${start / 500}`, items }, key);
    }
    const pages: JsonObject[] = [];
    let token = "";
    do {
      const page = await ok(ca, R.exportTenant, { page_token: token, limit: 400 }, key);
      pages.push(page);
      token = String(page["next_page_token"]);
    } while (token !== "");
    expect(pages.length).toBeGreaterThanOrEqual(4);
    const ids: string[] = [];
    for (const page of pages) {
      const pageLines = page["lines"] as string[];
      expect(pageLines.filter((l) => !l.startsWith('{"kind":"header"')).length).toBeLessThanOrEqual(400);
      for (const line of pageLines) {
        const parsed = JSON.parse(line) as JsonObject;
        if (parsed["kind"] === "entry") ids.push(String(parsed["id"]));
      }
    }
    expect(ids).toHaveLength(total);
    expect(new Set(ids).size).toBe(total);
    // A token that is not one of ours is refused, naming it.
    expectCode(await ca.call(R.exportTenant, { page_token: "!!" }, key), "invalid_argument", 400);

    const cliExport = await cli(a, key, ["export"]);
    expect(cliExport.code, cliExport.stderr).toBe(0);
    expect(cliExport.stdout.split("\n").filter((l) => l !== "")).toHaveLength(total + 1);
    expect(JSON.parse(cliExport.stderr)).toEqual({ exported: { entry: total } });
  });
});

/** Every line of the caller's export, through the API, page by page. */
