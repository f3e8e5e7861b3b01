// An existing client of this interface, the public @mubit-ai/sdk, works against Engram over HTTP unchanged.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@mubit-ai/sdk";
import { startTestServer, type TestServer } from "./harness/server.js";

let server: TestServer;
let client: InstanceType<typeof Client>;

beforeAll(async () => {
  server = await startTestServer();
  client = new Client({ transport: "http", endpoint: server.baseUrl, api_key: server.adminKey, run_id: "sdk-run" });
});
afterAll(async () => server.close());

it("remember (ingest + job polling) and recall (query) round-trip", async () => {
  const job = (await client.remember({ session_id: "sdk-run", content: "The staging database listens on port 5433." })) as { status: string; done: boolean };
  expect(job).toMatchObject({ status: "completed", done: true });
  const lesson = (await client.remember({
    session_id: "sdk-run",
    agent_id: "sdk-quickstart",
    content: "Cache invalidation failures usually show up after stale token reuse.",
    intent: "lesson",
    lesson_type: "failure",
    lesson_scope: "session",
  })) as { status: string };
  expect(lesson.status).toBe("completed");
  const answer = (await client.recall({ session_id: "sdk-run", query: "Which port does the staging database listen on?" })) as {
    final_answer: string;
    citations: number[];
    evidence: { content: string }[];
  };
  expect(answer.final_answer).toContain("5433");
  expect(answer.citations).toEqual([0]);
  const lessons = (await client.recall({ session_id: "sdk-run", query: "stale token reuse", entry_types: ["lesson"] })) as { evidence: { content: string; origin_entry_type: string }[] };
  expect(lessons.evidence.map((e) => e.origin_entry_type)).toEqual(["lesson"]);
});

it("context, archive, dereference, checkpoint, memory health and health", async () => {
  const context = (await client.getContext({ session_id: "sdk-run", query: "staging database" })) as { context_block: string };
  expect(context.context_block).toContain("5433");
  const archived = (await client.archive({ session_id: "sdk-run", content: "exact bytes ✓", artifact_kind: "log" })) as { reference_id: string };
  const fetched = (await client.dereference({ session_id: "sdk-run", reference_id: archived.reference_id })) as { content: string; found: boolean };
  expect(fetched).toMatchObject({ found: true, content: "exact bytes ✓" });
  const checkpoint = (await client.checkpoint({ session_id: "sdk-run", context_snapshot: "window", label: "pre-compaction" })) as { checkpoint_id: string };
  expect(checkpoint.checkpoint_id).toMatch(/^chk_/);
  const health = (await client.memoryHealth({ session_id: "sdk-run" })) as { entry_counts: Record<string, number> };
  expect(health.entry_counts).toMatchObject({ fact: 1, lesson: 1, archive_block: 1, checkpoint: 1 });
  expect(await client.auth.health()).toBe("OK");
});

it("recall sends agent_id, env_tags and include_linked_runs: each has its documented effect", async () => {
  // The SDK sends env_tags although its RecallOptions type does not declare them.
  const options = { session_id: "sdk-run", query: "Which port does the staging database listen on?", agent_id: "sdk-agent", env_tags: ["db:postgres:16"] };
  const answer = (await client.recall(options)) as { final_answer: string; routing_summary: string };
  expect(answer.final_answer).toContain("5433");
  expect(answer.routing_summary).toContain('asked by agent "sdk-agent"');
  // include_linked_runs: the runs linked under sdk-run are searched too (linking is not in the SDK: plain HTTP).
  const unlinked = (await client.recall({ session_id: "sdk-run", query: "Which port does the staging cache use?", include_linked_runs: true })) as { consulted_runs: string[] };
  expect(unlinked.consulted_runs).toEqual(["sdk-run"]);
  await client.remember({ session_id: "sdk-child-run", content: "The staging cache listens on port 6380." });
  const link = await fetch(`${server.baseUrl}/v2/control/runs/link`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify({ run_id: "sdk-run", linked_run_id: "sdk-child-run" }),
  });
  expect(link.status).toBe(200);
  const linked = (await client.recall({ session_id: "sdk-run", query: "Which port does the staging cache use?", include_linked_runs: true })) as {
    consulted_runs: string[];
    evidence: { content: string }[];
  };
  expect(linked.consulted_runs).toEqual(["sdk-run", "sdk-child-run"]);
  expect(linked.evidence.map((e) => e.content)).toContain("The staging cache listens on port 6380.");
});

