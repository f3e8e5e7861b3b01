// Control sessions over REST, Connect and gRPC: create → active, get (phase, ingest count, last activity), close →
// closing → closed with a final checkpoint and an optional reflection committed together; the refusals (closing
// twice, a second session on a run, unknown sessions, writes into a closed session's run), two-user isolation, the
// session events, all or nothing under injected write faults, and the @mubit-ai/sdk's init-style createSession.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@mubit-ai/sdk";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { TRANSPORTS, callerFor, connectCaller, grpcStream, restCaller, type Caller, type CallResult, type JsonObject, type TransportName } from "./harness/callers.js";
import { RPC, expectInvalid, ingestAndWait, ok } from "./harness/memory.js";

const S = {
  create: "engram.v2.SessionsService/CreateControlSession",
  get: "engram.v2.SessionsService/GetControlSession",
  close: "engram.v2.SessionsService/CloseControlSession",
} as const;
const REFLECT = "engram.v2.LearningService/Reflect";
const OUTCOME = "engram.v2.LearningService/RecordOutcome";
const STEP = "engram.v2.LearningService/RecordStepOutcome";
const APPEND = "engram.v2.MemoryService/AppendActivity";
const ENV = { SERVICE_EMBEDDER: "hashed" };

let server: TestServer;
let alice: string;
let bob: string;
const callers = new Map<TransportName, Caller>();
/** Control events of alice's and bob's streams, in order. */
const events: Record<string, JsonObject[]> = { alice: [], bob: [] };
const waiters: (() => void)[] = [];
const cancels: (() => void)[] = [];

function on(transport: TransportName): Caller {
  let caller = callers.get(transport);
  if (caller === undefined) {
    caller = callerFor(transport, server.baseUrl, server.port);
    callers.set(transport, caller);
  }
  return caller;
}

async function subscribe(name: string, key: string): Promise<void> {
  const stream = grpcStream(server.port, "engram.v2.EventsService/Subscribe", {}, key);
  stream.on("data", (event: JsonObject) => {
    events[name]?.push(event);
    for (const wake of waiters.splice(0)) wake();
  });
  stream.on("error", () => undefined);
  cancels.push(() => stream.cancel());
  await untilEvent(name, (e) => e["type"] === "subscribed");
}

async function untilEvent(name: string, match: (e: JsonObject) => boolean, from = 0): Promise<JsonObject> {
  for (;;) {
    const found = (events[name] ?? []).slice(from).find(match);
    if (found !== undefined) return found;
    await new Promise<void>((resolve) => waiters.push(resolve));
  }
}

beforeAll(async () => {
  server = await startTestServer(ENV);
  alice = await createUser(server.baseUrl, server.adminKey, "alice");
  bob = await createUser(server.baseUrl, server.adminKey, "bob");
  await subscribe("alice", alice);
  await subscribe("bob", bob);
});

afterAll(async () => {
  for (const cancel of cancels) cancel();
  for (const caller of callers.values()) caller.close();
  await server.close();
});

function sessionOf(body: JsonObject): JsonObject {
  return body["session"] as JsonObject;
}

/** A refusal with its code, and over REST and Connect its HTTP status. */
function expectRefused(r: CallResult, code: string, status: number, text?: string): void {
  expect(r.code, r.message).toBe(code);
  if (r.status !== undefined) expect(r.status).toBe(status);
  if (text !== undefined) expect(r.message).toContain(text);
}

