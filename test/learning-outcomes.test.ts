// The learning loop over REST, Connect and gRPC: outcomes move confidence along the documented Beta posterior,
// contributing entries are scope-checked, idempotency keys apply an outcome once (concurrently and across restarts),
// promotion follows its state machine, overlays and guidance leave out stale, quarantined and invalidated lessons,
// step outcomes replace by step, every change reaches the owner's event stream only, and deletion is immediate.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { TRANSPORTS, grpcStream, type Caller, type JsonObject, type TransportName } from "./harness/callers.js";
import { RPC, evidenceOf, expectInvalid, idsOf, ingestAndWait, ok } from "./harness/memory.js";
import { CallerPool, freshUsers } from "./harness/caller-pool.js";
import { lesson, lessonOf, promotionMoves } from "./harness/learning.js";

const L = {
  reflect: "engram.v2.LearningService/Reflect",
  outcome: "engram.v2.LearningService/RecordOutcome",
  step: "engram.v2.LearningService/RecordStepOutcome",
  list: "engram.v2.LearningService/ListLessons",
  update: "engram.v2.LearningService/UpdateLesson",
  remove: "engram.v2.LearningService/DeleteLesson",
  resolve: "engram.v2.LearningService/ResolveLessonPromotion",
  diagnose: "engram.v2.LearningService/Diagnose",
  strategies: "engram.v2.LearningService/SurfaceStrategies",
} as const;
const SUBSCRIBE = "engram.v2.EventsService/Subscribe";
const OVERLAY_MODES = new Set(["lesson_overlay", "rule_overlay"]);
/** The server embeds with the offline hashed embedder: similarity follows the words, so tests choose them. */
const ENV = { SERVICE_EMBEDDER: "hashed" };

let server: TestServer;

const pool = new CallerPool(() => server);
const on = (transport: TransportName): Caller => pool.on(transport);

function closeCallers(): void {
  pool.close();
}

async function restart(): Promise<void> {
  const { dataDir, adminKey } = server;
  closeCallers();
  await server.close();
  server = await startTestServer({ ...ENV, SERVICE_ADMIN_KEY: adminKey }, dataDir);
}

beforeAll(async () => {
  server = await startTestServer(ENV);
});

afterAll(async () => {
  closeCallers();
  await server.close();
});

/** A user of its own per test: the validation gate merges a user's similar lessons across runs. */
const fresh = freshUsers(() => server);

interface LessonOptions {
  readonly lesson_type?: string;
  readonly scope?: string;
  readonly confidence?: number;
  readonly user_id?: string;
}

/** Stores one caller-supplied lesson in `runId` through Reflect and returns its id; it must be accepted. */
async function learn(c: Caller, key: string, runId: string, content: string, options: LessonOptions = {}): Promise<string> {
  const { confidence = 0.6, user_id = "", lesson_type = "observation", scope = "run" } = options;
  const body = await ok(c, L.reflect, { run_id: runId, lessons: [{ content, lesson_type, scope }], confidence, user_id }, key);
  const decision = (body["decisions"] as JsonObject[])[0] as JsonObject;
  expect(decision["decision"], String(decision["reason"])).toBe("accepted");
  return String(decision["lesson_id"]);
}

interface Applied {
  readonly signal: number;
  readonly verified?: boolean;
}

/** The documented confidence: the Beta posterior mean seeded with two pseudo-outcomes at the initial confidence. */
function posterior(initial: number, outcomes: readonly Applied[]): number {
  let evidenceFor = 2 * initial;
  let evidenceAgainst = 2 * (1 - initial);
  for (const { signal, verified = false } of outcomes) {
    const weight = Math.abs(signal) * (verified ? 2 : 1);
    if (signal > 0) evidenceFor += weight;
    else evidenceAgainst += weight;
  }
  return evidenceFor / (evidenceFor + evidenceAgainst);
}

async function outcome(c: Caller, key: string, request: JsonObject): Promise<JsonObject> {
  return ok(c, L.outcome, request, key);
}

async function evidence(c: Caller, key: string, runId: string, query: string): Promise<JsonObject[]> {
  return evidenceOf(await ok(c, RPC.query, { run_id: runId, query, limit: 10 }, key));
}

async function contextIds(c: Caller, key: string, runId: string, query: string): Promise<string[]> {
  const body = await ok(c, RPC.context, { run_id: runId, query, limit: 10 }, key);
  return idsOf(body["sources"] as JsonObject[]);
}

async function diagnosed(c: Caller, key: string, runId: string, errorText: string): Promise<string[]> {
  const body = await ok(c, L.diagnose, { run_id: runId, error_text: errorText, limit: 50 }, key);
  return idsOf(body["failure_lessons"] as JsonObject[]);
}

function modeOf(items: readonly JsonObject[], id: string): string | undefined {
  const item = items.find((e) => e["id"] === id);
  return item === undefined ? undefined : String(item["retrieval_mode"]);
}

