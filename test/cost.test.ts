// Cost accounting: every answer says what it spent on the LLM and the embeddings endpoint (the `engram-cost` header,
// gRPC header metadata, and the `cost` field where the proto has one), ingest jobs carry their own cost, and /metrics
// keeps per-key totals. All figures are checked against the fake provider's own counters.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { completion, embeddingsReply, startFakeLlm, type FakeCounters, type FakeLlm } from "./harness/fake-llm.js";
import { TRANSPORTS, callerFor, connectCaller, grpcCaller, restCaller, type CallResult, type Caller, type JsonObject } from "./harness/callers.js";
import { createUser } from "./harness/users.js";
import { freePort } from "./harness/child-server.js";
import { parseApiKey } from "../src/auth/api-key.js";
import { countTokens } from "../src/retrieval/context/token-counter.js";

const QUERY = "engram.v2.MemoryService/Query";
const REMEMBER = "engram.v2.MemoryService/Remember";
const INGEST = "engram.v2.MemoryService/Ingest";
const GET_JOB = "engram.v2.MemoryService/GetIngestJob";
const ANSWER = JSON.stringify({ answer: "Team Falcon owns it.", citations: [0], abstain: false });
/** The chat fake answers this late, so the reported milliseconds have a floor to check. */
const LLM_DELAY_MS = 30;

let fake: FakeLlm;
let server: TestServer;
let alice: string;
let bob: string;
const callers = new Map<string, Caller>();

/** The `engram-cost` header as numbers; throws when it is missing. */
function costHeader(result: CallResult): Record<string, number> {
  const value = result.headers?.["engram-cost"];
  if (value === undefined) throw new Error(`no engram-cost header (code ${result.code}: ${result.message})`);
  return Object.fromEntries(value.split(",").map((member) => {
    const [name, number] = member.trim().split("=") as [string, string];
    return [name, Number(number)];
  }));
}

function delta(before: FakeCounters, after: FakeCounters): FakeCounters {
  return {
    chat: { calls: after.chat.calls - before.chat.calls, promptTokens: after.chat.promptTokens - before.chat.promptTokens, completionTokens: after.chat.completionTokens - before.chat.completionTokens },
    embeddings: { calls: after.embeddings.calls - before.embeddings.calls, promptTokens: after.embeddings.promptTokens - before.embeddings.promptTokens },
  };
}

/** What the header must say for what the fake served (milliseconds checked separately). */
function expectHeaderMatches(header: Record<string, number>, served: FakeCounters): void {
  expect({
    llm_calls: header["llm_calls"],
    llm_input_tokens: header["llm_input_tokens"],
    llm_output_tokens: header["llm_output_tokens"],
    embeddings_calls: header["embeddings_calls"],
    embeddings_input_tokens: header["embeddings_input_tokens"],
  }).toEqual({
    llm_calls: served.chat.calls,
    llm_input_tokens: served.chat.promptTokens,
    llm_output_tokens: served.chat.completionTokens,
    embeddings_calls: served.embeddings.calls,
    embeddings_input_tokens: served.embeddings.promptTokens,
  });
}

/** The proto `Cost` field as the header's names (gRPC's proto-loader and JSON both use proto field names). */
function costField(body: JsonObject, field = "cost"): Record<string, number> {
  const cost = body[field] as { llm: Record<string, number | string>; embeddings: Record<string, number | string> };
  return {
    llm_calls: Number(cost.llm["calls"]),
    llm_input_tokens: Number(cost.llm["input_tokens"]),
    llm_output_tokens: Number(cost.llm["output_tokens"]),
    llm_ms: Number(cost.llm["ms"]),
    embeddings_calls: Number(cost.embeddings["calls"]),
    embeddings_input_tokens: Number(cost.embeddings["input_tokens"]),
    embeddings_ms: Number(cost.embeddings["ms"]),
  };
}

