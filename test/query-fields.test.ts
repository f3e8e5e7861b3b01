// No documented field of query and context is silently ignored: env_tags re-rank, agent_id attributes,
// include_linked_runs searches the linked runs too, and `degraded` reports a skipped vector source or an LLM
// answer that fell back. The LLM and the embeddings endpoint are one local fake started by the test.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";

type Json = Record<string, unknown>;
interface Evidence {
  readonly id: string;
  readonly content: string;
}

const DIMENSIONS = 8;
/** Embedding requests with an input containing this word fail, as an unreachable endpoint would. */
const UNEMBEDDABLE = "unembeddable";

let fake: http.Server;
let server: TestServer;
let chat: () => Promise<{ status: number; body: unknown }> = async () => ({ status: 500, body: {} });

/** A toy deterministic embedding: letter-frequency buckets. */
function embed(text: string): number[] {
  const v = new Array<number>(DIMENSIONS).fill(1e-3);
  for (const ch of text.toLowerCase()) if (ch >= "a" && ch <= "z") v[(ch.charCodeAt(0) - 97) % DIMENSIONS]! += 1;
  return v;
}

function completion(content: string): { status: number; body: unknown } {
  return { status: 200, body: { choices: [{ message: { role: "assistant", content } }], usage: { prompt_tokens: 10, completion_tokens: 5 } } };
}

beforeAll(async () => {
  fake = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      void (async () => {
        let out: { status: number; body: unknown };
        if (req.url?.endsWith("/embeddings")) {
          const { input, model } = JSON.parse(body) as { input: string[]; model: string };
          out = input.some((text) => text.includes(UNEMBEDDABLE))
            ? { status: 503, body: { error: { message: "embedding backend down" } } }
            : { status: 200, body: { model, data: input.map((text, index) => ({ index, embedding: embed(text) })) } };
        } else {
          out = await chat();
        }
        if (res.destroyed) return;
        res.writeHead(out.status, { "content-type": "application/json" });
        res.end(JSON.stringify(out.body));
      })();
    });
  });
  await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`;
  server = await startTestServer({
    SERVICE_EMBEDDINGS_URL: url,
    SERVICE_EMBEDDINGS_MODEL: "toy-8",
    SERVICE_LLM_URL: url,
    SERVICE_LLM_MODEL: "fake-model",
    SERVICE_LLM_TIMEOUT_MS: "300",
  });
});

afterAll(async () => {
  await server.close();
  fake.closeAllConnections();
  await new Promise<void>((resolve) => fake.close(() => resolve()));
});

async function post(route: string, body: Json): Promise<{ status: number; json: Json }> {
  const response = await fetch(`${server.baseUrl}${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Json };
}

async function ok(route: string, body: Json): Promise<Json> {
  const { status, json } = await post(route, body);
  expect(status, `${route}: ${JSON.stringify(json)}`).toBe(200);
  return json;
}

/** Stores items synchronously, all with the same occurrence time, in request order; returns their ids. */
async function store(runId: string, items: Json[]): Promise<string[]> {
  const res = await ok("/v2/control/batch_insert", { run_id: runId, items: items.map((item) => ({ occurrence_time: 1_767_225_600, ...item })) });
  return res["entry_ids"] as string[];
}

async function evidenceIds(body: Json): Promise<string[]> {
  const res = await ok("/v2/control/query", body);
  return (res["evidence"] as Evidence[]).map((e) => e.id);
}

describe("env_tags", () => {
  const text = "Install the dependencies with pip install -r requirements.txt before running tests.";

  it("a matching tag lifts an entry above an otherwise equal one", async () => {
    // Written first, the tagged entry ranks second among equals (newest first) until the caller's tags match it.
    const [tagged, plain] = await store("env-match", [{ text, env_tags: ["lang:python:3.12"] }, { text }]);
    const query = { run_id: "env-match", query: "how to install dependencies", limit: 5 };
    expect(await evidenceIds(query)).toEqual([plain, tagged]);
    expect(await evidenceIds({ ...query, env_tags: ["lang:python:3.12"] })).toEqual([tagged, plain]);
    // Case-insensitive, and a version-less or dotted-prefix tag matches too.
    expect(await evidenceIds({ ...query, env_tags: ["LANG:Python"] })).toEqual([tagged, plain]);
    expect(await evidenceIds({ ...query, env_tags: ["lang:python:3"] })).toEqual([tagged, plain]);
    // Tags of another TYPE:NAME change nothing.
    expect(await evidenceIds({ ...query, env_tags: ["lang:rust:1.80"] })).toEqual([plain, tagged]);
  });

  it("a conflicting tag (same TYPE:NAME, another version) lowers an entry below an otherwise equal one", async () => {
    // Written last, the conflicting entry ranks first among equals until the caller's tags conflict with it.
    const [plain, conflicting] = await store("env-conflict", [{ text }, { text, env_tags: ["lang:python:2.7"] }]);
    const query = { run_id: "env-conflict", query: "how to install dependencies", limit: 5 };
    expect(await evidenceIds(query)).toEqual([conflicting, plain]);
    const res = await ok("/v2/control/query", { ...query, env_tags: ["lang:python:3.12"], explain: true });
    const evidence = res["evidence"] as (Evidence & { score: number })[];
    expect(evidence.map((e) => e.id)).toEqual([plain, conflicting]);
    // Slightly lower: the conflict costs 5 %, not the entry's place in the answer.
    expect(evidence[1]!.score / evidence[0]!.score).toBeCloseTo(0.95, 2);
  });

  it("rejects a malformed tag naming it", async () => {
    const { status, json } = await post("/v2/control/query", { run_id: "env-match", query: "deps", env_tags: ["lang:python:3.12", "python"] });
    expect(status).toBe(400);
    expect(json).toMatchObject({ code: "invalid_argument" });
    expect(String(json["message"])).toMatch(/^env_tags\[1\]:/);
  });
});

