// The chat client and answer synthesizer against a tiny OpenAI-compatible server started inside the test.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createMetrics, type Metrics } from "../src/platform/metrics.js";
import { ABSTENTION } from "../src/retrieval/answer.js";
import { AnswerSynthesisError, synthesizeAnswer, type EvidenceItem } from "../src/retrieval/llm/answer-synthesizer.js";
import { ChatClient, ChatError, completionsUrl } from "../src/retrieval/llm/chat-client.js";

const API_KEY = "sk-test-4f9c2e1d-do-not-leak";

interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Record<string, unknown>;
}

/** What the fake provider does with the next request: reply with a status and body, or never answer. */
type Behaviour = { readonly status: number; readonly body: string } | "hang";

function completion(content: string, usage = { prompt_tokens: 120, completion_tokens: 17 }): Behaviour {
  return {
    status: 200,
    body: JSON.stringify({
      id: "chatcmpl-test",
      object: "chat.completion",
      model: "test-model",
      choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    }),
  };
}

let server: http.Server;
let baseUrl: string;
let behaviour: Behaviour = completion("{}");
const received: Received[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
      received.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
      if (behaviour === "hang") return;
      res.writeHead(behaviour.status, { "content-type": "application/json" });
      res.end(behaviour.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  // Hung requests hold their sockets open; drop them so close() can finish.
  server.closeAllConnections();
  await new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve())));
});

let metrics: Metrics;

beforeEach(() => {
  received.length = 0;
  metrics = createMetrics();
});

function client(timeoutMs = 2000): ChatClient {
  return new ChatClient({ url: baseUrl, model: "test-model", apiKey: API_KEY, timeoutMs, metrics });
}

/** A sample's value; histogram series are named by suffix, e.g. `service_llm_call_duration_seconds_count`. */
async function sample(name: string, labels: Record<string, string>): Promise<number> {
  const base = name.replace(/_(count|sum|bucket)$/u, "");
  const metric = metrics.registry.getSingleMetric(base) ?? metrics.registry.getSingleMetric(name);
  if (metric === undefined) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const match = values.find(
    (v) => ("metricName" in v ? v.metricName : base) === name && Object.entries(labels).every(([k, want]) => v.labels[k] === want),
  );
  return match?.value ?? 0;
}