/** Per-key provider totals from /metrics: `${provider}/${what}` → value. */
async function keyTotals(key: string): Promise<Record<string, number>> {
  const keyId = (parseApiKey(key) as { keyId: string }).keyId;
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  const totals: Record<string, number> = {};
  for (const line of text.split("\n")) {
    const match = /^service_provider_(calls|tokens|seconds)_total\{([^}]*)\} (\S+)$/u.exec(line);
    if (match === null || !match[2]!.includes(`key_id="${keyId}"`)) continue;
    const provider = /provider="([^"]+)"/u.exec(match[2]!)?.[1];
    const direction = /direction="([^"]+)"/u.exec(match[2]!)?.[1];
    totals[`${provider}/${match[1]}${direction === undefined ? "" : `/${direction}`}`] = Number(match[3]);
  }
  return totals;
}

const counted = (totals: Record<string, number>, name: string): number => totals[name] ?? 0;

beforeAll(async () => {
  fake = await startFakeLlm();
  fake.reply = () => ({ ...completion(ANSWER), delayMs: LLM_DELAY_MS });
  server = await startTestServer({
    SERVICE_LLM_URL: fake.url,
    SERVICE_LLM_MODEL: "fake-model",
    SERVICE_LLM_TIMEOUT_MS: "5000",
    SERVICE_EMBEDDINGS_URL: fake.url,
    SERVICE_EMBEDDINGS_MODEL: "toy-8",
    SERVICE_EMBEDDINGS_RETRY_BASE_MS: "1",
    SERVICE_CONSOLE_PORT: String(await freePort()),
  });
  alice = await createUser(server.baseUrl, server.adminKey, "alice-cost");
  bob = await createUser(server.baseUrl, server.adminKey, "bob-cost");
  for (const transport of TRANSPORTS) callers.set(transport, callerFor(transport, server.baseUrl, server.port));
  for (const key of [alice, bob]) {
    const stored = await restCaller(server.baseUrl).call(REMEMBER, { session_id: "billing", content: "The billing service is written in Go and owned by team Falcon." }, key);
    expect(stored.code).toBe("ok");
  }
});

afterAll(async () => {
  for (const caller of callers.values()) caller.close();
  await server.close();
  await fake.close();
});

describe.each(TRANSPORTS)("over %s", (transport) => {
  it("a query that calls the LLM and the embeddings endpoint reports exactly what the provider served", async () => {
    const caller = callers.get(transport)!;
    const before = fake.snapshot();
    const result = await caller.call(QUERY, { run_id: "billing", query: "Who owns the billing service?" }, alice);
    const served = delta(before, fake.snapshot());
    expect(result.code).toBe("ok");
    expect(result.body["final_answer"]).toBe("Team Falcon owns it.");
    // The case is only worth something if both providers were called.
    expect(served.chat.calls).toBe(1);
    expect(served.embeddings.calls).toBeGreaterThanOrEqual(1);
    const header = costHeader(result);
    expectHeaderMatches(header, served);
    expect(header["llm_ms"]).toBeGreaterThanOrEqual(LLM_DELAY_MS - 1);
    // The response field says the same as the header.
    expect(costField(result.body)).toEqual(header);
  });
});

