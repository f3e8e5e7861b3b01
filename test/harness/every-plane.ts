// Data in every plane, written through the REST routes, and the answers of every read route over it: for tests that
// expect two servers (a source and its restored backup) to answer alike.
import { expect } from "vitest";
import type { Caller, Json, JsonObject } from "./callers.js";
import { ingestAndWait, ok, RPC } from "./memory.js";

/** 2024-03-01: fixed occurrence times, so nothing ranked depends on when the test runs. */
const T0 = 1_709_251_200;
const DAY = 86_400;

export const R = {
  ...RPC,
  activity: "engram.v2.MemoryService/ListActivity",
  exportActivity: "engram.v2.MemoryService/ExportActivity",
  exportTenant: "engram.v2.TenantService/ExportTenant",
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
  createCoreSession: "engram.v2.CoreService/CreateCoreSession",
  snapshotCoreSession: "engram.v2.CoreService/SnapshotCoreSession",
  listUsers: "engram.v2.AuthService/ListUsers",
  getUser: "engram.v2.AuthService/GetUser",
} as const;

/** The runs the seeded user writes to. */
export const SEEDED_RUNS = ["alpha", "beta", "gamma", "sess-closed", "sess-open"] as const;

/** What a read of the seeded data needs to name: ids the server assigned. */
export interface Seeded {
  readonly projectId: string;
  readonly skillId: string;
  readonly nodeIds: readonly string[];
  readonly archiveReference: string;
  readonly jobId: string;
}

/**
 * Writes data in every plane as `key`'s user: entries of every kind (an upsert superseding another, an archive block,
 * a checkpoint), a reflected lesson credited by outcomes, agents with a handoff and feedback, a run link, projects with
 * an agent definition, prompt versions and a skill, control sessions (one closed), planning records, core nodes, a
 * scratchpad, an open core transaction with a snapshot, and grants to `reader`.
 */
