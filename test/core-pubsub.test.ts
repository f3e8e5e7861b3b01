// Core subscriptions over SSE (fetch + eventsource-parser) and as a gRPC server stream (@grpc/grpc-js): filters,
// exact event fields, commit order, read access, list/unsubscribe/disconnect, validation before the stream opens,
// a slow subscriber that neither stalls writers nor grows without bound, and the policy gate.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createParser } from "eventsource-parser";
import { callerFor, grpcStream, type Caller, type JsonObject } from "./harness/callers.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

const SUBSCRIBE = "engram.v2.CoreService/SubscribeCoreEvents";
const UNSUBSCRIBE = "engram.v2.CoreService/UnsubscribeCoreEvents";
const LIST = "engram.v2.CoreService/ListCoreSubscriptions";
const GRPC_CODES = ["ok", "canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists", "permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range", "unimplemented", "internal", "unavailable", "data_loss", "unauthenticated"];

/** Every field of SubscribeCoreEventsResponse with its default: an event sets only the fields of its type. */
const DEFAULTS: JsonObject = {
  type: "",
  subscription_id: "",
  node_id: "0",
  run_id: "",
  metadata_json: "",
  created_at: "",
  updated_at: "",
  session_id: "",
  entry_json: "",
  similarity: 0,
};
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

let server: TestServer;
let alice: string;
let bob: string;

beforeAll(async () => {
  server = await startTestServer({ SERVICE_CORE_ENABLE_DIRECT_PUBSUB: "true", SERVICE_CORE_ALLOW_ALL: "true" });
  alice = await createUser(server.baseUrl, server.adminKey, "alice");
  bob = await createUser(server.baseUrl, server.adminKey, "bob");
});
afterAll(async () => server.close());

// ---- writes through the REST routes ----

async function rest(method: string, path: string, key: string, body?: JsonObject): Promise<JsonObject> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await response.json()) as JsonObject;
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

async function insert(key: string, runId: string, text: string, metadata: JsonObject = {}): Promise<string> {
  const body = await rest("POST", "/v2/core/insert", key, { run_id: runId, text, metadata_json: JSON.stringify(metadata) });
  return String(body["node_id"]);
}
const update = (key: string, nodeId: string, text: string, metadata: JsonObject = {}): Promise<JsonObject> =>
  rest("POST", "/v2/core/insert", key, { node_id: nodeId, text, metadata_json: JSON.stringify(metadata) });
const remove = (key: string, nodeId: string): Promise<JsonObject> => rest("DELETE", `/v2/core/node/${nodeId}`, key);
const scratch = (key: string, sessionId: string, content: string): Promise<JsonObject> =>
  rest("POST", `/v2/core/memory/${encodeURIComponent(sessionId)}`, key, { content });

// ---- one stream interface over both transports ----

type StreamTransport = "sse" | "grpc";

/** Messages of one stream as they arrive, and how it ended: "ok" for a normal end, else an error code. */
class Inbox {
  readonly #items: JsonObject[] = [];
  #wake: (() => void) | undefined;
  #end: string | undefined;
  #endMessage = "";
  readonly ended: Promise<string>;
  #resolveEnded!: (how: string) => void;