describe.each(TRANSPORTS)("RecordOutcome over %s", (transport) => {
  it("moves confidence along the Beta posterior: positive raises it, verified weighs twice, negative lowers it; audited per outcome", async () => {
    const c = on(transport);
    const key = await fresh("conf");
    const id = await learn(c, key, "conf-run", "When the payment webhook times out, replay it from the dead-letter queue.", { lesson_type: "failure", confidence: 0.6 });
    const applied: Applied[] = [];

    const first = await outcome(c, key, { run_id: "conf-run", reference_id: id, outcome: "success", signal: 1, rationale: "replay worked" });
    applied.push({ signal: 1 });
    expect(first).toMatchObject({ success: true, reinforcement_count: 1, deduplicated: false, entries_reinforced: 1, skipped_entry_ids: [] });
    // Prior 1.2 for and 0.8 against; +1 for: 2.2 / 3.
    expect(first["updated_confidence"]).toBeCloseTo(2.2 / 3, 9);
    const firstId = String(first["outcome_id"]);
    expect(firstId).not.toBe("");

    const second = await outcome(c, key, { run_id: "conf-run", reference_id: id, outcome: "success", signal: 0.5, verified_in_production: true });
    applied.push({ signal: 0.5, verified: true });
    expect(second["updated_confidence"]).toBeCloseTo(3.2 / 4, 9);
    expect(second["updated_confidence"]).toBeCloseTo(posterior(0.6, applied), 9);
    expect(second["outcome_id"]).not.toBe(firstId);

    const third = await outcome(c, key, { run_id: "conf-run", reference_id: id, outcome: "failure", signal: -0.4 });
    applied.push({ signal: -0.4 });
    expect(Number(third["updated_confidence"])).toBeLessThan(Number(second["updated_confidence"]));
    expect(third["updated_confidence"]).toBeCloseTo(posterior(0.6, applied), 9);
    expect(third["reinforcement_count"]).toBe(3);

    const stored = await lesson(c, key, id);
    expect(stored).toMatchObject({ reinforcement_count: 3, verified_in_production: true });
    expect(stored["confidence"]).toBeCloseTo(3.2 / 4.4, 9);
    const confidenceEvents = (stored["audit_trail"] as JsonObject[]).filter((e) => e["field"] === "confidence");
    expect(confidenceEvents).toHaveLength(3);
    expect(String((confidenceEvents[0] as JsonObject)["reason"])).toContain(firstId);
    expect(Number((confidenceEvents[0] as JsonObject)["old_value"])).toBeCloseTo(0.6, 9);
    expect(Number((confidenceEvents[0] as JsonObject)["new_value"])).toBeCloseTo(2.2 / 3, 9);
    expect(String((confidenceEvents[2] as JsonObject)["reason"])).toContain(String(third["outcome_id"]));
  });

  it("derives outcome from signal and signal from outcome (neutral reinforces nothing) and clamps signal to [-1, 1]", async () => {
    const c = on(transport);
    const key = await fresh("derive");
    // Global: no promotion moves, only confidence.
    const id = await learn(c, key, "derive-run", "Warm the search cache after each reindex of the catalogue.", { scope: "global", confidence: 0.5 });
    const applied: Applied[] = [];
    const step = async (request: JsonObject, signal: number | undefined): Promise<JsonObject> => {
      const body = await outcome(c, key, { run_id: "derive-run", reference_id: id, ...request });
      if (signal !== undefined) applied.push({ signal });
      expect(body["updated_confidence"], JSON.stringify(request)).toBeCloseTo(posterior(0.5, applied), 9);
      expect(body["reinforcement_count"], JSON.stringify(request)).toBe(applied.length);
      return body;
    };
    await step({ outcome: "", signal: -0.25 }, -0.25);
    await step({ outcome: "partial", signal: 0 }, 0.5);
    await step({ outcome: "success" }, 1);
    await step({ outcome: "failure" }, -1);
    const neutral = await step({ outcome: "neutral" }, undefined);
    expect(neutral).toMatchObject({ success: true, entries_reinforced: 0 });
    expect(neutral["outcome_id"]).not.toBe("");
    await step({ outcome: "", signal: 0 }, undefined);
    await step({ outcome: "success", signal: 7 }, 1);
    await step({ signal: -9 }, -1);
    expect((await lesson(c, key, id))["confidence"]).toBeCloseTo(posterior(0.5, applied), 9);
  });

  it("rejects an empty run_id, an unknown outcome, a signal that is not a number and more than 100 entry_ids; applies nothing", async () => {
    const c = on(transport);
    const key = await fresh("bad-outcome");
    const id = await learn(c, key, "bad-run", "Vacuum the analytics tables weekly.", { confidence: 0.5 });
    const base = { run_id: "bad-run", reference_id: id, outcome: "success" };
    expectInvalid(await c.call(L.outcome, { ...base, run_id: "" }, key), "run_id");
    expectInvalid(await c.call(L.outcome, { ...base, outcome: "great" }, key), "outcome");
    expectInvalid(await c.call(L.outcome, { ...base, signal: "NaN" }, key), "signal");
    const tooMany = Array.from({ length: 101 }, (_, i) => `ent_${i.toString(36)}zz`);
    expectInvalid(await c.call(L.outcome, { ...base, entry_ids: tooMany }, key), "entry_ids");
    expect(await lesson(c, key, id)).toMatchObject({ reinforcement_count: 0, confidence: 0.5 });
    // 100 is the limit, not beyond it: unknown ids are skipped.
    const atLimit = await outcome(c, key, { ...base, entry_ids: tooMany.slice(0, 100) });
    expect(atLimit).toMatchObject({ entries_reinforced: 1, reinforcement_count: 1 });
    expect(atLimit["skipped_entry_ids"]).toHaveLength(100);
  });
});

