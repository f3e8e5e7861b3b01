// Runs over REST, Connect and gRPC: the caller's run listing (newest activity first, counts by type, agents, links,
// paging, rebuilt at start-up), linking and unlinking (validation, idempotence, events, all or nothing) and what links
// do to query, context and reflect (`include_linked_runs`: one level, the caller's own links only). Another owner's
// run with the same id never shows and is never reached through a link.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { TRANSPORTS, grpcStream, type Caller, type JsonObject, type TransportName } from "./harness/callers.js";
import { RPC, evidenceOf, expectInvalid, idsOf, ok } from "./harness/memory.js";
import { CallerPool } from "./harness/caller-pool.js";

const RUNS = {
  list: "engram.v2.RunsService/ListRuns",
  link: "engram.v2.RunsService/LinkRun",
  unlink: "engram.v2.RunsService/UnlinkRun",
} as const;
const REFLECT = "engram.v2.LearningService/Reflect";
const SUBSCRIBE = "engram.v2.EventsService/Subscribe";
const ENV = { SERVICE_EMBEDDER: "hashed" };

let server: TestServer;
let users = 0;

const pool = new CallerPool(() => server);
const on = (transport: TransportName): Caller => pool.on(transport);

function closeCallers(): void {
  pool.close();
}

async function newUser(name: string): Promise<string> {
  return createUser(server.baseUrl, server.adminKey, `${name}-${++users}`);
}

beforeAll(async () => {
  server = await startTestServer(ENV);
});

afterAll(async () => {
  closeCallers();
  await server.close();
});

/** Stores entries synchronously; returns their ids. */
async function store(c: Caller, key: string, runId: string, items: JsonObject[], agentId = ""): Promise<string[]> {
  const body = await ok(c, RPC.batchInsert, { run_id: runId, agent_id: agentId, items }, key);
  expect(body["success"], String(body["message"])).toBe(true);
  return body["entry_ids"] as string[];
}

interface Listed {
  run_id: string;
  entry_count: number;
  entry_counts: Record<string, number>;
  linked_run_ids: string[];
  agent_ids: string[];
  created_at: string;
  last_activity_at: string;
  session_phase: string;
}

async function listRuns(c: Caller, key: string, request: JsonObject = {}): Promise<{ runs: Listed[]; next: string; total: number }> {
  const body = await ok(c, RUNS.list, request, key);
  return { runs: (body["runs"] ?? []) as unknown as Listed[], next: String(body["next_page_token"] ?? ""), total: Number(body["total_visible"] ?? 0) };
}

/** Every page of the caller's runs, following next_page_token. */
async function allRuns(c: Caller, key: string, limit: number): Promise<Listed[]> {
  const out: Listed[] = [];
  let token = "";
  for (let pages = 0; pages < 100; pages++) {
    const page = await listRuns(c, key, token === "" ? { limit } : { limit, page_token: token });
    expect(page.runs.length).toBeLessThanOrEqual(limit);
    out.push(...page.runs);
    token = page.next;
    if (token === "") return out;
  }
  throw new Error("listing did not end");
}

/** The documented order: newest activity first, then run id. */
function expectListingOrder(runs: readonly Listed[]): void {
  const sorted = [...runs].sort((a, b) => b.last_activity_at.localeCompare(a.last_activity_at) || a.run_id.localeCompare(b.run_id));
  expect(runs.map((r) => r.run_id)).toEqual(sorted.map((r) => r.run_id));
}