describe.each(TRANSPORTS)("over %s", (transport) => {
  const run = `cs-${transport}`;

  it("create → active; get counts the run's entries written since; close → closed with a final checkpoint; every invalid transition refused", async () => {
    const c = on(transport);
    // Entries the run held before the session are not counted.
    await ok(c, RPC.remember, { session_id: run, content: "Written before the session opened." }, alice);
    const created = sessionOf(await ok(c, S.create, { run_id: run, agent_id: "planner", description: "fix the deploy" }, alice));
    expect(created).toMatchObject({ session_id: run, run_id: run, agent_id: "planner", phase: "active", status: "active", description: "fix the deploy", ingest_count: 0, closed_at: "", final_checkpoint_id: "" });
    expect(created["last_activity_at"]).toBe(created["created_at"]);
    expect(Date.parse(String(created["created_at"]))).not.toBeNaN();

    // A second session on the run, active or closed, is a conflict.
    expectRefused(await c.call(S.create, { run_id: run }, alice), "already_exists", 409, run);

    await ok(c, RPC.remember, { session_id: run, content: "Error: the deploy failed because the health check timed out." }, alice);
    await ingestAndWait(c, alice, run, [{ text: "Raised the readiness delay to 60s; the deploy succeeded." }, { text: "Deploys go out on Tuesdays." }]);
    await ok(c, RPC.batchInsert, { run_id: run, items: [{ text: "The staging cluster has three nodes." }] }, alice);
    const active = sessionOf(await ok(c, S.get, { session_id: run }, alice));
    expect(active).toMatchObject({ phase: "active", ingest_count: 4 });
    expect(Date.parse(String(active["last_activity_at"]))).toBeGreaterThanOrEqual(Date.parse(String(created["created_at"])));

    const closed = await ok(c, S.close, { session_id: run }, alice);
    expect(closed).toMatchObject({ success: true, reflected: false, lessons_extracted: 0 });
    const session = sessionOf(closed);
    expect(session).toMatchObject({ phase: "closed", status: "closed", ingest_count: 4 });
    expect(String(closed["checkpoint_id"])).toMatch(/^chk_/);
    expect(session["final_checkpoint_id"]).toBe(closed["checkpoint_id"]);
    expect(Date.parse(String(session["closed_at"]))).toBeGreaterThanOrEqual(Date.parse(String(created["created_at"])));

    // The final checkpoint holds the summary and the run's recent context, oldest first.
    const checkpoint = await ok(c, RPC.dereference, { reference_id: String(closed["checkpoint_id"]) }, alice);
    const text = String(checkpoint["content"]);
    expect(text).toContain(`Control session ${run} closed`);
    expect(text).toContain("4 entries written during it");
    expect(text.indexOf("health check timed out")).toBeLessThan(text.indexOf("three nodes"));

    // Closed is final: closing again is a conflict, and get keeps answering the same.
    expectRefused(await c.call(S.close, { session_id: run }, alice), "aborted", 409, "already closed");
    expectRefused(await c.call(S.close, { session_id: run, reflect_on_close: true }, alice), "aborted", 409);
    expect(sessionOf(await ok(c, S.get, { session_id: run }, alice))).toEqual(session);
    expectRefused(await c.call(S.create, { run_id: run }, alice), "already_exists", 409);
  });

  it("new memory into a closed session's run is refused with 409 on every write route; reads, reflect and outcomes stay open", async () => {
    const c = on(transport);
    const refusals: [string, JsonObject][] = [
      [RPC.remember, { session_id: run, content: "too late" }],
      [RPC.ingest, { run_id: run, items: [{ text: "too late" }] }],
      [RPC.batchInsert, { run_id: run, items: [{ text: "too late" }] }],
      [RPC.archive, { run_id: run, content: "too late" }],
      [RPC.checkpoint, { run_id: run, context_snapshot: "too late" }],
      [APPEND, { run_id: run, activity: { type: "tool_call", payload: "{}" } }],
      [STEP, { run_id: run, step_id: "late", outcome: "success" }],
    ];
    for (const [rpc, request] of refusals) expectRefused(await c.call(rpc, request, alice), "aborted", 409, "control session is closed");
    expect(sessionOf(await ok(c, S.get, { session_id: run }, alice))["ingest_count"]).toBe(4);
    const answer = await ok(c, RPC.query, { run_id: run, query: "How many nodes does the staging cluster have?" }, alice);
    expect(JSON.stringify(answer["evidence"])).toContain("three nodes");
    await ok(c, REFLECT, { run_id: run, lessons: [{ content: `Raise the readiness delay before deploying (${transport}).`, lesson_type: "success" }] }, alice);
    await ok(c, OUTCOME, { run_id: run, outcome: "success" }, alice);
    // Another run, and another owner's run of the same name, are unaffected.
    await ok(c, RPC.remember, { session_id: `${run}-other`, content: "still open" }, alice);
    await ok(c, RPC.remember, { session_id: run, content: "bob's own run" }, bob);
  });

  it("validates ids, answers 404 for unknown sessions, generates a run id when none is given", async () => {
    const c = on(transport);
    expectInvalid(await c.call(S.get, { session_id: "" }, alice), "session_id");
    expectInvalid(await c.call(S.close, { session_id: " " }, alice), "session_id");
    expectInvalid(await c.call(S.create, { run_id: "x".repeat(257) }, alice), "run_id");
    expectInvalid(await c.call(S.create, { agent_id: "a".repeat(257) }, alice), "agent_id");
    // The closed-session check of write routes refuses an id that cannot be a key as the route would.
    expectInvalid(await c.call(RPC.remember, { session_id: "s".repeat(5000), content: "x" }, alice), "session_id");
    expectInvalid(await c.call(RPC.ingest, { run_id: "run\u0000id", items: [{ text: "x" }] }, alice), "run_id");
    expectRefused(await c.call(S.get, { session_id: "no-such-session" }, alice), "not_found", 404);
    expectRefused(await c.call(S.close, { session_id: "no-such-session" }, alice), "not_found", 404);
    const generated = sessionOf(await ok(c, S.create, {}, alice));
    expect(String(generated["session_id"])).toMatch(/^run_[a-z0-9]{24}$/);
    expect(generated).toMatchObject({ run_id: generated["session_id"], agent_id: "default", phase: "active" });
  });
});