describe.each(TRANSPORTS)("entry_ids over %s", (transport) => {
  it("credits entries of the run and global lessons reaching it; skips other runs, unknown ids, other logical users and other owners", async () => {
    const c = on(transport);
    const key = await fresh("ids");
    const other = await fresh("ids-other");
    const primary = await learn(c, key, "ids-a", "Pin the Node.js version in the CI image before upgrading npm.", { lesson_type: "success" });
    const [factA] = await ingestAndWait(c, key, "ids-a", [{ text: "The CI image is rebuilt every Monday.", entry_type: "fact" }]);
    const otherRunLesson = await learn(c, key, "ids-b", "Rotate the staging database password after each contractor leaves.");
    const [factB] = await ingestAndWait(c, key, "ids-b", [{ text: "Staging lives in the eu-west region.", entry_type: "fact" }]);
    const globalB = await learn(c, key, "ids-b", "Check the feature flag dashboard before any rollout.", { scope: "global" });
    const aboutCarol = await learn(c, key, "ids-a", "Carol prefers release summaries in bullet points.", { lesson_type: "preference", user_id: "carol" });
    const othersLesson = await learn(c, other, "ids-a", "Keep the load balancer idle timeout above the app's keep-alive.");

    const body = await outcome(c, key, {
      run_id: "ids-a",
      reference_id: primary,
      outcome: "success",
      user_id: "dave",
      entry_ids: [primary, factA!, otherRunLesson, factB!, globalB, "ent_zzzzzz", aboutCarol, othersLesson],
    });
    // The primary once, the run's fact, and the global lesson learned in another run.
    expect(body).toMatchObject({ success: true, entries_reinforced: 3, reinforcement_count: 1 });
    expect(new Set(body["skipped_entry_ids"] as string[])).toEqual(new Set([otherRunLesson, factB, "ent_zzzzzz", aboutCarol, othersLesson]));
    expect(body["updated_confidence"]).toBeCloseTo(posterior(0.6, [{ signal: 1 }]), 9);
    expect(await lesson(c, key, globalB)).toMatchObject({ reinforcement_count: 1 });
    expect((await lesson(c, key, globalB))["confidence"]).toBeCloseTo(posterior(0.6, [{ signal: 1 }]), 9);
    expect(await lesson(c, key, otherRunLesson)).toMatchObject({ reinforcement_count: 0, confidence: 0.6 });
    expect(await lesson(c, key, aboutCarol)).toMatchObject({ reinforcement_count: 0, confidence: 0.6 });
    expect(await lesson(c, other, othersLesson)).toMatchObject({ reinforcement_count: 0, confidence: 0.6 });

    // A primary about another logical user is not credited either.
    const carolOnly = await outcome(c, key, { run_id: "ids-a", reference_id: aboutCarol, outcome: "success", user_id: "dave" });
    expect(carolOnly).toMatchObject({ success: true, reinforcement_count: 0, updated_confidence: 0, entries_reinforced: 0 });

    // What @mubit-ai/sdk's helpers.outcome sends: reference "global", the contributing entries in entry_ids.
    const sdk = await outcome(c, key, { run_id: "ids-a", reference_id: "global", outcome: "failure", signal: -0.5, entry_ids: [globalB] });
    expect(sdk).toMatchObject({ success: true, reinforcement_count: 0, updated_confidence: 0, entries_reinforced: 1, skipped_entry_ids: [] });
    expect(sdk["outcome_id"]).not.toBe("");
    const afterSdk = await lesson(c, key, globalB);
    expect(afterSdk["reinforcement_count"]).toBe(2);
    expect(afterSdk["confidence"]).toBeCloseTo(posterior(0.6, [{ signal: 1 }, { signal: -0.5 }]), 9);
  });
});

describe.each(TRANSPORTS)("idempotency_key over %s", (transport) => {
  it("applies a keyed outcome once: repeats and 10 concurrent repeats return the same outcome; another user's key is its own", async () => {
    const c = on(transport);
    const key = await fresh("idem");
    const id = await learn(c, key, "idem-run", "Drain the job queue before rotating the worker pool.", { scope: "global", confidence: 0.5 });
    const request = { run_id: "idem-run", reference_id: id, outcome: "success", idempotency_key: "k-1" };
    const first = await outcome(c, key, request);
    expect(first).toMatchObject({ success: true, deduplicated: false, reinforcement_count: 1 });
    const again = await outcome(c, key, request);
    expect(again).toMatchObject({ success: true, deduplicated: true, outcome_id: first["outcome_id"] });
    // The key decides, not the content: a different signal under the same key is not applied either.
    const changed = await outcome(c, key, { ...request, outcome: "failure", signal: -1 });
    expect(changed).toMatchObject({ success: true, deduplicated: true, outcome_id: first["outcome_id"] });
    let stored = await lesson(c, key, id);
    expect(stored["reinforcement_count"]).toBe(1);
    expect(stored["confidence"]).toBeCloseTo(posterior(0.5, [{ signal: 1 }]), 9);

    const burst = await Promise.all(
      Array.from({ length: 10 }, () => c.call(L.outcome, { run_id: "idem-run", reference_id: id, outcome: "success", signal: 0.5, idempotency_key: "k-burst" }, key)),
    );
    for (const r of burst) expect(r.code, r.message).toBe("ok");
    expect(burst.filter((r) => r.body["deduplicated"] === false)).toHaveLength(1);
    expect(new Set(burst.map((r) => r.body["outcome_id"])).size).toBe(1);
    expect(burst[0]?.body["outcome_id"]).not.toBe(first["outcome_id"]);
    stored = await lesson(c, key, id);
    expect(stored["reinforcement_count"]).toBe(2);
    expect(stored["confidence"]).toBeCloseTo(posterior(0.5, [{ signal: 1 }, { signal: 0.5 }]), 9);

    const other = await fresh("idem-other");
    const theirs = await learn(c, other, "idem-run", "Snapshot the volume before resizing the disk.", { scope: "global", confidence: 0.5 });
    const theirOutcome = await outcome(c, other, { run_id: "idem-run", reference_id: theirs, outcome: "success", idempotency_key: "k-1" });
    expect(theirOutcome).toMatchObject({ success: true, deduplicated: false, reinforcement_count: 1 });
    expect(theirOutcome["outcome_id"]).not.toBe(first["outcome_id"]);
  });
});