describe.each(TRANSPORTS)("runs over %s", (transport) => {
  it("lists the caller's runs newest activity first, with counts by type, agents and links, in pages", async () => {
    const c = on(transport);
    const key = await newUser(`list-${transport}`);
    expect(await listRuns(c, key)).toEqual({ runs: [], next: "", total: 0 });
    await store(c, key, "run-c", [{ text: "The build cache lives on the NFS share." }], "builder");
    await store(c, key, "run-b", [{ text: "Deploys need two approvals.", entry_type: "rule" }, { text: "Staging is in eu-west-1." }], "planner");
    await store(c, key, "run-a", [{ text: "Traces are sampled at ten percent.", entry_type: "trace" }], "observer");
    await store(c, key, "run-a", [{ text: "Alerts go to the ops channel." }], "pager");
    await ok(c, RPC.checkpoint, { run_id: "run-a", context_snapshot: "Working on alert routing.", label: "mid" }, key);

    const first = await listRuns(c, key, { limit: 2 });
    expect(first.total).toBe(3);
    expect(first.runs).toHaveLength(2);
    expect(first.next).not.toBe("");
    const second = await listRuns(c, key, { limit: 2, page_token: first.next });
    expect(second.runs).toHaveLength(1);
    expect(second.next).toBe("");
    const runs = [...first.runs, ...second.runs];
    expect(runs.map((r) => r.run_id)).toEqual(["run-a", "run-b", "run-c"]);
    expectListingOrder(runs);
    const byId = new Map(runs.map((r) => [r.run_id, r]));
    expect(byId.get("run-a")).toMatchObject({ entry_count: 3, entry_counts: { trace: 1, fact: 1, checkpoint: 1 }, agent_ids: ["observer", "pager"], linked_run_ids: [] });
    expect(byId.get("run-b")).toMatchObject({ entry_count: 2, entry_counts: { rule: 1, fact: 1 }, agent_ids: ["planner"] });
    expect(byId.get("run-c")).toMatchObject({ entry_count: 1, entry_counts: { fact: 1 }, agent_ids: ["builder"] });
    for (const run of runs) {
      expect(Date.parse(run.created_at)).toBeLessThanOrEqual(Date.parse(run.last_activity_at));
      expect(run.session_phase).toBe("");
    }

    // A write moves its run to the top; a link shows on the parent.
    await store(c, key, "run-c", [{ text: "The NFS share is mounted read-only on CI." }], "builder");
    await ok(c, RUNS.link, { run_id: "run-c", linked_run_id: "run-b" }, key);
    const after = await allRuns(c, key, 1);
    expectListingOrder(after);
    const moved = after.find((r) => r.run_id === "run-c") as Listed;
    for (const run of after) expect(moved.last_activity_at >= run.last_activity_at).toBe(true);
    expect(moved).toMatchObject({ entry_count: 2, linked_run_ids: ["run-b"] });
    // limit 0 is the default page; a forged or foreign token is refused naming page_token.
    expect((await listRuns(c, key, { limit: 0 })).runs).toHaveLength(3);
    expectInvalid(await c.call(RUNS.list, { page_token: "not a token!" }, key), "page_token");
    expectInvalid(await c.call(RUNS.list, { page_token: Buffer.from('{"t":"x"}').toString("base64url") }, key), "page_token");
  });

  it("link and unlink: both ids required and distinct, idempotent, answered with the parent's links", async () => {
    const c = on(transport);
    const key = await newUser(`link-${transport}`);
    expectInvalid(await c.call(RUNS.link, { run_id: "", linked_run_id: "child" }, key), "run_id");
    expectInvalid(await c.call(RUNS.link, { run_id: "parent", linked_run_id: " " }, key), "linked_run_id");
    expectInvalid(await c.call(RUNS.link, { run_id: "parent", linked_run_id: "parent" }, key), "linked_run_id");
    expectInvalid(await c.call(RUNS.link, { run_id: "parent", linked_run_id: "x".repeat(300) }, key), "linked_run_id");
    expectInvalid(await c.call(RUNS.unlink, { run_id: "parent" }, key), "linked_run_id");
    expectInvalid(await c.call(RUNS.unlink, { linked_run_id: "child" }, key), "run_id");
    expectInvalid(await c.call(RUNS.unlink, { run_id: "same", linked_run_id: "same" }, key), "linked_run_id");

    // Neither run needs data; linking twice changes nothing.
    expect(await ok(c, RUNS.link, { run_id: "parent", linked_run_id: "child-1" }, key)).toMatchObject({ linked: true, scope: { run_id: "parent", linked_run_ids: ["child-1"] } });
    expect(await ok(c, RUNS.link, { run_id: "parent", linked_run_id: "child-2" }, key)).toMatchObject({ linked: true, scope: { linked_run_ids: ["child-1", "child-2"] } });
    expect(await ok(c, RUNS.link, { run_id: "parent", linked_run_id: "child-1" }, key)).toMatchObject({ linked: true, scope: { linked_run_ids: ["child-1", "child-2"] } });
    expect(await ok(c, RUNS.unlink, { run_id: "parent", linked_run_id: "child-1" }, key)).toMatchObject({ unlinked: true, scope: { run_id: "parent", linked_run_ids: ["child-2"] } });
    const again = await ok(c, RUNS.unlink, { run_id: "parent", linked_run_id: "child-1" }, key);
    expect(again["unlinked"] ?? false).toBe(false);
    expect(again["scope"]).toMatchObject({ linked_run_ids: ["child-2"] });
    // Links are one-way: the child has no links of its own.
    const reverse = await ok(c, RUNS.unlink, { run_id: "child-2", linked_run_id: "parent" }, key);
    expect(reverse["unlinked"] ?? false).toBe(false);
  });

  it("include_linked_runs: query and context also read the linked runs, one level deep, until unlinked", async () => {
    const c = on(transport);
    const key = await newUser(`effects-${transport}`);
    const [parentFact] = await store(c, key, "svc", [{ text: "The payments service retries webhooks three times." }]);
    const [childFact] = await store(c, key, "svc-child", [{ text: "The payments webhook secret rotates every ninety days." }]);
    const [grandchildFact] = await store(c, key, "svc-grandchild", [{ text: "The payments webhook endpoint moved to version two." }]);
    await ok(c, RUNS.link, { run_id: "svc", linked_run_id: "svc-child" }, key);
    await ok(c, RUNS.link, { run_id: "svc-child", linked_run_id: "svc-grandchild" }, key);
    const question = { run_id: "svc", query: "payments webhook secret endpoint retries", limit: 20 };

    const plain = await ok(c, RPC.query, question, key);
    expect(plain["consulted_runs"]).toEqual(["svc"]);
    expect(idsOf(evidenceOf(plain))).toEqual([parentFact]);
    const linked = await ok(c, RPC.query, { ...question, include_linked_runs: true }, key);
    expect(linked["consulted_runs"]).toEqual(["svc", "svc-child"]);
    expect(new Set(idsOf(evidenceOf(linked)))).toEqual(new Set([parentFact, childFact]));
    expect(idsOf(evidenceOf(linked))).not.toContain(grandchildFact);

    const contextIds = async (request: JsonObject): Promise<string[]> => idsOf((await ok(c, RPC.context, request, key))["sources"] as JsonObject[]);
    expect(await contextIds({ run_id: "svc", query: "payments webhook" })).toEqual([parentFact]);
    expect(new Set(await contextIds({ run_id: "svc", query: "payments webhook", include_linked_runs: true }))).toEqual(new Set([parentFact, childFact]));
    // Without a query, context lists the newest entries of the run and its linked runs.
    expect(new Set(await contextIds({ run_id: "svc", include_linked_runs: true }))).toEqual(new Set([parentFact, childFact]));

    await ok(c, RUNS.unlink, { run_id: "svc", linked_run_id: "svc-child" }, key);
    const unlinked = await ok(c, RPC.query, { ...question, include_linked_runs: true }, key);
    expect(unlinked["consulted_runs"]).toEqual(["svc"]);
    expect(idsOf(evidenceOf(unlinked))).toEqual([parentFact]);
    expect(await contextIds({ run_id: "svc", query: "payments webhook", include_linked_runs: true })).toEqual([parentFact]);
  });
});

