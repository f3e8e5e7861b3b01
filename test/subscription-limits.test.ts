// Caps on open subscriptions, over SSE (fetch with a reader) and gRPC server streams (@grpc/grpc-js), for core
// pubsub and control events alike: a key over its cap gets RESOURCE_EXHAUSTED (HTTP 429) naming the limit before the
// stream opens, other keys are unaffected, the server-wide cap holds across keys, and a closed stream frees its slot.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createParser } from "eventsource-parser";
import { callerFor, grpcStream, type JsonObject } from "./harness/callers.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

const PER_KEY = 3;
const TOTAL = 5;
const GRPC_CODES = ["ok", "canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists", "permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range", "unimplemented", "internal", "unavailable", "data_loss", "unauthenticated"];

/** Per-key cases: the server-wide cap is far away. */
let roomy: TestServer;
/** Server-wide cases: room for fewer streams than two keys may hold. */
let tight: TestServer;

beforeAll(async () => {
  const env = { SERVICE_CORE_ENABLE_DIRECT_PUBSUB: "true", SERVICE_MAX_SUBSCRIPTIONS_PER_KEY: String(PER_KEY) };
  [roomy, tight] = await Promise.all([startTestServer(env), startTestServer({ ...env, SERVICE_MAX_SUBSCRIPTIONS: String(TOTAL) })]);
});
afterAll(async () => {
  await Promise.all([roomy.close(), tight.close()]);
});

let users = 0;
/** A fresh user's key: each case counts its own keys' slots, whatever earlier cases' streams the server still holds. */
const freshKey = (server: TestServer): Promise<string> => createUser(server.baseUrl, server.adminKey, `user${++users}`);

/** A subscription stream over one transport: open with its first message read, or refused before it opened. */
type Opened =
  | { readonly ok: true; close(): void; readonly ended: Promise<void> }
  | { readonly ok: false; readonly code: string; readonly message: string; readonly status: number | undefined };

interface Stream {
  readonly label: string;
  open(server: TestServer, key: string): Promise<Opened>;
}

/** Reads an SSE response until its first event; the stream stays open until `close`. */
async function sseOpened(response: Response, abort: AbortController): Promise<Opened> {
  if (response.status !== 200) {
    const body = (await response.json()) as { code: string; message: string };
    return { ok: false, code: body.code, message: body.message, status: response.status };
  }
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let first: JsonObject | undefined;
  const parser = createParser({ onEvent: (event) => (first ??= JSON.parse(event.data) as JsonObject) });
  while (first === undefined) {
    const { value, done } = await reader.read();
    if (done) throw new Error("stream ended before its first event");
    parser.feed(decoder.decode(value, { stream: true }));
  }
  expect(first["type"]).toBe("subscribed");
  const ended = (async () => {
    try {
      while (!(await reader.read()).done);
    } catch {
      // aborted by close()
    }
  })();
  return { ok: true, close: () => abort.abort(), ended };
}

function grpcOpened(server: TestServer, rpc: string, request: JsonObject, key: string): Promise<Opened> {
  const call = grpcStream(server.port, rpc, request, key);
  return new Promise((resolve) => {
    const ended = new Promise<void>((done) => call.on("close", () => done()));
    call.once("data", (message: JsonObject) => {
      expect(message["type"]).toBe("subscribed");
      resolve({ ok: true, close: () => call.cancel(), ended });
    });
    call.on("error", (e: { code: number; details: string }) => resolve({ ok: false, code: GRPC_CODES[e.code] ?? "unknown", message: e.details, status: undefined }));
  });
}

const STREAMS: readonly Stream[] = [
  {
    label: "core pubsub over SSE",
    async open(server, key) {
      const abort = new AbortController();
      const response = await fetch(`${server.baseUrl}/v2/core/pubsub/subscribe`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ filter_type: "all" }),
        signal: abort.signal,
      });
      return sseOpened(response, abort);
    },
  },
  {
    label: "core pubsub over gRPC",
    open: (server, key) => grpcOpened(server, "engram.v2.CoreService/SubscribeCoreEvents", { filter_type: "all" }, key),
  },
  {
    label: "control events over SSE",
    async open(server, key) {
      const abort = new AbortController();
      const response = await fetch(`${server.baseUrl}/v2/control/events/subscribe?run_id=limits`, {
        headers: { authorization: `Bearer ${key}` },
        signal: abort.signal,
      });
      return sseOpened(response, abort);
    },
  },
  {
    label: "control events over gRPC",
    open: (server, key) => grpcOpened(server, "engram.v2.EventsService/Subscribe", { run_id: "limits" }, key),
  },
];

type Open = Extract<Opened, { ok: true }>;
type Refused = Extract<Opened, { ok: false }>;

const open: Open[] = [];