describe.each(TRANSPORTS)("promotion over %s", (transport) => {
  it("a run lesson credited by a positive outcome auditions in the owner's other runs only, then is promoted after 2 wins from other runs", async () => {
    const c = on(transport);
    const key = await fresh("promo");
    const bob = await fresh("promo-bob");
    const text = "When the artifact upload returns 413, split the bundle into chunks under fifty megabytes.";
    const question = "artifact upload 413 bundle chunks";
    const id = await learn(c, key, "promo-a", text, { lesson_type: "failure", confidence: 0.6 });
    await ingestAndWait(c, key, "promo-b", [{ text: "Release notes for the mobile train." }]);
    await ingestAndWait(c, bob, "promo-b", [{ text: "Bob's notes on the artifact upload bundle and its chunks." }]);
    expect(await lesson(c, key, id)).toMatchObject({ scope: "run", promotion_state: "", promotion_target_scope: "" });
    expect(idsOf(await evidence(c, key, "promo-b", question))).not.toContain(id);

    await outcome(c, key, { run_id: "promo-a", reference_id: id, outcome: "success" });
    let stored = await lesson(c, key, id);
    expect(stored).toMatchObject({ scope: "run", promotion_state: "auditioning", promotion_target_scope: "global" });
    expect(promotionMoves(stored)).toEqual(["none→proposed", "proposed→auditioning"]);

    // Auditioning: recalled in the owner's other runs, never in another user's.
    expect(modeOf(await evidence(c, key, "promo-b", question), id)).toBe("lesson_overlay");
    expect(await contextIds(c, key, "promo-b", question)).toContain(id);
    expect(idsOf(await evidence(c, bob, "promo-b", question))).not.toContain(id);
    expect(idsOf(await evidence(c, bob, "promo-a", question))).not.toContain(id);
    expect(await contextIds(c, bob, "promo-b", question)).not.toContain(id);

    // Wins count from other runs only: another success in its own run, then one from another run, are not enough.
    await outcome(c, key, { run_id: "promo-a", reference_id: id, outcome: "success" });
    expect(await lesson(c, key, id)).toMatchObject({ scope: "run", promotion_state: "auditioning" });
    await outcome(c, key, { run_id: "promo-b", reference_id: id, outcome: "success" });
    expect(await lesson(c, key, id)).toMatchObject({ scope: "run", promotion_state: "auditioning" });
    const promoted = await outcome(c, key, { run_id: "promo-c", entry_ids: [id], outcome: "success" });
    expect(promoted).toMatchObject({ entries_reinforced: 1 });
    stored = await lesson(c, key, id);
    expect(stored).toMatchObject({ scope: "global", promotion_state: "", promotion_target_scope: "" });
    expect(stored["confidence"]).toBeCloseTo(posterior(0.6, [{ signal: 1 }, { signal: 1 }, { signal: 1 }, { signal: 1 }]), 9);
    expect(promotionMoves(stored)).toEqual(["none→proposed", "proposed→auditioning", "auditioning→promoted"]);
    expect((stored["audit_trail"] as JsonObject[]).find((e) => e["field"] === "scope")).toMatchObject({ old_value: "run", new_value: "global" });
    expect(idsOf(await evidence(c, bob, "promo-b", question))).not.toContain(id);
  });

  it("is not promoted until confidence reaches 0.7, however many wins from other runs", async () => {
    const c = on(transport);
    const key = await fresh("promo-conf");
    const id = await learn(c, key, "pc-a", "Set the Kafka consumer session timeout above the longest batch time.", { confidence: 0.4 });
    const applied: Applied[] = [];
    const credit = async (runId: string, signal: number): Promise<JsonObject> => {
      await outcome(c, key, { run_id: runId, reference_id: id, signal });
      applied.push({ signal });
      return lesson(c, key, id);
    };
    expect(await credit("pc-a", 0.3)).toMatchObject({ promotion_state: "auditioning" });
    expect(await credit("pc-b", 0.3)).toMatchObject({ promotion_state: "auditioning", scope: "run" });
    expect(await credit("pc-c", 0.3)).toMatchObject({ promotion_state: "auditioning", scope: "run" });
    expect(await credit("pc-d", 1)).toMatchObject({ promotion_state: "auditioning", scope: "run" });
    expect(posterior(0.4, applied)).toBeLessThan(0.7);
    const last = await credit("pc-e", 0.2);
    expect(posterior(0.4, applied)).toBeGreaterThanOrEqual(0.7);
    expect(last).toMatchObject({ promotion_state: "", scope: "global" });
    expect(last["confidence"]).toBeCloseTo(posterior(0.4, applied), 9);
  });

  it("quarantines a global lesson after 3 negative outcomes in a row; it then leaves query, context and diagnose but stays listed", async () => {
    const c = on(transport);
    const key = await fresh("streak");
    const text = "If the Redis connection pool is exhausted, raise maxclients and recycle idle workers.";
    const question = "Redis connection pool exhausted maxclients";
    const error = "ERR max number of clients reached: Redis connection pool exhausted";
    const id = await learn(c, key, "streak-home", text, { lesson_type: "failure", scope: "global", confidence: 0.9 });
    await ingestAndWait(c, key, "streak-other", [{ text: "Inventory of the queue worker fleet." }]);
    expect(idsOf(await evidence(c, key, "streak-other", question))).toContain(id);
    expect(await contextIds(c, key, "streak-other", question)).toContain(id);
    expect(await diagnosed(c, key, "streak-other", error)).toContain(id);

    const fail = (): Promise<JsonObject> => outcome(c, key, { run_id: "streak-other", reference_id: id, outcome: "failure" });
    await fail();
    await fail();
    await outcome(c, key, { run_id: "streak-other", reference_id: id, outcome: "success" });
    await fail();
    await fail();
    // Two in a row after a success: not yet.
    expect(await lesson(c, key, id)).toMatchObject({ promotion_state: "", scope: "global" });
    await fail();
    const stored = await lesson(c, key, id);
    expect(stored).toMatchObject({ promotion_state: "quarantined", scope: "global", reinforcement_count: 6 });
    expect(promotionMoves(stored)).toEqual(["none→quarantined"]);

    for (const runId of ["streak-other", "streak-home"]) {
      expect(idsOf(await evidence(c, key, runId, question))).not.toContain(id);
      expect(await contextIds(c, key, runId, question)).not.toContain(id);
      expect(await diagnosed(c, key, runId, error)).not.toContain(id);
    }
    expect(await diagnosed(c, key, "", error)).not.toContain(id);
    const listed = (await ok(c, L.list, { promotion_state: "quarantined" }, key))["lessons"] as JsonObject[];
    expect(idsOf(listed)).toEqual([id]);
  });

  it("quarantines an auditioning lesson: 2 negative outcomes from other runs, 2 in a row, or confidence below 0.4", async () => {
    const c = on(transport);
    const key = await fresh("audition-loss");
    const fromOtherRuns = await learn(c, key, "al-a", "Bump the gRPC max message size when exporting large traces.", { confidence: 0.8 });
    const inARow = await learn(c, key, "al-a", "Prefer the read replica for nightly report queries.", { confidence: 0.8 });
    const lowConfidence = await learn(c, key, "al-a", "Disable HTTP keep-alive toward the legacy SOAP gateway.", { confidence: 0.5 });
    const credit = (runId: string, id: string, signal: number): Promise<JsonObject> => outcome(c, key, { run_id: runId, reference_id: id, signal });
    const state = async (id: string): Promise<unknown> => (await lesson(c, key, id))["promotion_state"];

    await credit("al-a", fromOtherRuns, 1);
    expect(await state(fromOtherRuns)).toBe("auditioning");
    await credit("al-b", fromOtherRuns, -1);
    expect(await state(fromOtherRuns)).toBe("auditioning");
    await credit("al-a", fromOtherRuns, 1);
    await credit("al-c", fromOtherRuns, -1);
    expect(await state(fromOtherRuns)).toBe("quarantined");

    await credit("al-a", inARow, 1);
    await credit("al-a", inARow, -0.1);
    expect(await state(inARow)).toBe("auditioning");
    await credit("al-a", inARow, -0.1);
    expect(await state(inARow)).toBe("quarantined");

    await credit("al-a", lowConfidence, 0.1);
    expect(await state(lowConfidence)).toBe("auditioning");
    const dropped = await credit("al-a", lowConfidence, -0.9);
    expect(Number(dropped["updated_confidence"])).toBeLessThan(0.4);
    expect(await state(lowConfidence)).toBe("quarantined");

    for (const id of [fromOtherRuns, inARow, lowConfidence]) {
      expect(promotionMoves(await lesson(c, key, id))).toEqual(["none→proposed", "proposed→auditioning", "auditioning→quarantined"]);
    }
    const words = "gRPC max message size exporting traces read replica nightly report keep-alive SOAP gateway";
    const ids = idsOf(await evidence(c, key, "al-a", words));
    for (const id of [fromOtherRuns, inARow, lowConfidence]) expect(ids).not.toContain(id);
  });

  it("resolve_promotion: accept takes the target scope; refuse keeps the scope and is final; refusing a quarantine invalidates", async () => {
    const c = on(transport);
    const key = await fresh("resolve");
    const other = await fresh("resolve-other");
    const accepted = await learn(c, key, "rs-a", "Run database migrations before switching traffic to the new release.");
    const refused = await learn(c, key, "rs-a", "Warm the JIT by replaying recorded requests after a deploy.");
    const quarantined = await learn(c, key, "rs-a", "Retry S3 uploads with exponential backoff on SlowDown errors.", { lesson_type: "failure" });
    for (const id of [accepted, refused]) await outcome(c, key, { run_id: "rs-a", reference_id: id, outcome: "success" });
    for (let i = 0; i < 3; i++) await outcome(c, key, { run_id: "rs-a", reference_id: quarantined, outcome: "failure" });
    expect(await lesson(c, key, quarantined)).toMatchObject({ promotion_state: "quarantined" });

    expectInvalid(await c.call(L.resolve, { lesson_id: "", resolution: "accept" }, key), "lesson_id");
    expectInvalid(await c.call(L.resolve, { lesson_id: accepted, resolution: "maybe" }, key), "resolution");
    expect((await c.call(L.resolve, { lesson_id: accepted, resolution: "accept" }, other)).code).toBe("not_found");

    const acceptedBody = await ok(c, L.resolve, { lesson_id: accepted, resolution: "accept", reason: "reviewed", agent_id: "lead" }, key);
    expect(acceptedBody["lesson"]).toMatchObject({ scope: "global", promotion_state: "", promotion_target_scope: "", promotion_refused: false });
    const acceptTrail = ((acceptedBody["lesson"] as JsonObject)["audit_trail"] as JsonObject[]).filter((e) => e["field"] === "promotion");
    expect(acceptTrail.at(-1)).toMatchObject({ old_value: "auditioning", new_value: "accepted", agent_id: "lead" });
    // The person's reason is recorded with the decision (soft: the rest of the flow is checked regardless).
    expect.soft(String(acceptTrail.at(-1)?.["reason"])).toContain("reviewed");
    expect((await c.call(L.resolve, { lesson_id: accepted, resolution: "refuse" }, key)).code).toBe("failed_precondition");

    const refusedBody = await ok(c, L.resolve, { lesson_id: refused, resolution: "refuse", reason: "too specific" }, key);
    expect(refusedBody["lesson"]).toMatchObject({ scope: "run", promotion_state: "", promotion_refused: true });
    expect(promotionMoves(refusedBody["lesson"] as JsonObject).at(-1)).toBe("auditioning→refused");
    expect.soft(JSON.stringify((refusedBody["lesson"] as JsonObject)["audit_trail"])).toContain("too specific");
    await outcome(c, key, { run_id: "rs-a", reference_id: refused, outcome: "success" });
    expect(await lesson(c, key, refused)).toMatchObject({ scope: "run", promotion_state: "", promotion_refused: true });
    // Learned again in another run: merged, and still never proposed.
    const relearned = await ok(c, L.reflect, { run_id: "rs-b", lessons: [{ content: "Warm the JIT by replaying recorded requests after a deploy." }], confidence: 0.6 }, key);
    expect((relearned["decisions"] as JsonObject[])[0]).toMatchObject({ decision: "merged", lesson_id: refused, promotion_state: "" });
    expect(await lesson(c, key, refused)).toMatchObject({ promotion_state: "" });

    const quarantineBody = await ok(c, L.resolve, { lesson_id: quarantined, resolution: "refuse" }, key);
    expect(quarantineBody["lesson"]).toMatchObject({ scope: "run", promotion_state: "", validation_status: "invalidated" });
    expect(idsOf(await evidence(c, key, "rs-a", "S3 uploads SlowDown backoff"))).not.toContain(quarantined);
    // Repeating an invalidated lesson is rejected by the gate.
    const repeat = await ok(c, L.reflect, { run_id: "rs-c", lessons: [{ content: "Retry S3 uploads with exponential backoff on SlowDown errors.", lesson_type: "failure" }], confidence: 0.6 }, key);
    expect((repeat["decisions"] as JsonObject[])[0]).toMatchObject({ decision: "rejected", lesson_id: "" });
  });

  it("a lesson learned again in another run is merged and proposed; a positive outcome then moves it to auditioning", async () => {
    const c = on(transport);
    const key = await fresh("relearn");
    const text = "Invalidate the CDN cache for the changed asset paths only, never the whole distribution.";
    const id = await learn(c, key, "rl-a", text, { lesson_type: "success", confidence: 0.6 });
    const body = await ok(c, L.reflect, { run_id: "rl-b", lessons: [{ content: text, lesson_type: "success" }], confidence: 0.6 }, key);
    expect(body["lessons_stored"]).toBe(0);
    expect((body["decisions"] as JsonObject[])[0]).toMatchObject({ decision: "merged", lesson_id: id, promotion_state: "proposed", promotion_target_scope: "global" });
    let stored = await lesson(c, key, id);
    expect(stored).toMatchObject({ scope: "run", promotion_state: "proposed", promotion_target_scope: "global" });
    expect(Number(stored["confidence"])).toBeGreaterThan(0.6);
    expect(promotionMoves(stored)).toEqual(["none→proposed"]);
    expect(idsOf((await ok(c, L.list, { pending_promotion: true }, key))["lessons"] as JsonObject[])).toEqual([id]);

    // A proposed lesson does not reach other runs yet: the crediting outcome is one of its own run.
    await outcome(c, key, { run_id: "rl-a", reference_id: id, outcome: "success" });
    stored = await lesson(c, key, id);
    expect(stored).toMatchObject({ scope: "run", promotion_state: "auditioning" });
    expect(promotionMoves(stored)).toEqual(["none→proposed", "proposed→auditioning"]);
  });
});