describe("listing after deletions", () => {
  it("a deleted entry leaves the counts and the last activity; a deleted run leaves the listing and its links go", async () => {
    const c = on("grpc");
    const key = await newUser("deletions");
    await store(c, key, "del-old", [{ text: "An older run." }]);
    await store(c, key, "del-run", [{ text: "Releases are cut on Mondays." }], "cutter");
    const before = (await listRuns(c, key)).runs.find((r) => r.run_id === "del-run") as Listed;
    const reflected = await ok(c, REFLECT, { run_id: "del-run", agent_id: "reviewer", lessons: [{ content: "Cut releases before noon on release days." }] }, key);
    const lessonId = String((reflected["lessons"] as JsonObject[])[0]?.["lesson_id"]);
    expect((await listRuns(c, key)).runs.find((r) => r.run_id === "del-run")).toMatchObject({ entry_count: 2, entry_counts: { fact: 1, lesson: 1 }, agent_ids: ["cutter", "reviewer"] });
    await ok(c, "engram.v2.LearningService/DeleteLesson", { lesson_id: lessonId }, key);
    expect((await listRuns(c, key)).runs.find((r) => r.run_id === "del-run")).toEqual(before);
    // Deleting the run removes every link to or from it, in the same transaction.
    await ok(c, RUNS.link, { run_id: "del-old", linked_run_id: "del-run" }, key);
    await ok(c, RUNS.link, { run_id: "del-run", linked_run_id: "del-old" }, key);
    expect(await ok(c, "engram.v2.RunsService/DeleteRun", { run_id: "del-run" }, key)).toMatchObject({ deleted: true });
    const after = await listRuns(c, key);
    expect(after.runs.map((r) => r.run_id)).toEqual(["del-old"]);
    expect(after.runs[0]?.linked_run_ids).toEqual([]);
    expect(after.total).toBe(1);
    const relinked = await ok(c, RUNS.unlink, { run_id: "del-run", linked_run_id: "del-old" }, key);
    expect(relinked["unlinked"] ?? false).toBe(false);
    // A run holding only links is deleted too.
    await ok(c, RUNS.link, { run_id: "links-only", linked_run_id: "del-old" }, key);
    expect(await ok(c, "engram.v2.RunsService/DeleteRun", { run_id: "links-only" }, key)).toMatchObject({ deleted: true });
    expect((await ok(c, RUNS.link, { run_id: "links-only", linked_run_id: "other" }, key))["scope"]).toMatchObject({ linked_run_ids: ["other"] });
  });
});

