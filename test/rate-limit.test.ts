// Per-key rate limits (SERVICE_RATE_LIMIT_*) on a real server with a fake clock: a key gets its burst, then
// RESOURCE_EXHAUSTED (HTTP 429) with Retry-After and the RateLimit fields; other keys are unaffected; tokens come back
// as the clock moves; admins are unlimited unless SERVICE_RATE_LIMIT_ADMIN; probes are never limited; a stream
// spends one token when it opens. Over REST, Connect and gRPC.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEngram, type Engram } from "../src/app.js";
import { mintApiKey } from "../src/auth/api-key.js";
import { loadConfig } from "../src/platform/config.js";
import { createLogger } from "../src/platform/logger.js";
import { TokenBuckets } from "../src/platform/token-buckets.js";
import { RunsService } from "../gen/engram/v2/runs_service_pb.js";
import { EventsService } from "../gen/engram/v2/events_service_pb.js";
import { tempDataDir } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { TRANSPORTS, callerFor, type Caller } from "./harness/callers.js";

/** 2 calls a second, bursts of 3. */
const LIMITS = { SERVICE_RATE_LIMIT_PER_SECOND: "2", SERVICE_RATE_LIMIT_BURST: "3" };
const LIST_RUNS = "engram.v2.RunsService/ListRuns";
const POLICY = '"default";q=2;w=1;burst=3';

interface Server {
  readonly engram: Engram;
  readonly baseUrl: string;
  readonly adminKey: string;
  /** The rate limiter's fake clock, in ms. */
  readonly clock: { t: number };
}

async function start(env: Record<string, string>): Promise<Server> {
  const clock = { t: 1_000_000 };
  const adminKey = mintApiKey("local").key;
  const config = loadConfig({
    SERVICE_ADMIN_KEY: adminKey,
    SERVICE_PORT: "0",
    SERVICE_HOST: "127.0.0.1",
    SERVICE_DATA_DIR: tempDataDir(),
    SERVICE_LOG_LEVEL: "silent",
    SERVICE_CONSOLE_PORT: "0",
    ...env,
  });
  const engram = await startEngram(config, { logger: createLogger("silent"), rateLimitNow: () => clock.t });
  return { engram, baseUrl: `http://127.0.0.1:${engram.port}`, adminKey, clock };
}

let server: Server;
let users = 0;

/** A fresh user's key: its bucket is full. */
async function freshKey(s: Server = server): Promise<string> {
  return createUser(s.baseUrl, s.adminKey, `user${users++}`);
}

async function codes(c: Caller, key: string, calls: number): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < calls; i++) out.push((await c.call(LIST_RUNS, {}, key)).code);
  return out;
}

function get(path: string, key?: string): Promise<Response> {
  return fetch(new URL(path, server.baseUrl), { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } });
}

beforeAll(async () => {
  server = await start(LIMITS);
});
afterAll(async () => server.engram.close());

describe.each(TRANSPORTS)("rate limits over %s", (transport) => {
  it("gives a key its burst, then refuses it, leaves another key alone, and refills with the clock", async () => {
    const c = callerFor(transport, server.baseUrl, server.engram.port);
    try {
      const abusive = await freshKey();
      const polite = await freshKey();
      expect(await codes(c, abusive, 4)).toEqual(["ok", "ok", "ok", "resource_exhausted"]);
      const refused = await c.call(LIST_RUNS, {}, abusive);
      expect(refused.message).toMatch(/rate limit exceeded for this API key \(2 calls a second, bursts of 3\): retry after 1 s/);
      if (refused.status !== undefined) expect(refused.status).toBe(429);
      expect(await codes(c, polite, 3)).toEqual(["ok", "ok", "ok"]);
      // Half a second brings one token back at 2 a second; a second and a half fills the bucket.
      server.clock.t += 500;
      expect(await codes(c, abusive, 2)).toEqual(["ok", "resource_exhausted"]);
      server.clock.t += 1500;
      expect(await codes(c, abusive, 4)).toEqual(["ok", "ok", "ok", "resource_exhausted"]);
    } finally {
      c.close();
    }
  });

  it("never limits an admin key by default", async () => {
    const c = callerFor(transport, server.baseUrl, server.engram.port);
    try {
      expect(new Set(await codes(c, server.adminKey, 10))).toEqual(new Set(["ok"]));
    } finally {
      c.close();
    }
  });
});