describe.each(TRANSPORTS)("overlays over %s", (transport) => {
  it("overlays the run's active rule on an unrelated query and a relevant validated lesson as lesson_overlay", async () => {
    const c = on(transport);
    const key = await fresh("overlay");
    const facts = Array.from({ length: 12 }, (_, i) => ({ text: `Invoice ${i} for the shipping partner totals ${100 + i} euros.`, entry_type: "fact" }));
    await ingestAndWait(c, key, "ov-run", facts);
    await ingestAndWait(c, key, "ov-other", [{ text: "Invoice totals for the other shipping partner." }]);
    const rule = await learn(c, key, "ov-run", "Never deploy the billing service on Fridays.", { lesson_type: "rule" });
    const validated = await learn(c, key, "ov-run", "Compress the invoice PDFs before emailing them to the shipping partner.");
    await ok(c, L.update, { lesson_id: validated, validation_status: "validated" }, key);

    const unrelated = await evidence(c, key, "ov-run", "invoice shipping partner totals euros");
    expect(modeOf(unrelated, rule)).toBe("rule_overlay");
    expect(unrelated.length).toBeLessThanOrEqual(10);
    const relevant = await evidence(c, key, "ov-run", "compress invoice PDFs emailing");
    expect(modeOf(relevant, validated)).toBe("lesson_overlay");
    // A run-scoped rule stands in its own run only.
    expect(idsOf(await evidence(c, key, "ov-other", "invoice shipping partner totals"))).not.toContain(rule);
  });

  it("never retrieves quarantined or invalidated lessons, as overlays or otherwise", async () => {
    const c = on(transport);
    const key = await fresh("withheld");
    await ingestAndWait(c, key, "wh-run", [{ text: "The vault cluster has three nodes." }, { text: "Terraform runs on the shared runner." }]);
    const quarantined = await learn(c, key, "wh-run", "Unseal the vault cluster with three key holders present.", { scope: "global" });
    const invalidated = await learn(c, key, "wh-run", "Cache terraform provider plugins in the runner image.");
    await ok(c, L.update, { lesson_id: invalidated, validation_status: "invalidated" }, key);
    for (let i = 0; i < 3; i++) await outcome(c, key, { run_id: "wh-run", reference_id: quarantined, outcome: "failure" });
    expect(await lesson(c, key, quarantined)).toMatchObject({ promotion_state: "quarantined" });
    for (const query of ["vault cluster nodes", "unseal vault cluster key holders", "terraform provider plugins runner image"]) {
      for (const runId of ["wh-run", "wh-elsewhere"]) {
        const ids = idsOf(await evidence(c, key, runId, query));
        const sources = await contextIds(c, key, runId, query);
        for (const id of [quarantined, invalidated]) {
          expect(ids, query).not.toContain(id);
          expect(sources, query).not.toContain(id);
        }
      }
    }
  });

  it("never overlays stale lessons or rules: one that is still retrieved is ranked lower and marked stale, not an overlay", async () => {
    const c = on(transport);
    const key = await fresh("stale");
    await ingestAndWait(c, key, "st-run", [{ text: "The terraform plan for the network module takes six minutes." }, { text: "The vault cluster has three nodes." }]);
    const staleRule = await learn(c, key, "st-run", "Always tag the docker images with the git sha.", { lesson_type: "rule" });
    const staleLesson = await learn(c, key, "st-run", "Split the terraform network module so plans finish faster.");
    for (const id of [staleRule, staleLesson]) await ok(c, L.update, { lesson_id: id, stale: true }, key);
    const presentedAsOverlay: string[] = [];
    for (const query of ["vault cluster nodes", "terraform network module plans faster", "docker images git sha tag"]) {
      for (const item of await evidence(c, key, "st-run", query)) {
        if (item["id"] !== staleLesson && item["id"] !== staleRule) continue;
        expect(item["is_stale"]).toBe(true);
        if (OVERLAY_MODES.has(String(item["retrieval_mode"]))) presentedAsOverlay.push(`${query}: ${String(item["id"])} as ${String(item["retrieval_mode"])}`);
      }
    }
    expect(presentedAsOverlay).toEqual([]);
  });
});