describe("closing with reflection", () => {
  it("reflects on the run's evidence (not on the final checkpoint) and commits the lessons with the close", async () => {
    const c = on("connect");
    const run = "cs-reflect";
    await ok(c, S.create, { run_id: run, agent_id: "builder" }, alice);
    await ingestAndWait(c, alice, run, [
      { text: "Error: npm install failed with EACCES on the cache directory.", entry_type: "trace" },
      { text: "Fixed by pointing npm_config_cache to a writable directory; install succeeded.", entry_type: "trace" },
    ]);
    await ok(c, STEP, { run_id: run, step_id: "install", outcome: "failure", directive_hint: "Set npm_config_cache to a writable directory before npm install" }, alice);
    const from = events["alice"]?.length ?? 0;
    const closed = await ok(c, S.close, { session_id: run, reflect_on_close: true }, alice);
    expect(closed).toMatchObject({ success: true, reflected: true });
    expect(Number(closed["lessons_extracted"])).toBeGreaterThan(0);
    expect(sessionOf(closed)).toMatchObject({ phase: "closed", ingest_count: 2 });
    const lessons = await ok(c, "engram.v2.LearningService/ListLessons", { run_id: run }, alice);
    expect((lessons["lessons"] as JsonObject[]).length).toBe(closed["lessons_extracted"]);
    // Every lesson's lineage is the run's evidence, never the checkpoint written with it.
    expect(JSON.stringify(lessons)).not.toContain(String(closed["checkpoint_id"]).replace("chk_", "ent_"));
    // Events: the reflection's, then the session's close, in commit order.
    const closedEvent = await untilEvent("alice", (e) => e["type"] === "session.closed" && e["run_id"] === run, from);
    const types = (events["alice"] ?? []).slice(from).filter((e) => e["run_id"] === run).map((e) => String(e["type"]));
    expect(types.indexOf("reflection.completed")).toBeLessThan(types.indexOf("session.closed"));
    expect(JSON.parse(String(closedEvent["payload"]))).toMatchObject({ session_id: run, checkpoint_id: closed["checkpoint_id"], reflected: true, ingest_count: 2 });
  });
});

describe("isolation", () => {
  it("another user's session is invisible: get and close answer 404, and the same run id is theirs to use", async () => {
    const c = on("rest");
    const run = "cs-shared-name";
    const aliceFrom = events["alice"]?.length ?? 0;
    const bobFrom = events["bob"]?.length ?? 0;
    await ok(c, S.create, { run_id: run, agent_id: "alice-agent" }, alice);
    expectRefused(await c.call(S.get, { session_id: run }, bob), "not_found", 404);
    expectRefused(await c.call(S.close, { session_id: run }, bob), "not_found", 404);
    await ok(c, RPC.remember, { session_id: run, content: "bob writes into his own run of that name" }, bob);
    const bobs = sessionOf(await ok(c, S.create, { run_id: run, agent_id: "bob-agent" }, bob));
    expect(bobs).toMatchObject({ agent_id: "bob-agent", ingest_count: 0 });
    await ok(c, S.close, { session_id: run }, bob);
    // Bob's close left alice's session active and her writes accepted.
    expect(sessionOf(await ok(c, S.get, { session_id: run }, alice))).toMatchObject({ phase: "active", agent_id: "alice-agent" });
    await ok(c, RPC.remember, { session_id: run, content: "alice still writes" }, alice);
    expect(sessionOf(await ok(c, S.get, { session_id: run }, alice))["ingest_count"]).toBe(1);
    // Each stream carries its owner's session events only.
    await untilEvent("bob", (e) => e["type"] === "session.closed" && e["run_id"] === run, bobFrom);
    await untilEvent("alice", (e) => e["type"] === "entry.created" && e["run_id"] === run, aliceFrom);
    const aliceSession = (events["alice"] ?? []).slice(aliceFrom).filter((e) => String(e["type"]).startsWith("session."));
    expect(aliceSession.map((e) => [e["type"], JSON.parse(String(e["payload"]))["agent_id"]])).toEqual([["session.created", "alice-agent"]]);
    const bobSession = (events["bob"] ?? []).slice(bobFrom).filter((e) => String(e["type"]).startsWith("session."));
    expect(bobSession.map((e) => e["type"])).toEqual(["session.created", "session.closed"]);
  });
});