describe("rate-limit header fields", () => {
  it("reports the policy and what is left on HTTP/JSON answers, and Retry-After on the refusal", async () => {
    const key = await freshKey();
    const first = await get("/v2/control/runs", key);
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-policy")).toBe(POLICY);
    // 3 - 1 = 2 tokens left; the spent one is back in half a second, rounded up.
    expect(first.headers.get("ratelimit")).toBe('"default";r=2;t=1');
    expect(first.headers.get("retry-after")).toBeNull();
    await get("/v2/control/runs", key);
    await get("/v2/control/runs", key);
    const refused = await get("/v2/control/runs", key);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("ratelimit")).toBe('"default";r=0;t=2');
    expect(refused.headers.get("ratelimit-policy")).toBe(POLICY);
    expect(await refused.json()).toMatchObject({ code: "resource_exhausted" });
  });

  it("sends the same fields as Connect response headers", async () => {
    const key = await freshKey();
    const call = (): Promise<Response> =>
      fetch(new URL(`/${LIST_RUNS}`, server.baseUrl), {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "connect-protocol-version": "1" },
        body: "{}",
      });
    const first = await call();
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit")).toBe('"default";r=2;t=1');
    await call();
    await call();
    const refused = await call();
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("ratelimit-policy")).toBe(POLICY);
  });

  it("sends them as gRPC metadata: headers on success, trailers with the refusal", async () => {
    const key = await freshKey();
    const client = createClient(RunsService, createGrpcTransport({ baseUrl: server.baseUrl }));
    const headers = { authorization: `Bearer ${key}` };
    let received: Headers | undefined;
    await client.listRuns({}, { headers, onHeader: (h) => (received = h) });
    expect(received?.get("ratelimit")).toBe('"default";r=2;t=1');
    await client.listRuns({}, { headers });
    await client.listRuns({}, { headers });
    const error = await client.listRuns({}, { headers }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConnectError);
    const refusal = error as ConnectError;
    expect(refusal.code).toBe(Code.ResourceExhausted);
    expect(refusal.metadata.get("retry-after")).toBe("1");
    expect(refusal.metadata.get("ratelimit")).toBe('"default";r=0;t=2');
  });
});