export async function seedEveryPlane(c: Caller, key: string, reader: string): Promise<Seeded> {
  await ingestAndWait(c, key, "alpha", [
    { text: "The payments service deploys every friday at noon.", upsert_key: "deploy-day", lane: "ops", occurrence_time: T0 },
    { text: "The API rate limit is 100 requests per minute.", upsert_key: "rate-limit", occurrence_time: T0 + DAY },
    { text: "Never deploy payments on a public holiday.", intent: "rule", occurrence_time: T0 + 2 * DAY },
    { text: "Retry payment webhooks with exponential backoff.", intent: "lesson", lesson_scope: "global", lesson_type: "success", occurrence_time: T0 + 3 * DAY },
    { text: "Current task: prepare the friday payments release notes.", intent: "working_memory", occurrence_time: T0 + 4 * DAY },
  ]);
  const accepted = await ok(c, RPC.ingest, { run_id: "alpha", items: [{ text: "The API rate limit is 120 requests per minute.", upsert_key: "rate-limit", occurrence_time: T0 + 5 * DAY }] }, key);
  const jobId = String(accepted["job_id"]);
  await ingestAndWait(c, key, "beta", [
    { text: "Ledger reconciliation runs nightly after the deploy window.", occurrence_time: T0 + 6 * DAY },
    { text: "Release notes for the mobile train are due on thursday.", occurrence_time: T0 + 7 * DAY },
  ]);
  await ok(c, RPC.remember, { session_id: "alpha", content: "Caroline owns the gateway deploy checklist.", agent_id: "planner" }, key);
  const archived = await ok(c, RPC.archive, { run_id: "alpha", content: "Runbook: restart the payments pods, then verify the friday deploy.", family: "runbook", labels: ["ops"] }, key);
  await ok(c, RPC.checkpoint, { run_id: "alpha", label: "before-release", context_snapshot: "Release prep is halfway done." }, key);

  const reflected = await ok(c, R.reflect, { run_id: "alpha", lessons: [{ content: "When the artifact upload returns 413, split the bundle into chunks under fifty megabytes.", lesson_type: "failure", scope: "run" }], confidence: 0.6 }, key);
  const lessonId = String(((reflected["decisions"] as JsonObject[])[0] as JsonObject)["lesson_id"]);
  await ok(c, R.outcome, { run_id: "alpha", reference_id: lessonId, outcome: "success", idempotency_key: "deploy-42", rationale: "the split upload went through" }, key);
  await ok(c, R.outcome, { run_id: "beta", reference_id: lessonId, outcome: "success" }, key);
  await ok(c, R.outcome, { run_id: "beta", outcome: "failure", rationale: "the ledger job timed out" }, key);
  await ok(c, R.step, { run_id: "alpha", step_id: "upload", step_name: "upload artifacts", outcome: "failure", signal: -0.5, rationale: "HTTP 413 from the artifact store", directive_hint: "split the bundle" }, key);
  await ingestAndWait(c, key, "gamma", [{ text: "The artifact store refuses uploads over fifty megabytes.", occurrence_time: T0 + 8 * DAY }]);

  await ok(c, R.register, { run_id: "alpha", agent_id: "planner", role: "planner", capabilities: ["plan"], shared_memory_lanes: ["ops"] }, key);
  await ok(c, R.register, { run_id: "alpha", agent_id: "coder", role: "coder", read_scopes: ["fact", "lesson"] }, key);
  const handoff = await ok(c, R.handoff, { run_id: "alpha", task_id: "t-1", from_agent_id: "planner", to_agent_id: "coder", content: "Split the upload.", requested_action: "execute" }, key);
  await ok(c, R.feedback, { run_id: "alpha", handoff_id: String(handoff["handoff_id"]), verdict: "acknowledge", from_agent_id: "coder", comments: "on it" }, key);
  await ok(c, R.link, { run_id: "alpha", linked_run_id: "beta" }, key);

  const project = await ok(c, R.createProject, { name: "Payments", description: "The payments platform" }, key);
  const projectId = String((project["project"] as JsonObject)["project_id"]);
  await ok(c, R.createAgentDefinition, { project_id: projectId, agent_id: "reviewer", role: "reviewer", system_prompt_content: "You review payment changes.\nBe strict.", description: "Reviews diffs" }, key);
  await ok(c, R.setPrompt, { project_id: projectId, agent_id: "reviewer", content: "You review payment changes.\nBe strict and kind.", activate: false }, key);
  const skill = await ok(c, R.createSkill, { project_id: projectId, agent_id: "reviewer", name: "diff-review", description: "Reviews a diff", parameters_schema: '{"type":"object"}', instructions: "Read the diff." }, key);
  const skillId = String((skill["skill"] as JsonObject)["skill_id"]);
  await ok(c, R.updateSkill, { project_id: projectId, skill_id: skillId, instructions: "Read the diff twice." }, key);

  await ok(c, R.createSession, { run_id: "sess-closed", agent_id: "planner", description: "release prep", project_id: projectId }, key);
  await ok(c, RPC.remember, { session_id: "sess-closed", content: "The release branch is cut on monday." }, key);
  await ok(c, R.closeSession, { session_id: "sess-closed" }, key);
  await ok(c, R.createSession, { run_id: "sess-open", agent_id: "coder", description: "hotfix" }, key);
  await ok(c, RPC.remember, { session_id: "sess-open", content: "The hotfix touches the refund path." }, key);

  await ok(c, R.setVariable, { run_id: "alpha", name: "release", value_json: '{"version":"2.4.1"}', source: "explicit" }, key);
  await ok(c, R.defineConcept, { run_id: "alpha", name: "deploy window", definition: "The hours in which deploys are allowed.", related_concepts: ["freeze"] }, key);
  const root = await ok(c, R.addGoal, { run_id: "alpha", description: "Ship release 2.4.1", priority: "high" }, key);
  await ok(c, R.addGoal, { run_id: "alpha", description: "Fix the upload", parent_id: String(root["id"]) }, key);
  await ok(c, R.submitAction, { run_id: "alpha", agent_id: "planner", action_type: "retrieve", action_json: '{"query":"upload limits"}' }, key);
  await ok(c, R.runCycle, { run_id: "alpha", agent_id: "planner", observation: "the upload failed", candidates: [{ action_type: "reason", action_json: '{"why":"413"}', score: 0.9, rationale: "find out why" }] }, key);

  const nodeIds: string[] = [];
  for (const text of ["payments friday deploy node", "ledger reconciliation node"]) {
    nodeIds.push(String((await ok(c, R.insertNode, { run_id: "alpha", text, metadata_json: '{"kind":"note"}' }, key))["node_id"]));
  }
  await ok(c, R.writePad, { session_id: "pad-1", key: "plan", content: "step one", agent_id: "planner" }, key);
  const transaction = await ok(c, R.createCoreSession, {}, key);
  await ok(c, R.insertNode, { run_id: "alpha", text: "a staged node", session_id: String(transaction["session_id"]) }, key);
  await ok(c, R.snapshotCoreSession, { id: String(transaction["session_id"]), path: "snap-1" }, key);
  await ok(c, R.grant, { principal_type: "user", principal_id: reader, run_id: "alpha", permission: "read" }, key);
  return { projectId, skillId, nodeIds, archiveReference: String(archived["reference_id"]), jobId };
}

