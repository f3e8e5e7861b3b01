// Agents in a shared run over REST, Connect and gRPC: registration and re-registration, heartbeats and derived
// liveness (thresholds set through the environment, so no test sleeps), handoffs and the feedback that moves them,
// the lanes and scopes a registered agent writes and reads through, two-user isolation, events, and all-or-nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { TRANSPORTS, callerFor, grpcStream, type Caller, type JsonObject, type TransportName } from "./harness/callers.js";
import { RPC, evidenceOf, expectInvalid, ingestAndWait, ok } from "./harness/memory.js";
import { CallerPool, freshUsers } from "./harness/caller-pool.js";

const C = {
  list: "engram.v2.CoordinationService/ListAgents",
  register: "engram.v2.CoordinationService/RegisterAgent",
  heartbeat: "engram.v2.CoordinationService/AgentHeartbeat",
  handoff: "engram.v2.CoordinationService/CreateHandoff",
  feedback: "engram.v2.CoordinationService/SubmitFeedback",
  handoffs: "engram.v2.CoordinationService/ListHandoffs",
} as const;
const SUBSCRIBE = "engram.v2.EventsService/Subscribe";
const ENV = { SERVICE_EMBEDDER: "hashed" };

let server: TestServer;

const pool = new CallerPool(() => server);
const on = (transport: TransportName): Caller => pool.on(transport);

const fresh = freshUsers(() => server);

async function okCall(c: Caller, rpc: string, request: JsonObject, key: string): Promise<JsonObject> {
  const r = await c.call(rpc, request, key);
  expect(r.code, `${rpc}: ${r.message}`).toBe("ok");
  return r.body;
}

function list(body: JsonObject, field: string): JsonObject[] {
  return (body[field] as JsonObject[] | undefined) ?? [];
}

function strings(value: unknown): string[] {
  return (value as string[] | undefined) ?? [];
}

beforeAll(async () => {
  server = await startTestServer(ENV);
});

afterAll(async () => {
  pool.close();
  await server.close();
});

