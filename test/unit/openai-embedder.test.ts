import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { backoffMs, OpenAiEmbedder, retryAfterMs } from "../../src/retrieval/embedders/openai-embedder.js";

const KEY = "sk-test-0123456789abcdef";
const DIMS = 8;

type Mode = "ok" | "unauthorized" | "slow" | "no-data" | "short" | "not-json";
/** A failure the fake answers before its mode: an HTTP status (with Retry-After), a dropped connection or a stall. */
type Failure = { readonly status: number; readonly retryAfter?: string } | "drop" | "stall";

interface Seen {
  readonly path: string;
  readonly authorization: string | undefined;
  readonly body: { model: string; input: string[] };
}

/** A tiny OpenAI-compatible server: vector i of a text is [length, 1, 0, …], answered in reverse order with `index`. */
function startServer(): Promise<{ server: http.Server; url: string; seen: Seen[]; setMode(mode: Mode): void; failFirst(...failures: Failure[]): void }> {
  const seen: Seen[] = [];
  let mode: Mode = "ok";
  const failures: Failure[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Seen["body"];
      seen.push({ path: req.url ?? "", authorization: req.headers.authorization, body });
      const send = (status: number, payload: string): void => {
        if (!res.destroyed) res.writeHead(status, { "content-type": "application/json" }).end(payload);
      };
      const failure = failures.shift();
      if (failure === "drop") return void res.socket?.destroy();
      if (failure === "stall") return setTimeout(() => send(200, "{}"), 1_000);
      if (failure !== undefined) {
        const headers = { "content-type": "application/json", ...(failure.retryAfter === undefined ? {} : { "retry-after": failure.retryAfter }) };
        return void res.writeHead(failure.status, headers).end(JSON.stringify({ error: { message: `failure ${failure.status}` } }));
      }
      const data = body.input.map((text, index) => {
        const embedding = [text.length, 1, ...new Array<number>(DIMS - 2).fill(0)];
        return { object: "embedding", index, embedding };
      });
      switch (mode) {
        case "ok":
          return send(200, JSON.stringify({ object: "list", model: body.model, data: data.reverse() }));
        case "unauthorized":
          // Some servers echo what they were sent; the client must not pass it on.
          return send(401, JSON.stringify({ error: { message: `invalid key in header: ${req.headers.authorization ?? ""}` } }));
        case "slow":
          return setTimeout(() => send(200, JSON.stringify({ data })), 1_000);
        case "no-data":
          return send(200, JSON.stringify({ object: "list" }));
        case "short":
          return send(200, JSON.stringify({ data: data.slice(1) }));
        case "not-json":
          return send(200, "<html>");
      }
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        server,
        url: `http://127.0.0.1:${port}/v1`,
        seen,
        setMode: (m) => (mode = m),
        failFirst: (...f) => failures.splice(0, failures.length, ...f),
      });
    });
  });
}