describe.each(TRANSPORTS)("RecordStepOutcome over %s", (transport) => {
  it("requires run_id, step_id and a known outcome, a numeric signal and a JSON object as metadata_json", async () => {
    const c = on(transport);
    const key = await fresh("step-bad");
    const base = { run_id: "step-run", step_id: "s1", outcome: "success" };
    expectInvalid(await c.call(L.step, { ...base, run_id: "" }, key), "run_id");
    expectInvalid(await c.call(L.step, { ...base, step_id: "" }, key), "step_id");
    expectInvalid(await c.call(L.step, { ...base, outcome: "" }, key), "outcome");
    expectInvalid(await c.call(L.step, { ...base, outcome: "great" }, key), "outcome");
    expectInvalid(await c.call(L.step, { ...base, signal: "NaN" }, key), "signal");
    expectInvalid(await c.call(L.step, { ...base, metadata_json: "[1, 2]" }, key), "metadata_json");
    expectInvalid(await c.call(L.step, { ...base, metadata_json: "{not json" }, key), "metadata_json");
  });

  it("replaces the same step of a run and keeps its id; another run or step gets its own", async () => {
    const c = on(transport);
    const key = await fresh("step");
    const first = await ok(c, L.step, { run_id: "step-a", step_id: "s1", step_name: "tool_call_1", outcome: "failure", signal: -3, rationale: "HTTP 500", metadata_json: '{"tool":"http"}' }, key);
    expect(first["accepted"]).toBe(true);
    const firstId = String(first["step_outcome_id"]);
    expect(firstId).not.toBe("");
    const replaced = await ok(c, L.step, { run_id: "step-a", step_id: "s1", outcome: "success", signal: 0.8, directive_hint: "retry once" }, key);
    expect(replaced).toMatchObject({ accepted: true, step_outcome_id: firstId });
    const otherRun = await ok(c, L.step, { run_id: "step-b", step_id: "s1", outcome: "partial" }, key);
    const otherStep = await ok(c, L.step, { run_id: "step-a", step_id: "s2", outcome: "neutral" }, key);
    expect(new Set([firstId, otherRun["step_outcome_id"], otherStep["step_outcome_id"]]).size).toBe(3);
    // Another owner's same run and step is a record of its own.
    const other = await fresh("step-other");
    const theirs = await ok(c, L.step, { run_id: "step-a", step_id: "s1", outcome: "success" }, other);
    expect(theirs["step_outcome_id"]).not.toBe(firstId);
  });
});