describe("what is not limited, and streams", () => {
  it("never limits the probes or /metrics", async () => {
    for (let i = 0; i < 10; i++) {
      for (const path of ["/livez", "/readyz", "/v2/core/health", "/metrics"]) {
        const response = await get(path);
        expect(response.status, path).toBe(200);
        expect(response.headers.get("ratelimit"), path).toBeNull();
        await response.arrayBuffer();
      }
    }
  });

  it("spends one token when a stream opens, and refuses to open one past the limit (SSE 429, gRPC RESOURCE_EXHAUSTED)", async () => {
    const key = await freshKey();
    // Two calls and one stream take the burst of three.
    await get("/v2/control/runs", key);
    await get("/v2/control/runs", key);
    const open = new AbortController();
    const stream = await fetch(new URL("/v2/control/events/subscribe", server.baseUrl), {
      headers: { authorization: `Bearer ${key}` },
      signal: open.signal,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers.get("ratelimit")).toBe('"default";r=0;t=2');
    open.abort();
    const refused = await get("/v2/control/events/subscribe", key);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(await refused.json()).toMatchObject({ code: "resource_exhausted" });

    const events = createClient(EventsService, createGrpcTransport({ baseUrl: server.baseUrl }));
    const error = await (async () => {
      for await (const message of events.subscribe({}, { headers: { authorization: `Bearer ${key}` } })) return message;
      return undefined;
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.ResourceExhausted);
  });
});

describe("refusals answered before the body is read", () => {
  /** A key whose burst is spent. */
  async function spentKey(): Promise<string> {
    const key = await freshKey();
    for (let i = 0; i < 3; i++) expect((await get("/v2/control/runs", key)).status).toBe(200);
    return key;
  }

  it("refuses a call whose body would not parse, instead of reading it (HTTP/JSON and Connect)", async () => {
    const key = await spentKey();
    const post = (path: string, headers: Record<string, string>): Promise<Response> =>
      fetch(new URL(path, server.baseUrl), { method: "POST", headers: { authorization: `Bearer ${key}`, ...headers }, body: "{not json" });
    const rest = await post("/v2/control/query", { "content-type": "application/json" });
    expect(rest.status).toBe(429);
    expect(await rest.json()).toMatchObject({ code: "resource_exhausted" });
    const connect = await post(`/engram.v2.MemoryService/Query`, { "content-type": "application/json", "connect-protocol-version": "1" });
    expect(connect.status).toBe(429);
    expect(connect.headers.get("retry-after")).toBe("1");
    expect(await connect.json()).toMatchObject({ code: "resource_exhausted", message: expect.stringMatching(/rate limit exceeded/) as unknown });
    // The same body from a key with tokens left is read, and refused as the caller's mistake.
    const fresh = await freshKey();
    const admitted = await fetch(new URL("/v2/control/query", server.baseUrl), {
      method: "POST",
      headers: { authorization: `Bearer ${fresh}`, "content-type": "application/json" },
      body: "{not json",
    });
    expect(admitted.status).toBe(400);
  });

  it("ends a Connect stream with the refusal and its metadata, and answers gRPC-Web trailers-only", async () => {
    const key = await spentKey();
    const headers = { authorization: `Bearer ${key}` };
    const streamed = createClient(EventsService, createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }));
    const streamError = await (async () => {
      for await (const message of streamed.subscribe({}, { headers })) return message;
      return undefined;
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(streamError).toBeInstanceOf(ConnectError);
    expect((streamError as ConnectError).code).toBe(Code.ResourceExhausted);
    expect((streamError as ConnectError).metadata.get("retry-after")).toBe("1");

    const web = createClient(RunsService, createGrpcWebTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }));
    const webError = await web.listRuns({}, { headers }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(webError).toBeInstanceOf(ConnectError);
    expect((webError as ConnectError).code).toBe(Code.ResourceExhausted);
    expect((webError as ConnectError).rawMessage).toMatch(/rate limit exceeded for this API key \(2 calls a second, bursts of 3\): retry after 1 s/);
    expect((webError as ConnectError).metadata.get("ratelimit")).toBe('"default";r=0;t=2');
  });

  it("counts and times the refusals like every other answer", async () => {
    const key = await spentKey();
    for (let i = 0; i < 2; i++) expect((await get("/v2/control/runs", key)).status).toBe(429);
    const grpc = createClient(RunsService, createGrpcTransport({ baseUrl: server.baseUrl }));
    await grpc.listRuns({}, { headers: { authorization: `Bearer ${key}` } }).catch(() => undefined);
    const metrics = await (await get("/metrics")).text();
    const refusals = (transport: string): number =>
      metrics
        .split("\n")
        .filter((line) => line.startsWith("service_rpc_requests_total{") && line.includes('rpc="engram.v2.RunsService/ListRuns"') && line.includes(`transport="${transport}"`) && line.includes('code="resource_exhausted"'))
        .reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);
    expect(refusals("http")).toBeGreaterThanOrEqual(2);
    expect(refusals("grpc")).toBeGreaterThanOrEqual(1);
  });
});

describe("SERVICE_RATE_LIMIT_ADMIN=true", () => {
  let limited: Server;
  beforeAll(async () => {
    limited = await start({ ...LIMITS, SERVICE_RATE_LIMIT_ADMIN: "true" });
  });
  afterAll(async () => limited.engram.close());

  it("limits admin keys like any other", async () => {
    const c = callerFor("connect", limited.baseUrl, limited.engram.port);
    try {
      expect(await codes(c, limited.adminKey, 4)).toEqual(["ok", "ok", "ok", "resource_exhausted"]);
    } finally {
      c.close();
    }
  });
});

describe("the bucket table", () => {
  it("stays bounded however many keys call", () => {
    const clock = { t: 0 };
    const buckets = new TokenBuckets({ perSecond: 1, burst: 1 }, () => clock.t, 100);
    for (let key = 0; key < 1000; key++) expect(buckets.take(`k${key}`).allowed).toBe(true);
    expect(buckets.size).toBe(100);
    // A clock stepping back refills nothing and drains nothing.
    clock.t -= 10_000;
    expect(buckets.take("k999").allowed).toBe(false);
    clock.t += 11_000;
    expect(buckets.take("k999").allowed).toBe(true);
  });
});
