// An OpenAI-compatible embeddings endpoint replaces the embedded embedder: started by the test itself on loopback.
// Its transient failures are retried before an ingest job fails.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";

const DIMENSIONS = 8;
let fake: http.Server;
let server: TestServer;
const seenInputs: string[] = [];
const seenAuth: (string | undefined)[] = [];
/** Calls per failure marker: a request with an input containing `flaky-…` fails twice with 503, `doomed-…` always. */
const calls = new Map<string, number>();
const FLAKY_FAILURES = 2;

/** A toy deterministic model: letter-frequency buckets, so texts sharing letters are close. */
function embed(text: string): number[] {
  const v = new Array<number>(DIMENSIONS).fill(0);
  for (const ch of text.toLowerCase()) if (ch >= "a" && ch <= "z") v[(ch.charCodeAt(0) - 97) % DIMENSIONS]! += 1;
  return v;
}

beforeAll(async () => {
  fake = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seenAuth.push(req.headers.authorization);
      const { input, model } = JSON.parse(body) as { input: string[]; model: string };
      const marker = input.map((text) => /\b(flaky|doomed)-\d+\b/u.exec(text)?.[0]).find((m) => m !== undefined);
      if (marker !== undefined) {
        const n = (calls.get(marker) ?? 0) + 1;
        calls.set(marker, n);
        if (marker.startsWith("doomed") || n <= FLAKY_FAILURES) {
          res.writeHead(503, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: { message: "model overloaded" } }));
          return;
        }
      }
      seenInputs.push(...input);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ model, data: input.map((text, index) => ({ index, embedding: embed(text) })), usage: { prompt_tokens: 1, total_tokens: 1 } }));
    });
  });
  await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`;
  server = await startTestServer({
    SERVICE_EMBEDDINGS_URL: url,
    SERVICE_EMBEDDINGS_MODEL: "toy-8",
    SERVICE_EMBEDDINGS_API_KEY: "sk-embed-secret",
    SERVICE_EMBEDDINGS_MAX_RETRIES: "3",
    // A few ms of backoff keeps the retries fast.
    SERVICE_EMBEDDINGS_RETRY_BASE_MS: "2",
  });
});

afterAll(async () => {
  await server.close();
  await new Promise<void>((resolve) => fake.close(() => resolve()));
});

async function post(route: string, body?: object): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${server.baseUrl}${route}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

/** Submits an ingest job and polls it until done (each poll waits for the server's answer). */
async function ingest(runId: string, texts: string[]): Promise<Record<string, unknown>> {
  const accepted = await post("/v2/control/ingest", { run_id: runId, items: texts.map((text) => ({ text })) });
  expect(accepted.status).toBe(200);
  for (let poll = 0; poll < 400; poll++) {
    const job = await post(`/v2/control/ingest/jobs/${String(accepted.json["job_id"])}`);
    if (job.json["done"] === true) return job.json;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the ingest job did not finish");
}

async function entriesOf(runId: string): Promise<number> {
  const activity = await post("/v2/control/activity", { run_id: runId, limit: 50 });
  expect(activity.status).toBe(200);
  return (activity.json["entries"] as unknown[]).length;
}

it("embeds writes and queries with the configured endpoint, whose dimension callers' vectors must match", async () => {
  expect((await post("/v2/control/remember", { session_id: "emb", content: "Quarterly reports are due in March." })).status).toBe(200);
  expect(seenInputs).toContain("Quarterly reports are due in March.");
  expect(seenAuth.every((a) => a === "Bearer sk-embed-secret")).toBe(true);
  const answer = await post("/v2/control/recall", { session_id: "emb", query: "When are quarterly reports due?" });
  expect(answer.status).toBe(200);
  expect(seenInputs).toContain("When are quarterly reports due?");
  expect((answer.json["evidence"] as { content: string }[])[0]?.content).toBe("Quarterly reports are due in March.");
  const wrong = await post("/v2/control/query", { run_id: "emb", query: "reports", embedding: [1, 2, 3] });
  expect(wrong.status).toBe(400);
  expect(String(wrong.json["message"])).toContain(`${DIMENSIONS} dimensions`);
  const right = await post("/v2/control/query", { run_id: "emb", query: "reports", embedding: embed("Quarterly reports are due in March.") });
  expect(right.status).toBe(200);
});

it("retries an embedding call that fails transiently: the ingest job completes", async () => {
  const job = await ingest("emb-flaky", ["The flaky-1 build cache lives on the second disk.", "Backups run nightly."]);
  expect(job, String(job["error"])).toMatchObject({ status: "completed", error: "", entry_count: 2 });
  expect(calls.get("flaky-1")).toBe(FLAKY_FAILURES + 1);
  expect(await entriesOf("emb-flaky")).toBe(2);
});

it("fails an ingest job whose embedding call keeps failing, with a clear error, and stores nothing", async () => {
  const job = await ingest("emb-doomed", ["Nothing from doomed-1 is ever stored.", "Nor this sibling item."]);
  expect(job).toMatchObject({ status: "failed", entry_count: 0 });
  expect(String(job["error"])).toMatch(/embedding request to .*model toy-8.* failed: HTTP 503: .*model overloaded.*gave up after 4 attempts/);
  expect(String(job["error"])).not.toContain("sk-embed-secret");
  // One first attempt and SERVICE_EMBEDDINGS_MAX_RETRIES retries, then no more.
  expect(calls.get("doomed-1")).toBe(4);
  expect(await entriesOf("emb-doomed")).toBe(0);
});
