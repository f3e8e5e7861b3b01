// The LLM answer path through the service, against an OpenAI-compatible server started by the test itself.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { completion, startFakeLlm, type FakeLlm } from "./harness/fake-llm.js";

let llm: FakeLlm;
let server: TestServer;

beforeAll(async () => {
  llm = await startFakeLlm();
  server = await startTestServer({ SERVICE_LLM_URL: llm.url, SERVICE_LLM_MODEL: "fake-model", SERVICE_LLM_API_KEY: "sk-test-secret-123", SERVICE_LLM_TIMEOUT_MS: "2000" });
  await fetch(`${server.baseUrl}/v2/control/remember`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify({ session_id: "llm", content: "The billing service is written in Go and owned by team Falcon." }),
  });
});

afterAll(async () => {
  await server.close();
  await llm.close();
});

async function query(text: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${server.baseUrl}/v2/control/query`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify({ run_id: "llm", query: text }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

it("synthesises the answer with the LLM, validates its citations and counts the call", async () => {
  llm.reply = () => completion(JSON.stringify({ answer: "Team Falcon owns it.", citations: [0, 7], abstain: false }));
  const answer = await query("Who owns the billing service?");
  expect(answer["final_answer"]).toBe("Team Falcon owns it.");
  expect(answer["citations"]).toEqual([0]);
  expect(llm.prompts.at(-1)).toContain("The billing service is written in Go");
  expect(llm.prompts.at(-1)).toContain("fake-model");
  expect(llm.authorizations.at(-1)).toBe("Bearer sk-test-secret-123");
  const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
  expect(metrics).toMatch(/service_llm_calls_total\{[^}]*outcome="ok"[^}]*\} [1-9]/);
  expect(metrics).toMatch(/service_llm_tokens_total\{[^}]*kind="prompt"[^}]*\} [1-9]/);
  expect(metrics).toMatch(/service_llm_call_duration_seconds_count\{[^}]*\} [1-9]/);
});

it("falls back to the evidence-based answer when the LLM fails, without leaking its key", async () => {
  llm.reply = () => ({ status: 500, body: { error: { message: "upstream exploded sk-test-secret-123" } } });
  const answer = await query("Who owns the billing service?");
  expect(String(answer["final_answer"])).toContain("Falcon");
  expect((answer["citations"] as number[]).every((i) => i >= 0 && i < (answer["evidence"] as unknown[]).length)).toBe(true);
  const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
  expect(metrics).toMatch(/service_llm_calls_total\{[^}]*outcome="error"[^}]*\} [1-9]/);
  expect(metrics).not.toContain("sk-test-secret-123");
});

it("an LLM abstention yields empty citations and low confidence", async () => {
  llm.reply = () => completion(JSON.stringify({ answer: "", citations: [], abstain: true }));
  const answer = await query("What is the airspeed of an unladen swallow?");
  expect(answer["citations"]).toEqual([]);
  expect(answer["confidence"] as number).toBeLessThan(0.3);
});

it("the context snapshot lists the run's attention items", async () => {
  const response = await fetch(`${server.baseUrl}/v2/control/context/snapshot`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify({ run_id: "llm" }),
  });
  expect(response.status).toBe(200);
  const { snapshot } = (await response.json()) as { snapshot: { attention: { reason: string; entry: { content: string } }[]; working_memory: unknown; goals: unknown[] } };
  expect(snapshot.attention[0]?.entry.content).toContain("billing service");
  expect(snapshot.attention[0]?.reason).toBe("recent");
  expect(snapshot).toHaveProperty("working_memory");
  expect(snapshot.goals).toEqual([]);
  const missing = await fetch(`${server.baseUrl}/v2/control/context/snapshot`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify({ run_id: "no-such-run" }),
  });
  expect(missing.status).toBe(404);
});