it("per-key totals in /metrics add up each key's calls, and another key's calls are not counted in mine", async () => {
  const aliceBefore = await keyTotals(alice);
  const bobBefore = await keyTotals(bob);
  const before = fake.snapshot();
  for (const caller of [restCaller(server.baseUrl), connectCaller(server.baseUrl)]) {
    expect((await caller.call(QUERY, { run_id: "billing", query: "Who owns the billing service?" }, alice)).code).toBe("ok");
  }
  const served = delta(before, fake.snapshot());
  const aliceAfter = await keyTotals(alice);
  expect(counted(aliceAfter, "llm/calls") - counted(aliceBefore, "llm/calls")).toBe(served.chat.calls);
  expect(counted(aliceAfter, "llm/tokens/input") - counted(aliceBefore, "llm/tokens/input")).toBe(served.chat.promptTokens);
  expect(counted(aliceAfter, "llm/tokens/output") - counted(aliceBefore, "llm/tokens/output")).toBe(served.chat.completionTokens);
  expect(counted(aliceAfter, "embeddings/calls") - counted(aliceBefore, "embeddings/calls")).toBe(served.embeddings.calls);
  expect(counted(aliceAfter, "embeddings/tokens/input") - counted(aliceBefore, "embeddings/tokens/input")).toBe(served.embeddings.promptTokens);
  expect(counted(aliceAfter, "llm/seconds") - counted(aliceBefore, "llm/seconds")).toBeGreaterThanOrEqual((2 * (LLM_DELAY_MS - 1)) / 1000);
  // Bob's series did not move while Alice worked.
  expect(await keyTotals(bob)).toEqual(bobBefore);
  // Bob's own query moves his totals only.
  const bobQuery = await restCaller(server.baseUrl).call(QUERY, { run_id: "billing", query: "Who owns the billing service?" }, bob);
  expect(costHeader(bobQuery)["llm_calls"]).toBe(1);
  expect(counted(await keyTotals(bob), "llm/calls") - counted(bobBefore, "llm/calls")).toBe(1);
  expect(await keyTotals(alice)).toEqual(aliceAfter);
  // No secret in a label: only key ids.
  const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
  expect(metrics).not.toContain(alice);
});

it("an ingest job carries what embedding its items cost, charged to the key that submitted it", async () => {
  const aliceBefore = await keyTotals(alice);
  const before = fake.snapshot();
  const rest = restCaller(server.baseUrl);
  const items = ["Deploys run every Tuesday at noon.", "The staging database is Postgres 16.", "On-call rotates weekly."].map((text) => ({ text }));
  const accepted = await rest.call(INGEST, { run_id: "ingest-cost", items }, alice);
  expect(accepted.code).toBe("ok");
  // The job embeds its items in the background: the accepting request itself spent nothing.
  expect(costHeader(accepted)["embeddings_calls"]).toBe(0);
  await server.engram.testHooks.backgroundIdle();
  const served = delta(before, fake.snapshot());
  expect(served.embeddings.calls).toBeGreaterThanOrEqual(1);
  for (const transport of TRANSPORTS) {
    const job = await callers.get(transport)!.call(GET_JOB, { job_id: String(accepted.body["job_id"]) }, alice);
    expect(job.body["status"]).toBe("completed");
    const jobCost = costField(job.body, "job_cost");
    expect({ calls: jobCost["embeddings_calls"], tokens: jobCost["embeddings_input_tokens"], llm: jobCost["llm_calls"] }).toEqual({
      calls: served.embeddings.calls,
      tokens: served.embeddings.promptTokens,
      llm: 0,
    });
    // Reading the job costs nothing itself.
    expect(costHeader(job)["embeddings_calls"]).toBe(0);
  }
  const aliceAfter = await keyTotals(alice);
  expect(counted(aliceAfter, "embeddings/calls") - counted(aliceBefore, "embeddings/calls")).toBe(served.embeddings.calls);
  expect(counted(aliceAfter, "embeddings/tokens/input") - counted(aliceBefore, "embeddings/tokens/input")).toBe(served.embeddings.promptTokens);
});

