// A step's directive hint is hindsight for future runs: reflected into a lesson that carries the situation it was
// learned in, it reaches a later run's context for a similar task once an outcome confirmed it — and not the context
// of an unrelated task, nor another user's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { TRANSPORTS, callerFor, type Caller, type JsonObject } from "./harness/callers.js";
import { ok } from "./harness/memory.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => server.close());

const HINT = "Raise the readiness probe initial delay to 60s before deploying to the eu-west cluster";

async function contextIds(c: Caller, key: string, runId: string, query: string): Promise<string[]> {
  const context = await ok(c, "engram.v2.MemoryService/GetContext", { run_id: runId, query, max_token_budget: 1500 }, key);
  return (context["sources"] as JsonObject[]).map((s) => String(s["id"]));
}

describe.each(TRANSPORTS)("hindsight over %s", (transport) => {
  it("reaches a later run's context for a similar task once confirmed, and nowhere else", async () => {
    const c = callerFor(transport, server.baseUrl, server.port);
    const alice = await createUser(server.baseUrl, server.adminKey, `alice-${transport}`);
    const bob = await createUser(server.baseUrl, server.adminKey, `bob-${transport}`);
    await ok(c, "engram.v2.MemoryService/BatchInsert", {
      run_id: "deploy-1",
      items: [
        { text: "task: deploy the payments service to the eu-west cluster", entry_type: "trace" },
        { text: "observation: rollout stalled: readiness probe failed, health check timeout after 30s", entry_type: "trace" },
      ],
    }, alice);
    await ok(c, "engram.v2.LearningService/RecordStepOutcome", {
      run_id: "deploy-1",
      step_id: "rollout",
      step_name: "rollout",
      outcome: "failure",
      signal: -1,
      rationale: "readiness probe failed before the service warmed up",
      directive_hint: HINT,
    }, alice);
    const reflected = await ok(c, "engram.v2.LearningService/Reflect", { run_id: "deploy-1" }, alice);
    const hint = (reflected["lessons"] as JsonObject[]).find((l) => l["content"] === HINT);
    expect(hint).toBeDefined();
    const hintId = String(hint?.["lesson_id"]);
    const similarTask = "deploy the checkout service to the eu-west cluster";

    // Learned in one run only, unconfirmed: it stays there.
    expect(await contextIds(c, alice, "deploy-2", similarTask)).not.toContain(hintId);

    await ok(c, "engram.v2.LearningService/RecordOutcome", { run_id: "deploy-1", reference_id: hintId, outcome: "success" }, alice);
    expect(await contextIds(c, alice, "deploy-2", similarTask)).toContain(hintId);
    expect(await contextIds(c, alice, "mail-1", "rotate the TLS certificates of the mail relay")).not.toContain(hintId);
    expect(await contextIds(c, bob, "deploy-2", similarTask)).not.toContain(hintId);
  });
});
