// Caller vector spaces through the public routes on a real server: vectors of any dimension stored per named space
// (384-d and 1,536-d here) beside the server embedder's, searched with the lexical branch; mixed dimensions refused
// naming the field with nothing stored; spaces owned per user (isolation, read grants, admins); deletion of a run
// removes its vectors; spaces survive a restart; a tenant export carries them to an import. One case table runs over
// REST, Connect and gRPC.
import path from "node:path";
import { open, type Key } from "lmdb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerFor, restCaller, TRANSPORTS, type Caller, type JsonObject } from "./harness/callers.js";
import { RPC, evidenceOf, expectInvalid, idsOf, exportTenantLines, ingestAndWait, ok } from "./harness/memory.js";
import { startTestServer, tempDataDir, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { HashedEmbedder } from "../src/retrieval/embedders/hashed-embedder.js";
import { DATABASE_NAMES } from "../src/storage/database.js";

const ENV = { SERVICE_EMBEDDER: "hashed", SERVICE_CORE_ALLOW_ALL: "true" };
const R = {
  deleteRun: "engram.v2.RunsService/DeleteRun",
  updateLesson: "engram.v2.LearningService/UpdateLesson",
  deleteLesson: "engram.v2.LearningService/DeleteLesson",
  grant: "engram.v2.CoreService/GrantPermission",
  exportTenant: "engram.v2.TenantService/ExportTenant",
  importTenant: "engram.v2.TenantService/ImportTenant",
} as const;
/** A query word no entry contains: only the vector branch can rank. */
const NOWHERE = "zqxvjk";
const TEXTS = [
  "Otters hold hands while they sleep.",
  "Glaciers carve valleys over millennia.",
  "Sourdough starters need regular feeding.",
  "Lighthouses guide ships along rocky coasts.",
  "Bees communicate through waggle dances.",
];

/** A deterministic vector of `dims` components. */
function vec(dims: number, seed: number): number[] {
  return Array.from({ length: dims }, (_, i) => Math.sin((i + 1) * 12.9898 + seed * 78.233));
}

/** A vector close to `vec(dims, seed)` but not equal to it. */
function near(dims: number, seed: number): number[] {
  const noise = vec(dims, seed + 1000);
  return vec(dims, seed).map((x, i) => x + 0.05 * (noise[i] as number));
}

function seqOf(id: string): number {
  return parseInt(id.replace(/^ent_/, ""), 36);
}

async function topIds(c: Caller, key: string, request: JsonObject): Promise<string[]> {
  return idsOf(evidenceOf(await ok(c, RPC.query, { query: NOWHERE, ...request }, key)));
}


interface Fixture {
  readonly server: TestServer;
  readonly c: Caller;
  readonly alice: string;
  readonly bob: string;
  readonly carol: string;
  readonly scope: string;
}

type Case = readonly [string, (f: Fixture) => Promise<void>];

/** Alice's run with five 384-d vectors in space "small" (ingest) and five 1,536-d in "large" (batch insert). */
async function twoSpaces(f: Fixture, run: string): Promise<{ small: string[]; large: string[] }> {
  const small = await ingestAndWait(f.c, f.alice, run, TEXTS.map((text, i) => ({ text, vector_space: "small", embedding: vec(384, i) })));
  const batch = await ok(f.c, RPC.batchInsert, { run_id: run, items: TEXTS.map((text, i) => ({ text: `${text} Again.`, vector_space: "large", embedding: vec(1536, 10 + i) })) }, f.alice);
  expect(batch).toMatchObject({ success: true, count: 5 });
  return { small, large: batch["entry_ids"] as string[] };
}

const CASES: readonly Case[] = [
  [
    "vectors of two dimensions in two spaces: a query near one entry's vector ranks it first in its space",
    async (f) => {
      const run = `${f.scope}-two`;
      const { small, large } = await twoSpaces(f, run);
      expect((await topIds(f.c, f.alice, { run_id: run, vector_space: "small", embedding: near(384, 2) }))[0]).toBe(small[2]);
      expect((await topIds(f.c, f.alice, { run_id: run, vector_space: "large", embedding: near(1536, 13) }))[0]).toBe(large[3]);
      // The entries still have the server embedder's vector of their content: a query without a space finds them.
      const [serverVector] = await new HashedEmbedder().embed([TEXTS[4] as string]);
      expect((await topIds(f.c, f.alice, { run_id: run, embedding: Array.from(serverVector as Float32Array) }))[0]).toBe(small[4]);
      // And the lexical branch is fused in as usual: the entries saying "dances" join the one near the vector.
      const fused = await topIds(f.c, f.alice, { run_id: run, query: "Which animal dances?", vector_space: "small", embedding: near(384, 0), limit: 3 });
      expect(fused).toContain(small[0]);
      expect(fused.filter((id) => id === small[4] || id === large[4]).length).toBeGreaterThan(0);
    },
  ],
  [
    "a vector of another dimension than its space, or than another item for a new space, is refused naming the field; nothing is stored",
    async (f) => {
      const run = `${f.scope}-mixed`;
      await ingestAndWait(f.c, f.alice, run, [{ text: "The first small vector fixes the space.", vector_space: "small", embedding: vec(384, 1) }]);
      const before = f.server.engram.testHooks.fingerprint();
      const mixed = await f.c.call(RPC.ingest, { run_id: run, items: [{ text: "fine", vector_space: "small", embedding: vec(384, 2) }, { text: "wrong", vector_space: "small", embedding: vec(1536, 3) }] }, f.alice);
      expectInvalid(mixed, "items[1].embedding");
      expect(mixed.message).toContain('vector space "small" holds 384-dimension vectors, got 1536');
      const disagreeing = await f.c.call(RPC.ingest, { run_id: run, items: [{ text: "a", vector_space: `${f.scope}-new`, embedding: vec(8, 1) }, { text: "b", vector_space: `${f.scope}-new`, embedding: vec(16, 1) }] }, f.alice);
      expectInvalid(disagreeing, "items[1].embedding");
      expect(disagreeing.message).toContain("holds 8-dimension vectors, got 16");
      expectInvalid(await f.c.call(RPC.ingest, { run_id: run, items: [{ text: "no vector", vector_space: "small" }] }, f.alice), "items[0].embedding");
      expectInvalid(await f.c.call(RPC.ingest, { run_id: run, items: [{ text: "bad name", vector_space: "not a name!", embedding: vec(8, 1) }] }, f.alice), "items[0].vector_space");
      expectInvalid(await f.c.call(RPC.ingest, { run_id: run, items: [{ text: "long name", vector_space: "x".repeat(65), embedding: vec(8, 1) }] }, f.alice), "items[0].vector_space");
      expectInvalid(await f.c.call(RPC.ingest, { run_id: run, items: [{ text: "too wide", vector_space: "wide", embedding: vec(4097, 1) }] }, f.alice), "items[0].embedding");
      const serverSpace = await f.c.call(RPC.ingest, { run_id: run, items: [{ text: "no space", embedding: vec(1536, 1) }] }, f.alice);
      expectInvalid(serverSpace, "items[0].embedding");
      expect(serverSpace.message).toContain("name a vector_space to store vectors of another dimension");
      expect(f.server.engram.testHooks.fingerprint()).toEqual(before);
      expect(await ok(f.c, RPC.ingestStats, { run_id: run }, f.alice)).toMatchObject({ total_ingested: 1, total_jobs: 1 });
      // BatchInsert fails the bad items alone: one of the space's dimension stored, one of another refused, and of two
      // items creating a space the first fixes its dimension.
      const batch = await ok(f.c, RPC.batchInsert, {
        run_id: run,
        items: [
          { text: "stored", vector_space: "small", embedding: vec(384, 4) },
          { text: "refused", vector_space: "small", embedding: vec(1536, 4) },
          { text: "creates", vector_space: `${f.scope}-batch`, embedding: vec(32, 4) },
          { text: "disagrees", vector_space: `${f.scope}-batch`, embedding: vec(64, 4) },
        ],
      }, f.alice);
      expect(batch).toMatchObject({ success: false, count: 2 });
      const results = batch["item_results"] as JsonObject[];
      expect(results.map((r) => r["success"])).toEqual([true, false, true, false]);
      expect(String(results[1]?.["error"])).toContain("items[1].embedding: vector space \"small\" holds 384-dimension vectors, got 1536");
      expect(String(results[3]?.["error"])).toContain("items[3].embedding");
      // Queries: the caller's own space fixes the query's dimension.
      expectInvalid(await f.c.call(RPC.query, { run_id: run, query: "x", vector_space: "small", embedding: vec(1536, 1) }, f.alice), "embedding");
      expectInvalid(await f.c.call(RPC.query, { run_id: run, query: "x", vector_space: "small" }, f.alice), "embedding");
      expectInvalid(await f.c.call(RPC.query, { run_id: run, query: "x", vector_space: "bad name", embedding: vec(8, 1) }, f.alice), "vector_space");
      expectInvalid(await f.c.call(RPC.query, { run_id: run, query: "x", embedding: vec(1536, 1) }, f.alice), "embedding");
      // A space nobody has: lexical search only, no error.
      const lexical = await ok(f.c, RPC.query, { run_id: run, query: "first small vector", vector_space: `${f.scope}-nowhere`, embedding: vec(12, 1) }, f.alice);
      expect(String(evidenceOf(lexical)[0]?.["content"])).toBe("The first small vector fixes the space.");
    },
  ],
  [
    "spaces belong to their owner: the same name with another dimension neither errors nor leaks across users",
    async (f) => {
      const run = `${f.scope}-owners`;
      const { small } = await twoSpaces(f, run);
      // Bob's "small" holds 1,536-d vectors: Alice's 384-d space does not constrain it.
      const bobIds = await ingestAndWait(f.c, f.bob, run, [{ text: "Bob's note about otters.", vector_space: "small", embedding: vec(1536, 2) }]);
      const bobTop = await topIds(f.c, f.bob, { run_id: run, vector_space: "small", embedding: near(1536, 2) });
      expect(bobTop).toEqual(bobIds);
      // Alice's space answers as before, with nothing of Bob's.
      const aliceTop = await topIds(f.c, f.alice, { run_id: run, vector_space: "small", embedding: near(384, 2) });
      expect(aliceTop[0]).toBe(small[2]);
      expect(aliceTop).not.toContain(bobIds[0]);
      // Bob's query of a space only Alice has: no error, none of her entries.
      const bobLarge = await topIds(f.c, f.bob, { run_id: run, vector_space: "large", embedding: near(1536, 13) });
      expect(bobLarge.every((id) => bobIds.includes(id))).toBe(true);
      expectInvalid(await f.c.call(RPC.query, { run_id: run, query: "x", vector_space: "small", embedding: vec(384, 2) }, f.bob), "embedding");
    },
  ],
  [
    "a read grant searches the granting owner's space of the same name; admins search every owner's",
    async (f) => {
      const run = `${f.scope}-shared`;
      const { small, large } = await twoSpaces(f, run);
      await ok(f.c, R.grant, { principal_type: "user", principal_id: `carol-${f.c.transport}`, run_id: run, permission: "read" }, f.alice);
      expect((await topIds(f.c, f.carol, { run_id: run, vector_space: "small", embedding: near(384, 1) }))[0]).toBe(small[1]);
      // A vector of another dimension than the grantor's space: that space is skipped, without error.
      const skipped = await ok(f.c, RPC.query, { run_id: run, query: "waggle dances", vector_space: "small", embedding: vec(16, 1) }, f.carol);
      expect([small[4], large[4]]).toContain(idsOf(evidenceOf(skipped))[0]);
      expect((await topIds(f.c, f.server.adminKey, { run_id: run, vector_space: "small", embedding: near(384, 3) }))[0]).toBe(small[3]);
      // Bob holds no grant: nothing of Alice's.
      expect(await topIds(f.c, f.bob, { run_id: run, vector_space: "small", embedding: near(1536, 1) })).toEqual([]);
    },
  ],
  [
    "a changed content drops the entry's space vector (it described the old content); a deleted entry's goes with it",
    async (f) => {
      const run = `${f.scope}-lessons`;
      const ids = await ingestAndWait(f.c, f.alice, run, [0, 1, 2].map((i) => ({ text: `Lesson ${i}: retry flaky uploads.`, entry_type: "lesson", vector_space: "small", embedding: vec(384, 40 + i) })));
      await ok(f.c, R.updateLesson, { lesson_id: ids[0] as string, content: "Lesson 0: never retry uploads." }, f.alice);
      await ok(f.c, R.deleteLesson, { lesson_id: ids[1] as string }, f.alice);
      const records = new Map(
        (await exportTenantLines(f.c, f.alice))
          .map((line) => JSON.parse(line) as { kind: string; id: string; record: JsonObject })
          .filter((line) => line.kind === "entry")
          .map((line) => [line.id, line.record]),
      );
      expect(records.get(ids[0] as string)?.["spaceVectors"]).toBeUndefined();
      expect(records.has(ids[1] as string)).toBe(false);
      expect(records.get(ids[2] as string)?.["spaceVectors"]).toEqual([{ space: "small", vector: expect.any(String) }]);
      expect((await topIds(f.c, f.alice, { run_id: run, vector_space: "small", embedding: near(384, 42) }))[0]).toBe(ids[2]);
    },
  ],
  [
    "deleting a run removes its space vectors",
    async (f) => {
      const run = `${f.scope}-doomed`;
      const { small } = await twoSpaces(f, run);
      expect((await topIds(f.c, f.alice, { run_id: run, vector_space: "small", embedding: near(384, 0) }))[0]).toBe(small[0]);
      expect(await ok(f.c, R.deleteRun, { run_id: run }, f.alice)).toMatchObject({ deleted: true });
      expect(await topIds(f.c, f.alice, { run_id: run, vector_space: "small", embedding: near(384, 0) })).toEqual([]);
      expect(await topIds(f.c, f.alice, { run_id: run, vector_space: "large", embedding: near(1536, 10) })).toEqual([]);
    },
  ],
];

describe.each(TRANSPORTS)("vector spaces over %s", (transport) => {
  let server: TestServer;
  let f: Fixture;

  beforeAll(async () => {
    server = await startTestServer(ENV);
    const c = callerFor(transport, server.baseUrl, server.port);
    const [alice, bob, carol] = await Promise.all(["alice", "bob", "carol"].map((name) => createUser(server.baseUrl, server.adminKey, `${name}-${transport}`)));
    f = { server, c, alice: alice as string, bob: bob as string, carol: carol as string, scope: transport };
  });

  afterAll(async () => {
    f.c.close();
    await server.close();
  });

  it.each(CASES)("%s", async (_name, run) => {
    await run(f);
  });
});

describe("vector spaces across a restart and a tenant transfer", () => {
  const dataDir = tempDataDir();
  let server: TestServer;
  let c: Caller;
  let alice: string;
  let kept: { small: string[]; large: string[] };
  let doomed: { small: string[]; large: string[] };

  beforeAll(async () => {
    server = await startTestServer(ENV, dataDir);
    c = restCaller(server.baseUrl);
    alice = await createUser(server.baseUrl, server.adminKey, "alice");
    const f: Fixture = { server, c, alice, bob: "", carol: "", scope: "restart" };
    kept = await twoSpaces(f, "kept");
    doomed = await twoSpaces(f, "doomed");
    await ok(c, R.deleteRun, { run_id: "doomed" }, alice);
    await server.engram.testHooks.backgroundIdle();
    await server.close();
    // The purge removed the deleted entries' space vectors from LMDB, with their index keys.
    const root = open({ path: path.join(dataDir, "lmdb"), noSubdir: false, maxDbs: 64, compression: false, readOnly: true });
    const bySeq = root.openDB<null, Key>({ name: DATABASE_NAMES.entrySpaceVectors });
    const vectors = root.openDB<Buffer, Key>({ name: DATABASE_NAMES.spaceVectors, encoding: "binary" });
    const seqsWithVectors = new Set([...bySeq.getKeys()].map((key) => (key as [number, number])[0]));
    const vectorSeqs = new Set([...vectors.getKeys()].map((key) => (key as [number, number])[1]));
    await root.close();
    for (const id of [...doomed.small, ...doomed.large]) {
      expect(seqsWithVectors.has(seqOf(id))).toBe(false);
      expect(vectorSeqs.has(seqOf(id))).toBe(false);
    }
    for (const id of [...kept.small, ...kept.large]) expect(vectorSeqs.has(seqOf(id))).toBe(true);
    server = await startTestServer({ ...ENV, SERVICE_ADMIN_KEY: server.adminKey }, dataDir);
    c = restCaller(server.baseUrl);
  });

  afterAll(async () => {
    await server.close();
  });

  it("keeps spaces, their dimensions and vectors searchable after a restart, and deleted runs' vectors gone", async () => {
    expect((await topIds(c, alice, { run_id: "kept", vector_space: "small", embedding: near(384, 3) }))[0]).toBe(kept.small[3]);
    expect((await topIds(c, alice, { run_id: "kept", vector_space: "large", embedding: near(1536, 11) }))[0]).toBe(kept.large[1]);
    expect(await topIds(c, alice, { run_id: "doomed", vector_space: "small", embedding: near(384, 0) })).toEqual([]);
    const mixed = await c.call(RPC.ingest, { run_id: "kept", items: [{ text: "wrong", vector_space: "large", embedding: vec(384, 1) }] }, alice);
    expectInvalid(mixed, "items[0].embedding");
    expect(mixed.message).toContain('vector space "large" holds 1536-dimension vectors, got 384');
  });

  it("carries space vectors through a tenant export and import", async () => {
    const lines = await exportTenantLines(c, alice);
    const entryLines = lines.slice(1).map((line) => JSON.parse(line) as { kind: string; record: JsonObject });
    expect(entryLines.filter((l) => l.kind === "entry" && Array.isArray(l.record["spaceVectors"]))).toHaveLength(10);
    const dave = await createUser(server.baseUrl, server.adminKey, "dave");
    // A space of the importer's with another dimension refuses the line naming it, and nothing is stored.
    await ingestAndWait(c, dave, "elsewhere", [{ text: "Dave's own large space is 8-d.", vector_space: "large", embedding: vec(8, 1) }]);
    const before = server.engram.testHooks.fingerprint();
    const conflict = await c.call(R.importTenant, { lines }, dave);
    expectInvalid(conflict, `lines[${lines.findIndex((l) => l.includes('"space":"large"'))}].record.spaceVectors`);
    expect(server.engram.testHooks.fingerprint()).toEqual(before);
    const erin = await createUser(server.baseUrl, server.adminKey, "erin");
    const imported = await ok(c, R.importTenant, { lines }, erin);
    expect(Number((imported["imported"] as JsonObject)["entry"])).toBe(10);
    const contentOf = async (key: string, request: JsonObject): Promise<string> => String(evidenceOf(await ok(c, RPC.query, { query: NOWHERE, ...request }, key))[0]?.["content"]);
    for (const [space, dims, seed] of [["small", 384, 2], ["large", 1536, 14]] as const) {
      const request = { run_id: "kept", vector_space: space, embedding: near(dims, seed) };
      expect(await contentOf(erin, request)).toBe(await contentOf(alice, request));
    }
  });
});

describe("vector spaces under write failures", () => {
  let server: TestServer;
  let c: Caller;
  let alice: string;

  beforeAll(async () => {
    server = await startTestServer(ENV);
    c = restCaller(server.baseUrl);
    alice = await createUser(server.baseUrl, server.adminKey, "alice");
  });

  afterAll(async () => {
    await server.close();
  });

  it("an ingest job whose new space another request fixed meanwhile to another dimension fails whole, saying why", async () => {
    const release = server.engram.testHooks.holdBackground();
    let jobId: string;
    try {
      const accepted = await ok(c, RPC.ingest, { run_id: "raced", items: [{ text: "First of two.", vector_space: "raced", embedding: vec(12, 1) }, { text: "Second of two." }] }, alice);
      jobId = String(accepted["job_id"]);
      await ok(c, RPC.batchInsert, { run_id: "other", items: [{ text: "Fixes the space first.", vector_space: "raced", embedding: vec(20, 1) }] }, alice);
    } finally {
      release();
    }
    await server.engram.testHooks.backgroundIdle();
    const job = await ok(c, RPC.getIngestJob, { job_id: jobId }, alice);
    expect(job).toMatchObject({ status: "failed", entry_count: 0 });
    expect(String(job["error"])).toContain('vector space "raced" holds 20-dimension vectors, got 12');
    expect(await ok(c, RPC.ingestStats, { run_id: "raced" }, alice)).toMatchObject({ total_ingested: 0 });
  });

  it("a failure at any LMDB write of an entry with a new space leaves no entry, space or vector behind", async () => {
    const request = (space: string): JsonObject => ({ run_id: "atomic", items: [{ text: "Kilns reach high heat.", vector_space: space, embedding: vec(24, 1) }] });
    const faults = server.engram.testHooks.writeFaults;
    faults.failAt(0);
    await ok(c, RPC.batchInsert, request("counted"), alice);
    const writes = faults.writesSeen;
    expect(writes).toBeGreaterThan(4);
    for (let nth = 1; nth <= writes; nth++) {
      const before = server.engram.testHooks.fingerprint();
      faults.failAt(nth);
      const r = await c.call(RPC.batchInsert, request(`doomed-${nth}`), alice);
      faults.failAt(0);
      expect(r.code, `write ${nth} of ${writes}`).not.toBe("ok");
      expect(server.engram.testHooks.fingerprint(), `store changed by a write failing at ${nth}`).toEqual(before);
      // The space was not created: a vector of another dimension is welcome in it.
      expect(await topIds(c, alice, { run_id: "atomic", vector_space: `doomed-${nth}`, embedding: vec(7, 1) })).toEqual([]);
    }
  });
});