it("a provider that reports no usage is charged its texts counted with o200k_base", async () => {
  const answer = JSON.stringify({ answer: "Falcon.", citations: [0], abstain: false });
  fake.reply = () => ({ status: 200, body: { choices: [{ message: { role: "assistant", content: answer } }] } });
  fake.replyEmbeddings = (inputs) => ({ ...embeddingsReply(inputs), body: { data: (embeddingsReply(inputs).body as { data: unknown }).data } });
  try {
    const prompts = fake.prompts.length;
    const result = await restCaller(server.baseUrl).call(QUERY, { run_id: "billing", query: "Who owns the billing service?" }, alice);
    expect(result.code).toBe("ok");
    const sent = JSON.parse(fake.prompts[prompts]!) as { messages: { content: string }[] };
    const header = costHeader(result);
    expect(header["llm_input_tokens"]).toBe(sent.messages.reduce((sum, m) => sum + countTokens(m.content), 0));
    expect(header["llm_output_tokens"]).toBe(countTokens(answer));
    expect(header["embeddings_input_tokens"]).toBe(countTokens("Who owns the billing service?"));
  } finally {
    fake.reply = () => ({ ...completion(ANSWER), delayMs: LLM_DELAY_MS });
    fake.replyEmbeddings = embeddingsReply;
  }
});

it("a retried embeddings call counts each attempt", async () => {
  let failures = 1;
  fake.replyEmbeddings = (inputs) => (failures-- > 0 ? { status: 503, body: { error: { message: "overloaded" } } } : embeddingsReply(inputs));
  try {
    const before = fake.snapshot();
    const result = await restCaller(server.baseUrl).call(REMEMBER, { session_id: "billing", content: "Invoices are sent on the first of the month." }, alice);
    const served = delta(before, fake.snapshot());
    expect(result.code).toBe("ok");
    expect(served.embeddings.calls).toBe(2);
    expectHeaderMatches(costHeader(result), served);
  } finally {
    fake.replyEmbeddings = embeddingsReply;
  }
});