async function mustOpen(stream: Stream, server: TestServer, key: string): Promise<Open> {
  const opened = await stream.open(server, key);
  if (!opened.ok) throw new Error(`${stream.label} refused: ${opened.code} ${opened.message}`);
  open.push(opened);
  return opened;
}

async function refused(stream: Stream, server: TestServer, key: string): Promise<Refused> {
  const opened = await stream.open(server, key);
  if (opened.ok) {
    open.push(opened);
    throw new Error(`${stream.label} opened over the cap`);
  }
  return opened;
}

/** Polls a bounded number of times: the server notices a closed stream asynchronously, so no fixed sleep decides. */
async function eventually<T>(attempt: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const result = await attempt();
    if (result !== undefined) return result;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * Opens a stream once a slot is free. Each refused attempt answers at once with RESOURCE_EXHAUSTED, so this polls
 * the server's own count of open subscriptions (control events have no list route to poll).
 */
async function openWhenFree(stream: Stream, server: TestServer, key: string): Promise<Open> {
  return eventually(async () => {
    const opened = await stream.open(server, key);
    if (!opened.ok) {
      expect(opened.code).toBe("resource_exhausted");
      return undefined;
    }
    open.push(opened);
    return opened;
  }, `${stream.label}: a slot to be freed`);
}

/** How many core subscriptions the key's user holds, as the list route answers. */
async function coreSubscriptionsOf(server: TestServer, key: string): Promise<number> {
  const list = await callerFor("rest", server.baseUrl, server.port).call("engram.v2.CoreService/ListCoreSubscriptions", {}, key);
  return (list.body["subscription_ids"] as unknown[]).length;
}

afterEach(async () => {
  for (const stream of open.splice(0)) stream.close();
});

describe.each(STREAMS)("$label", (stream) => {
  it(`answers a key's subscription beyond ${PER_KEY} RESOURCE_EXHAUSTED (429) naming the limit; another key is unaffected`, async () => {
    const [alice, bob] = await Promise.all([freshKey(roomy), freshKey(roomy)]);
    for (let i = 0; i < PER_KEY; i++) await mustOpen(stream, roomy, alice);
    const over = await refused(stream, roomy, alice);
    expect(over.code).toBe("resource_exhausted");
    expect(over.message).toContain(`SERVICE_MAX_SUBSCRIPTIONS_PER_KEY=${PER_KEY}`);
    if (over.status !== undefined) expect(over.status).toBe(429);
    // A refusal takes no slot: alice is still refused, and bob opens as many as his own cap.
    expect((await refused(stream, roomy, alice)).code).toBe("resource_exhausted");
    for (let i = 0; i < PER_KEY; i++) await mustOpen(stream, roomy, bob);
  });

  it("frees a slot when a stream closes, and only one", async () => {
    const alice = await freshKey(roomy);
    const streams: Open[] = [];
    for (let i = 0; i < PER_KEY; i++) streams.push(await mustOpen(stream, roomy, alice));
    streams[0]?.close();
    await openWhenFree(stream, roomy, alice);
    expect((await refused(stream, roomy, alice)).code).toBe("resource_exhausted");
  });

  it(`holds the server-wide cap of ${TOTAL} across keys`, async () => {
    const [alice, bob, carol] = await Promise.all([freshKey(tight), freshKey(tight), freshKey(tight)]);
    // Streams of earlier cases may still be closing on the server: wait for their slots rather than fail.
    const held: Open[] = [];
    for (let i = 0; i < PER_KEY; i++) held.push(await openWhenFree(stream, tight, alice));
    for (let i = PER_KEY; i < TOTAL; i++) held.push(await openWhenFree(stream, tight, bob));
    const full = await refused(stream, tight, carol);
    expect(full.code).toBe("resource_exhausted");
    expect(full.message).toContain(`SERVICE_MAX_SUBSCRIPTIONS=${TOTAL}`);
    if (full.status !== undefined) expect(full.status).toBe(429);
    held[0]?.close();
    await openWhenFree(stream, tight, carol);
  });
});

describe("core and control subscriptions", () => {
  it("are counted apart, and the list route sees a closed core stream go", async () => {
    const [core, control] = [STREAMS[0], STREAMS[2]] as [Stream, Stream];
    const alice = await freshKey(roomy);
    const cores: Open[] = [];
    for (let i = 0; i < PER_KEY; i++) cores.push(await mustOpen(core, roomy, alice));
    for (let i = 0; i < PER_KEY; i++) await mustOpen(control, roomy, alice);
    expect(await coreSubscriptionsOf(roomy, alice)).toBe(PER_KEY);
    cores[0]?.close();
    await eventually(async () => ((await coreSubscriptionsOf(roomy, alice)) === PER_KEY - 1 ? true : undefined), "the closed core stream to be removed");
    await mustOpen(core, roomy, alice);
    expect((await refused(control, roomy, alice)).code).toBe("resource_exhausted");
  });
});
