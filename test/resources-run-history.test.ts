// Project run history over REST, Connect and gRPC: the figures of a scripted series of runs (entries ingested,
// lessons reflected, outcomes with signals, prompt changes while the runs were open), kept current while a run
// proceeds; newest activity first in pages; 400s and 404s; two-user isolation; and a failed write leaving the figures
// as they were.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { TRANSPORTS, type Caller, type JsonObject, type TransportName } from "./harness/callers.js";
import { expectInvalid, ingestAndWait, ok, expectCode } from "./harness/memory.js";
import { CallerPool, freshUsers } from "./harness/caller-pool.js";

const R = {
  createProject: "engram.v2.ResourcesService/CreateProject",
  createAgent: "engram.v2.ResourcesService/CreateAgentDefinition",
  setPrompt: "engram.v2.ResourcesService/SetPrompt",
  activate: "engram.v2.ResourcesService/ActivatePromptVersion",
  list: "engram.v2.ResourcesService/ListRunHistory",
  get: "engram.v2.ResourcesService/GetRunHistory",
  createSession: "engram.v2.SessionsService/CreateControlSession",
  closeSession: "engram.v2.SessionsService/CloseControlSession",
  reflect: "engram.v2.LearningService/Reflect",
  outcome: "engram.v2.LearningService/RecordOutcome",
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
const runsOf = (body: JsonObject): JsonObject[] => (body["runs"] as JsonObject[] | undefined) ?? [];

async function project(c: Caller, key: string, name: string): Promise<string> {
  return String(obj(await ok(c, R.createProject, { name }, key), "project")["project_id"]);
}

async function record(c: Caller, key: string, projectId: string, runId: string): Promise<JsonObject> {
  return obj(await ok(c, R.get, { project_id: projectId, run_id: runId }, key), "run");
}

/** What a record says, with the fields a scripted run decides (times only checked for presence). */
function figures(r: JsonObject): JsonObject {
  return {
    run_id: r["run_id"] ?? "",
    project_id: r["project_id"] ?? "",
    agent_ids: r["agent_ids"] ?? [],
    ingest_count: r["ingest_count"] ?? 0,
    lessons_extracted: r["lessons_extracted"] ?? 0,
    outcome_count: r["outcome_count"] ?? 0,
    avg_outcome_score: r["avg_outcome_score"] ?? 0,
    prompt_changes: r["prompt_changes"] ?? 0,
    status: r["status"] ?? "",
    ended: (r["ended_at"] ?? "") !== "",
  };
}

interface Script {
  readonly key: string;
  readonly projectId: string;
  readonly otherProjectId: string;
  /** Sorts after `second`, so that the listing order does not depend on equal timestamps. */
  readonly first: string;
  readonly second: string;
  readonly other: string;
}

/** Two runs of one project and one of another, with everything the history counts. */
async function script(c: Caller, tag: string): Promise<Script> {
  const key = await fresh(`history-${tag}`);
  const projectId = await project(c, key, "checkout");
  const otherProjectId = await project(c, key, "billing");
  await ok(c, R.createAgent, { project_id: projectId, agent_id: "coder", role: "writes code" }, key);
  await ok(c, R.createAgent, { project_id: otherProjectId, agent_id: "biller" }, key);
  const first = `b-run-${tag}`;
  const second = `a-run-${tag}`;
  const other = `c-run-${tag}`;
  await ok(c, R.createSession, { run_id: first, agent_id: "coder", project_id: projectId }, key);
  await ok(c, R.createSession, { run_id: second, agent_id: "reviewer", project_id: projectId }, key);
  await ok(c, R.createSession, { run_id: other, agent_id: "biller", project_id: otherProjectId }, key);

  // Both runs of the project are open while the prompt changes: each counts them (a candidate, then its activation,
  // one change of one version; and an activated version). The other project's prompt change counts for neither.
  const candidate = obj(await ok(c, R.setPrompt, { project_id: projectId, agent_id: "coder", content: "You write careful code.", activate: false }, key), "version");
  await ok(c, R.activate, { project_id: projectId, agent_id: "coder", version_id: String(candidate["version_id"]) }, key);
  await ok(c, R.setPrompt, { project_id: projectId, agent_id: "coder", content: "You write careful, tested code.", activate: true }, key);
  await ok(c, R.setPrompt, { project_id: otherProjectId, agent_id: "biller", content: "You bill.", activate: true }, key);

  await ingestAndWait(c, key, first, [{ text: "Checkout failed when the cart was empty." }, { text: "Added a guard for empty carts." }], { agent_id: "coder" });
  await ok(c, R.reflect, { run_id: first, agent_id: "coder", lessons: [{ content: "Guard empty carts before computing the checkout total." }, { content: "Run the checkout tests before each deploy of the cart service." }] }, key);
  await ok(c, R.outcome, { run_id: first, outcome: "success", signal: 1, rationale: "tests pass" }, key);
  await ok(c, R.outcome, { run_id: first, outcome: "partial", signal: -0.5, rationale: "one flaky test" }, key);
  await ok(c, R.closeSession, { session_id: first }, key);

  await ingestAndWait(c, key, second, [{ text: "Reviewed the empty-cart guard." }], { agent_id: "coder" });
  await ok(c, R.outcome, { run_id: second, outcome: "failure", signal: -1, rationale: "missed a case" }, key);
  await ingestAndWait(c, key, other, [{ text: "Invoices go out monthly." }], { agent_id: "biller" });
  return { key, projectId, otherProjectId, first, second, other };
}

describe.each(TRANSPORTS)("project run history over %s", (transport) => {
  it("computes each run's figures from what happened in it, kept current, newest activity first in pages", async () => {
    const c = on(transport);
    const s = await script(c, transport);

    expect(figures(await record(c, s.key, s.projectId, s.first))).toEqual({
      run_id: s.first,
      project_id: s.projectId,
      agent_ids: ["coder"],
      ingest_count: 2,
      lessons_extracted: 2,
      outcome_count: 2,
      avg_outcome_score: 0.25,
      prompt_changes: 2,
      status: "completed",
      ended: true,
    });
    const open = await record(c, s.key, s.projectId, s.second);
    expect(figures(open)).toEqual({
      run_id: s.second,
      project_id: s.projectId,
      agent_ids: ["reviewer", "coder"],
      ingest_count: 1,
      lessons_extracted: 0,
      outcome_count: 1,
      avg_outcome_score: -1,
      prompt_changes: 2,
      status: "active",
      ended: false,
    });
    expect(Date.parse(String(open["started_at"]))).not.toBeNaN();

    // Kept current: what the open run does next shows at the next read.
    await ok(c, R.reflect, { run_id: s.second, lessons: [{ content: "Review every branch of a new guard, not only the happy path." }] }, s.key);
    await ok(c, R.outcome, { run_id: s.second, outcome: "success", signal: 0.5 }, s.key);
    await ok(c, R.closeSession, { session_id: s.second }, s.key);
    const closed = await record(c, s.key, s.projectId, s.second);
    expect(figures(closed)).toMatchObject({ lessons_extracted: 1, outcome_count: 2, avg_outcome_score: -0.25, status: "failed", ended: true, ingest_count: 1 });

    // The second run's close is its newest activity, at or after the first's: it is listed first.
    const all = await ok(c, R.list, { project_id: s.projectId }, s.key);
    expect(runsOf(all).map((r) => r["run_id"])).toEqual([s.second, s.first]);
    expect(runsOf(all).map(figures)).toEqual([figures(closed), figures(await record(c, s.key, s.projectId, s.first))]);
    expect(all["next_page_token"] ?? "").toBe("");
    const page1 = await ok(c, R.list, { project_id: s.projectId, limit: 1 }, s.key);
    expect(runsOf(page1).map((r) => r["run_id"])).toEqual([s.second]);
    const token = String(page1["next_page_token"]);
    expect(token).not.toBe("");
    const page2 = await ok(c, R.list, { project_id: s.projectId, limit: 1, page_token: token }, s.key);
    expect(runsOf(page2).map((r) => r["run_id"])).toEqual([s.first]);
    expect(page2["next_page_token"] ?? "").toBe("");

    const others = await ok(c, R.list, { project_id: s.otherProjectId }, s.key);
    expect(runsOf(others).map(figures)).toEqual([
      { run_id: s.other, project_id: s.otherProjectId, agent_ids: ["biller"], ingest_count: 1, lessons_extracted: 0, outcome_count: 0, avg_outcome_score: 0, prompt_changes: 1, status: "active", ended: false },
    ]);

    // Refusals: fields named, runs of another project and unknown projects or runs are 404.
    expectInvalid(await c.call(R.list, { project_id: "" }, s.key), "project_id");
    expectInvalid(await c.call(R.list, { project_id: s.projectId, page_token: "!!" }, s.key), "page_token");
    expectInvalid(await c.call(R.list, { project_id: s.otherProjectId, page_token: token }, s.key), "page_token");
    expectInvalid(await c.call(R.get, { project_id: "", run_id: s.first }, s.key), "project_id");
    expectInvalid(await c.call(R.get, { project_id: s.projectId, run_id: "" }, s.key), "run_id");
    expectCode(await c.call(R.get, { project_id: s.projectId, run_id: s.other }, s.key), "not_found", 404);
    expectCode(await c.call(R.get, { project_id: s.projectId, run_id: "no-such-run" }, s.key), "not_found", 404);
    expectCode(await c.call(R.get, { project_id: "prj_999999", run_id: s.first }, s.key), "not_found", 404);
    expectCode(await c.call(R.list, { project_id: "prj_999999" }, s.key), "not_found", 404);
  });

  it("keeps owners apart: another user sees neither the project nor its runs, even naming the same run ids", async () => {
    const c = on(transport);
    const s = await script(c, `${transport}-iso`);
    const bob = await fresh(`history-bob-${transport}`);
    expectCode(await c.call(R.list, { project_id: s.projectId }, bob), "not_found", 404);
    expectCode(await c.call(R.get, { project_id: s.projectId, run_id: s.first }, bob), "not_found", 404);
    // Bob's own project with a session on a run of the same id: his history holds only what he did there.
    const bobs = await project(c, bob, "checkout");
    await ok(c, R.createSession, { run_id: s.first, agent_id: "coder", project_id: bobs }, bob);
    expect(figures(await record(c, bob, bobs, s.first))).toEqual({
      run_id: s.first,
      project_id: bobs,
      agent_ids: ["coder"],
      ingest_count: 0,
      lessons_extracted: 0,
      outcome_count: 0,
      avg_outcome_score: 0,
      prompt_changes: 0,
      status: "active",
      ended: false,
    });
    expect(runsOf(await ok(c, R.list, { project_id: bobs }, bob)).map((r) => r["run_id"])).toEqual([s.first]);
    // Alice's figures are untouched by Bob's run.
    expect(figures(await record(c, s.key, s.projectId, s.first))).toMatchObject({ ingest_count: 2, lessons_extracted: 2, outcome_count: 2 });
  });
});

describe("run history under a failed write", () => {
  it("a prompt change that fails to commit is not counted", async () => {
    const c = on("rest");
    const key = await fresh("history-faults");
    const projectId = await project(c, key, "faults");
    await ok(c, R.createAgent, { project_id: projectId, agent_id: "coder" }, key);
    await ok(c, R.createSession, { run_id: "fault-run", agent_id: "coder", project_id: projectId }, key);
    const before = await record(c, key, projectId, "fault-run");
    const faults = server.engram.testHooks.writeFaults;
    faults.failAt(1);
    const failed = await c.call(R.setPrompt, { project_id: projectId, agent_id: "coder", content: "Never stored.", activate: true }, key);
    const reached = faults.writesSeen >= 1;
    faults.failAt(0);
    expect(reached).toBe(true);
    expect(failed.code).not.toBe("ok");
    expect(await record(c, key, projectId, "fault-run")).toEqual(before);
    await ok(c, R.setPrompt, { project_id: projectId, agent_id: "coder", content: "Stored.", activate: true }, key);
    expect(figures(await record(c, key, projectId, "fault-run"))).toMatchObject({ prompt_changes: 1 });
  });
});