/** The console's health answer for a signed-in key. */
async function consoleHealth(username: string, key: string): Promise<{ provider_costs: Record<string, string | number>[] }> {
  const consoleUrl = `http://127.0.0.1:${server.engram.consolePort}`;
  const signIn = await fetch(`${consoleUrl}/console/api/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ username, api_key: key }) });
  expect(signIn.status).toBe(200);
  const cookie = (signIn.headers.getSetCookie()[0] ?? "").split(";", 1)[0] ?? "";
  const health = await fetch(`${consoleUrl}/console/api/health`, { headers: { cookie } });
  expect(health.status).toBe(200);
  return (await health.json()) as { provider_costs: Record<string, string | number>[] };
}

it("the console's health page lists each key's totals: all keys for an admin, a user's own key alone", async () => {
  const aliceId = (parseApiKey(alice) as { keyId: string }).keyId;
  const bobId = (parseApiKey(bob) as { keyId: string }).keyId;
  const totals = await keyTotals(alice);
  const own = await consoleHealth("alice-cost", alice);
  expect(new Set(own.provider_costs.map((row) => row["key_id"]))).toEqual(new Set([aliceId]));
  const llm = own.provider_costs.find((row) => row["provider"] === "llm");
  expect(llm).toMatchObject({ calls: totals["llm/calls"], input_tokens: totals["llm/tokens/input"], output_tokens: totals["llm/tokens/output"] });
  const embeddings = own.provider_costs.find((row) => row["provider"] === "embeddings");
  expect(embeddings).toMatchObject({ calls: totals["embeddings/calls"], input_tokens: totals["embeddings/tokens/input"], output_tokens: 0 });
  const admin = await consoleHealth("admin", server.adminKey);
  const keyIds = new Set(admin.provider_costs.map((row) => row["key_id"]));
  expect(keyIds.has(aliceId) && keyIds.has(bobId)).toBe(true);
});

describe("the embedded default (no provider configured)", () => {
  let offline: TestServer;

  beforeAll(async () => {
    offline = await startTestServer();
  });

  afterAll(async () => {
    await offline.close();
  });

  it.each(TRANSPORTS)("reports zero calls over %s", async (transport) => {
    const caller = transport === "grpc" ? grpcCaller(offline.port) : callerFor(transport, offline.baseUrl, offline.port);
    try {
      expect((await caller.call(REMEMBER, { session_id: "offline", content: "Builds use pnpm." }, offline.adminKey)).code).toBe("ok");
      const result = await caller.call(QUERY, { run_id: "offline", query: "Which package manager do builds use?" }, offline.adminKey);
      expect(result.code).toBe("ok");
      const zeros = { llm_calls: 0, llm_input_tokens: 0, llm_output_tokens: 0, llm_ms: 0, embeddings_calls: 0, embeddings_input_tokens: 0, embeddings_ms: 0 };
      expect(costHeader(result)).toEqual(zeros);
      expect(costField(result.body)).toEqual(zeros);
    } finally {
      caller.close();
    }
  });
});

it.each(TRANSPORTS)("a request that fails after calling a provider still says what it spent, over %s", async (transport) => {
  fake.replyEmbeddings = () => ({ status: 400, body: { error: { message: "input rejected" } } });
  try {
    const before = fake.snapshot();
    const result = await callers.get(transport)!.call(REMEMBER, { session_id: "billing", content: "This text is refused by the endpoint." }, alice);
    const served = delta(before, fake.snapshot());
    expect(result.code).not.toBe("ok");
    expect(served.embeddings.calls).toBe(1);
    expectHeaderMatches(costHeader(result), served);
  } finally {
    fake.replyEmbeddings = embeddingsReply;
  }
});

it("every response with a cost field carries the figures of its header, equal to what the provider served", async () => {
  const rest = restCaller(server.baseUrl);
  const R = (method: string): string => `engram.v2.ResourcesService/${method}`;
  const project = await rest.call(R("CreateProject"), { name: "cost-project" }, alice);
  const projectId = String((project.body["project"] as JsonObject)["project_id"]);
  expect((await rest.call(R("CreateAgentDefinition"), { project_id: projectId, agent_id: "planner", system_prompt_content: "You plan." }, alice)).code).toBe("ok");
  // Something for the optimizer to learn from: the agent's lessons and outcomes.
  const lessons = [{ content: "Never deploy on Fridays without a rollback plan.", lesson_type: "rule" }];
  expect((await rest.call("engram.v2.LearningService/Reflect", { run_id: "cost-opt", agent_id: "planner", lessons }, alice)).code).toBe("ok");
  expect((await rest.call("engram.v2.LearningService/RecordOutcome", { run_id: "cost-opt", outcome: "failure", signal: -1, agent_id: "planner" }, alice)).code).toBe("ok");
  const skill = await rest.call(R("CreateSkill"), { project_id: projectId, agent_id: "planner", name: "deploy", description: "Deploys", instructions: "Run the deploy script." }, alice);
  const skillId = String((skill.body["skill"] as JsonObject)["skill_id"]);
  const routes: [string, JsonObject][] = [
    ["engram.v2.MemoryService/Recall", { session_id: "billing", query: "Who owns the billing service?" }],
    ["engram.v2.MemoryService/GetContext", { run_id: "billing", query: "billing service owner" }],
    ["engram.v2.LearningService/Reflect", { run_id: "billing" }],
    ["engram.v2.LearningService/Diagnose", { run_id: "billing", error_text: "billing deploy failed: heap out of memory" }],
    [R("OptimizePrompt"), { project_id: projectId, agent_id: "planner" }],
    [R("OptimizeSkill"), { skill_id: skillId, project_id: projectId }],
  ];
  const calledSomething: string[] = [];
  for (const [rpc, request] of routes) {
    const before = fake.snapshot();
    const result = await rest.call(rpc, request, alice);
    const served = delta(before, fake.snapshot());
    expect(result.code, `${rpc}: ${result.message}`).toBe("ok");
    const header = costHeader(result);
    expectHeaderMatches(header, served);
    expect(costField(result.body), rpc).toEqual(header);
    if (served.chat.calls + served.embeddings.calls > 0) calledSomething.push(rpc);
  }
  // Most of these routes did call a provider here, so the equality above compared real figures.
  expect(calledSomething.length).toBeGreaterThanOrEqual(4);
});
