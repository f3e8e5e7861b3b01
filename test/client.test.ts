// The TypeScript client against a real server: the same calls over HTTP/JSON and gRPC, plus the SSE reader.
import http from "node:http";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEngram, type Engram } from "../src/app.js";
import { loadConfig } from "../src/platform/config.js";
import { createEngramClient, resolveClientOptions, ClientConfigError, type TransportKind } from "../src/client/index.js";

const TRANSPORTS: readonly TransportKind[] = ["http", "grpc"];

let dir: string;
let engram: Engram;
let endpoint: string;
let adminKey: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "engram-client-"));
  engram = await startEngram(
    loadConfig({ SERVICE_PORT: "0", SERVICE_CONSOLE_PORT: "0", SERVICE_HOST: "127.0.0.1", SERVICE_DATA_DIR: dir, SERVICE_LOG_LEVEL: "silent" }),
  );
  endpoint = `http://127.0.0.1:${engram.port}`;
  adminKey = (await readFile(path.join(dir, "admin.key"), "utf8")).trim();
});

afterAll(async () => {
  await engram?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** A client that ignores SERVICE_* in the test's environment; `apiKey: null` sends no key at all. */
function clientFor(transport: TransportKind, apiKey: string | null = adminKey) {
  return createEngramClient({ endpoint, apiKey: apiKey ?? undefined, transport, env: {} });
}

async function connectError(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (e: unknown) {
    if (e instanceof ConnectError) return e;
    throw e;
  }
  throw new Error("expected the call to fail");
}

describe.each(TRANSPORTS)("over %s", (transport) => {
  it("remembers, then recalls what it remembered", async () => {
    const client = clientFor(transport);
    const session = `s-${transport}`;
    const written = await client.memory.remember({ sessionId: session, content: "the sky is blue", agentId: "a1" });
    expect(written.success).toBe(true);
    expect(written.entryType).toBe("fact");
    await client.memory.remember({ sessionId: session, content: "grass is green", intent: "lesson" });

    const answer = await client.memory.recall({ sessionId: session, query: "what color is the sky", limit: 5 });
    expect(answer.evidence[0]?.content).toBe("the sky is blue");
    expect(answer.evidence[0]?.id).toBe(written.entryId);
    expect(answer.evidence[0]?.agentId).toBe("a1");

    // A repeated field and a number in the body.
    const lessons = await client.memory.recall({ sessionId: session, query: "color", entryTypes: ["lesson"], limit: 1 });
    expect(lessons.evidence.map((e) => e.entryType)).toEqual(["lesson"]);
  });

  it("rejects a wrong or malformed key with Unauthenticated", async () => {
    for (const key of ["mem_local_abcd1234_0123456789abcdef0123", "not-a-key", null]) {
      const error = await connectError(clientFor(transport, key).memory.recall({ sessionId: "s", query: "q" }));
      expect(error.code).toBe(Code.Unauthenticated);
      expect(error.rawMessage).not.toContain("0123456789abcdef0123");
    }
  });

  it("fills path parameters on GET routes (auth.getUser)", async () => {
    const client = clientFor(transport);
    const username = `a.b-c_${transport}`;
    const created = await client.auth.createUser({ username, role: "user" });
    expect(created.apiKey).toMatch(/^mem_local_/);

    const got = await client.auth.getUser({ username });
    expect(got.user?.username).toBe(username);
    expect(got.user?.userId).toBe(created.userId);
    expect(got.user?.apiKeyActive).toBe(true);

    const listed = await client.auth.listUsers({});
    expect(listed.users.map((u) => u.username)).toContain(username);

    // The new user's own key may inspect itself.
    const self = await clientFor(transport, created.apiKey).auth.getUser({ username });
    expect(self.user?.role).toBe("user");
  });

  it("maps error bodies to codes and messages", async () => {
    const client = clientFor(transport);
    const missing = await connectError(client.auth.getUser({ username: "nobody" }));
    expect(missing.code).toBe(Code.NotFound);
    expect(missing.rawMessage).toBe('user "nobody" not found');

    const invalid = await connectError(client.memory.remember({ sessionId: "", content: "x" }));
    expect(invalid.code).toBe(Code.InvalidArgument);
  });

  it("rotates and revokes keys through path-parameter POST routes", async () => {
    const client = clientFor(transport);
    const username = `rot-${transport}`;
    const { apiKey: first } = await client.auth.createUser({ username });
    const rotated = await client.auth.rotateUserApiKey({ username });
    expect(rotated.apiKey).not.toBe(first);
    expect((await connectError(clientFor(transport, first).auth.getUser({ username }))).code).toBe(Code.Unauthenticated);

    expect((await client.auth.revokeUserApiKey({ username })).success).toBe(true);
    const revoked = await connectError(clientFor(transport, rotated.apiKey).auth.getUser({ username }));
    expect(revoked.code).toBe(Code.Unauthenticated);
  });

  it("streams control events (events.subscribe) until the caller aborts", async () => {
    const client = clientFor(transport);
    const runId = `ev-${transport}`;
    const abort = new AbortController();
    const events = client.events.subscribe({ runId, eventTypes: ["entry.*"] }, { signal: abort.signal })[Symbol.asyncIterator]();
    try {
      expect((await events.next()).value).toMatchObject({ type: "subscribed", runId });
      await client.memory.remember({ sessionId: "elsewhere", content: "not for this stream" });
      await client.memory.remember({ sessionId: runId, content: "for this stream" });
      const created = (await events.next()).value;
      expect(created).toMatchObject({ type: "entry.created", runId });
      expect(JSON.parse(String(created?.payload))).toMatchObject({ entry_type: "fact" });
    } finally {
      abort.abort();
    }
  });

  it("answers the health routes, raw HttpBody ones included, without a key", async () => {
    const client = clientFor(transport, null);
    const livez = await client.health.livez({});
    expect(new TextDecoder().decode(livez.body?.data)).toBe("ok");
    expect(livez.body?.contentType).toMatch(/^text\/plain/);
    expect((await client.health.readyz({})).status).toBe("ready");

    // Not ready is a response over gRPC and a 503 with the same body over HTTP: both read as the message.
    engram.readiness.enter("starting");
    try {
      const readyz = await client.health.readyz({});
      expect(readyz.status).toBe("not_ready");
      expect(readyz.reason).toBe("starting");
    } finally {
      engram.readiness.markReady();
    }
  });
});

describe("client options", () => {
  it("falls back to SERVICE_ENDPOINT, SERVICE_API_KEY and SERVICE_TRANSPORT", async () => {
    for (const transport of TRANSPORTS) {
      const client = createEngramClient({
        env: { SERVICE_ENDPOINT: `${endpoint}/`, SERVICE_API_KEY: adminKey, SERVICE_TRANSPORT: transport },
      });
      expect((await client.auth.getUser({ username: "admin" })).user?.role).toBe("admin");
    }
  });

  it("prefers options over the environment and defaults to HTTP on localhost:3000", () => {
    expect(resolveClientOptions({ env: {} })).toMatchObject({
      endpoint: "http://localhost:3000",
      apiKey: undefined,
      transport: "http",
    });
    const env = { SERVICE_ENDPOINT: "http://env:1", SERVICE_API_KEY: "env-key", SERVICE_TRANSPORT: "grpc" };
    expect(resolveClientOptions({ env, endpoint: "https://opt:2/", apiKey: "opt-key", transport: "http" })).toMatchObject({
      endpoint: "https://opt:2",
      apiKey: "opt-key",
      transport: "http",
    });
    expect(() => resolveClientOptions({ env: { SERVICE_TRANSPORT: "carrier-pigeon" } })).toThrow(ClientConfigError);
    expect(() => resolveClientOptions({ env: { SERVICE_ENDPOINT: "localhost:3000" } })).toThrow(ClientConfigError);
  });

  it("says Unavailable when nothing listens", async () => {
    for (const transport of TRANSPORTS) {
      const client = createEngramClient({ endpoint: "http://127.0.0.1:9", transport, env: {} });
      expect((await connectError(client.health.readyz({}))).code).toBe(Code.Unavailable);
    }
  });
});

describe("server streams over HTTP (SSE)", () => {
  let sse: http.Server;
  let sseEndpoint: string;
  const seen: { url: string; authorization: string | undefined; accept: string | undefined }[] = [];

  beforeAll(async () => {
    // A stand-in for the events route, to control how events are split across writes and how the stream ends.
    sse = http.createServer((req, res) => {
      seen.push({ url: req.url ?? "", authorization: req.headers.authorization, accept: req.headers.accept });
      const runId = new URL(req.url ?? "/", "http://x").searchParams.get("run_id");
      if (runId === "denied") {
        res.writeHead(403, { "content-type": "application/json" });
        res.end(JSON.stringify({ code: "permission_denied", message: "not your run", details: [] }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
      const first = JSON.stringify({ id: "1", type: "subscribed", run_id: runId, payload: "{}" });
      res.write(": keep-alive\n\n");
      // An event split across writes, with `id:` and `event:` lines as the events route sends them.
      res.write(`id: 1\nevent: subscribed\ndata: ${first.slice(0, 10)}`);
      setTimeout(() => {
        res.write(`${first.slice(10)}\n\n`);
        res.write(`data: ${JSON.stringify({ id: "2", type: "entry.created", run_id: runId, unknown_later_field: 1 })}\n\n`);
        if (runId === "slow") {
          res.end(`data: ${JSON.stringify({ type: "error", code: "resource_exhausted", message: "client too slow" })}\n\n`);
        } else {
          res.end();
        }
      }, 20);
    });
    await new Promise<void>((resolve) => sse.listen(0, "127.0.0.1", resolve));
    sseEndpoint = `http://127.0.0.1:${(sse.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => sse.close(() => resolve()));
  });

  const client = () => createEngramClient({ endpoint: sseEndpoint, apiKey: "k", transport: "http", env: {} });

  it("yields one message per data event, with fields as query parameters", async () => {
    const events = [];
    for await (const event of client().events.subscribe({ runId: "r1", eventTypes: ["lesson.*", "entry.created"] })) {
      events.push(event);
    }
    expect(events.map((e) => [e.id, e.type, e.runId])).toEqual([
      ["1", "subscribed", "r1"],
      ["2", "entry.created", "r1"],
    ]);
    const request = seen.at(-1);
    expect(request?.url).toBe("/v2/control/events/subscribe?run_id=r1&event_types=lesson.*&event_types=entry.created");
    expect(request?.authorization).toBe("Bearer k");
    expect(request?.accept).toBe("text/event-stream");
  });

  it("raises an error event as a ConnectError after the messages before it", async () => {
    const types: string[] = [];
    const error = await connectError(
      (async () => {
        for await (const event of client().events.subscribe({ runId: "slow" })) types.push(event.type);
      })(),
    );
    expect(types).toEqual(["subscribed", "entry.created"]);
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(error.rawMessage).toBe("client too slow");
  });

  it("raises an error response before the stream opens", async () => {
    const error = await connectError(
      (async () => {
        for await (const _ of client().events.subscribe({ runId: "denied" })) break;
      })(),
    );
    expect(error.code).toBe(Code.PermissionDenied);
    expect(error.rawMessage).toBe("not your run");
  });
});
