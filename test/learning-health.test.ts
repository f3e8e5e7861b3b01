// memory_health reports the state of what was learned: low-confidence, stale and quarantined lessons, contradicting
// rules and pending promotions — over REST, Connect and gRPC, and only the caller's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { TRANSPORTS, callerFor, type JsonObject } from "./harness/callers.js";
import { ok } from "./harness/memory.js";

const REFLECT = "engram.v2.LearningService/Reflect";
const OUTCOME = "engram.v2.LearningService/RecordOutcome";
const UPDATE = "engram.v2.LearningService/UpdateLesson";
const HEALTH = "engram.v2.MemoryService/GetMemoryHealth";

let server: TestServer;
let alice: string;
let bob: string;
const ids: Record<string, string> = {};

beforeAll(async () => {
  server = await startTestServer();
  alice = await createUser(server.baseUrl, server.adminKey, "alice");
  bob = await createUser(server.baseUrl, server.adminKey, "bob");
  const c = callerFor("rest", server.baseUrl, server.port);
  const learn = async (name: string, run: string, content: string, extra: JsonObject, confidence = 0.6, userId = ""): Promise<void> => {
    const reflected = await ok(c, REFLECT, { run_id: run, confidence, user_id: userId, lessons: [{ content, ...extra }] }, alice);
    ids[name] = String((reflected["lessons"] as JsonObject[])[0]?.["lesson_id"]);
  };
  await learn("low", "health", "Warm the JIT before timing the parser benchmark.", { lesson_type: "success" }, 0.35);
  await learn("stale", "health", "Use the v1 billing endpoint for refunds.", { lesson_type: "observation" });
  await ok(c, UPDATE, { lesson_id: ids["stale"] as string, stale: true, reason: "v2 replaced it" }, alice);
  await learn("pending", "health", "Compress the nightly export with zstd level 3.", { lesson_type: "success" });
  await ok(c, OUTCOME, { run_id: "health", reference_id: ids["pending"] as string, outcome: "success" }, alice);
  await learn("doomed", "health", "Retry the flaky webhook exactly twice.", { lesson_type: "failure", scope: "global" });
  for (let i = 0; i < 3; i++) await ok(c, OUTCOME, { run_id: "health", reference_id: ids["doomed"] as string, outcome: "failure" }, alice);
  await learn("always", "health", "Always run the database migrations during the maintenance window.", { lesson_type: "rule" }, 0.9);
  // About another logical user, so the gate keeps it apart from the first rule instead of quarantining it.
  await learn("never", "health-b", "Never run the database migrations outside the maintenance window.", { lesson_type: "rule" }, 0.9, "other");
});

afterAll(async () => server.close());

describe.each(TRANSPORTS)("memory_health over %s", (transport) => {
  it("lists low-confidence, stale and quarantined lessons, contradicting rules and pending promotions", async () => {
    const c = callerFor(transport, server.baseUrl, server.port);
    const health = await ok(c, HEALTH, { limit: 1000 }, alice);
    expect(health["low_confidence_lesson_ids"]).toContain(ids["low"]);
    expect(health["stale_lesson_ids"]).toEqual([ids["stale"]]);
    expect(health["quarantined_lesson_ids"]).toEqual([ids["doomed"]]);
    expect(health["promotion_candidates"]).toEqual([ids["pending"]]);
    const pairs = (health["contradictions"] as JsonObject[]).map((p) => [p["lesson_a_id"], p["lesson_b_id"]].sort());
    expect(pairs).toContainEqual([ids["always"], ids["never"]].sort());
    // A quarantined or stale lesson is not counted among the low-confidence ones to act on.
    expect(health["low_confidence_lesson_ids"]).not.toContain(ids["stale"]);
  });

  it("shows another user none of them", async () => {
    const c = callerFor(transport, server.baseUrl, server.port);
    const health = await ok(c, HEALTH, { limit: 1000 }, bob);
    expect(health).toMatchObject({ low_confidence_lesson_ids: [], stale_lesson_ids: [], quarantined_lesson_ids: [], promotion_candidates: [], contradictions: [] });
  });
});
