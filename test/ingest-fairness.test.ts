// The ingest worker serves owners in turn: one tenant's backlog of large jobs never holds another tenant's job behind
// it, and a tenant with too many queued jobs is told to slow down (429) without affecting others.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { restCaller, type Caller } from "./harness/callers.js";
import { RPC, ok, waitForJob } from "./harness/memory.js";

let server: TestServer;
let rest: Caller;
let heavy: string;
let light: string;

beforeAll(async () => {
  server = await startTestServer();
  rest = restCaller(server.baseUrl);
  heavy = await createUser(server.baseUrl, server.adminKey, "heavy");
  light = await createUser(server.baseUrl, server.adminKey, "light");
});

afterAll(async () => server.close());

it("a job queued behind another owner's backlog runs after at most one of that owner's jobs", async () => {
  const release = server.engram.testHooks.holdBackground();
  const heavyJobs: string[] = [];
  for (let j = 0; j < 5; j++) {
    const items = Array.from({ length: 400 }, (_, i) => ({ text: `Bulk record ${j}-${i} about the quarterly ledger.` }));
    heavyJobs.push(String((await ok(rest, RPC.ingest, { run_id: "bulk", items }, heavy))["job_id"]));
  }
  const lightJob = String((await ok(rest, RPC.ingest, { run_id: "chat", items: [{ text: "Hello there." }] }, light))["job_id"]);
  release();
  const lightDone = (await waitForJob(rest, light, lightJob)).job;
  const heavyDone = [];
  for (const id of heavyJobs) heavyDone.push((await waitForJob(rest, heavy, id)).job);
  expect(lightDone["status"]).toBe("completed");
  // In acceptance order the light job would finish after all five; served in turn, it finishes before the second.
  expect(Date.parse(String(lightDone["finished_at"]))).toBeLessThanOrEqual(Date.parse(String(heavyDone[1]?.["started_at"])));
  for (let j = 1; j < heavyDone.length; j++) {
    expect(Date.parse(String(heavyDone[j]?.["started_at"]))).toBeGreaterThanOrEqual(Date.parse(String(heavyDone[j - 1]?.["finished_at"])));
  }
});

it("an owner with 1000 unfinished jobs is told to wait (429); other owners are not", async () => {
  const release = server.engram.testHooks.holdBackground();
  try {
    for (let i = 0; i < 1000; i++) {
      const r = await rest.call(RPC.ingest, { run_id: "flood", items: [{ text: `flood item ${i}` }] }, heavy);
      expect(r.code, r.message).toBe("ok");
    }
    const refused = await rest.call(RPC.ingest, { run_id: "flood", items: [{ text: "one too many" }] }, heavy);
    expect(refused.code).toBe("resource_exhausted");
    expect(refused.status).toBe(429);
    expect(refused.message).toContain("1000");
    expect((await rest.call(RPC.ingest, { run_id: "calm", items: [{ text: "still welcome" }] }, light)).code).toBe("ok");
  } finally {
    release();
  }
  await server.engram.testHooks.backgroundIdle();
  // Once the backlog drained, the flooding owner may queue again.
  expect((await rest.call(RPC.ingest, { run_id: "flood", items: [{ text: "after the drain" }] }, heavy)).code).toBe("ok");
}, 60_000);