interface Streams {
  until(name: string, match: (e: JsonObject) => boolean): Promise<JsonObject>;
  events(name: string): JsonObject[];
  close(): void;
}

/** Opens each user's control event stream over gRPC and waits until every one has said `subscribed`. */
async function subscribe(users: Readonly<Record<string, string>>): Promise<Streams> {
  const received = new Map<string, JsonObject[]>();
  const wakers: (() => void)[] = [];
  const cancels: (() => void)[] = [];
  for (const [name, key] of Object.entries(users)) {
    const events: JsonObject[] = [];
    received.set(name, events);
    const stream = grpcStream(server.port, SUBSCRIBE, {}, key);
    stream.on("data", (event: JsonObject) => {
      events.push(event);
      for (const wake of wakers.splice(0)) wake();
    });
    stream.on("error", () => undefined);
    cancels.push(() => stream.cancel());
  }
  const streams: Streams = {
    events: (name) => received.get(name) ?? [],
    async until(name, match) {
      for (;;) {
        const found = streams.events(name).find(match);
        if (found !== undefined) return found;
        await new Promise<void>((resolve) => wakers.push(resolve));
      }
    },
    close: () => {
      for (const cancel of cancels) cancel();
    },
  };
  for (const name of Object.keys(users)) await streams.until(name, (e) => e["type"] === "subscribed");
  return streams;
}

function payloadOf(event: JsonObject): JsonObject {
  return JSON.parse(String(event["payload"])) as JsonObject;
}

describe.each(TRANSPORTS)("events over %s", (transport) => {
  it("reach the owner's stream for reflection, step outcomes, outcomes and promotion moves, and never another user's", async () => {
    const c = on(transport);
    const alice = await fresh("ev-alice");
    const bob = await fresh("ev-bob");
    const streams = await subscribe({ alice, bob });
    try {
      const id = await learn(c, alice, "ev-run", "Throttle the crawler to two requests per second per host.");
      await streams.until("alice", (e) => e["type"] === "reflection.completed");
      expect(payloadOf(await streams.until("alice", (e) => e["type"] === "lesson.created"))).toMatchObject({ lesson_id: id, scope: "run", auto_extracted: false });

      const step = await ok(c, L.step, { run_id: "ev-run", step_id: "fetch", outcome: "success", signal: 4 }, alice);
      const stepEvent = await streams.until("alice", (e) => e["type"] === "step_outcome.recorded");
      expect(stepEvent["run_id"]).toBe("ev-run");
      expect(payloadOf(stepEvent)).toMatchObject({ step_outcome_id: step["step_outcome_id"], step_id: "fetch", outcome: "success", signal: 1 });

      const recorded = await outcome(c, alice, { run_id: "ev-run", reference_id: id, signal: 0.5 });
      const outcomeEvent = await streams.until("alice", (e) => e["type"] === "outcome.recorded");
      expect(payloadOf(outcomeEvent)).toMatchObject({ outcome_id: recorded["outcome_id"], reference_id: id, outcome: "success", signal: 0.5 });
      expect(String((await streams.until("alice", (e) => e["type"] === "lesson.updated"))["payload"])).toContain(id);
      const proposed = await streams.until("alice", (e) => e["type"] === "lesson.promotion.proposed");
      expect(payloadOf(proposed)).toMatchObject({ lesson_id: id });
      const changed = await streams.until("alice", (e) => e["type"] === "lesson.promotion.changed");
      expect(payloadOf(changed)).toMatchObject({ lesson_id: id, to: "auditioning" });
      const types = streams.events("alice").map((e) => e["type"]);
      expect(types.indexOf("lesson.promotion.proposed")).toBeLessThan(types.indexOf("lesson.promotion.changed"));

      await ok(c, L.resolve, { lesson_id: id, resolution: "accept" }, alice);
      expect(String((await streams.until("alice", (e) => e["type"] === "lesson.promotion.resolved"))["payload"])).toContain(id);

      const partial = await outcome(c, alice, { run_id: "ev-run", outcome: "partial" });
      expect(payloadOf(await streams.until("alice", (e) => e["type"] === "outcome.recorded" && payloadOf(e)["outcome_id"] === partial["outcome_id"]))).toMatchObject({
        outcome: "partial",
        signal: 0.5,
        reference_id: "",
      });
      const negative = await outcome(c, alice, { run_id: "ev-run", signal: -0.2 });
      expect(payloadOf(await streams.until("alice", (e) => e["type"] === "outcome.recorded" && payloadOf(e)["outcome_id"] === negative["outcome_id"]))).toMatchObject({
        outcome: "failure",
        signal: -0.2,
      });

      // Bob's marker is published after all of the above: his stream holds none of Alice's events.
      await ok(c, RPC.remember, { session_id: "bob-marker", content: "marker" }, bob);
      await streams.until("bob", (e) => e["run_id"] === "bob-marker");
      expect(streams.events("bob").filter((e) => e["type"] !== "subscribed").every((e) => e["run_id"] === "bob-marker")).toBe(true);
      expect(JSON.stringify(streams.events("bob"))).not.toContain(id);
    } finally {
      streams.close();
    }
  });
});