describe("include_linked_runs and agent_id", () => {
  it("include_linked_runs true also searches the linked runs and lists them in consulted_runs; false does not", async () => {
    await store("linked", [{ text: "The release train leaves every second Thursday." }]);
    const [childFact] = await store("linked-child", [{ text: "The release train needs a signed changelog." }]);
    const alone = await ok("/v2/control/query", { run_id: "linked", query: "release train", include_linked_runs: true });
    expect(alone["consulted_runs"]).toEqual(["linked"]);
    expect(await ok("/v2/control/runs/link", { run_id: "linked", linked_run_id: "linked-child" })).toMatchObject({ linked: true });
    const answered = await ok("/v2/control/query", { run_id: "linked", query: "release train changelog", include_linked_runs: true });
    expect(answered["consulted_runs"]).toEqual(["linked", "linked-child"]);
    expect((answered["evidence"] as Evidence[]).map((e) => e.id)).toContain(childFact);
    const unlinked = await ok("/v2/control/query", { run_id: "linked", query: "release train changelog", include_linked_runs: false });
    expect(unlinked["consulted_runs"]).toEqual(["linked"]);
    expect((unlinked["evidence"] as Evidence[]).map((e) => e.id)).not.toContain(childFact);
  });

  it("agent_id attributes the query in routing_summary without limiting evidence; over-long ids are refused", async () => {
    const [id] = await store("agents", [{ text: "Staging deploys need a green canary first.", entry_type: "rule" }]);
    const asked = await ok("/v2/control/query", { run_id: "agents", query: "staging deploys", agent_id: "planner-7" });
    expect(String(asked["routing_summary"])).toContain('asked by agent "planner-7"');
    expect((asked["evidence"] as Evidence[]).map((e) => e.id)).toContain(id);
    const anonymous = await ok("/v2/control/query", { run_id: "agents", query: "staging deploys" });
    expect(String(anonymous["routing_summary"])).not.toContain("asked by agent");
    for (const route of ["/v2/control/query", "/v2/control/context"]) {
      const { status, json } = await post(route, { run_id: "agents", query: "staging deploys", agent_id: "a".repeat(257) });
      expect(status, route).toBe(400);
      expect(String(json["message"])).toMatch(/^agent_id:/);
    }
    const context = await ok("/v2/control/context", { run_id: "agents", query: "staging deploys", agent_id: "planner-7" });
    expect(String(context["context_block"])).toContain("green canary");
  });
});

describe("degraded", () => {
  const run = "degraded";
  const question = { run_id: run, query: "Who owns the billing service?" };

  beforeAll(async () => {
    await store(run, [{ text: "The billing service is written in Go and owned by team Falcon." }]);
  });

  it("is false when the LLM answers", async () => {
    chat = async () => completion(JSON.stringify({ answer: "Team Falcon owns it.", citations: [0], abstain: false }));
    const res = await ok("/v2/control/query", question);
    expect(res).toMatchObject({ final_answer: "Team Falcon owns it.", degraded: false });
  });

  const fallbacks: [string, () => Promise<{ status: number; body: unknown }>, string][] = [
    ["fails", async () => ({ status: 500, body: { error: { message: "upstream exploded" } } }), "the LLM call failed"],
    ["replies with something unusable", async () => completion("I think it is team Falcon."), "the LLM reply was unusable"],
    [
      "times out",
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        return completion(JSON.stringify({ answer: "too late", citations: [0], abstain: false }));
      },
      "the LLM call timed out",
    ],
  ];
  for (const [what, reply, summary] of fallbacks) {
    it(`is true when the LLM ${what} and the answer falls back to the evidence`, async () => {
      chat = reply;
      const res = await ok("/v2/control/query", question);
      expect(res["degraded"]).toBe(true);
      expect(String(res["final_answer"])).toContain("Falcon");
      expect(String(res["routing_summary"])).toContain(summary);
      expect(String(res["routing_summary"])).not.toContain("upstream exploded");
    });
  }

  it("is true when the query cannot be embedded: the evidence is lexical only", async () => {
    chat = async () => completion(JSON.stringify({ answer: "Team Falcon owns it.", citations: [0], abstain: false }));
    const res = await ok("/v2/control/query", { run_id: run, query: `billing service owner ${UNEMBEDDABLE}` });
    expect(res["degraded"]).toBe(true);
    expect((res["evidence"] as Evidence[])[0]?.content).toContain("team Falcon");
    expect(String(res["routing_summary"])).toContain("vector search skipped");
    expect(String(res["routing_summary"])).toContain("0 vector candidates");
  });
});