describe.each(TRANSPORTS)("agents over %s", (transport) => {
  it("register, list, heartbeat and re-register keep one identity with its first registration time", async () => {
    const c = on(transport);
    const key = await fresh("agents");
    const first = await ok(c, C.register, {
      run_id: "r1",
      agent_id: "planner",
      role: "planner",
      capabilities: ["plan", "split"],
      read_scopes: ["fact", "rule"],
      write_scopes: ["fact"],
      shared_memory_lanes: ["knowledge"],
      metadata_json: '{"model":"m1"}',
    }, key);
    expect(first["success"]).toBe(true);
    const agent = first["agent"] as JsonObject;
    expect(agent).toMatchObject({ agent_id: "planner", role: "planner", status: "active", liveness: "active", run_id: "r1", metadata_json: '{"model":"m1"}' });
    expect(strings(agent["shared_memory_lanes"])).toEqual(["knowledge"]);
    expect(strings(agent["read_scopes"])).toEqual(["fact", "rule"]);
    await ok(c, C.register, { run_id: "r1", agent_id: "coder", role: "coder" }, key);

    const beat = await ok(c, C.heartbeat, { run_id: "r1", agent_id: "planner", status: "busy", progress: "step 2 of 5" }, key);
    expect(beat["agent"]).toMatchObject({ status: "busy", progress: "step 2 of 5", liveness: "active" });

    const again = await ok(c, C.register, { run_id: "r1", agent_id: "planner", role: "lead", shared_memory_lanes: ["knowledge", "history"] }, key);
    const updated = again["agent"] as JsonObject;
    expect(updated).toMatchObject({ role: "lead", registered_at: agent["registered_at"], progress: "step 2 of 5" });
    expect(strings(updated["shared_memory_lanes"])).toEqual(["knowledge", "history"]);
    expect(strings(updated["read_scopes"])).toEqual([]);

    const listed = await ok(c, C.list, { run_id: "r1" }, key);
    expect(list(listed, "agents").map((a) => [a["agent_id"], a["role"], a["liveness"]])).toEqual([
      ["coder", "coder", "active"],
      ["planner", "lead", "active"],
    ]);
    expect(list(await ok(c, C.list, { run_id: "other" }, key), "agents")).toEqual([]);

    // Paging by agent id.
    const page1 = await ok(c, C.list, { run_id: "r1", limit: 1 }, key);
    expect(list(page1, "agents").map((a) => a["agent_id"])).toEqual(["coder"]);
    const page2 = await ok(c, C.list, { run_id: "r1", limit: 1, page_token: String(page1["next_page_token"]) }, key);
    expect(list(page2, "agents").map((a) => a["agent_id"])).toEqual(["planner"]);
    expect(page2["next_page_token"] ?? "").toBe("");
    expectInvalid(await c.call(C.list, { run_id: "r2", page_token: String(page1["next_page_token"]) }, key), "page_token");
  });

  it("refuses bad input naming the field, and a heartbeat of an unregistered agent with NOT_FOUND", async () => {
    const c = on(transport);
    const key = await fresh("agents-bad");
    expectInvalid(await c.call(C.register, { run_id: "", agent_id: "a" }, key), "run_id");
    expectInvalid(await c.call(C.register, { run_id: "r", agent_id: " " }, key), "agent_id");
    expectInvalid(await c.call(C.register, { run_id: "r", agent_id: "a", read_scopes: ["gossip"] }, key), "read_scopes");
    expectInvalid(await c.call(C.register, { run_id: "r", agent_id: "a", write_scopes: ["fact", "nope"] }, key), "write_scopes");
    expectInvalid(await c.call(C.register, { run_id: "r", agent_id: "a", shared_memory_lanes: ["ops", ""] }, key), "shared_memory_lanes[1]");
    expectInvalid(await c.call(C.register, { run_id: "r", agent_id: "a", status: "x".repeat(65) }, key), "status");
    expectInvalid(await c.call(C.register, { run_id: "r", agent_id: "a", metadata_json: "[1]" }, key), "metadata_json");
    expectInvalid(await c.call(C.register, { run_id: "r", agent_id: "a".repeat(300) }, key), "agent_id");
    expectInvalid(await c.call(C.list, { run_id: "" }, key), "run_id");
    expectInvalid(await c.call(C.heartbeat, { run_id: "r", agent_id: "" }, key), "agent_id");
    const missing = await c.call(C.heartbeat, { run_id: "r", agent_id: "ghost" }, key);
    expect(missing.code).toBe("not_found");
    if (missing.status !== undefined) expect(missing.status).toBe(404);
    expect(list(await ok(c, C.list, { run_id: "r" }, key), "agents")).toEqual([]);
  });

  it("hands work over, lists the receiver's open handoffs, shows them in its context and moves them by feedback", async () => {
    const c = on(transport);
    const key = await fresh("handoffs");
    const created = await ok(c, C.handoff, {
      run_id: "h1",
      task_id: "T-1",
      from_agent_id: "planner",
      to_agent_id: "reviewer",
      content: "Review the retry change in client.ts",
      requested_action: "review",
      metadata_json: '{"pr":42}',
      entry_ids: ["ent_1"],
    }, key);
    expect(created).toMatchObject({ success: true, status: "pending" });
    const handoffId = String(created["handoff_id"]);
    expect(handoffId).toMatch(/^hof_/);
    await ok(c, C.handoff, { run_id: "h1", task_id: "T-2", from_agent_id: "planner", to_agent_id: "coder", content: "Write the patch" }, key);

    const open = await okCall(c, C.handoffs, { run_id: "h1", to_agent_id: "reviewer", statuses: ["pending"] }, key);
    expect(list(open, "handoffs").map((h) => [h["handoff_id"], h["task_id"], h["requested_action"], h["status"]])).toEqual([[handoffId, "T-1", "review", "pending"]]);
    expect(strings(list(open, "handoffs")[0]?.["entry_ids"])).toEqual(["ent_1"]);

    const context = await ok(c, RPC.context, { run_id: "h1", agent_id: "reviewer" }, key);
    expect(list(context, "pending_handoffs").map((h) => h["handoff_id"])).toEqual([handoffId]);
    expect(list(await ok(c, RPC.context, { run_id: "h1" }, key), "pending_handoffs")).toEqual([]);

    const ack = await ok(c, C.feedback, { run_id: "h1", handoff_id: handoffId, verdict: "acknowledge", from_agent_id: "reviewer" }, key);
    expect(ack).toMatchObject({ success: true, handoff_status: "acknowledged" });
    expect(String(ack["feedback_id"])).toMatch(/^fbk_/);
    expect((await c.call(C.feedback, { run_id: "h1", handoff_id: handoffId, verdict: "acknowledge" }, key)).code).toBe("aborted");
    expect(list(await ok(c, RPC.context, { run_id: "h1", agent_id: "reviewer" }, key), "pending_handoffs").map((h) => h["status"])).toEqual(["acknowledged"]);

    const done = await ok(c, C.feedback, { run_id: "h1", handoff_id: handoffId, verdict: "request_changes", comments: "add a test", from_agent_id: "reviewer" }, key);
    expect(done["handoff_status"]).toBe("changes_requested");
    const closed = await c.call(C.feedback, { run_id: "h1", handoff_id: handoffId, verdict: "approve" }, key);
    expect(closed.code).toBe("aborted");
    if (closed.status !== undefined) expect(closed.status).toBe(409);
    expect(list(await ok(c, RPC.context, { run_id: "h1", agent_id: "reviewer" }, key), "pending_handoffs")).toEqual([]);

    const all = list(await okCall(c, C.handoffs, { run_id: "h1", to_agent_id: "reviewer" }, key), "handoffs");
    expect(all.map((h) => h["status"])).toEqual(["changes_requested"]);
    expect(list(all[0] as JsonObject, "feedback").map((f) => [f["verdict"], f["comments"] ?? ""])).toEqual([
      ["acknowledge", ""],
      ["request_changes", "add a test"],
    ]);

    // Paging with filters; a token is refused with other filters.
    const page1 = await okCall(c, C.handoffs, { run_id: "h1", from_agent_id: "planner", limit: 1 }, key);
    expect(list(page1, "handoffs").map((h) => h["task_id"])).toEqual(["T-1"]);
    const token = String(page1["next_page_token"]);
    const page2 = await okCall(c, C.handoffs, { run_id: "h1", from_agent_id: "planner", limit: 1, page_token: token }, key);
    expect(list(page2, "handoffs").map((h) => h["task_id"])).toEqual(["T-2"]);
    expectInvalid(await c.call(C.handoffs, { run_id: "h1", limit: 1, page_token: token }, key), "page_token");
    expectInvalid(await c.call(C.handoffs, { run_id: "h1", statuses: ["lost"] }, key), "statuses[0]");
  });

  it("refuses bad handoffs and feedback naming the field, and unknown handoffs with NOT_FOUND", async () => {
    const c = on(transport);
    const key = await fresh("handoffs-bad");
    const base = { run_id: "h", task_id: "t", from_agent_id: "a", to_agent_id: "b", content: "c" };
    for (const field of ["run_id", "task_id", "from_agent_id", "to_agent_id", "content"]) {
      expectInvalid(await c.call(C.handoff, { ...base, [field]: "" }, key), field);
    }
    expectInvalid(await c.call(C.handoff, { ...base, requested_action: "dance" }, key), "requested_action");
    expectInvalid(await c.call(C.handoff, { ...base, metadata_json: "nope" }, key), "metadata_json");
    expectInvalid(await c.call(C.feedback, { run_id: "h", handoff_id: "", verdict: "approve" }, key), "handoff_id");
    expectInvalid(await c.call(C.feedback, { run_id: "h", handoff_id: "hof_1", verdict: "" }, key), "verdict");
    expectInvalid(await c.call(C.feedback, { run_id: "h", handoff_id: "hof_1", verdict: "maybe" }, key), "verdict");
    expect((await c.call(C.feedback, { run_id: "h", handoff_id: "hof_zzzz", verdict: "approve" }, key)).code).toBe("not_found");
    expect((await c.call(C.feedback, { run_id: "h", handoff_id: "not-a-handoff", verdict: "approve" }, key)).code).toBe("not_found");
    const created = await ok(c, C.handoff, base, key);
    // Another run of the same owner does not hold it.
    expect((await c.call(C.feedback, { run_id: "elsewhere", handoff_id: String(created["handoff_id"]), verdict: "approve" }, key)).code).toBe("not_found");
  });

  it("a registered agent writes only into its lanes and scopes, and reads only lane-less entries, its lanes and its read scopes", async () => {
    const c = on(transport);
    const key = await fresh("lanes");
    const run = "lanes";
    const [shared, ops, dev, rule] = await ingestAndWait(c, key, run, [
      { text: "Release notes: the shared overview of the rollout.", entry_type: "fact" },
      { text: "Release notes: ops rollout runbook for the canary.", lane: "ops" },
      { text: "Release notes: dev rollout branch naming.", lane: "dev" },
      { text: "Release notes: never roll out on Fridays.", entry_type: "rule" },
    ]);
    await ok(c, C.register, { run_id: run, agent_id: "opsbot", shared_memory_lanes: ["ops"], write_scopes: ["fact", "trace"] }, key);
    await ok(c, C.register, { run_id: run, agent_id: "reader", shared_memory_lanes: ["ops", "dev"], read_scopes: ["rule"] }, key);

    // Writes: ingest refuses the whole request naming the lane; batch insert refuses the item alone.
    const refused = await c.call(RPC.ingest, { run_id: run, agent_id: "opsbot", items: [{ text: "ok", lane: "ops" }, { text: "sneaky", lane: "dev" }] }, key);
    expect(refused.code).toBe("permission_denied");
    if (refused.status !== undefined) expect(refused.status).toBe(403);
    expect(refused.message).toContain("items[1].lane");
    expect(refused.message).toContain('"dev"');
    const typeRefused = await c.call(RPC.ingest, { run_id: run, agent_id: "opsbot", items: [{ text: "a rule", entry_type: "rule" }] }, key);
    expect(typeRefused.code).toBe("permission_denied");
    expect(typeRefused.message).toContain("items[0].entry_type");
    await ingestAndWait(c, key, run, [{ text: "opsbot note in ops", lane: "ops" }, { text: "opsbot note without lane" }], { agent_id: "opsbot" });
    const batch = await ok(c, RPC.batchInsert, { run_id: run, agent_id: "opsbot", items: [{ text: "fine", lane: "ops" }, { text: "not here", lane: "dev" }] }, key);
    const results = list(batch, "item_results");
    expect(results.map((r) => r["success"] ?? false)).toEqual([true, false]);
    expect(String(results[1]?.["error"])).toContain("lane");
    const remember = await c.call(RPC.remember, { session_id: run, agent_id: "opsbot", content: "a lesson", intent: "lesson" }, key);
    expect(remember.code).toBe("permission_denied");
    // An unregistered agent, or none, writes anywhere.
    await ingestAndWait(c, key, run, [{ text: "stranger note in dev", lane: "dev" }], { agent_id: "stranger" });

    // Reads.
    const ids = async (request: JsonObject): Promise<string[]> =>
      evidenceOf(await ok(c, RPC.query, { run_id: run, query: "release notes rollout", limit: 50, ...request }, key)).map((e) => String(e["id"]));
    const everyone = await ids({});
    expect(everyone).toEqual(expect.arrayContaining([shared, ops, dev, rule]));
    const opsView = await ids({ agent_id: "opsbot" });
    expect(opsView).toEqual(expect.arrayContaining([shared, ops, rule]));
    expect(opsView).not.toContain(dev);
    expect(await ids({ agent_id: "opsbot", lane_filter: "dev" })).not.toContain(dev);
    expect((await ids({ agent_id: "reader" })).sort()).toEqual([rule]);
    expect(await ids({ agent_id: "reader", entry_types: ["fact"] })).toEqual([]);
    expect(await ids({ agent_id: "stranger" })).toEqual(everyone);

    const contextIds = async (request: JsonObject): Promise<string[]> =>
      list(await ok(c, RPC.context, { run_id: run, limit: 50, ...request }, key), "sources").map((s) => String(s["id"]));
    for (const query of ["release notes rollout", ""]) {
      const ctx = await contextIds({ query, agent_id: "opsbot" });
      expect(ctx).toEqual(expect.arrayContaining([shared, ops]));
      expect(ctx).not.toContain(dev);
      expect(await contextIds({ query })).toContain(dev);
      expect(await contextIds({ query, agent_id: "reader" })).toEqual([rule]);
    }
    const recall = await ok(c, RPC.recall, { session_id: run, query: "release notes rollout", agent_id: "opsbot", limit: 50 }, key);
    expect(evidenceOf(recall).map((e) => e["id"])).not.toContain(dev);

    // The spec's lane table on lane_filter alone: lane-less entries always, laned ones when the filter is theirs or empty.
    expect(await ids({ lane_filter: "ops" })).toEqual(expect.arrayContaining([shared, ops, rule]));
    expect(await ids({ lane_filter: "ops" })).not.toContain(dev);
    expect(await contextIds({ query: "release notes rollout", lane_filter: "dev" })).not.toContain(ops);
    // Activity and export are the owner's record of the run: every lane, each entry with its lane.
    const activity = list(await ok(c, "engram.v2.MemoryService/ListActivity", { run_id: run, limit: 500 }, key), "entries");
    const lanesById = new Map(activity.map((e) => [String(e["id"]), String(e["lane"])]));
    expect([lanesById.get(shared as string), lanesById.get(ops as string), lanesById.get(dev as string)]).toEqual(["", "ops", "dev"]);
    const exported = String((await ok(c, "engram.v2.MemoryService/ExportActivity", { run_id: run }, key))["content"]);
    const exportedLanes = new Map(
      exported
        .split("\n")
        .filter((line) => line !== "")
        .map((line) => JSON.parse(line) as JsonObject)
        .map((e) => [String(e["id"]), String(e["lane"] ?? "")]),
    );
    expect([exportedLanes.get(shared as string), exportedLanes.get(ops as string), exportedLanes.get(dev as string)]).toEqual(["", "ops", "dev"]);
  });
});