  constructor() {
    this.ended = new Promise((resolve) => (this.#resolveEnded = resolve));
  }
  push(item: JsonObject): void {
    if (this.#end !== undefined) return;
    this.#items.push(item);
    this.#wake?.();
  }
  finish(how: string, message = ""): void {
    if (this.#end !== undefined) return;
    this.#end = how;
    this.#endMessage = message;
    this.#resolveEnded(how);
    this.#wake?.();
  }
  get endMessage(): string {
    return this.#endMessage;
  }
  /** The next message; fails if the stream ends or none arrives within `ms`. */
  async next(ms = 10_000): Promise<JsonObject> {
    const deadline = Date.now() + ms;
    for (;;) {
      const item = this.#items.shift();
      if (item !== undefined) return item;
      if (this.#end !== undefined) throw new Error(`stream ended (${this.#end}: ${this.#endMessage}) while waiting for an event`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no event within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = undefined;
    }
  }
}

interface EventStream {
  readonly id: string;
  readonly inbox: Inbox;
  /** Disconnects (SSE) or cancels (gRPC). */
  close(): void;
  /** Stops reading, so that unread events back up to the server. */
  pause(): void;
  resume(): void;
}

type Opened = { readonly ok: true; readonly stream: EventStream } | { readonly ok: false; readonly code: string; readonly message: string; readonly status: number | undefined };

const openStreams: EventStream[] = [];

async function openSse(request: JsonObject, key: string): Promise<Opened> {
  const abort = new AbortController();
  const response = await fetch(`${server.baseUrl}/v2/core/pubsub/subscribe`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(request),
    signal: abort.signal,
  });
  if (response.status !== 200) {
    expect(response.headers.get("content-type")).toContain("application/json");
    const body = (await response.json()) as { code: string; message: string };
    return { ok: false, code: body.code, message: body.message, status: response.status };
  }
  expect(response.headers.get("content-type")).toContain("text/event-stream");
  const inbox = new Inbox();
  const parser = createParser({
    onEvent: (event) => {
      const json = JSON.parse(event.data) as JsonObject;
      // The gateway's final event when the stream fails after it opened.
      if (json["type"] === "error") inbox.finish(String(json["code"]), String(json["message"]));
      else inbox.push(json);
    },
  });
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let paused: Promise<void> | undefined;
  let unpause: (() => void) | undefined;
  void (async () => {
    try {
      for (;;) {
        if (paused !== undefined) await paused;
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(decoder.decode(value, { stream: true }));
      }
      inbox.finish("ok");
    } catch {
      inbox.finish("disconnected");
    }
  })();
  const first = await inbox.next();
  const stream: EventStream = {
    id: expectSubscribed(first),
    inbox,
    close: () => abort.abort(),
    pause: () => (paused = new Promise((resolve) => (unpause = resolve))),
    resume: () => {
      paused = undefined;
      unpause?.();
    },
  };
  openStreams.push(stream);
  return { ok: true, stream };
}

async function openGrpc(request: JsonObject, key: string): Promise<Opened> {
  const call = grpcStream(server.port, SUBSCRIBE, request, key);
  const inbox = new Inbox();
  call.on("data", (message: JsonObject) => inbox.push(message));
  call.on("error", (e: { code: number; details: string }) => inbox.finish(GRPC_CODES[e.code] ?? "unknown", e.details));
  call.on("end", () => inbox.finish("ok"));
  let first: JsonObject;
  try {
    first = await inbox.next();
  } catch {
    return { ok: false, code: await inbox.ended, message: inbox.endMessage, status: undefined };
  }
  const stream: EventStream = {
    id: expectSubscribed(first),
    inbox,
    close: () => call.cancel(),
    pause: () => call.pause(),
    resume: () => call.resume(),
  };
  openStreams.push(stream);
  return { ok: true, stream };
}

function expectSubscribed(first: JsonObject): string {
  expectOnly(first, { type: "subscribed", subscription_id: expect.stringMatching(/^sub_[A-Za-z0-9_-]{20,}$/) });
  return String(first["subscription_id"]);
}

/** The event carries exactly the proto's fields, `populated` set as given and every other one at its default. */
function expectOnly(event: JsonObject, populated: Record<string, unknown>): void {
  expect(Object.keys(event).sort()).toEqual(Object.keys(DEFAULTS).sort());
  expect(event).toEqual({ ...DEFAULTS, ...populated });
}

async function subscribe(transport: StreamTransport, request: JsonObject, key = alice): Promise<EventStream> {
  const opened = transport === "sse" ? await openSse(request, key) : await openGrpc(request, key);
  if (!opened.ok) throw new Error(`subscribe failed: ${opened.code} ${opened.message}`);
  return opened.stream;
}

async function subscribeError(transport: StreamTransport, request: JsonObject, key = alice): Promise<{ code: string; message: string; status: number | undefined }> {
  const opened = transport === "sse" ? await openSse(request, key) : await openGrpc(request, key);
  if (opened.ok) throw new Error("the subscription opened");
  return opened;
}

/** Polls `check` a bounded number of times; no fixed sleep stands in for an event. */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

afterEach(async () => {
  for (const stream of openStreams.splice(0)) stream.close();
  // Every subscription is removed once its client has gone.
  const caller = callerFor("rest", server.baseUrl, server.port);
  await eventually(async () => (await caller.call(LIST, {}, server.adminKey)).body["total"] === 0, "all subscriptions to be removed");
});

let unique = 0;
const name = (prefix: string): string => `${prefix}-${++unique}`;

describe.each<StreamTransport>(["sse", "grpc"])("core pubsub over %s", (transport) => {
  let unary: Caller;
  beforeAll(() => {
    unary = callerFor(transport === "sse" ? "rest" : "grpc", server.baseUrl, server.port);
  });
  afterAll(() => unary.close());

  it("`all` starts with `subscribed`, then delivers node.inserted, node.updated, node.deleted and memory.added with exactly their fields", async () => {
    const stream = await subscribe(transport, { filter_type: "all" });
    const run = name("all-run");
    const nodeId = await insert(alice, run, "first version", { source: "crawler", n: 1 });
    const inserted = await stream.inbox.next();
    expectOnly(inserted, {
      type: "node.inserted",
      node_id: nodeId,
      run_id: run,
      metadata_json: expect.any(String),
      created_at: expect.stringMatching(RFC3339),
      updated_at: expect.stringMatching(RFC3339),
    });
    expect(JSON.parse(String(inserted["metadata_json"]))).toEqual({ source: "crawler", n: 1 });

    await update(alice, nodeId, "second version", { n: 2 });
    const updated = await stream.inbox.next();
    expectOnly(updated, {
      type: "node.updated",
      node_id: nodeId,
      run_id: run,
      metadata_json: expect.any(String),
      created_at: inserted["created_at"],
      updated_at: expect.stringMatching(RFC3339),
    });
    expect(JSON.parse(String(updated["metadata_json"]))).toEqual({ n: 2 });
    expect(Date.parse(String(updated["updated_at"]))).toBeGreaterThanOrEqual(Date.parse(String(inserted["updated_at"])));

    await remove(alice, nodeId);
    expectOnly(await stream.inbox.next(), { type: "node.deleted", node_id: nodeId });

    const pad = name("pad");
    await scratch(alice, pad, "remember the milk");
    const added = await stream.inbox.next();
    expectOnly(added, { type: "memory.added", session_id: pad, entry_json: expect.any(String) });
    expect(JSON.parse(String(added["entry_json"]))).toMatchObject({ session_id: pad, content: "remember the milk" });
  });

  it("`node` delivers the events of one node only", async () => {
    const run = name("node-run");
    const watched = await insert(alice, run, "watched node");
    const other = await insert(alice, run, "other node");
    const stream = await subscribe(transport, { filter_type: "node", node_id: watched });
    await update(alice, other, "other node, edited");
    await scratch(alice, name("pad"), "not a node event");
    await update(alice, watched, "watched node, edited");
    await remove(alice, other);
    await remove(alice, watched);
    expect(await stream.inbox.next()).toMatchObject({ type: "node.updated", node_id: watched, run_id: run });
    expectOnly(await stream.inbox.next(), { type: "node.deleted", node_id: watched });
  });

  it("`semantic` fires on inserts and updates at least `threshold` similar to the query (default 0.8), with the similarity", async () => {
    const query = "a cat sleeping on the sofa";
    const loose = await subscribe(transport, { filter_type: "semantic", query_text: query, threshold: 0.6 });
    const strict = await subscribe(transport, { filter_type: "semantic", query_text: query });
    const run = name("semantic-run");
    const unrelated = await insert(alice, run, "quarterly tax filing deadline for corporations");
    const kitten = await insert(alice, run, "the kitten naps on the couch"); // ~0.73 with the default embedder
    await remove(alice, kitten); // deletes never match a semantic filter
    await scratch(alice, name("pad"), query); // nor do scratchpad writes
    const close = await insert(alice, run, "cat sofa"); // ~0.93
    await update(alice, unrelated, "a cat sleeping on a sofa"); // now identical to the query

    const k = await loose.inbox.next();
    expect(k).toMatchObject({ type: "node.inserted", node_id: kitten, run_id: run });
    expect(k["similarity"]).toBeGreaterThanOrEqual(0.6);
    expect(k["similarity"]).toBeLessThan(0.8);
    for (const stream of [loose, strict]) {
      const c = await stream.inbox.next();
      expect(c).toMatchObject({ type: "node.inserted", node_id: close });
      expect(c["similarity"]).toBeGreaterThanOrEqual(0.8);
      const u = await stream.inbox.next();
      expect(u).toMatchObject({ type: "node.updated", node_id: unrelated, run_id: run });
      expect(u["similarity"]).toBeCloseTo(1, 5);
    }
  });

  it("`session` delivers the writes of one of the caller's scratchpads", async () => {
    const pad = name("pad");
    const stream = await subscribe(transport, { filter_type: "session", session_id: pad });
    await scratch(bob, pad, "bob's pad of the same name");
    await scratch(alice, name("pad"), "another pad");
    await insert(alice, name("run"), "a node");
    await scratch(alice, pad, "the watched pad");
    const added = await stream.inbox.next();
    expectOnly(added, { type: "memory.added", session_id: pad, entry_json: expect.any(String) });
    expect(JSON.parse(String(added["entry_json"]))).toMatchObject({ content: "the watched pad" });
  });

  it("`run_id` narrows any filter to one run and leaves scratchpad events out", async () => {
    const run = name("run");
    const stream = await subscribe(transport, { filter_type: "all", run_id: run });
    await insert(alice, name("run"), "elsewhere");
    await scratch(alice, name("pad"), "no run");
    const nodeId = await insert(alice, run, "here");
    expect(await stream.inbox.next()).toMatchObject({ type: "node.inserted", node_id: nodeId, run_id: run });
  });

  it("delivers events in commit order, the same order to every subscriber, under concurrent writers", async () => {
    const run = name("order-run");
    const first = await subscribe(transport, { filter_type: "all", run_id: run });
    const second = await subscribe(transport, { filter_type: "all", run_id: run });
    const writers = 8;
    const nodes = await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        const nodeId = await insert(alice, run, `writer ${w} node`);
        await update(alice, nodeId, `writer ${w} node, edited`);
        await remove(alice, nodeId);
        return nodeId;
      }),
    );
    const seen: JsonObject[][] = [[], []];
    for (const [i, stream] of [first, second].entries()) {
      for (let n = 0; n < writers * 3; n++) seen[i]?.push(await stream.inbox.next());
    }
    const order = (events: JsonObject[] | undefined): string[] => (events ?? []).map((e) => `${String(e["type"])}:${String(e["node_id"])}`);
    expect(order(seen[1])).toEqual(order(seen[0]));
    for (const nodeId of nodes) {
      // Each writer's own sequence is preserved.
      expect((seen[0] ?? []).filter((e) => e["node_id"] === nodeId).map((e) => e["type"])).toEqual(["node.inserted", "node.updated", "node.deleted"]);
    }
  });

  it("never delivers another user's events, until that user grants read on the run; scratchpads stay private", async () => {
    const bobRun = name("bob-run");
    const bobNode = await insert(bob, bobRun, "bob's node");
    // A node the caller may not read answers as if it did not exist.
    expect((await subscribeError(transport, { filter_type: "node", node_id: bobNode })).code).toBe("not_found");

    const stream = await subscribe(transport, { filter_type: "all" });
    await update(bob, bobNode, "bob's node, edited");
    await scratch(bob, name("pad"), "bob's pad");
    const sentinel = await insert(alice, name("run"), "alice's sentinel");
    expect(await stream.inbox.next()).toMatchObject({ type: "node.inserted", node_id: sentinel });

    await rest("POST", "/v2/core/acl/grant", bob, { principal_type: "user", principal_id: "alice", run_id: bobRun, permission: "read" });
    const shared = await insert(bob, bobRun, "bob's shared node");
    expect(await stream.inbox.next()).toMatchObject({ type: "node.inserted", node_id: shared, run_id: bobRun });
    await scratch(bob, name("pad"), "still bob's alone");
    await insert(bob, name("bob-private"), "another run of bob's");
    const second = await insert(alice, name("run"), "alice's second sentinel");
    expect(await stream.inbox.next()).toMatchObject({ type: "node.inserted", node_id: second });

    const watch = await subscribe(transport, { filter_type: "node", node_id: bobNode });
    await remove(bob, bobNode);
    expectOnly(await watch.inbox.next(), { type: "node.deleted", node_id: bobNode });
  });

  it("list returns the caller's ids, oldest first, and a total: the caller's own, the server's for an admin", async () => {
    const a1 = await subscribe(transport, { filter_type: "all" });
    const a2 = await subscribe(transport, { filter_type: "session", session_id: "p" });
    const b1 = await subscribe(transport, { filter_type: "all" }, bob);
    const mine = await unary.call(LIST, {}, alice);
    expect(mine.code).toBe("ok");
    expect(mine.body).toEqual({ subscription_ids: [a1.id, a2.id], total: 2 });
    const bobs = await unary.call(LIST, {}, bob);
    expect(bobs.body).toEqual({ subscription_ids: [b1.id], total: 1 });
    // A server-wide count would move with the other users' subscriptions: only an admin sees it.
    expect((await unary.call(LIST, {}, server.adminKey)).body).toEqual({ subscription_ids: [], total: 3 });
  });

  it("unsubscribe ends the stream normally; unknown or another user's ids are NOT_FOUND", async () => {
    const stream = await subscribe(transport, { filter_type: "all" });
    expect((await unary.call(UNSUBSCRIBE, { subscription_id: stream.id }, bob)).code).toBe("not_found");
    expect((await unary.call(UNSUBSCRIBE, { subscription_id: "sub_nonexistent" }, alice)).code).toBe("not_found");
    expect((await unary.call(UNSUBSCRIBE, { subscription_id: "" }, alice))).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("subscription_id") });
    const done = await unary.call(UNSUBSCRIBE, { subscription_id: stream.id }, alice);
    expect(done).toMatchObject({ code: "ok", body: { success: true } });
    expect(await stream.inbox.ended).toBe("ok");
    expect((await unary.call(LIST, {}, alice)).body).toEqual({ subscription_ids: [], total: 0 });
    expect((await unary.call(UNSUBSCRIBE, { subscription_id: stream.id }, alice)).code).toBe("not_found");
  });