/** The error a promise rejects with; fails the test when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (e: unknown) {
    if (e instanceof Error) return e;
    throw new Error(`rejected with a non-Error: ${String(e)}`);
  }
  throw new Error("expected the call to fail");
}

const EVIDENCE: EvidenceItem[] = [
  { content: "The release train leaves every Thursday.", entryType: "fact" },
  { content: "Builds run on the blue runner pool.", entryType: "fact" },
  { content: "Always announce the release train in #deploys.", entryType: "rule" },
];

describe("completionsUrl", () => {
  it("accepts the API base or the full completions URL", () => {
    expect(completionsUrl("http://h:1/v1").href).toBe("http://h:1/v1/chat/completions");
    expect(completionsUrl("http://h:1/v1/").href).toBe("http://h:1/v1/chat/completions");
    expect(completionsUrl("http://h:1/v1/chat/completions").href).toBe("http://h:1/v1/chat/completions");
    expect(completionsUrl("https://h/openai/v1?api-version=2").href).toBe("https://h/openai/v1/chat/completions?api-version=2");
    expect(() => completionsUrl("ftp://h/v1")).toThrow(/http or https/);
    expect(() => completionsUrl("not a url")).toThrow(/not a valid URL/);
  });
});

describe("synthesizeAnswer over an OpenAI-compatible endpoint", () => {
  it("answers with validated citations, dropping out-of-range and duplicate ones", async () => {
    behaviour = completion('```json\n{"answer": "Every Thursday.", "citations": [0, 2, 2, 7, -1, 1.5], "abstain": false}\n```');
    const answer = await synthesizeAnswer(client(), "When does the release train leave?", EVIDENCE);
    expect(answer.finalAnswer).toBe("Every Thursday.");
    expect(answer.citations).toEqual([0, 2]);
    expect(answer.confidence).toBeGreaterThan(0.3);

    const clean = completion('{"answer": "Every Thursday.", "citations": [0], "abstain": false}');
    behaviour = clean;
    const exact = await synthesizeAnswer(client(), "When does the release train leave?", EVIDENCE);
    expect(exact.citations).toEqual([0]);
    expect(exact.confidence).toBeGreaterThan(answer.confidence);

    // The request is an OpenAI chat completion with the numbered evidence, sent with the key as a bearer token.
    expect(received).toHaveLength(2);
    const request = received[0] as Received;
    expect(request.method).toBe("POST");
    expect(request.url).toBe("/v1/chat/completions");
    expect(request.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request.body["model"]).toBe("test-model");
    expect(request.body["temperature"]).toBe(0);
    expect(typeof request.body["max_tokens"]).toBe("number");
    const messages = request.body["messages"] as { role: string; content: string }[];
    const user = messages.find((m) => m.role === "user");
    expect(user?.content).toContain("When does the release train leave?");
    expect(user?.content).toContain("[0] (fact) The release train leaves every Thursday.");
    expect(user?.content).toContain("[2] (rule) Always announce the release train in #deploys.");

    expect(await sample("service_llm_calls_total", { purpose: "answer", outcome: "ok" })).toBe(2);
    expect(await sample("service_llm_tokens_total", { purpose: "answer", kind: "prompt" })).toBe(240);
    expect(await sample("service_llm_tokens_total", { purpose: "answer", kind: "completion" })).toBe(34);
    expect(await sample("service_llm_call_duration_seconds_count", { purpose: "answer" })).toBe(2);
    expect(await sample("service_llm_call_duration_seconds_sum", { purpose: "answer" })).toBeGreaterThan(0);
  });

  it("turns an abstention into the abstention text with no citations and low confidence", async () => {
    behaviour = completion('Here you go: {"answer": "", "citations": [1], "abstain": true}');
    const answer = await synthesizeAnswer(client(), "Which Kubernetes version runs in production?", EVIDENCE);
    expect(answer).toEqual({ finalAnswer: ABSTENTION, citations: [], confidence: expect.any(Number) as number });
    expect(answer.confidence).toBeLessThan(0.3);
  });

  it("abstains without calling the model when there is no evidence", async () => {
    const answer = await synthesizeAnswer(client(), "Anything?", []);
    expect(answer.finalAnswer).toBe(ABSTENTION);
    expect(received).toHaveLength(0);
    expect(await sample("service_llm_calls_total", { purpose: "answer", outcome: "ok" })).toBe(0);
  });

  it("throws on a reply that is not the requested JSON, so the caller can fall back", async () => {
    for (const reply of ["The release train leaves on Thursday.", '{"citations": [0]}', '{"answer": 3}', '{"answer": "x", "citations": "0"}']) {
      behaviour = completion(reply);
      const error = await rejection(synthesizeAnswer(client(), "When does the release train leave?", EVIDENCE));
      expect(error).toBeInstanceOf(AnswerSynthesisError);
    }
    // The calls themselves succeeded: the provider answered, only the content was unusable.
    expect(await sample("service_llm_calls_total", { purpose: "answer", outcome: "ok" })).toBe(4);
  });

  it("times out on a provider that never answers, counted as a timeout", async () => {
    behaviour = "hang";
    const started = Date.now();
    const error = await rejection(synthesizeAnswer(client(150), "When does the release train leave?", EVIDENCE));
    expect(Date.now() - started).toBeLessThan(2000);
    expect(error).toBeInstanceOf(ChatError);
    expect((error as ChatError).outcome).toBe("timeout");
    expect(error.message).toMatch(/timed out after 150 ms/);
    expect(error.message).not.toContain(API_KEY);
    expect(await sample("service_llm_calls_total", { purpose: "answer", outcome: "timeout" })).toBe(1);
    expect(await sample("service_llm_call_duration_seconds_count", { purpose: "answer" })).toBe(1);
  });

  it("fails on HTTP 500 with the provider's message and never the API key, even when the body echoes it", async () => {
    behaviour = { status: 500, body: JSON.stringify({ error: { message: `upstream exploded (auth was Bearer ${API_KEY})` } }) };
    const error = await rejection(synthesizeAnswer(client(), "When does the release train leave?", EVIDENCE));
    expect(error).toBeInstanceOf(ChatError);
    expect((error as ChatError).status).toBe(500);
    expect(error.message).toContain("HTTP 500");
    expect(error.message).toContain("upstream exploded");
    expect(error.message).not.toContain(API_KEY);
    expect(received[0]?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(await sample("service_llm_calls_total", { purpose: "answer", outcome: "error" })).toBe(1);
    expect(await sample("service_llm_calls_total", { purpose: "answer", outcome: "ok" })).toBe(0);
    expect(await sample("service_llm_tokens_total", { purpose: "answer", kind: "prompt" })).toBe(0);
  });

  it("fails cleanly when the provider cannot be reached", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const unreachable = new ChatClient({ url: `http://127.0.0.1:${port}/v1/chat/completions`, model: "m", apiKey: API_KEY, timeoutMs: 2000, metrics });
    const error = await rejection(unreachable.complete({ purpose: "test", messages: [{ role: "user", content: "hi" }], maxTokens: 5, temperature: 0 }));
    expect(error).toBeInstanceOf(ChatError);
    expect((error as ChatError).outcome).toBe("error");
    expect(error.message).toContain(`127.0.0.1:${port}/v1/chat/completions`);
    expect(error.message).not.toContain(API_KEY);
    expect(await sample("service_llm_calls_total", { purpose: "test", outcome: "error" })).toBe(1);
  });
});

describe("ChatClient", () => {
  it("returns the text and token usage, and sends no Authorization header without a key", async () => {
    behaviour = completion("pong", { prompt_tokens: 3, completion_tokens: 1 });
    const keyless = new ChatClient({ url: `${baseUrl}/`, model: "test-model", timeoutMs: 2000, metrics });
    const result = await keyless.complete({ purpose: "ping", messages: [{ role: "user", content: "ping" }], maxTokens: 4, temperature: 0.2 });
    expect(result).toEqual({ text: "pong", promptTokens: 3, completionTokens: 1 });
    expect(received[0]?.headers.authorization).toBeUndefined();
    expect(received[0]?.body["max_tokens"]).toBe(4);
    expect(await sample("service_llm_tokens_total", { purpose: "ping", kind: "prompt" })).toBe(3);
    const text = await metrics.registry.getSingleMetricAsString("service_llm_calls_total");
    expect(text).toContain('service_llm_calls_total{purpose="ping",outcome="ok"} 1');
  });

  it("rejects bad configuration up front", () => {
    expect(() => new ChatClient({ url: baseUrl, model: "", timeoutMs: 1000, metrics })).toThrow(/model/);
    expect(() => new ChatClient({ url: baseUrl, model: "m", timeoutMs: 0, metrics })).toThrow(/timeoutMs/);
  });
});