describe("liveness follows the heartbeat thresholds", () => {
  it("reads active, idle or gone by the configured thresholds, and a heartbeat makes an agent active again", async () => {
    for (const [env, expected] of [
      [{ SERVICE_AGENT_IDLE_AFTER_MS: "0", SERVICE_AGENT_GONE_AFTER_MS: "3600000" }, "idle"],
      [{ SERVICE_AGENT_IDLE_AFTER_MS: "0", SERVICE_AGENT_GONE_AFTER_MS: "0" }, "gone"],
      [{}, "active"],
    ] as const) {
      const other = await startTestServer({ ...ENV, ...env });
      const c = callerFor("connect", other.baseUrl, other.port);
      try {
        const registered = await ok(c, C.register, { run_id: "l", agent_id: "a" }, other.adminKey);
        expect((registered["agent"] as JsonObject)["liveness"]).toBe(expected);
        expect(list(await ok(c, C.list, { run_id: "l" }, other.adminKey), "agents").map((a) => a["liveness"])).toEqual([expected]);
      } finally {
        c.close();
        await other.close();
      }
    }
  });
});

describe("isolation and events", () => {
  it("another owner's agents and handoffs are invisible, and events reach only their owner", async () => {
    const c = on("grpc");
    const alice = await fresh("iso-alice");
    const bob = await fresh("iso-bob");
    const streams = { alice: [] as JsonObject[], bob: [] as JsonObject[] };
    const wakers: (() => void)[] = [];
    const cancels: (() => void)[] = [];
    for (const [name, key] of [["alice", alice], ["bob", bob]] as const) {
      const stream = grpcStream(server.port, SUBSCRIBE, { event_types: ["agent.*", "handoff.*", "feedback.*"] }, key);
      stream.on("data", (event: JsonObject) => {
        streams[name].push(event);
        for (const wake of wakers.splice(0)) wake();
      });
      stream.on("error", () => undefined);
      cancels.push(() => stream.cancel());
    }
    const until = async (name: "alice" | "bob", match: (e: JsonObject) => boolean): Promise<JsonObject> => {
      for (;;) {
        const found = streams[name].find(match);
        if (found !== undefined) return found;
        await new Promise<void>((resolve) => wakers.push(resolve));
      }
    };
    try {
      await until("alice", (e) => e["type"] === "subscribed");
      await until("bob", (e) => e["type"] === "subscribed");
      await ok(c, C.register, { run_id: "shared", agent_id: "a1", role: "planner", shared_memory_lanes: ["ops"] }, alice);
      await ok(c, C.heartbeat, { run_id: "shared", agent_id: "a1", status: "busy" }, alice);
      const handoff = await ok(c, C.handoff, { run_id: "shared", task_id: "t", from_agent_id: "a1", to_agent_id: "a2", content: "over to you" }, alice);
      const handoffId = String(handoff["handoff_id"]);

      expect(list(await ok(c, C.list, { run_id: "shared" }, bob), "agents")).toEqual([]);
      expect((await c.call(C.heartbeat, { run_id: "shared", agent_id: "a1" }, bob)).code).toBe("not_found");
      expect((await c.call(C.feedback, { run_id: "shared", handoff_id: handoffId, verdict: "approve" }, bob)).code).toBe("not_found");
      expect(list(await okCall(c, C.handoffs, { run_id: "shared" }, bob), "handoffs")).toEqual([]);
      expect(list(await ok(c, RPC.context, { run_id: "shared", agent_id: "a2" }, bob), "pending_handoffs")).toEqual([]);
      // Bob's agent of the same id is his own: it does not limit Alice's writes, nor hers his.
      await ok(c, C.register, { run_id: "shared", agent_id: "a1", shared_memory_lanes: [] }, bob);
      expect((await c.call(RPC.ingest, { run_id: "shared", agent_id: "a1", items: [{ text: "x", lane: "ops" }] }, alice)).code).toBe("ok");
      expect((await c.call(RPC.ingest, { run_id: "shared", agent_id: "a1", items: [{ text: "x", lane: "ops" }] }, bob)).code).toBe("permission_denied");
      expect(list(await ok(c, C.list, { run_id: "shared" }, alice), "agents").map((a) => a["role"])).toEqual(["planner"]);

      await ok(c, C.feedback, { run_id: "shared", handoff_id: handoffId, verdict: "approve", from_agent_id: "a2" }, alice);
      const registered = await until("alice", (e) => e["type"] === "agent.registered");
      expect(JSON.parse(String(registered["payload"]))).toMatchObject({ agent_id: "a1", role: "planner", shared_memory_lanes: ["ops"], created: true });
      const changed = await until("alice", (e) => e["type"] === "agent.status_changed");
      expect(JSON.parse(String(changed["payload"]))).toMatchObject({ agent_id: "a1", from: "active", to: "busy" });
      const created = await until("alice", (e) => e["type"] === "handoff.created");
      expect(JSON.parse(String(created["payload"]))).toMatchObject({ handoff_id: handoffId, to_agent_id: "a2", status: "pending" });
      const answered = await until("alice", (e) => e["type"] === "feedback.created");
      expect(JSON.parse(String(answered["payload"]))).toMatchObject({ handoff_id: handoffId, verdict: "approve", from: "pending", handoff_status: "approved" });
      expect(answered["run_id"]).toBe("shared");
      // Bob saw only his own registration.
      await until("bob", (e) => e["type"] === "agent.registered");
      expect(streams.bob.filter((e) => e["type"] !== "subscribed").map((e) => e["type"])).toEqual(["agent.registered"]);
      expect(streams.alice.filter((e) => e["type"] !== "subscribed").map((e) => e["type"])).toEqual([
        "agent.registered",
        "agent.status_changed",
        "handoff.created",
        "feedback.created",
      ]);
    } finally {
      for (const cancel of cancels) cancel();
    }
  });
});

