// The isolation matrix, generated from the served services' descriptors and their HTTP routes: no owner learns
// anything of another, not even that a record exists.
//
// User A (the victim) owns one record of every kind. Twins B and C own the same records as each other, made the same
// way. B calls every route with A's real ids, one id field at a time, its own records in the other fields; C makes the
// same calls with ids that never existed, shaped like A's. Between B's run and C's, A writes more (and holds one more
// live subscription), so an answer that counts anything of A's moves between the twins. With the probed text, each
// twin's own ids, fresh ids and times turned into placeholders, every answer of B must equal C's: same status, code,
// message and body. A's reads must not change while B probes; no answer, list, export, event, metric label or error
// that B or C gets may carry A's content or ids.
//
// A route whose request has an id or scope field without a mapping in test/isolation/id-kinds.ts fails the first
// test below: that is how a new route gets covered.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Json, JsonObject } from "./harness/callers.js";
import { clusteredEnv, startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { openStream, type OpenStream } from "./isolation/event-stream.js";
import { ghostsOf, labels } from "./isolation/ghosts.js";
import { DOCUMENTED_DIFFERENCES, KINDS, NOT_COMPARED, NOT_OWNER_SCOPED, unmappedFields, type Kind } from "./isolation/id-kinds.js";
import { runMatrix, type ProbeAnswer } from "./isolation/matrix.js";
import { Normaliser } from "./isolation/normalise.js";
import { callRoute, must, routeOf, type Answer } from "./isolation/route-caller.js";
import { routeCatalog, type Route } from "./isolation/route-catalog.js";
import { requestFor } from "./isolation/route-requests.js";
import { jobDone, seedOwner, type Owner } from "./isolation/seed.js";

const ENV = {
  SERVICE_CORE_ALLOW_ALL: "true",
  SERVICE_CORE_ENABLE_DIRECT_SEARCH: "true",
  SERVICE_CORE_ENABLE_DIRECT_PUBSUB: "true",
  SERVICE_EMBEDDER: "hashed",
  // The twins run minutes apart: no agent may go idle in between.
  SERVICE_AGENT_IDLE_AFTER_MS: "86400000",
  SERVICE_AGENT_GONE_AFTER_MS: "2592000000",
};

const ROUTES = routeCatalog();
const MARK_SEEDED = `zqxseed${Math.floor(Math.random() * 1e9)}`;
const MARK_LATER = `zqxlater${Math.floor(Math.random() * 1e9)}`;
const suffix = Math.random().toString(36).slice(2, 8);
const NAMES = { a: `iso-a${suffix}`, b: `iso-b${suffix}`, c: `iso-c${suffix}` };

/** Routes whose answers are read by A before and after B's probes: the ones that only read. */
function readsOnly(route: Route): boolean {
  const read = /^(Get|List|Search|Read|Export|Check|Query|Recall|Dereference|Diagnose|Surface)([A-Z]|$)/.test(route.method.name);
  return read && route.method.methodKind === "unary" && !route.rpc.startsWith("engram.v2.HealthService/") && !(route.name in NOT_COMPARED);
}

/** `value` appears in `text` as a whole token. */
function mentions(text: string, value: string): boolean {
  const escaped = value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(?<![A-Za-z0-9_-])${escaped}(?![A-Za-z0-9_-])`).test(text);
}

function normaliserFor(owner: Owner, probes: Readonly<Record<Kind, string>>, probe: string, ignore?: RegExp): Normaliser {
  const tokens = new Map<string, string>();
  for (const kind of KINDS) tokens.set(probes[kind], `<value:${kind}>`);
  for (const kind of KINDS) tokens.set(owner.ids[kind], `<own:${kind}>`);
  if (probe !== "") tokens.set(probe, "<probe>");
  return new Normaliser({ tokens, byField: { user_id: new Map([[owner.userId, "<own:user>"]]), key_id: new Map([[owner.keyId, "<own:key>"]]), keyId: new Map([[owner.keyId, "<own:key>"]]) }, ignore });
}

/** A value to normalise like an answer. */
function asAnswer(body: Json): Answer {
  return { status: 200, code: "ok", message: "", body };
}

/** The writes B makes after A's later writes (B's streams must see them first), and C makes alike. */
async function sentinelWrites(baseUrl: string, key: string): Promise<{ entry: string; node: string }> {
  const run = "sentinel-run";
  const entry = String((await must(baseUrl, "engram.v2.MemoryService/Remember", { session_id: run, content: "harbour sentinel" }, key))["entry_id"]);
  const node = String((await must(baseUrl, "engram.v2.CoreService/InsertNode", { run_id: run, text: "harbour sentinel" }, key))["node_id"]);
  return { entry, node };
}

interface LaterWrites {
  /** Ids A was assigned after B's probes; B never saw them. */
  readonly ids: string[];
  readonly subscription: OpenStream;
}

/** A's writes between the twins' runs: entries, a job, a node, a lesson, a project, and a second live subscription. */
async function writeLater(baseUrl: string, a: Owner): Promise<LaterWrites> {
  const ids: string[] = [];
  const call = (rpc: string, request: JsonObject): Promise<JsonObject> => must(baseUrl, rpc, request, a.key);
  for (let i = 0; i < 5; i++) ids.push(String((await call("engram.v2.MemoryService/Remember", { session_id: a.ids.run, content: `${MARK_LATER} note ${i}` }))["entry_id"]));
  const job = String((await call("engram.v2.MemoryService/Ingest", { run_id: a.ids.run, items: [{ text: `${MARK_LATER} ingested` }, { text: `${MARK_LATER} again` }] }))["job_id"]);
  await jobDone(baseUrl, a.key, job);
  ids.push(job);
  ids.push(String((await call("engram.v2.CoreService/InsertNode", { run_id: a.ids.run, text: `${MARK_LATER} node` }))["node_id"]));
  const reflected = await call("engram.v2.LearningService/Reflect", { run_id: a.ids.run, lessons: [{ content: `${MARK_LATER} lesson`, lesson_type: "failure" }] });
  ids.push(String(((reflected["lessons"] as JsonObject[])[0] as JsonObject)["lesson_id"]));
  ids.push(String(((await call("engram.v2.ResourcesService/CreateProject", { name: `later-${suffix}`, description: MARK_LATER }))["project"] as JsonObject)["project_id"]));
  await call("engram.v2.CoreService/WriteScratchpad", { session_id: a.ids.scratchpad, key: "later", content: MARK_LATER });
  const subscription = await openStream(baseUrl, "engram.v2.CoreService/SubscribeCoreEvents", { filter_type: "all" }, a.key);
  ids.push(String((await subscription.next())["subscription_id"]));
  return { ids, subscription };
}

/** Every page of the caller's tenant export. */
async function exportOf(baseUrl: string, key: string): Promise<string[]> {
  const lines: string[] = [];
  let pageToken = "";
  for (let page = 0; page < 100; page++) {
    const body = await must(baseUrl, "engram.v2.TenantService/ExportTenant", { page_token: pageToken, limit: 500 }, key);
    lines.push(...((body["lines"] as string[] | undefined) ?? []));
    pageToken = String(body["next_page_token"] ?? "");
    if (pageToken === "") return lines;
  }
  throw new Error("export did not end after 100 pages");
}

describe("generated isolation matrix: another owner's ids answer like ids that never existed", () => {
  it("every id or scope field of every served route has a generator mapping", () => {
    const missing = unmappedFields(ROUTES);
    expect(missing, `add a mapping for these fields in test/isolation/id-kinds.ts (BY_FIELD or BY_ROUTE), or list the route in NOT_OWNER_SCOPED with a reason: ${missing.join("; ")}`).toEqual([]);
    // The exception lists name routes and fields that exist.
    const names = new Set(ROUTES.flatMap((r) => [r.name, ...r.idFields.map((f) => `${r.name} ${f.path}`)]));
    for (const listed of [...Object.keys(NOT_OWNER_SCOPED), ...Object.keys(DOCUMENTED_DIFFERENCES), ...Object.keys(NOT_COMPARED)]) expect(names.has(listed), listed).toBe(true);
    // Every service is reachable over HTTP, so the REST matrix covers every RPC.
    for (const route of ROUTES) expect(route.bindings.length, route.name).toBeGreaterThan(0);
  });

  let server: TestServer;
  let a: Owner;
  let b: Owner;
  let c: Owner;
  let ghosts: Record<Kind, string>;
  let asB: ProbeAnswer[];
  let asC: ProbeAnswer[];
  let later: LaterWrites;
  const readsOfA = ROUTES.filter(readsOnly);
  const aBefore = new Map<string, Json>();
  const aAfter = new Map<string, Json>();
  /** What B's control-event and core-event streams delivered while A wrote, before B's own sentinel write. */
  const seenByB: { control: JsonObject[]; core: JsonObject[] } = { control: [], core: [] };

  const readA = async (into: Map<string, Json>): Promise<void> => {
    // A's own reads count themselves (a variable's access count): those counters are left out.
    const normaliser = normaliserFor(a, a.ids, "", /^(access_count|accessCount)$/);
    for (const route of readsOfA) into.set(route.name, normaliser.answer(await callRoute(server.baseUrl, route, requestFor(route, (k) => a.ids[k]), a.key)));
    into.set("whole export", normaliser.answer(asAnswer(await exportOf(server.baseUrl, a.key))));
  };

  beforeAll(async () => {
    server = await startTestServer(ENV);
    const url = server.baseUrl;
    const keyA = await createUser(url, server.adminKey, NAMES.a);
    const keyB = await createUser(url, server.adminKey, NAMES.b);
    const keyC = await createUser(url, server.adminKey, NAMES.c);
    // Core node ids count up server-wide (per shard when clustered); taking the first thousand of each keeps the
    // test's node ids from looking like counts. Consecutive users cover every shard.
    const filler = Array.from({ length: 1000 }, (_, i) => ({ run_id: "filler", text: `filler ${i}` }));
    await must(url, "engram.v2.CoreService/BatchInsertNodes", { nodes: filler }, server.adminKey);
    const shards = Number(clusteredEnv(server.dataDir)["SERVICE_CLUSTER_SHARD_COUNT"] ?? "0");
    for (let shard = 0; shard < shards; shard++) {
      const fillerKey = await createUser(url, server.adminKey, `iso-filler${shard}${suffix}`);
      await must(url, "engram.v2.CoreService/BatchInsertNodes", { nodes: filler }, fillerKey);
    }

    a = await seedOwner(url, NAMES.a, keyA, labels("a"), MARK_SEEDED);
    ghosts = ghostsOf(a.ids);
    b = await seedOwner(url, NAMES.b, keyB, labels("own"), "harbour");
    await readA(aBefore);
    asB = await runMatrix(url, ROUTES, b, a.ids);
    await readA(aAfter);
    b.subscription.close();

    const control = await openStream(url, "engram.v2.EventsService/Subscribe", {}, keyB);
    const core = await openStream(url, "engram.v2.CoreService/SubscribeCoreEvents", { filter_type: "all" }, keyB);
    await control.next();
    await core.next();
    later = await writeLater(url, a);
    // B's own writes come after all of A's: whatever B's streams deliver before them is what A's writes leaked.
    const { entry, node } = await sentinelWrites(url, keyB);
    for (let event = await control.next(); !String(event["payload"]).includes(entry); event = await control.next()) seenByB.control.push(event);
    for (let event = await core.next(); String(event["node_id"]) !== node; event = await core.next()) seenByB.core.push(event);
    control.close();
    core.close();

    c = await seedOwner(url, NAMES.c, keyC, labels("own"), "harbour");
    asC = await runMatrix(url, ROUTES, c, ghosts);
    c.subscription.close();
    await sentinelWrites(url, keyC);
  }, 300_000);

  afterAll(async () => {
    a?.subscription.close();
    later?.subscription.close();
    await server?.close();
  });

  it("probes every route: each id field of each binding, and each route's plain call", () => {
    expect(asB.length).toBe(asC.length);
    const probed = new Set(asB.map((p) => p.route.name));
    for (const route of ROUTES) expect(probed.has(route.name), route.name).toBe(true);
    for (const route of ROUTES) {
      if (route.name in NOT_OWNER_SCOPED) continue;
      for (const field of route.idFields) expect(asB.some((p) => p.route === route && p.field === field.path), `${route.name} ${field.path}`).toBe(true);
    }
  });

  /** Probes whose normalised answers differ between B (A's ids) and C (ghosts), with both answers. */
  const differing = (): { probe: ProbeAnswer; report: string }[] => {
    const byName = new Map(asC.map((p) => [p.name, p]));
    const out: { probe: ProbeAnswer; report: string }[] = [];
    for (const probeB of asB) {
      if (probeB.route.name in NOT_COMPARED) continue;
      const probeC = byName.get(probeB.name);
      const seenB = JSON.stringify(normaliserFor(b, a.ids, probeB.probe).answer(probeB.answer));
      const seenC = probeC === undefined ? "C made no such call" : JSON.stringify(normaliserFor(c, ghosts, probeC.probe).answer(probeC.answer));
      if (seenB !== seenC) out.push({ probe: probeB, report: `${probeB.name}\n  request: ${JSON.stringify(probeB.request)}\n  B (A's id): ${seenB}\n  C (ghost):  ${seenC}` });
    }
    return out;
  };

  it("B with A's ids gets exactly what C gets with ids that never existed", () => {
    const unexplained = differing().filter(({ probe }) => !(`${probe.route.name} ${probe.field}` in DOCUMENTED_DIFFERENCES));
    expect(unexplained.map((d) => d.probe.name), unexplained.map((d) => d.report).join("\n\n")).toEqual([]);
  });

  it("the documented differences still differ (else drop them from the list)", () => {
    const found = new Set(differing().map(({ probe }) => `${probe.route.name} ${probe.field}`));
    for (const listed of Object.keys(DOCUMENTED_DIFFERENCES)) expect(found.has(listed), listed).toBe(true);
  });

  it("each route's plain call, with the caller's own records, gets past request validation", () => {
    const refused = asB.filter((p) => p.field === "" && p.answer.code === "invalid_argument").map((p) => `${p.name}: ${p.answer.message}`);
    expect(refused, "complete the route's base request in test/isolation/route-requests.ts").toEqual([]);
  });

  it("A's reads answer the same after B's probes", () => {
    expect(readsOfA.length).toBeGreaterThan(30);
    for (const route of readsOfA) expect(aAfter.get(route.name), route.name).toEqual(aBefore.get(route.name));
  });

  it("no answer to B or C carries A's content, or an id or name of A's the caller was not given", () => {
    // B was given one id of each kind (the probes); C was given none of A's.
    const givenToB = new Set(Object.values(a.ids));
    const secretsOfB = [...a.assigned.filter((id) => !givenToB.has(id)), ...later.ids];
    const secretsOfC = [...givenToB, ...a.assigned, ...later.ids, NAMES.a];
    for (const [probes, secrets] of [[asB, secretsOfB], [asC, secretsOfC]] as const) {
      for (const probe of probes) {
        const text = JSON.stringify(probe.answer);
        expect(text.includes(MARK_SEEDED) || text.includes(MARK_LATER), `${probe.name}: ${text}`).toBe(false);
        for (const secret of secrets) expect(mentions(text, secret), `${probe.name} names ${secret}: ${text}`).toBe(false);
      }
    }
  });

  it("B's control-event and core-event streams deliver nothing while A writes", () => {
    expect(seenByB.control).toEqual([]);
    expect(seenByB.core).toEqual([]);
  });

  it("B's whole tenant export equals C's, and neither carries anything of A's", async () => {
    const ownIds = new Set([...Object.values(b.ids), ...Object.values(c.ids), ...Object.values(a.ids), ...Object.values(ghosts)]);
    const secretIds = [...a.assigned, ...later.ids].filter((id) => !ownIds.has(id));
    const exports = new Map<Owner, string[]>();
    for (const owner of [b, c]) {
      const lines = await exportOf(server.baseUrl, owner.key);
      exports.set(owner, lines);
      const text = lines.join("\n");
      expect(text).toContain("harbour");
      expect(text).not.toContain(MARK_SEEDED);
      expect(text).not.toContain(MARK_LATER);
      for (const id of secretIds) expect(mentions(text, id), id).toBe(false);
    }
    const ofB = normaliserFor(b, a.ids, "").answer(asAnswer(exports.get(b) ?? []));
    const ofC = normaliserFor(c, ghosts, "").answer(asAnswer(exports.get(c) ?? []));
    expect(ofB).toEqual(ofC);
  });

  it("no /metrics label names A's user, ids, runs or content", async () => {
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    const labelValues = [...text.matchAll(/\{([^}]*)\}/g)].flatMap((m) => [...(m[1] ?? "").matchAll(/="((?:[^"\\]|\\.)*)"/g)].map((v) => v[1] ?? ""));
    expect(labelValues.length).toBeGreaterThan(10);
    const secrets = [...Object.values(a.ids), ...a.assigned, ...later.ids, NAMES.a, MARK_SEEDED, MARK_LATER];
    const named = labelValues.filter((value) => secrets.some((secret) => value.includes(secret) && mentions(value, secret)));
    expect(named).toEqual([]);
  });

  it("storage statistics are an admin's: a user is refused, whatever others store", async () => {
    const stats = routeOf("engram.v2.CoreService/GetStorageStats");
    for (const owner of [a, b, c]) {
      const refused = await callRoute(server.baseUrl, stats, {}, owner.key);
      expect(refused.status).toBe(403);
      expect(refused.code).toBe("permission_denied");
      expect(refused.message).toMatch(/admin/);
    }
    const admin = await callRoute(server.baseUrl, stats, {}, server.adminKey);
    expect(admin.code).toBe("ok");
    expect(Number((admin.body as JsonObject)["disk_size_bytes"])).toBeGreaterThan(0);
  });

  it("a user's subscription total counts its own subscriptions; an admin's counts the server's", async () => {
    const list = routeOf("engram.v2.CoreService/ListCoreSubscriptions");
    const other = await openStream(server.baseUrl, "engram.v2.CoreService/SubscribeCoreEvents", { filter_type: "all" }, b.key);
    try {
      await other.next();
      const ofA = (await callRoute(server.baseUrl, list, {}, a.key)).body as JsonObject;
      expect(ofA["subscription_ids"]).toEqual([a.ids.subscription, later.ids[later.ids.length - 1] as string]);
      expect(ofA["total"]).toBe(2);
      const ofAdmin = (await callRoute(server.baseUrl, list, {}, server.adminKey)).body as JsonObject;
      expect(ofAdmin["total"]).toBeGreaterThanOrEqual(3);
    } finally {
      other.close();
    }
  });
});