  it("a disconnect removes the subscription", async () => {
    const stream = await subscribe(transport, { filter_type: "all" });
    const stays = await subscribe(transport, { filter_type: "all" }, bob);
    expect((await unary.call(LIST, {}, alice)).body).toEqual({ subscription_ids: [stream.id], total: 1 });
    expect((await unary.call(LIST, {}, server.adminKey)).body["total"]).toBe(2);
    stream.close();
    await eventually(async () => {
      const list = await unary.call(LIST, {}, server.adminKey);
      return list.body["total"] === 1 && (await unary.call(LIST, {}, alice)).body["total"] === 0;
    }, "the disconnected subscription to be removed");
    expect((await unary.call(LIST, {}, bob)).body).toEqual({ subscription_ids: [stays.id], total: 1 });
  });

  it.each<[string, JsonObject, string, string]>([
    ["a missing filter_type", {}, "invalid_argument", "filter_type"],
    ["an unknown filter_type", { filter_type: "everything" }, "invalid_argument", "filter_type"],
    ["`node` without node_id", { filter_type: "node" }, "invalid_argument", "node_id"],
    ["`node` with node_id 0", { filter_type: "node", node_id: "0" }, "invalid_argument", "node_id"],
    ["`node` with an unknown node", { filter_type: "node", node_id: "987654321987" }, "not_found", "987654321987"],
    ["`semantic` with an empty query_text", { filter_type: "semantic", query_text: "" }, "invalid_argument", "query_text"],
    ["`semantic` with a blank query_text", { filter_type: "semantic", query_text: "   " }, "invalid_argument", "query_text"],
    ["`session` without session_id", { filter_type: "session" }, "invalid_argument", "session_id"],
  ])("rejects %s before the stream opens", async (_label, request, code, mention) => {
    const error = await subscribeError(transport, request);
    expect(error.code).toBe(code);
    expect(error.message).toContain(mention);
    if (transport === "sse") expect(error.status).toBe(code === "not_found" ? 404 : 400);
    expect((await unary.call(LIST, {}, server.adminKey)).body["total"]).toBe(0);
  });