describe("all or nothing", () => {
  it("a write failing at any LMDB write leaves no agent, handoff, feedback or event behind", async () => {
    const c = on("connect");
    const key = await fresh("atomic");
    await ok(c, C.register, { run_id: "atom", agent_id: "seed" }, key);
    const seeded = await ok(c, C.handoff, { run_id: "atom", task_id: "t0", from_agent_id: "seed", to_agent_id: "b", content: "seed" }, key);
    const events: JsonObject[] = [];
    const stream = grpcStream(server.port, SUBSCRIBE, { run_id: "atom" }, key);
    let wake: (() => void) | undefined;
    stream.on("data", (event: JsonObject) => {
      events.push(event);
      wake?.();
    });
    stream.on("error", () => undefined);
    const waitFor = async (count: number): Promise<void> => {
      while (events.length < count) await new Promise<void>((resolve) => (wake = resolve));
    };
    try {
      await waitFor(1);
      const cases: [string, JsonObject][] = [
        [C.register, { run_id: "atom", agent_id: "new-agent", shared_memory_lanes: ["ops"] }],
        [C.heartbeat, { run_id: "atom", agent_id: "seed", status: "busy" }],
        [C.handoff, { run_id: "atom", task_id: "t1", from_agent_id: "seed", to_agent_id: "b", content: "handed over" }],
        [C.feedback, { run_id: "atom", handoff_id: String(seeded["handoff_id"]), verdict: "approve" }],
      ];
      const faults = server.engram.testHooks.writeFaults;
      let expectedEvents = 1;
      for (const [rpc, request] of cases) {
        for (let nth = 1; ; nth++) {
          const before = server.engram.testHooks.fingerprint();
          const release = server.engram.testHooks.holdBackground();
          faults.failAt(nth);
          const result = await c.call(rpc, request, key);
          const reached = faults.writesSeen >= nth;
          faults.failAt(0);
          release();
          if (!reached) {
            expect(result.code, `${rpc} without a fault: ${result.message}`).toBe("ok");
            expect(nth, `${rpc} wrote nothing`).toBeGreaterThan(1);
            break;
          }
          expect(result.code, `${rpc} failing at write ${nth}`).not.toBe("ok");
          expect(result.message).not.toMatch(/LMDB|lmdb|injected/);
          expect(server.engram.testHooks.fingerprint(), `${rpc}: store changed by a write failing at ${nth}`).toEqual(before);
        }
        // Exactly one event per route: the successful call's.
        expectedEvents++;
        await waitFor(expectedEvents);
      }
      expect(events.map((e) => e["type"])).toEqual(["subscribed", "agent.registered", "agent.status_changed", "handoff.created", "feedback.created"]);
      const agents = list(await ok(c, C.list, { run_id: "atom" }, key), "agents");
      expect(agents.map((a) => [a["agent_id"], a["status"]])).toEqual([
        ["new-agent", "active"],
        ["seed", "busy"],
      ]);
      expect(list(await ok(c, C.handoffs, { run_id: "atom" }, key), "handoffs").map((h) => [h["task_id"], h["status"], list(h, "feedback").length])).toEqual([
        ["t0", "approved", 1],
        ["t1", "pending", 0],
      ]);
    } finally {
      stream.cancel();
    }
  });
});