describe("all or nothing", () => {
  let attempt = 0;

  /** Writes a marker and waits for its event: every event published before it has then been received. */
  let barriers = 0;
  async function eventBarrier(): Promise<number> {
    const from = events["alice"]?.length ?? 0;
    // A text of its own each time: a repeated one would be merged with the last (consolidation), an event more.
    await ok(connectCaller(server.baseUrl), RPC.remember, { session_id: "cs-barriers", content: `barrier ${++barriers}` }, alice);
    await untilEvent("alice", (e) => e["type"] === "entry.created" && e["run_id"] === "cs-barriers", from);
    return events["alice"]?.length ?? 0;
  }

  const cases: { name: string; setup: () => Promise<string>; call: (run: string) => [string, JsonObject] }[] = [
    { name: "create", setup: () => Promise.resolve(`cs-atom-create-${++attempt}`), call: (run) => [S.create, { run_id: run, agent_id: "a" }] },
    {
      name: "close",
      setup: async () => {
        const run = `cs-atom-close-${++attempt}`;
        await ok(connectCaller(server.baseUrl), S.create, { run_id: run }, alice);
        await ok(connectCaller(server.baseUrl), RPC.remember, { session_id: run, content: "Something worth keeping." }, alice);
        return run;
      },
      call: (run) => [S.close, { session_id: run }],
    },
    {
      name: "close with reflection",
      setup: async () => {
        const run = `cs-atom-reflect-${++attempt}`;
        const c = connectCaller(server.baseUrl);
        await ok(c, S.create, { run_id: run }, alice);
        await ok(c, RPC.remember, { session_id: run, content: `Error: the build ${attempt} failed because the disk was full.` }, alice);
        await ok(c, STEP, { run_id: run, step_id: "build", outcome: "failure", directive_hint: `Prune docker images before build ${attempt}` }, alice);
        return run;
      },
      call: (run) => [S.close, { session_id: run, reflect_on_close: true }],
    },
  ];

  for (const c of cases) {
    it(`${c.name}: a failure at any of its writes leaves store, session and events as they were`, async () => {
      const faults = server.engram.testHooks.writeFaults;
      const connect = connectCaller(server.baseUrl);
      for (let nth = 1; ; nth++) {
        const run = await c.setup();
        const before = await eventBarrier();
        const fingerprint = server.engram.testHooks.fingerprint();
        const sessionBefore = await connect.call(S.get, { session_id: run }, alice);
        const [rpc, request] = c.call(run);
        faults.failAt(nth);
        const result = await connect.call(rpc, request, alice);
        const reached = faults.writesSeen >= nth;
        faults.failAt(0);
        if (!reached) {
          expect(result.code, result.message).toBe("ok");
          expect(nth).toBeGreaterThan(1);
          break;
        }
        expect(result.code, `${c.name} failing at write ${nth}`).not.toBe("ok");
        expect(result.message).not.toMatch(/LMDB|lmdb|injected/);
        expect(server.engram.testHooks.fingerprint(), `${c.name}: store changed by a write failing at ${nth}`).toEqual(fingerprint);
        expect(await connect.call(S.get, { session_id: run }, alice)).toEqual(sessionBefore);
        const after = await eventBarrier();
        expect((events["alice"] ?? []).slice(before, after - 1)).toEqual([]);
      }
    });
  }
});