/** Every read route over the seeded data, as `key`'s user (and `adminKey` for the admin's listings): rpc and request → answer. */
export async function readEveryPlane(c: Caller, key: string, adminKey: string, seeded: Seeded, reader: string): Promise<Map<string, JsonObject>> {
  const answers = new Map<string, JsonObject>();
  const read = async (rpc: string, request: JsonObject, as = key): Promise<JsonObject> => {
    const answer = await ok(c, rpc, request, as);
    answers.set(`${rpc} ${JSON.stringify(request)}`, answer);
    return answer;
  };
  const alpha = { run_id: "alpha" };
  for (const run of SEEDED_RUNS) {
    await read(R.activity, { run_id: run, sort: "asc", limit: 500 });
    await read(R.exportActivity, { run_id: run });
  }
  for (const query of ["when do payments deploy", "API rate limit", "artifact upload 413", "release notes"]) {
    await read(RPC.query, { run_id: "alpha", query, include_linked_runs: true, limit: 10 });
    await read(RPC.recall, { session_id: "alpha", query, limit: 10 });
    await read(RPC.context, { run_id: "alpha", query, include_linked_runs: true });
  }
  await read(RPC.dereference, { reference_id: seeded.archiveReference });
  await read(RPC.getIngestJob, { job_id: seeded.jobId });
  await read(RPC.ingestStats, alpha);
  await read(RPC.memoryHealth, alpha);
  await read(R.runs, { limit: 50 });
  await read(R.snapshot, alpha);
  await read(R.lessons, { limit: 100 });
  await read(R.diagnose, { run_id: "alpha", error_text: "HTTP 413 from the artifact store on upload" });
  await read(R.strategies, { run_id: "alpha", min_supporting_lessons: 1 });
  await read(R.agents, alpha);
  await read(R.handoffs, alpha);
  await read(R.getSession, { session_id: "sess-closed" });
  await read(R.getSession, { session_id: "sess-open" });
  for (const rpc of [R.variables, R.concepts, R.goals, R.goalTree, R.actionLog, R.cycles]) await read(rpc, alpha);
  await read(R.projects, {});
  await read(R.project, { project_id: seeded.projectId });
  await read(R.agentDefinitions, { project_id: seeded.projectId });
  await read(R.runHistory, { project_id: seeded.projectId });
  const reviewer = { project_id: seeded.projectId, agent_id: "reviewer" };
  const versions = (await read(R.promptVersions, reviewer))["versions"] as JsonObject[];
  await read(R.getPrompt, reviewer);
  await read(R.promptDiff, { ...reviewer, version_a_id: String(versions[1]?.["version_id"]), version_b_id: String(versions[0]?.["version_id"]) });
  await read(R.skills, { project_id: seeded.projectId });
  const skillVersions = (await read(R.skillVersions, { skill_id: seeded.skillId }))["versions"] as JsonObject[];
  await read(R.skillDiff, { skill_id: seeded.skillId, version_a_id: String(skillVersions[1]?.["version_id"]), version_b_id: String(skillVersions[0]?.["version_id"]) });
  for (const id of seeded.nodeIds) await read(R.getNode, { id });
  await read(R.searchNodes, { query_text: "payments deploy", run_id: "alpha", k: 5 });
  await read(R.readPad, { session_id: "pad-1" });
  await read(R.check, { principal_type: "user", principal_id: reader, run_id: "alpha", permission: "read" });
  // Export pages end on a time budget: the lines of all pages are compared, not where the pages break.
  const lines: Json[] = [];
  let pageToken = "";
  do {
    const page = await ok(c, R.exportTenant, { page_token: pageToken }, key);
    lines.push(...(page["lines"] as Json[]));
    pageToken = String(page["next_page_token"]);
  } while (pageToken !== "");
  answers.set(`${R.exportTenant} (every page)`, { lines });
  await read(R.listUsers, {}, adminKey);
  await read(R.getUser, { username: reader }, adminKey);
  return answers;
}

/** Fields that measure time spent, or elapsed since something: they differ between two identical reads. */
const TIMING_FIELD = /(latency|elapsed|duration|took|_ms$|age_hours|age_seconds|uptime|generated_at|exported_at|^liveness$)/;

/** The answer without its timing fields, also inside text fields holding JSON (an export's header line). */
export function withoutTiming(value: Json): Json {
  if (typeof value === "string" && value.startsWith("{")) {
    try {
      return JSON.stringify(withoutTiming(JSON.parse(value) as Json));
    } catch {
      return value;
    }
  }
  if (Array.isArray(value)) return value.map(withoutTiming);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => !TIMING_FIELD.test(k)).map(([k, v]) => [k, withoutTiming(v)]));
}

/** Both servers answered every read alike, timing aside. */
export function expectSameAnswers(expected: Map<string, JsonObject>, actual: Map<string, JsonObject>): void {
  expect([...actual.keys()]).toEqual([...expected.keys()]);
  for (const [what, answer] of expected) expect(withoutTiming(actual.get(what) as JsonObject), what).toEqual(withoutTiming(answer));
}