describe.each(TRANSPORTS)("write scopes on archive, checkpoint and activity append over %s", (transport) => {
  it("refuse an agent whose write_scopes exclude the entry type, and admit one whose scopes include it", async () => {
    const c = on(transport);
    const key = await fresh("scoped-writes");
    const run = "scoped-writes";
    await ok(c, C.register, { run_id: run, agent_id: "notes-only", write_scopes: ["fact"] }, key);
    await ok(c, C.register, { run_id: run, agent_id: "archivist", write_scopes: ["archive_block", "checkpoint", "trace"] }, key);
    const writes: [string, JsonObject][] = [
      [RPC.archive, { run_id: run, content: "diff --git a/x b/x" }],
      [RPC.checkpoint, { run_id: run, context_snapshot: "the window so far" }],
      ["engram.v2.MemoryService/AppendActivity", { run_id: run, activity: { type: "tool_call", payload: "{}" } }],
    ];
    for (const [rpc, request] of writes) {
      const refused = await c.call(rpc, { ...request, agent_id: "notes-only" }, key);
      expect([rpc, refused.code]).toEqual([rpc, "permission_denied"]);
      await ok(c, rpc, { ...request, agent_id: "archivist" }, key);
      // An agent not registered in the run is not restricted.
      await ok(c, rpc, { ...request, agent_id: "visitor" }, key);
    }
  });
});