describe("isolation", () => {
  it("another owner's run with the same id never shows in the listing and is never reached through a link", async () => {
    const alice = await newUser("alice");
    const bob = await newUser("bob");
    for (const transport of TRANSPORTS) {
      const c = on(transport);
      const [aliceFact] = await store(c, alice, `shared-${transport}`, [{ text: "Alice keeps the invoices in the ledger database." }], "alice-agent");
      const [bobChild] = await store(c, bob, `child-${transport}`, [{ text: "Bob keeps the invoices in a spreadsheet." }], "bob-agent");
      await store(c, bob, `shared-${transport}`, [{ text: "Bob's invoices are printed." }], "bob-agent");
      const aliceBefore = await listRuns(c, alice);
      // Bob links his own runs under the shared id: Alice's run with that id does not change, nor do her reads.
      await ok(c, RUNS.link, { run_id: `shared-${transport}`, linked_run_id: `child-${transport}` }, bob);
      const aliceAfter = await listRuns(c, alice);
      expect(aliceAfter).toEqual(aliceBefore);
      expect(aliceAfter.runs.map((r) => r.run_id)).not.toContain(`child-${transport}`);
      const mine = aliceAfter.runs.find((r) => r.run_id === `shared-${transport}`);
      expect(mine).toMatchObject({ entry_count: 1, agent_ids: ["alice-agent"], linked_run_ids: [] });
      const aliceQuery = await ok(c, RPC.query, { run_id: `shared-${transport}`, query: "where are the invoices kept", include_linked_runs: true, limit: 20 }, alice);
      expect(aliceQuery["consulted_runs"]).toEqual([`shared-${transport}`]);
      expect(idsOf(evidenceOf(aliceQuery))).toEqual([aliceFact]);
      // Alice linking the same ids reaches her own (empty) child run, never Bob's.
      await ok(c, RUNS.link, { run_id: `shared-${transport}`, linked_run_id: `child-${transport}` }, alice);
      const linked = await ok(c, RPC.query, { run_id: `shared-${transport}`, query: "where are the invoices kept", include_linked_runs: true, limit: 20 }, alice);
      expect(linked["consulted_runs"]).toEqual([`shared-${transport}`, `child-${transport}`]);
      expect(idsOf(evidenceOf(linked))).toEqual([aliceFact]);
      expect(idsOf(evidenceOf(linked))).not.toContain(bobChild);
      // Unlinking is per owner too: Alice's unlink leaves Bob's link in place.
      await ok(c, RUNS.unlink, { run_id: `shared-${transport}`, linked_run_id: `child-${transport}` }, alice);
      const bobRuns = await listRuns(c, bob);
      expect(bobRuns.runs.find((r) => r.run_id === `shared-${transport}`)).toMatchObject({ linked_run_ids: [`child-${transport}`], agent_ids: ["bob-agent"] });
      const bobQuery = await ok(c, RPC.query, { run_id: `shared-${transport}`, query: "where are the invoices kept", include_linked_runs: true, limit: 20 }, bob);
      expect(idsOf(evidenceOf(bobQuery))).toContain(bobChild);
      expect(idsOf(evidenceOf(bobQuery))).not.toContain(aliceFact);
    }
  });
});

