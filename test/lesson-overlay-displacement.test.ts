// Regression, found by the crash loop's index check: on a full page, lesson overlays took the place of the
// lowest-ranked plain hit whatever its score. In a run of many lessons that plain hit was the only fact on the page
// — the one entry the query named by a unique word, ranked first — and it vanished from a 10-item answer while a
// 100-item answer still ranked it first. A lesson now displaces a plain hit only when it outscores it.
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectCaller, type Caller, type JsonObject } from "./harness/callers.js";
import { RPC, ok } from "./harness/memory.js";
import { startTestServer, type TestServer } from "./harness/server.js";

let server: TestServer;
let caller: Caller;

beforeAll(async () => {
  server = await startTestServer({ SERVICE_EMBEDDER: "hashed" });
  caller = connectCaller(server.baseUrl);
});

afterAll(async () => {
  await server?.close();
});

it("a lesson overlay never pushes the best-ranked fact out of a full page", async () => {
  const topics = ["deploy", "cache", "schema", "retry", "index", "ticket", "release", "backup", "quota", "latency", "token", "queue", "mirror", "ledger", "parser"];
  for (const topic of topics) {
    await ok(caller, RPC.remember, { session_id: "r", content: `Crash probe lesson about ${topic} and the pager.`, intent: "lesson" }, server.adminKey);
  }
  const fact = await ok(caller, RPC.remember, { session_id: "r", content: "Crash probe fact zqpagerx about the pager.", intent: "fact" }, server.adminKey);
  for (const limit of [100, 10, 3]) {
    const answer = await ok(caller, RPC.query, { run_id: "r", query: "zqpagerx", limit }, server.adminKey);
    const evidence = answer["evidence"] as JsonObject[];
    expect(evidence.length, `limit ${limit}`).toBe(Math.min(limit, topics.length + 1));
    expect(evidence[0]?.["id"], `limit ${limit}: ${JSON.stringify(evidence.map((e) => [e["id"], e["retrieval_mode"], e["score"]]))}`).toBe(fact["entry_id"]);
  }
});
