// An OpenAI-compatible embeddings endpoint replaces the embedded embedder: started by the test itself on loopback.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";

const DIMENSIONS = 8;
let fake: http.Server;
let server: TestServer;
const seenInputs: string[] = [];
const seenAuth: (string | undefined)[] = [];

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
      seenInputs.push(...input);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ model, data: input.map((text, index) => ({ index, embedding: embed(text) })), usage: { prompt_tokens: 1, total_tokens: 1 } }));
    });
  });
  await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`;
  server = await startTestServer({ SERVICE_EMBEDDINGS_URL: url, SERVICE_EMBEDDINGS_MODEL: "toy-8", SERVICE_EMBEDDINGS_API_KEY: "sk-embed-secret" });
});

afterAll(async () => {
  await server.close();
  await new Promise<void>((resolve) => fake.close(() => resolve()));
});

async function post(route: string, body: object): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${server.baseUrl}${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
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