describe("events", () => {
  it("run.linked and run.unlinked reach the owner's stream only, once per change", async () => {
    const alice = await newUser("events-alice");
    const bob = await newUser("events-bob");
    const received = new Map<string, JsonObject[]>([
      [alice, []],
      [bob, []],
    ]);
    const wakers: (() => void)[] = [];
    const streams = [alice, bob].map((key) => {
      const stream = grpcStream(server.port, SUBSCRIBE, {}, key);
      stream.on("data", (event: JsonObject) => {
        received.get(key)?.push(event);
        for (const wake of wakers.splice(0)) wake();
      });
      stream.on("error", () => undefined);
      return stream;
    });
    const until = async (key: string, match: (e: JsonObject) => boolean): Promise<JsonObject> => {
      for (;;) {
        const found = received.get(key)?.find(match);
        if (found !== undefined) return found;
        await new Promise<void>((resolve) => wakers.push(resolve));
      }
    };
    try {
      await until(alice, (e) => e["type"] === "subscribed");
      await until(bob, (e) => e["type"] === "subscribed");
      const rest = on("rest");
      await ok(rest, RUNS.link, { run_id: "ev-parent", linked_run_id: "ev-child" }, alice);
      await ok(rest, RUNS.link, { run_id: "ev-parent", linked_run_id: "ev-child" }, alice);
      await ok(rest, RUNS.unlink, { run_id: "ev-parent", linked_run_id: "ev-child" }, alice);
      await ok(rest, RUNS.unlink, { run_id: "ev-parent", linked_run_id: "ev-child" }, alice);
      // A barrier: the run.linked of "ev-last" follows every event of the calls above.
      await ok(rest, RUNS.link, { run_id: "ev-parent", linked_run_id: "ev-last" }, alice);
      await until(alice, (e) => e["type"] === "run.linked" && String(e["payload"]).includes("ev-last"));
      const runEvents = (received.get(alice) ?? []).filter((e) => String(e["type"]).startsWith("run."));
      expect(runEvents.map((e) => [e["type"], e["run_id"], JSON.parse(String(e["payload"]))])).toEqual([
        ["run.linked", "ev-parent", { run_id: "ev-parent", linked_run_id: "ev-child" }],
        ["run.unlinked", "ev-parent", { run_id: "ev-parent", linked_run_id: "ev-child" }],
        ["run.linked", "ev-parent", { run_id: "ev-parent", linked_run_id: "ev-last" }],
      ]);
      // Bob's own barrier: his stream holds none of Alice's run events.
      await ok(rest, RUNS.link, { run_id: "bob-parent", linked_run_id: "bob-child" }, bob);
      await until(bob, (e) => e["type"] === "run.linked");
      expect((received.get(bob) ?? []).filter((e) => String(e["type"]).startsWith("run.")).map((e) => e["run_id"])).toEqual(["bob-parent"]);
    } finally {
      for (const stream of streams) stream.cancel();
    }
  });
});