it("learning event payloads carry the keys events_service.proto documents", async () => {
  const c = on("rest");
  const key = await fresh("ev-keys");
  const streams = await subscribe({ key });
  try {
    const id = await learn(c, key, "evk-run", "Pre-sign the upload URLs for at most fifteen minutes.");
    await outcome(c, key, { run_id: "evk-run", reference_id: id, outcome: "success" });
    await ok(c, L.resolve, { lesson_id: id, resolution: "accept" }, key);
    const payload = async (type: string): Promise<JsonObject> => payloadOf(await streams.until("key", (e) => e["type"] === type));
    // Soft: every mismatch with the documented payloads is reported, not only the first.
    expect.soft(await payload("reflection.completed")).toMatchObject({ lessons_created: 1, accepted: 1, merged: 0, rejected: 0, quarantined: 0, auto_extracted: false });
    expect.soft(await payload("lesson.updated")).toMatchObject({ entry_id: id, changed_fields: expect.arrayContaining(["confidence"]), cause: "outcome" });
    expect.soft(await payload("lesson.promotion.proposed")).toMatchObject({ lesson_id: id, from: "", to: "proposed", scope: "run", target_scope: "global" });
    expect.soft(await payload("lesson.promotion.changed")).toMatchObject({ lesson_id: id, from: "proposed", to: "auditioning", target_scope: "global" });
    expect.soft(await payload("lesson.promotion.resolved")).toMatchObject({ lesson_id: id, from: "auditioning", to: "accepted", scope: "global" });
  } finally {
    streams.close();
  }
});

describe.each(TRANSPORTS)("lessons/delete over %s", (transport) => {
  it("removes the lesson from query, context, listing, strategies and diagnose at once; outcomes then skip it", async () => {
    const c = on(transport);
    const key = await fresh("delete");
    const error = "TLS handshake failed: certificate has expired";
    const question = "TLS handshake expired certificate renew";
    const id = await learn(c, key, "dl-run", "When the TLS handshake fails with an expired certificate, renew it through the ACME client.", { lesson_type: "failure" });
    const kept = await learn(c, key, "dl-run", "Keep the ACME account key in the secrets manager.", { lesson_type: "failure" });
    const strategies = async (): Promise<string[]> =>
      ((await ok(c, L.strategies, { run_id: "dl-run", min_supporting_lessons: 1, max_strategies: 50 }, key))["strategies"] as JsonObject[]).flatMap(
        (s) => s["lesson_ids"] as string[],
      );
    expect(idsOf(await evidence(c, key, "dl-run", question))).toContain(id);
    expect(await contextIds(c, key, "dl-run", question)).toContain(id);
    expect(await lessonOf(c, key, id)).toBeDefined();
    expect(await strategies()).toContain(id);
    expect(await diagnosed(c, key, "dl-run", error)).toContain(id);

    expect(await ok(c, L.remove, { lesson_id: id }, key)).toMatchObject({ success: true });
    expect(idsOf(await evidence(c, key, "dl-run", question))).not.toContain(id);
    expect(await contextIds(c, key, "dl-run", question)).not.toContain(id);
    expect(await lessonOf(c, key, id)).toBeUndefined();
    expect(await lessonOf(c, key, kept)).toBeDefined();
    const remaining = await strategies();
    expect(remaining).not.toContain(id);
    expect(remaining).toContain(kept);
    expect(await diagnosed(c, key, "dl-run", error)).not.toContain(id);

    const after = await outcome(c, key, { run_id: "dl-run", reference_id: id, outcome: "success", entry_ids: [id] });
    expect(after).toMatchObject({ success: true, reinforcement_count: 0, updated_confidence: 0, entries_reinforced: 0, skipped_entry_ids: [id] });
  });
});

describe("idempotency across a restart", () => {
  it("a key applied before the restart still deduplicates after it, over another transport", async () => {
    const key = await fresh("idem-restart");
    const id = await learn(on("rest"), key, "ir-run", "Checkpoint the stream processor before scaling partitions.", { scope: "global", confidence: 0.5 });
    const first = await outcome(on("rest"), key, { run_id: "ir-run", reference_id: id, outcome: "success", idempotency_key: "persisted" });
    expect(first["deduplicated"]).toBe(false);
    await restart();
    for (const transport of TRANSPORTS) {
      const again = await outcome(on(transport), key, { run_id: "ir-run", reference_id: id, outcome: "success", idempotency_key: "persisted" });
      expect(again).toMatchObject({ success: true, deduplicated: true, outcome_id: first["outcome_id"] });
    }
    const stored = await lesson(on("grpc"), key, id);
    expect(stored["reinforcement_count"]).toBe(1);
    expect(stored["confidence"]).toBeCloseTo(posterior(0.5, [{ signal: 1 }]), 9);
  });
});

describe("step ids beyond the Basic Multilingual Plane", () => {
  it("are read back like any other: reflect sees a step outcome whose step id is an emoji", async () => {
    const c = on("rest");
    const key = await fresh("emoji-step");
    await ok(c, L.step, { run_id: "emoji-run", step_id: "🚀-deploy", outcome: "failure", rationale: "rollout stalled", directive_hint: "Warm the cache before the rollout" }, key);
    const reflected = await ok(c, L.reflect, { run_id: "emoji-run" }, key);
    expect(reflected["evidence_items"]).toBe(1);
    expect((reflected["lessons"] as JsonObject[]).map((l) => l["content"])).toContain("Warm the cache before the rollout");
  });
});