describe("the @mubit-ai/sdk", () => {
  it("init-style createSession, then getSession and closeSession with reflect_on_close", async () => {
    // The Client binds every control operation at run time; its type declarations do not list these three.
    type Ops = Record<"createSession" | "getSession" | "closeSession", (payload: Record<string, unknown>) => Promise<unknown>>;
    const client = new Client({ transport: "http", endpoint: server.baseUrl, api_key: alice });
    const ops = client as unknown as Ops;
    // What init() sends and reads (node_modules/@mubit-ai/sdk/src/init.js).
    const resp = (await ops.createSession({ agent_id: "sdk-agent", auto_register_agent: true })) as { session: JsonObject };
    const session = resp.session;
    const sessionId = String(session["sessionId"] ?? session["session_id"]);
    const runId = String(session["runId"] ?? session["run_id"]);
    expect(sessionId).toMatch(/^run_/);
    expect(runId).toBe(sessionId);
    await client.remember({ session_id: sessionId, content: "The SDK session stored this fact." });
    const got = (await ops.getSession({ session_id: sessionId })) as { session: JsonObject };
    expect(got.session).toMatchObject({ phase: "active", agent_id: "sdk-agent", ingest_count: 1 });
    const closed = (await ops.closeSession({ session_id: sessionId, reflect_on_close: true })) as JsonObject;
    expect(closed).toMatchObject({ success: true, reflected: true, session: { phase: "closed", status: "closed" } });
    await expect(ops.closeSession({ session_id: sessionId })).rejects.toThrow();
    // A client with a run id sends it as the session's run.
    const scoped = new Client({ transport: "http", endpoint: server.baseUrl, api_key: alice, run_id: "cs-sdk-run" });
    const scopedResp = (await (scoped as unknown as Ops).createSession({ agent_id: "sdk-agent" })) as { session: JsonObject };
    expect(scopedResp.session).toMatchObject({ session_id: "cs-sdk-run", run_id: "cs-sdk-run" });
  });
});

/** A chat endpoint that holds every request until released, then answers 500 (reflection falls back to the built-in extractor). */
async function startHeldLlm(): Promise<{ url: string; received: Promise<void>; release: () => void; close: () => Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let received!: () => void;
  const receivedPromise = new Promise<void>((resolve) => (received = resolve));
  const llm = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received();
      void released.then(() => {
        res.writeHead(500, { "content-type": "application/json" });
        res.end("{}");
      });
    });
  });
  await new Promise<void>((resolve) => llm.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(llm.address() as AddressInfo).port}/v1`,
    received: receivedPromise,
    release,
    close: async () => {
      release();
      llm.closeAllConnections();
      await new Promise<void>((resolve) => llm.close(() => resolve()));
    },
  };
}

describe("the closing phase", () => {
  it("while a close reflects: get says closing, writes and a second close get 409; then closed", async () => {
    const llm = await startHeldLlm();
    const held = await startTestServer({ ...ENV, SERVICE_LLM_URL: llm.url });
    try {
      const c = connectCaller(held.baseUrl);
      const run = "cs-closing";
      await ok(c, S.create, { run_id: run }, held.adminKey);
      await ok(c, RPC.remember, { session_id: run, content: "Error: the migration failed on a locked table." }, held.adminKey);
      const closing = c.call(S.close, { session_id: run, reflect_on_close: true }, held.adminKey);
      await llm.received;
      expect(sessionOf(await ok(c, S.get, { session_id: run }, held.adminKey))).toMatchObject({ phase: "closing", status: "closing", closed_at: "" });
      expectRefused(await c.call(RPC.remember, { session_id: run, content: "during the close" }, held.adminKey), "aborted", 409, "closing");
      expectRefused(await c.call(S.close, { session_id: run }, held.adminKey), "aborted", 409, "being closed");
      llm.release();
      const closed = await closing;
      expect(closed.code, closed.message).toBe("ok");
      expect(closed.body).toMatchObject({ reflected: true, session: { phase: "closed", ingest_count: 1 } });
    } finally {
      await held.close();
      await llm.close();
    }
  });
});

describe("a closed control session's run refuses the coordination and planning writes too", () => {
  it("answers 409 to registering an agent, a handoff, a variable, a concept and a goal", async () => {
    const c = restCaller(server.baseUrl);
    const key = await createUser(server.baseUrl, server.adminKey, "closed-planes");
    await ok(c, "engram.v2.SessionsService/CreateControlSession", { run_id: "closed-planes" }, key);
    await ok(c, "engram.v2.SessionsService/CloseControlSession", { session_id: "closed-planes" }, key);
    const writes: [string, JsonObject][] = [
      ["engram.v2.CoordinationService/RegisterAgent", { run_id: "closed-planes", agent_id: "late" }],
      ["engram.v2.CoordinationService/CreateHandoff", { run_id: "closed-planes", task_id: "t", from_agent_id: "a", to_agent_id: "b", content: "c" }],
      ["engram.v2.PlanningService/SetVariable", { run_id: "closed-planes", name: "n", value_json: "1" }],
      ["engram.v2.PlanningService/DefineConcept", { run_id: "closed-planes", name: "n", definition: "d" }],
      ["engram.v2.PlanningService/AddGoal", { run_id: "closed-planes", description: "d" }],
    ];
    for (const [rpc, request] of writes) {
      const refused = await c.call(rpc, request, key);
      expect([rpc, refused.status, refused.code]).toEqual([rpc, 409, "aborted"]);
    }
  });
});