describe("all or nothing", () => {
  it("a link or unlink failing at any of its writes leaves the store, the links and the event stream as they were", async () => {
    const key = await newUser("atomic");
    const c = on("connect");
    const hooks = server.engram.testHooks;
    const events: JsonObject[] = [];
    const stream = grpcStream(server.port, SUBSCRIBE, { event_types: ["run."] }, key);
    stream.on("data", (event: JsonObject) => events.push(event));
    stream.on("error", () => undefined);
    try {
      await store(c, key, "atom-parent", [{ text: "The parent run holds one fact." }]);
      const pair = { run_id: "atom-parent", linked_run_id: "atom-child" };
      const attempt = async (rpc: string, request: JsonObject, expectedWrites?: number): Promise<void> => {
        for (let nth = 1; ; nth++) {
          await hooks.backgroundIdle();
          const before = hooks.fingerprint();
          const listed = await listRuns(c, key);
          const eventCount = events.length;
          // Background work (a deleted run's purge) waits meanwhile: only the request's own writes count.
          const release = hooks.holdBackground();
          hooks.writeFaults.failAt(nth);
          const result = await c.call(rpc, request, key);
          const reached = hooks.writeFaults.writesSeen >= nth;
          hooks.writeFaults.failAt(0);
          release();
          if (!reached) {
            expect(result.code, result.message).toBe("ok");
            if (expectedWrites !== undefined) expect(nth - 1).toBe(expectedWrites);
            return;
          }
          expect(result.code).not.toBe("ok");
          expect(result.message).not.toMatch(/LMDB|lmdb|injected/);
          expect(hooks.fingerprint(), `${rpc} failing at write ${nth}`).toEqual(before);
          expect(await listRuns(c, key)).toEqual(listed);
          expect(events.length).toBe(eventCount);
        }
      };
      await attempt(RUNS.link, pair, 2);
      expect((await listRuns(c, key)).runs[0]).toMatchObject({ run_id: "atom-parent", linked_run_ids: ["atom-child"] });
      await attempt(RUNS.unlink, pair, 2);
      expect((await listRuns(c, key)).runs[0]).toMatchObject({ run_id: "atom-parent", linked_run_ids: [] });
      // delete_run removes the run's links in its own transaction: a failure keeps the run and its links whole.
      await ok(c, RUNS.link, pair, key);
      await attempt("engram.v2.RunsService/DeleteRun", { run_id: "atom-parent" });
      expect((await listRuns(c, key)).runs).toEqual([]);
      expect((await ok(c, RUNS.unlink, pair, key))["unlinked"] ?? false).toBe(false);
    } finally {
      stream.cancel();
    }
  });
});

describe("reflect with include_linked_runs", () => {
  it.each(TRANSPORTS)("reads the evidence of the linked runs too, over %s", async (transport) => {
    const c = on(transport);
    const key = await newUser(`reflect-${transport}`);
    await store(c, key, "r-parent", [{ text: "Deploy the API after the migrations ran." }]);
    await store(c, key, "r-child", [{ text: "The migrations took four minutes." }, { text: "The API deploy succeeded." }]);
    await ok(c, RUNS.link, { run_id: "r-parent", linked_run_id: "r-child" }, key);
    const alone = await ok(c, REFLECT, { run_id: "r-parent" }, key);
    expect(alone["evidence_items"]).toBe(1);
    const linked = await ok(c, REFLECT, { run_id: "r-parent", include_linked_runs: true }, key);
    expect(linked["evidence_items"]).toBe(3);
    const last = await ok(c, REFLECT, { run_id: "r-parent", include_linked_runs: true, last_n_items: 2 }, key);
    expect(last["evidence_items"]).toBe(2);
  });
});

describe("start-up", () => {
  it("the listing and the links are the same after a restart", async () => {
    const key = await newUser("restart");
    const c = on("rest");
    await store(c, key, "keep-1", [{ text: "First run fact." }], "agent-one");
    await store(c, key, "keep-2", [{ text: "Second run rule.", entry_type: "rule" }], "agent-two");
    await ok(c, RUNS.link, { run_id: "keep-1", linked_run_id: "keep-2" }, key);
    const before = await listRuns(c, key);
    const { dataDir, adminKey } = server;
    closeCallers();
    await server.close();
    server = await startTestServer({ ...ENV, SERVICE_ADMIN_KEY: adminKey }, dataDir);
    const after = await listRuns(on("rest"), key);
    expect(after).toEqual(before);
    expect(after.runs.find((r) => r.run_id === "keep-1")).toMatchObject({ linked_run_ids: ["keep-2"], agent_ids: ["agent-one"] });
  });
});