describe("the learning helpers of @mubit-ai/sdk", () => {
  const run = "sdk-learning-run";

  it("reflect, lessons, recordStepOutcome, recordOutcome, surfaceStrategies, diagnose and forget(lesson_id)", async () => {
    const scoped = learningClient(run);
    await scoped.remember({ session_id: run, content: "Error: the billing API answered 429 Too Many Requests during invoice sync." });
    const step = (await scoped.recordStepOutcome({
      run_id: run,
      step_id: "sync-1",
      step_name: "invoice sync",
      outcome: "failure",
      signal: -1,
      rationale: "billing API rate limit (429)",
      directive_hint: "Back off exponentially and honour the Retry-After header when the billing API answers 429",
    })) as { step_outcome_id: string; accepted: boolean };
    expect(step).toMatchObject({ accepted: true });
    expect(step.step_outcome_id).toMatch(/^so_/);

    const reflected = (await scoped.reflect({ session_id: run })) as { lessons: { lesson_id: string; content: string }[]; decisions: { decision: string }[] };
    const hint = reflected.lessons.find((l) => l.content.includes("Retry-After")) as { lesson_id: string };
    expect(hint.lesson_id).toMatch(/^ent_/);
    expect(reflected.decisions.map((d) => d.decision)).toContain("accepted");

    const listed = (await scoped.lessons({ run_id: run })) as { lessons: { id: string; auto_extracted: boolean }[] };
    expect(listed.lessons.map((l) => l.id)).toContain(hint.lesson_id);

    const outcome = (await scoped.recordOutcome({ session_id: run, reference_id: hint.lesson_id, outcome: "success", signal: 1 })) as {
      success: boolean;
      reinforcement_count: number;
    };
    expect(outcome).toMatchObject({ success: true, reinforcement_count: 1 });

    const strategies = (await scoped.surfaceStrategies({ session_id: run })) as { strategies: unknown[] };
    expect(Array.isArray(strategies.strategies)).toBe(true);
    const diagnosis = (await scoped.diagnose({ session_id: run, error_text: "429 Too Many Requests from the billing API" })) as {
      failure_lessons: { id: string }[];
      summary: string;
    };
    expect(diagnosis.failure_lessons[0]?.id).toBe(hint.lesson_id);
    expect(diagnosis.summary).not.toBe("");

    expect(await scoped.forget({ lesson_id: hint.lesson_id })).toMatchObject({ success: true });
    const after = (await scoped.lessons({ run_id: run })) as { lessons: { id: string }[] };
    expect(after.lessons.map((l) => l.id)).not.toContain(hint.lesson_id);
  });

  it("helpers.outcome records a run outcome through the module-level context", async () => {
    // What the SDK's init() sets up (init itself is not exported from the package): a context holding a client and
    // the root session the helpers fall back to.
    const { MubitContext, SessionContext, setContext } = await import("@mubit-ai/sdk/context");
    const context = new MubitContext({ client: new Client({ transport: "http", endpoint: server.baseUrl, api_key: server.adminKey }), autoInstrument: false });
    context.rootSession = new SessionContext({ sessionId: run, agentId: "sdk-helper", runId: run });
    setContext(context);
    const helpers = await import("@mubit-ai/sdk/helpers");
    const recorded = (await helpers.outcome(1, { sessionId: run, outcome: "success" })) as { success: boolean; outcome_id: string };
    expect(recorded.success).toBe(true);
    expect(recorded.outcome_id).toMatch(/^out_/);
  });

  it("learn.wrap injects lessons, learn.feedback credits the recalled entries, and a run's end reflects", async () => {
    const learn = await import("@mubit-ai/sdk/learn");
    const learnRun = "sdk-learn-run";
    const scoped = learningClient(learnRun);
    // A lesson of the run, supplied as a caller lesson so its id is known.
    const supplied = (await fetch(`${server.baseUrl}/v2/control/reflect`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${server.adminKey}` },
      body: JSON.stringify({ run_id: learnRun, confidence: 0.6, lessons: [{ content: "Summaries of invoices must quote the invoice number", lesson_type: "rule" }] }),
    }).then((r) => r.json())) as { lessons: { lesson_id: string }[] };
    const ruleId = supplied.lessons[0]?.lesson_id as string;

    learn.init({ apiKey: server.adminKey, endpoint: server.baseUrl, agentId: "sdk-learn", sessionId: learnRun, autoReflect: true });
    const seen: { role: string; content: string }[][] = [];
    const fakeOpenai = {
      chat: {
        completions: {
          create: async (opts: { messages: { role: string; content: string }[] }) => {
            seen.push(opts.messages);
            return { choices: [{ message: { content: "ok" } }] };
          },
        },
      },
    };
    const wrapped = learn.wrap(fakeOpenai) as typeof fakeOpenai;
    await wrapped.chat.completions.create({ messages: [{ role: "user", content: "Write the summary of invoices for March" }] });
    expect(seen[0]?.[0]?.content).toContain("invoice number");

    const before = await lessonConfidence(ruleId);
    await learn.feedback({ good: true, sessionId: learnRun });
    expect(await lessonConfidence(ruleId)).toBeGreaterThan(before);

    // The run's end reflects: a later trace's lesson appears after end().
    await scoped.remember({ session_id: learnRun, content: "Never send invoices before the customer confirmed the billing address." });
    const manager = learn.startRun({ sessionId: learnRun, autoReflect: true });
    await manager.end();
    const listed = (await scoped.lessons({ run_id: learnRun })) as { lessons: { content: string; auto_extracted: boolean }[] };
    expect(listed.lessons.some((l) => l.auto_extracted && l.content.toLowerCase().includes("billing address"))).toBe(true);
    learn.uninstrument();
  });
});

/** The SDK's Client with the generated methods the learning tests call, which its type declarations omit. */
type LearningClient = InstanceType<typeof Client> & {
  lessons(payload: object): Promise<unknown>;
  recordStepOutcome(payload: object): Promise<unknown>;
};

function learningClient(runId: string): LearningClient {
  return new Client({ transport: "http", endpoint: server.baseUrl, api_key: server.adminKey, run_id: runId }) as LearningClient;
}

async function lessonConfidence(lessonId: string): Promise<number> {
  const body = (await fetch(`${server.baseUrl}/v2/control/lessons`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${server.adminKey}` },
    body: JSON.stringify({ limit: 500 }),
  }).then((r) => r.json())) as { lessons: { id: string; confidence: number }[] };
  return body.lessons.find((l) => l.id === lessonId)?.confidence ?? Number.NaN;
}

describe("the resource helpers of @mubit-ai/sdk", () => {
  it("createProject, createAgentDefinition, setPrompt, getPrompt, setSkill and getSkills", async () => {
    const client = learningClient("sdk-resources") as LearningClient & {
      createProject(payload: object): Promise<unknown>;
      createAgentDefinition(payload: object): Promise<unknown>;
    };
    const project = (await client.createProject({ name: "sdk-project", description: "made by the SDK" })) as { project: { project_id: string } };
    expect(project.project.project_id).toMatch(/^prj_/);
    await client.createAgentDefinition({ project_id: project.project.project_id, agent_id: "sdk-writer", role: "writer", system_prompt_content: "You write release notes." });
    const { MubitContext, SessionContext, setContext } = await import("@mubit-ai/sdk/context");
    const context = new MubitContext({ client, autoInstrument: false });
    context.rootSession = new SessionContext({ sessionId: "sdk-resources", agentId: "sdk-writer", runId: "sdk-resources" });
    setContext(context);
    const helpers = await import("@mubit-ai/sdk/helpers");
    expect(await helpers.getPrompt()).toBe("You write release notes.");
    await helpers.setPrompt("You write short release notes.");
    expect(await helpers.getPrompt()).toBe("You write short release notes.");
    await helpers.setPrompt("A candidate that is not active yet.", { activate: false });
    expect(await helpers.getPrompt()).toBe("You write short release notes.");

    const projectId = project.project.project_id;
    const schema = '{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}';
    await helpers.setSkill("lookup_invoice", "Find an invoice by id", { projectId, parametersSchema: schema });
    const tools = (await helpers.getSkills({ projectId })) as { type: string; function: { name: string; description: string; parameters: unknown } }[];
    expect(tools).toEqual([{ type: "function", function: { name: "lookup_invoice", description: "Find an invoice by id", parameters: JSON.parse(schema) } }]);
  });
});