  it("a slow subscriber neither stalls writers nor other subscribers; it is ended with a clear final error", async () => {
    const run = name("slow-run");
    const slow = await subscribe(transport, { filter_type: "all", run_id: run });
    const fast = await subscribe(transport, { filter_type: "all", run_id: run });
    slow.pause();
    // Large metadata fills the transport's buffers quickly, so the server-side queue is what overflows.
    const padding = "x".repeat(2048);
    const batches = 15;
    const perBatch = 1000;
    const started = Date.now();
    for (let b = 0; b < batches; b++) {
      const nodes = Array.from({ length: perBatch }, (_, i) => ({ run_id: run, text: `slow node ${b}-${i}`, metadata_json: JSON.stringify({ padding }) }));
      await rest("POST", "/v2/core/batch_insert", alice, { nodes });
      // A subscriber that keeps up receives every event while the slow one is stuck.
      for (let n = 0; n < perBatch; n++) expect((await fast.inbox.next())["type"]).toBe("node.inserted");
    }
    const writeMs = Date.now() - started;
    // The server gives up on the slow one rather than buffer without bound: it leaves the list at once.
    await eventually(async () => !((await unary.call(LIST, {}, alice)).body["subscription_ids"] as string[]).includes(slow.id), "the slow subscriber to be ended");
    expect((await unary.call(LIST, {}, alice)).body["subscription_ids"]).toEqual([fast.id]);
    slow.resume();
    let delivered = 0;
    for (;;) {
      try {
        await slow.inbox.next();
        delivered++;
      } catch {
        break;
      }
    }
    expect(delivered).toBeLessThan(batches * perBatch);
    expect(await slow.inbox.ended).toBe("resource_exhausted");
    expect(slow.inbox.endMessage).toContain("fell more than 10000 events behind");
    expect(writeMs).toBeLessThan(20_000);
  }, 60_000);
});

