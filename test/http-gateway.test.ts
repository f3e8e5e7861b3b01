// The HTTP/JSON surface: error body and status table, request decoding, health text, metrics and SSE framing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

let server: TestServer;
let alice: string;

beforeAll(async () => {
  server = await startTestServer();
  alice = await createUser(server.baseUrl, server.adminKey, "alice");
});
afterAll(async () => server.close());

async function post(path: string, body: string | object, key: string | null = alice): Promise<Response> {
  return fetch(`${server.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function expectError(response: Response, status: number, code: string, mention?: string): Promise<void> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/json");
  const body = (await response.json()) as { code: string; message: string; details: unknown[] };
  expect(Object.keys(body).sort()).toEqual(["code", "details", "message"]);
  expect(body.code).toBe(code);
  expect(Array.isArray(body.details)).toBe(true);
  if (mention !== undefined) expect(body.message).toContain(mention);
}

describe("request decoding", () => {
  it("malformed JSON is 400 naming the body", async () => {
    await expectError(await post("/v2/control/remember", "{not json"), 400, "invalid_argument", "JSON");
  });
  it("a body that is not an object is 400", async () => {
    await expectError(await post("/v2/control/remember", "[1,2]"), 400, "invalid_argument", "object");
  });
  it("an unknown field is 400 naming it", async () => {
    await expectError(await post("/v2/control/remember", { session_id: "s", content: "x", colour: "red" }), 400, "invalid_argument", "colour");
  });
  it("a wrong type is 400 naming the field", async () => {
    await expectError(await post("/v2/control/remember", { session_id: "s", content: 42 }), 400, "invalid_argument", "content");
    await expectError(await post("/v2/control/recall", { session_id: "s", query: "q", entry_types: "fact" }), 400, "invalid_argument", "entry_types");
  });
  it("camelCase JSON names are accepted as well as the spec's snake_case", async () => {
    const response = await post("/v2/control/remember", { sessionId: "camel", content: "camel case works" });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { session_id: string }).session_id).toBe("camel");
  });
  it("an empty body on a POST route is an empty request", async () => {
    await expectError(await post("/v2/control/remember", ""), 400, "invalid_argument", "session_id");
  });
  it("GET routes take path and query parameters; unknown query parameters are 400", async () => {
    const ok = await fetch(`${server.baseUrl}/v2/core/auth/users/alice`, { headers: { authorization: `Bearer ${alice}` } });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { user: { username: string } }).user.username).toBe("alice");
    const bad = await fetch(`${server.baseUrl}/v2/core/auth/users?colour=red`, { headers: { authorization: `Bearer ${server.adminKey}` } });
    await expectError(bad, 400, "invalid_argument", "colour");
  });
  it("responses use the spec's snake_case names and include default values", async () => {
    await post("/v2/control/remember", { session_id: "names", content: "snake case everywhere" });
    const body = (await (await post("/v2/control/recall", { session_id: "names", query: "snake case" })).json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["citations", "confidence", "cost", "evidence", "final_answer", "mode"]);
    const evidence = (body["evidence"] as Record<string, unknown>[])[0] as Record<string, unknown>;
    for (const field of ["id", "score", "content", "is_stale", "superseded_by", "retrieval_mode", "reference_id", "referenceable", "origin_entry_type"]) {
      expect(evidence).toHaveProperty(field);
    }
  });
});

describe("status table", () => {
  it("401 without a key, 403 for a forbidden route, 404 for a missing thing, 409 for a duplicate", async () => {
    await expectError(await post("/v2/control/recall", { session_id: "s", query: "q" }, null), 401, "unauthenticated");
    await expectError(await post("/v2/core/auth/users", { username: "zed" }), 403, "permission_denied");
    const missing = await fetch(`${server.baseUrl}/v2/core/auth/users/nobody`, { headers: { authorization: `Bearer ${server.adminKey}` } });
    await expectError(missing, 404, "not_found");
    await expectError(await post("/v2/core/auth/users", { username: "alice" }, server.adminKey), 409, "already_exists");
  });
  it("the removed SDM routes are 410 Gone", async () => {
    await expectError(await post("/v2/core/sdm/write", {}), 410, "unimplemented", "removed");
    await expectError(await post("/v2/core/sdm/read", {}), 410, "unimplemented", "removed");
  });
  it("an unknown path is 404 and a wrong method is 405, both with the error body", async () => {
    await expectError(await post("/v2/control/nothing-here", {}), 404, "not_found");
    await expectError(await fetch(`${server.baseUrl}/v2/control/remember`), 405, "unimplemented");
  });
});

describe("health and metrics", () => {
  it("/livez is 200 ok, /v2/core/health is OK, both text and unauthenticated", async () => {
    const live = await fetch(`${server.baseUrl}/livez`);
    expect(live.status).toBe(200);
    expect(await live.text()).toBe("ok");
    const health = await fetch(`${server.baseUrl}/v2/core/health`);
    expect(health.status).toBe(200);
    expect(health.headers.get("content-type")).toContain("text/plain");
    expect(await health.text()).toBe("OK");
  });
  it("/readyz is 200 ready once warm", async () => {
    const ready = await fetch(`${server.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready", reason: "" });
  });
  it("/readyz is 503 not_ready with the current reason while start-up work runs", async () => {
    server.engram.readiness.enter("sparse_prewarm_in_progress");
    try {
      const response = await fetch(`${server.baseUrl}/readyz`);
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({ status: "not_ready", reason: "sparse_prewarm_in_progress" });
      expect((await fetch(`${server.baseUrl}/livez`)).status).toBe(200);
    } finally {
      server.engram.readiness.markReady();
    }
  });
  it("/metrics exposes per-route counters, latency histograms and the LLM metrics", async () => {
    await post("/v2/control/recall", { session_id: "m", query: "q" });
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    expect(text).toMatch(/service_rpc_requests_total\{route="POST \/v2\/control\/recall",rpc="engram.v2.MemoryService\/Recall",transport="http",code="ok"\} [1-9]/);
    expect(text).toContain("service_rpc_duration_seconds_bucket");
    for (const name of ["service_llm_calls_total", "service_llm_tokens_total", "service_llm_call_duration_seconds", "service_storage_writes_total", "service_ingest_items_total", "process_cpu_seconds_total"]) {
      expect(text).toContain(`# TYPE ${name}`);
    }
  });
});