describe("OpenAiEmbedder", () => {
  let fake: Awaited<ReturnType<typeof startServer>>;
  // Backoff of a few ms keeps retries fast; the cases on backoff itself set their own.
  const embedder = (options: Partial<ConstructorParameters<typeof OpenAiEmbedder>[0]> = {}): OpenAiEmbedder =>
    new OpenAiEmbedder({ url: fake.url, model: "test-embed", apiKey: KEY, timeoutMs: 2_000, retryBaseMs: 2, ...options });

  beforeAll(async () => {
    fake = await startServer();
  });
  beforeEach(() => {
    fake.seen.length = 0;
    fake.setMode("ok");
    fake.failFirst();
  });
  afterAll(async () => {
    fake.server.closeAllConnections();
    await new Promise((resolve) => fake.server.close(resolve));
  });

  it("names itself after the model", () => {
    expect(embedder().id).toBe("openai:test-embed");
  });

  it("batches at most 256 inputs a request and returns unit vectors in input order", async () => {
    const texts = Array.from({ length: 600 }, (_, i) => "x".repeat(1 + (i % 50)));
    const vectors = await embedder().embed(texts);
    expect(fake.seen.map((s) => s.body.input.length)).toEqual([256, 256, 88]);
    expect(fake.seen.every((s) => s.path === "/v1/embeddings" && s.body.model === "test-embed")).toBe(true);
    expect(fake.seen[0]?.authorization).toBe(`Bearer ${KEY}`);
    expect(vectors).toHaveLength(600);
    texts.forEach((text, i) => {
      const v = vectors[i] as Float32Array;
      const norm = Math.hypot(text.length, 1);
      expect(v[0]).toBeCloseTo(text.length / norm, 5);
      expect(v[1]).toBeCloseTo(1 / norm, 5);
    });
  });

  it("honours a smaller batch size, accepts the full endpoint URL and sends no key when none is set", async () => {
    await embedder({ batchSize: 2, url: `${fake.url}/embeddings`, apiKey: undefined }).embed(["a", "b", "c"]);
    expect(fake.seen.map((s) => s.body.input)).toEqual([["a", "b"], ["c"]]);
    expect(fake.seen[0]?.path).toBe("/v1/embeddings");
    expect(fake.seen[0]?.authorization).toBeUndefined();
  });

  it("learns the dimensions from the first response when none are configured", async () => {
    const e = embedder();
    expect(e.dimensions).toBe(0);
    expect(await e.probe()).toBe(DIMS);
    expect(e.dimensions).toBe(DIMS);
    expect(fake.seen).toHaveLength(1);
    await e.probe();
    expect(fake.seen).toHaveLength(1);
  });

  it("rejects vectors of another size than configured", async () => {
    await expect(embedder({ dimensions: 16 }).embed(["hello"])).rejects.toThrow(/returned 8-dimensional vectors, expected 16/);
    await expect(embedder({ dimensions: DIMS }).embed(["hello"])).resolves.toHaveLength(1);
  });

  it("embeds blank texts as zero vectors without asking the server", async () => {
    expect(await embedder().embed([])).toEqual([]);
    const [blank, word] = await embedder().embed(["  ", "word"]);
    expect(fake.seen.map((s) => s.body.input)).toEqual([["word"]]);
    expect(Array.from(blank as Float32Array)).toEqual(new Array<number>(DIMS).fill(0));
    expect(word).toHaveLength(DIMS);
  });

  it("reports HTTP errors with status and body but never the key, without retrying a 4xx", async () => {
    fake.setMode("unauthorized");
    const error = await embedder().embed(["hello"]).catch((e: unknown) => e);
    expect(fake.seen).toHaveLength(1);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toMatch(/HTTP 401/);
    expect(message).toMatch(/model test-embed/);
    expect(message).toContain("[redacted]");
    expect(message).not.toContain(KEY);
  });

  it("times out, and gives up once the retries are spent", async () => {
    fake.setMode("slow");
    const error = await embedder({ timeoutMs: 100, maxRetries: 1 }).embed(["hello"]).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/timed out after 100 ms \(gave up after 2 attempts\)$/);
    expect((error as Error).message).not.toContain(KEY);
    expect(fake.seen).toHaveLength(2);
  });

  it.each<[string, Failure[]]>([
    ["503 and 500", [{ status: 503 }, { status: 500 }]],
    ["429 and 408", [{ status: 429 }, { status: 408 }]],
    ["dropped connections", ["drop", "drop"]],
    ["a timeout and a 502", ["stall", { status: 502 }]],
  ])("retries transient failures (%s) and then succeeds", async (_label, failures) => {
    fake.failFirst(...failures);
    const [vector] = await embedder({ timeoutMs: 200 }).embed(["hello"]);
    expect(vector).toHaveLength(DIMS);
    expect(fake.seen).toHaveLength(failures.length + 1);
  });

  it("makes at most 1 + maxRetries attempts, and reports the last failure", async () => {
    fake.failFirst(...new Array<Failure>(10).fill({ status: 503 }));
    await expect(embedder({ maxRetries: 2 }).embed(["a"])).rejects.toThrow(/HTTP 503: .*failure 503.* \(gave up after 3 attempts\)$/);
    expect(fake.seen).toHaveLength(3);
    fake.seen.length = 0;
    await expect(embedder({ maxRetries: 0 }).embed(["a"])).rejects.toThrow(/HTTP 503: .*failure 503"?}}$/);
    expect(fake.seen).toHaveLength(1);
  });

  it.each([400, 401, 403, 404, 413, 422])("never retries HTTP %i", async (status) => {
    fake.failFirst({ status }, { status });
    await expect(embedder().embed(["a"])).rejects.toThrow(`HTTP ${status}`);
    expect(fake.seen).toHaveLength(1);
  });

  it("never retries a malformed response", async () => {
    fake.setMode("not-json");
    await expect(embedder().embed(["a"])).rejects.toThrow(/not JSON$/);
    expect(fake.seen).toHaveLength(1);
  });

  it("waits as long as Retry-After asks, within the cap", async () => {
    // A slow base proves the header, not the backoff, sets the wait.
    fake.failFirst({ status: 429, retryAfter: "0" });
    let started = Date.now();
    await embedder({ retryBaseMs: 10_000 }).embed(["a"]);
    expect(Date.now() - started).toBeLessThan(2_000);
    // An hour is capped at retryMaxDelayMs.
    fake.failFirst({ status: 503, retryAfter: "3600" });
    started = Date.now();
    await embedder({ retryMaxDelayMs: 50 }).embed(["a"]);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(fake.seen).toHaveLength(4);
  });

  it("rejects malformed responses", async () => {
    fake.setMode("no-data");
    await expect(embedder().embed(["a"])).rejects.toThrow(/invalid response: no data array/);
    fake.setMode("short");
    await expect(embedder().embed(["a", "b"])).rejects.toThrow(/1 embeddings for 2 inputs/);
    fake.setMode("not-json");
    await expect(embedder().embed(["a"])).rejects.toThrow(/not JSON/);
  });

  it("reports an unreachable server without the key", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const error = await embedder({ url: `http://127.0.0.1:${port}` }).embed(["a"]).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(new RegExp(`127\\.0\\.0\\.1:${port}/v1/embeddings .*failed: .*ECONNREFUSED`));
    expect((error as Error).message).not.toContain(KEY);
  });

  it("reads Retry-After as seconds or an HTTP date", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(retryAfterMs("2", now)).toBe(2_000);
    expect(retryAfterMs("0.5", now)).toBe(500);
    expect(retryAfterMs("Thu, 01 Jan 2026 00:00:03 GMT", now)).toBe(3_000);
    expect(retryAfterMs("Wed, 31 Dec 2025 00:00:00 GMT", now)).toBe(0);
    expect(retryAfterMs(null, now)).toBeUndefined();
    expect(retryAfterMs("soon", now)).toBeUndefined();
  });

  it("backs off exponentially with jitter, capped", () => {
    expect([1, 2, 3, 4].map((retry) => backoffMs(retry, 100, 1_000, () => 1))).toEqual([100, 200, 400, 800]);
    expect([1, 2, 3, 4].map((retry) => backoffMs(retry, 100, 1_000, () => 0))).toEqual([50, 100, 200, 400]);
    expect(backoffMs(10, 100, 1_000, () => 1)).toBe(1_000);
  });

  it("validates its options", () => {
    expect(() => embedder({ maxRetries: -1 })).toThrow(/maxRetries/);
    expect(() => embedder({ retryBaseMs: 0 })).toThrow(/retryBaseMs/);
    expect(() => embedder({ batchSize: 257 })).toThrow(/batchSize/);
    expect(() => embedder({ timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => embedder({ dimensions: -1 })).toThrow(/dimensions/);
    expect(() => embedder({ model: "" })).toThrow(/model/);
  });
});