describe("policy", () => {
  let closed: TestServer;
  let key: string;
  beforeAll(async () => {
    closed = await startTestServer({ SERVICE_CORE_ALLOW_ALL: "true" });
    key = await createUser(closed.baseUrl, closed.adminKey, "carol");
  });
  afterAll(async () => closed.close());

  it.each(["rest", "grpc"] as const)("the three pubsub routes answer 403 naming SERVICE_CORE_ENABLE_DIRECT_PUBSUB when it is off (%s)", async (transport) => {
    const caller = callerFor(transport, closed.baseUrl, closed.port);
    try {
      for (const [rpc, request] of [[LIST, {}], [UNSUBSCRIBE, { subscription_id: "sub_x" }]] as const) {
        const result = await caller.call(rpc, request, key);
        expect(result.code).toBe("permission_denied");
        expect(result.message).toContain("SERVICE_CORE_ENABLE_DIRECT_PUBSUB");
        if (transport === "rest") expect(result.status).toBe(403);
      }
      if (transport === "rest") {
        const response = await fetch(`${closed.baseUrl}/v2/core/pubsub/subscribe`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ filter_type: "all" }),
        });
        expect(response.status).toBe(403);
        const body = (await response.json()) as { code: string; message: string };
        expect(body.code).toBe("permission_denied");
        expect(body.message).toContain("SERVICE_CORE_ENABLE_DIRECT_PUBSUB");
      } else {
        const call = grpcStream(closed.port, SUBSCRIBE, { filter_type: "all" }, key);
        const error = await new Promise<{ code: number; details: string }>((resolve, reject) => {
          call.on("data", () => reject(new Error("a message arrived")));
          call.on("error", resolve);
        });
        expect(GRPC_CODES[error.code]).toBe("permission_denied");
        expect(error.details).toContain("SERVICE_CORE_ENABLE_DIRECT_PUBSUB");
      }
    } finally {
      caller.close();
    }
  });
});