describe("server-sent events", () => {
  it("GET /v2/control/events/subscribe streams data: lines of JSON, subscribed first, then the caller's events only", async () => {
    const bob = await createUser(server.baseUrl, server.adminKey, "bob-sse");
    const abort = new AbortController();
    const response = await fetch(`${server.baseUrl}/v2/control/events/subscribe?run_id=sse-run`, {
      headers: { authorization: `Bearer ${alice}` },
      signal: abort.signal,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const events: EventSourceMessage[] = [];
    const raw: string[] = [];
    const parser = createParser({ onEvent: (event) => events.push(event) });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    const readUntil = async (count: number): Promise<void> => {
      while (events.length < count) {
        const { value, done } = await reader.read();
        if (done) throw new Error("stream ended early");
        const chunk = decoder.decode(value, { stream: true });
        raw.push(chunk);
        parser.feed(chunk);
      }
    };
    await readUntil(1);
    expect(JSON.parse((events[0] as EventSourceMessage).data)).toMatchObject({ type: "subscribed", run_id: "sse-run" });
    // Another user's write to a run of the same name, and alice's write elsewhere, must not arrive.
    await post("/v2/control/remember", { session_id: "sse-run", content: "bob's note" }, bob);
    await post("/v2/control/remember", { session_id: "other-run", content: "elsewhere" });
    await post("/v2/control/remember", { session_id: "sse-run", agent_id: "agent-7", content: "alice's note" });
    await readUntil(2);
    abort.abort();
    const event = JSON.parse((events[1] as EventSourceMessage).data) as Record<string, string>;
    expect(event["type"]).toBe("entry.created");
    expect(event["run_id"]).toBe("sse-run");
    expect(event["agent_id"]).toBe("agent-7");
    expect(JSON.parse(event["payload"] as string)).toMatchObject({ entry_type: "fact" });
    for (const frame of raw.join("").split("\n\n").filter((f) => f !== "")) {
      expect(frame).toMatch(/^(data: \{.*\}|: keep-alive)$/);
    }
  });
  it("a bad subscription is a plain HTTP error before any stream opens", async () => {
    const response = await fetch(`${server.baseUrl}/v2/control/events/subscribe?event_types=nonsense`, {
      headers: { authorization: `Bearer ${alice}` },
    });
    await expectError(response, 400, "invalid_argument", "event_types");
    await expectError(await fetch(`${server.baseUrl}/v2/control/events/subscribe`), 401, "unauthenticated");
  });
});

describe("repeated query parameters", () => {
  it("accept repetition, comma-separated lists and JSON arrays", async () => {
    for (const query of ["event_types=entry.created&event_types=lesson.*", "event_types=entry.created,lesson.*", `event_types=${encodeURIComponent('["entry.created","lesson.*"]')}`]) {
      const abort = new AbortController();
      const response = await fetch(`${server.baseUrl}/v2/control/events/subscribe?${query}`, {
        headers: { authorization: `Bearer ${alice}` },
        signal: abort.signal,
      });
      expect(response.status, query).toBe(200);
      abort.abort();
    }
  });
});
