// The lexical index written at a clean shutdown and read back at start-up (src/retrieval/sparse-snapshot.ts): queries
// answer exactly as after a prewarm from the stored terms; the file is read once; a snapshot older than the store,
// or damaged, is ignored and the index is prewarmed instead.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { restCaller, type Caller, type JsonObject } from "./harness/callers.js";
import { RPC, evidenceOf, ingestAndWait, ok } from "./harness/memory.js";

let server: TestServer;
let rest: Caller;
let alice: string;
let bob: string;

const snapshotOf = (dataDir: string): string => path.join(dataDir, "sparse-postings.snapshot");

async function restart(before?: (dataDir: string) => void): Promise<void> {
  const { dataDir, adminKey } = server;
  await server.close();
  before?.(dataDir);
  server = await startTestServer({ SERVICE_ADMIN_KEY: adminKey }, dataDir);
  rest = restCaller(server.baseUrl);
}

const QUERIES = ["payments queue stalled", "cache warmer crashed on friday", "deploy gateway rollback", "Dana rollback notes"];
const TOPICS = ["payments queue", "cache warmer", "deploy gateway", "rollback notes", "friday standup"];

function items(count: number, offset: number): JsonObject[] {
  return Array.from({ length: count }, (_, i) => {
    const n = i + offset;
    return { text: `${["Dana", "Eli", "Fay"][n % 3]}: the ${TOPICS[n % 5]} ${n % 2 ? "stalled" : "crashed"} at step ${n % 7}; ${TOPICS[(n * 3) % 5]} after it.` };
  });
}

/** Every query's evidence as (id, score) pairs, best first. */
async function answers(): Promise<[string, number][][]> {
  const out: [string, number][][] = [];
  for (const query of QUERIES) {
    const body = await ok(rest, RPC.query, { run_id: "snap", query, limit: 20 }, alice);
    out.push(evidenceOf(body).map((e) => [String(e["id"]), Number(e["score"])]));
  }
  return out;
}

beforeAll(async () => {
  server = await startTestServer();
  rest = restCaller(server.baseUrl);
  alice = await createUser(server.baseUrl, server.adminKey, "alice");
  bob = await createUser(server.baseUrl, server.adminKey, "bob");
  await ingestAndWait(rest, alice, "snap", items(120, 0));
  // Another owner's entries in a run of the same id: their postings are filed apart and must come back apart.
  await ingestAndWait(rest, bob, "snap", items(60, 1000));
});

afterAll(async () => {
  await server.close();
});

describe("the lexical index snapshot", () => {
  it("answers after a clean restart exactly as before it and as after a prewarm, and is read once", async () => {
    const before = await answers();
    expect(before.every((hits) => hits.length > 0)).toBe(true);
    await restart((dataDir) => expect(fs.statSync(snapshotOf(dataDir)).size).toBeGreaterThan(0));
    expect(fs.existsSync(snapshotOf(server.dataDir))).toBe(false);
    expect(await answers()).toEqual(before);
    // The same store prewarmed from the stored terms answers the same.
    await restart((dataDir) => fs.rmSync(snapshotOf(dataDir)));
    expect(await answers()).toEqual(before);
  });

  it("is ignored when the store changed after it was written, or when it is damaged", async () => {
    let older: Buffer | undefined;
    await restart((dataDir) => (older = fs.readFileSync(snapshotOf(dataDir))));
    await ingestAndWait(rest, alice, "snap", items(30, 500));
    const expected = await answers();
    await restart((dataDir) => fs.writeFileSync(snapshotOf(dataDir), older as Buffer));
    expect(await answers()).toEqual(expected);
    await restart((dataDir) => {
      const current = fs.readFileSync(snapshotOf(dataDir));
      fs.writeFileSync(snapshotOf(dataDir), current.subarray(0, Math.floor(current.length / 2)));
    });
    expect(await answers()).toEqual(expected);
    // Owners stay apart through a snapshot: bob's query of his run sees only his entries.
    await restart();
    const bobs = evidenceOf(await ok(rest, RPC.query, { run_id: "snap", query: "payments queue stalled", limit: 50 }, bob));
    expect(bobs.length).toBeGreaterThan(0);
    const alices = new Set((await answers()).flat().map(([id]) => id));
    expect(bobs.filter((e) => alices.has(String(e["id"])))).toEqual([]);
  });
});
