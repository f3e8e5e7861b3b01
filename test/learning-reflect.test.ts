// The learning loop over REST, Connect and gRPC: Reflect with caller lessons and with the built-in extractor, the
// validation gate's four decisions, lesson listing (filters, paging, GET), promotion resolution, strategies,
// diagnosis, and two users who never see, change, credit, merge into or quarantine each other's lessons.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerFor, restCaller, TRANSPORTS, type Caller, type JsonObject, type TransportName } from "./harness/callers.js";
import { evidenceOf, expectInvalid, idsOf, ingestAndWait, ok, RPC, expectCode } from "./harness/memory.js";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";

const LEARNING = {
  reflect: "engram.v2.LearningService/Reflect",
  list: "engram.v2.LearningService/ListLessons",
  listLoop: "engram.v2.LearningService/ListLoopLessons",
  update: "engram.v2.LearningService/UpdateLesson",
  delete: "engram.v2.LearningService/DeleteLesson",
  resolve: "engram.v2.LearningService/ResolveLessonPromotion",
  outcome: "engram.v2.LearningService/RecordOutcome",
  stepOutcome: "engram.v2.LearningService/RecordStepOutcome",
  strategies: "engram.v2.LearningService/SurfaceStrategies",
  diagnose: "engram.v2.LearningService/Diagnose",
} as const;

let server: TestServer;
let rest: Caller;
const callers = new Map<TransportName, Caller>();
let users = 0;

beforeAll(async () => {
  server = await startTestServer();
  rest = restCaller(server.baseUrl);
  for (const transport of TRANSPORTS) callers.set(transport, callerFor(transport, server.baseUrl, server.port));
});

afterAll(async () => {
  for (const caller of callers.values()) caller.close();
  await server.close();
});

function caller(transport: TransportName): Caller {
  return callers.get(transport) as Caller;
}

/** A fresh user: the gate compares a lesson with all of its owner's lessons, so each case starts from none. */
function newUser(prefix: string): Promise<string> {
  users++;
  return createUser(server.baseUrl, server.adminKey, `${prefix}-${users}`);
}

function lessonsOf(body: JsonObject): JsonObject[] {
  return body["lessons"] as JsonObject[];
}

function decisionsOf(body: JsonObject): JsonObject[] {
  return body["decisions"] as JsonObject[];
}

function kinds(body: JsonObject): string[] {
  return decisionsOf(body).map((d) => String(d["decision"]));
}

function reflect(c: Caller, key: string, request: JsonObject): Promise<JsonObject> {
  return ok(c, LEARNING.reflect, request, key);
}

/** Reflects caller lessons (content only, or whole lesson objects) into `runId`. */
function supply(c: Caller, key: string, runId: string, lessons: (string | JsonObject)[], extra: JsonObject = {}): Promise<JsonObject> {
  return reflect(c, key, { run_id: runId, lessons: lessons.map((l) => (typeof l === "string" ? { content: l } : l)), ...extra });
}

/** The one lesson id a single-lesson reflection stored or merged into. */
async function supplyOne(c: Caller, key: string, runId: string, lesson: string | JsonObject, extra: JsonObject = {}): Promise<string> {
  const body = await supply(c, key, runId, [lesson], extra);
  return String(decisionsOf(body)[0]?.["lesson_id"]);
}

/** Every listed lesson of the caller (one page of up to 500), newest first. */
async function listAll(c: Caller, key: string, filters: JsonObject = {}): Promise<JsonObject[]> {
  const body = await ok(c, LEARNING.list, { limit: 500, ...filters }, key);
  expect(body["next_page_token"]).toBe("");
  return lessonsOf(body);
}

async function listedIds(key: string, filters: JsonObject = {}): Promise<string[]> {
  return idsOf(await listAll(rest, key, filters));
}

async function lessonById(key: string, id: string): Promise<JsonObject> {
  const found = (await listAll(rest, key)).find((l) => l["id"] === id);
  expect(found, `lesson ${id} is listed`).toBeDefined();
  return found as JsonObject;
}


async function queryIds(key: string, runId: string, query: string): Promise<string[]> {
  return idsOf(evidenceOf(await ok(rest, RPC.query, { run_id: runId, query, limit: 50 }, key)));
}

async function contextIds(key: string, runId: string, query: string): Promise<string[]> {
  return idsOf((await ok(rest, RPC.context, { run_id: runId, query, max_token_budget: 4000 }, key))["sources"] as JsonObject[]);
}

async function recordStep(c: Caller, key: string, request: JsonObject): Promise<string> {
  const body = await ok(c, LEARNING.stepOutcome, request, key);
  expect(body["accepted"]).toBe(true);
  return String(body["step_outcome_id"]);
}

describe("reflect with caller lessons", () => {
  for (const transport of TRANSPORTS) {
    it(`stores them as not auto-extracted, with defaults, the batch confidence and lesson_id ignored, over ${transport}`, async () => {
      const c = caller(transport);
      const key = await newUser(`caller-${transport}`);
      const runId = `caller-${transport}`;
      const first = await supply(c, key, runId, [
        { content: "Prefer small pull requests so that reviews finish the same day.", lesson_id: "ent_999999" },
        {
          content: "When the payment webhook returns HTTP 500, retry it with exponential backoff.",
          lesson_type: "failure",
          scope: "global",
          importance: "critical",
          conditions: ["when the payment webhook returns HTTP 500"],
          rationale: "Three incidents last quarter.",
        },
      ], { agent_id: "planner", user_id: "u-7" });
      expect(kinds(first)).toEqual(["accepted", "accepted"]);
      expect(first).toMatchObject({ confidence: 1, lessons_stored: 2, evidence_items: 0, degraded: false });
      // Empty values take their defaults, in the response as in the stored lesson.
      expect(lessonsOf(first)[0]).toMatchObject({ lesson_type: "observation", scope: "run", importance: "medium", conditions: [], rationale: "" });
      const [plainId, webhookId] = decisionsOf(first).map((d) => String(d["lesson_id"]));
      expect(plainId).toMatch(/^ent_/);
      expect(plainId).not.toBe("ent_999999");
      expect(decisionsOf(first)[0]).toMatchObject({ lesson_index: 0, confidence: 1, validation_status: "pending" });
      expect(lessonsOf(first).map((l) => l["lesson_id"])).toEqual([plainId, webhookId]);

      const listed = await listAll(c, key, { run_id: runId });
      expect(idsOf(listed)).toEqual([webhookId, plainId]);
      expect(listed[1]).toMatchObject({
        content: "Prefer small pull requests so that reviews finish the same day.",
        lesson_type: "observation",
        scope: "run",
        importance: "medium",
        auto_extracted: false,
        source: "reflect",
        source_run_id: runId,
        confidence: 1,
        validation_status: "pending",
        promotion_state: "",
        agent_id: "planner",
        user_id: "u-7",
        source_entry_ids: [],
      });
      expect(listed[0]).toMatchObject({
        lesson_type: "failure",
        scope: "global",
        importance: "critical",
        conditions: ["when the payment webhook returns HTTP 500"],
        rationale: "Three incidents last quarter.",
        auto_extracted: false,
      });

      // A lesson_id naming an existing lesson neither overwrites it nor merges into it.
      const second = await supply(c, key, runId, [{ content: "Tag every release commit with the semantic version number.", lesson_id: plainId! }], { confidence: 0.65 });
      expect(kinds(second)).toEqual(["accepted"]);
      const taggedId = String(decisionsOf(second)[0]?.["lesson_id"]);
      expect(taggedId).not.toBe(plainId);
      expect(second["confidence"]).toBe(0.65);
      expect(await lessonById(key, plainId!)).toMatchObject({ content: "Prefer small pull requests so that reviews finish the same day.", confidence: 1 });
      // The batch confidence becomes the stored confidence.
      expect(await lessonById(key, taggedId)).toMatchObject({ confidence: 0.65, auto_extracted: false });

      // Clamped to [0, 1]: 7 stores 1; -3 is 0, below the gate's floor, so nothing is stored.
      const high = await supply(c, key, runId, ["Keep the staging database snapshot younger than one week."], { confidence: 7 });
      expect(high["confidence"]).toBe(1);
      expect(kinds(high)).toEqual(["accepted"]);
      expect(await lessonById(key, String(decisionsOf(high)[0]?.["lesson_id"]))).toMatchObject({ confidence: 1 });
      const low = await supply(c, key, runId, ["Archive the audit logs to cold storage every month."], { confidence: -3 });
      expect(low).toMatchObject({ confidence: 0, lessons_stored: 0 });
      expect(decisionsOf(low)[0]).toMatchObject({ decision: "rejected", lesson_id: "", confidence: 0, validation_status: "" });
      expect(await listAll(c, key, { run_id: runId })).toHaveLength(4);
    });
  }

  for (const transport of TRANSPORTS) {
    it(`rejects an invalid batch whole, naming the field, over ${transport}`, async () => {
      const c = caller(transport);
      const key = await newUser(`invalid-${transport}`);
      const runId = `invalid-${transport}`;
      const valid = { content: "Run the linter before every push to the main branch." };
      const cases: [JsonObject[], string][] = [
        [[valid, { content: "Bad type.", lesson_type: "hint" }], "lessons[1].lesson_type"],
        [[{ content: "Bad scope.", scope: "galaxy" }], "lessons[0].scope"],
        [[valid, valid, { content: "Bad importance.", importance: "urgent" }], "lessons[2].importance"],
        [[valid, { content: "" }], "lessons[1].content"],
        [[valid, { content: "   ", lesson_type: "rule" }], "lessons[1].content"],
      ];
      for (const [lessons, field] of cases) expectInvalid(await c.call(LEARNING.reflect, { run_id: runId, lessons }, key), field);
      expectInvalid(await c.call(LEARNING.reflect, { run_id: "", lessons: [valid] }, key), "run_id");
      expectInvalid(await c.call(LEARNING.reflect, { run_id: "  " }, key), "run_id");
      // include_linked_runs changes what is read, not what is checked.
      expectInvalid(await c.call(LEARNING.reflect, { run_id: runId, include_linked_runs: true, lessons: [valid, { content: "Bad type.", lesson_type: "hint" }] }, key), "lessons[1].lesson_type");
      // Nothing of any refused batch was stored, not even the valid lessons before the bad one.
      expect(await listAll(c, key)).toEqual([]);

      // checkpoint_id must name a checkpoint of this run of the caller.
      const [factId] = await ingestAndWait(c, key, runId, [{ text: "The release train leaves on Tuesdays.", entry_type: "fact" }]);
      const other = String((await ok(c, RPC.checkpoint, { run_id: `${runId}-other`, context_snapshot: "Saved state." }, key))["checkpoint_id"]);
      for (const checkpointId of ["ent_999999", factId!, other]) {
        expectCode(await c.call(LEARNING.reflect, { run_id: runId, checkpoint_id: checkpointId }, key), "not_found", 404);
      }
      expect(await listAll(c, key)).toEqual([]);
    });
  }
});

describe("stored rules", () => {
  it("are pending like any new lesson, in the decision and in the listing", async () => {
    const key = await newUser("rules");
    const body = await supply(rest, key, "rules-run", [{ content: "Never force-push to the release branch.", lesson_type: "rule" }]);
    expect(decisionsOf(body)[0], JSON.stringify(body)).toMatchObject({ decision: "accepted", validation_status: "pending" });
    const ruleId = String(decisionsOf(body)[0]?.["lesson_id"]);
    expect(await lessonById(key, ruleId)).toMatchObject({ lesson_type: "rule", validation_status: "pending" });
    expect(await listedIds(key, { validation_status: "pending" })).toEqual([ruleId]);
  });
});

describe("validation gate", () => {
  for (const transport of TRANSPORTS) {
    it(`accepts, rejects below the floor and merges near-duplicates (earlier lessons and batch mates), over ${transport}`, async () => {
      const c = caller(transport);
      const key = await newUser(`gate-${transport}`);
      const original = "Always run the database migrations before starting the API server in staging.";
      const first = await supply(c, key, "gate-1", [{ content: original, lesson_type: "success" }], { confidence: 0.5 });
      expect(decisionsOf(first)[0]).toMatchObject({ decision: "accepted", confidence: 0.5 });
      expect(String(decisionsOf(first)[0]?.["reason"])).not.toBe("");
      const existingId = String(decisionsOf(first)[0]?.["lesson_id"]);

      // Below the floor: rejected with its reason, not stored.
      const rejected = await supply(c, key, "gate-1", ["Cache compiled assets between CI jobs to save time."], { confidence: 0.2 });
      expect(decisionsOf(rejected)[0]).toMatchObject({ decision: "rejected", lesson_id: "", confidence: 0.2 });
      expect(String(decisionsOf(rejected)[0]?.["reason"])).toMatch(/floor/);
      expect(await listedIds(key)).toEqual([existingId]);

      // A reworded version sharing most words is merged into the existing lesson, which is reinforced.
      const reworded = await supply(c, key, "gate-1", [{ content: "Before starting the API server in staging, always run the database migrations first.", lesson_type: "success" }]);
      expect(decisionsOf(reworded)[0]).toMatchObject({ decision: "merged", lesson_id: existingId, promotion_state: "" });
      expect(String(decisionsOf(reworded)[0]?.["reason"])).toContain(existingId);
      expect(reworded["lessons_stored"]).toBe(0);
      expect(await listedIds(key)).toEqual([existingId]);
      const reinforced = await lessonById(key, existingId);
      expect(reinforced["content"]).toBe(original);
      expect(Number(reinforced["confidence"])).toBeGreaterThan(0.5);

      // Learned again in another run: merged and proposed for promotion to global.
      const elsewhere = await supply(c, key, "gate-2", [{ content: original, lesson_type: "success" }]);
      expect(decisionsOf(elsewhere)[0]).toMatchObject({ decision: "merged", lesson_id: existingId, promotion_state: "proposed", promotion_target_scope: "global" });
      expect(await lessonById(key, existingId)).toMatchObject({ promotion_state: "proposed", promotion_target_scope: "global", scope: "run", source_run_id: "gate-1" });

      // Of two near-duplicates in one batch, the second is merged into the first.
      const batch = await supply(c, key, "gate-1", [
        "Pin the Node.js version in the CI image to avoid surprise upgrades.",
        "Pin the Node.js version in the CI image, avoiding surprise upgrades.",
      ]);
      expect(kinds(batch)).toEqual(["accepted", "merged"]);
      const [pinned, mergedInto] = decisionsOf(batch).map((d) => String(d["lesson_id"]));
      expect(mergedInto).toBe(pinned);
      expect(batch["lessons_stored"]).toBe(1);
      expect(await listedIds(key)).toEqual([pinned, existingId]);
    });
  }

  it("quarantines a lesson contradicting an active rule: stored, listed, never guidance until accepted", async () => {
    const key = await newUser("quarantine");
    const runId = "fridays";
    await ingestAndWait(rest, key, runId, [{ text: "The production cluster runs in the eu-west region.", entry_type: "fact" }]);
    const ruleId = await supplyOne(rest, key, runId, { content: "Never deploy to production on Fridays.", lesson_type: "rule" });
    expect(await lessonById(key, ruleId)).toMatchObject({ lesson_type: "rule", promotion_state: "" });

    const body = await supply(rest, key, runId, ["Deploy to production on Fridays."]);
    const decision = decisionsOf(body)[0] as JsonObject;
    expect(decision).toMatchObject({ decision: "quarantined", promotion_state: "quarantined" });
    expect(String(decision["reason"])).toContain(ruleId);
    expect(body["lessons_stored"]).toBe(0);
    const quarantinedId = String(decision["lesson_id"]);
    expect(quarantinedId).toMatch(/^ent_/);
    expect(await lessonById(key, quarantinedId)).toMatchObject({ content: "Deploy to production on Fridays.", promotion_state: "quarantined", scope: "run" });
    expect(await listedIds(key, { promotion_state: "quarantined" })).toEqual([quarantinedId]);

    // Held back from guidance: neither query nor context returns it; the rule it contradicts still shows.
    const query = "deploy to production on Fridays";
    const found = await queryIds(key, runId, query);
    expect(found).toContain(ruleId);
    expect(found).not.toContain(quarantinedId);
    expect(await contextIds(key, runId, query)).not.toContain(quarantinedId);

    // The same lesson again joins the quarantined one; nothing new is stored.
    const again = await supply(rest, key, runId, ["Deploy to production on Fridays."]);
    expect(decisionsOf(again)[0]).toMatchObject({ decision: "quarantined", lesson_id: quarantinedId });
    expect(await listAll(rest, key)).toHaveLength(2);

    // A person accepts it: it is guidance from then on, and has no pending promotion left to resolve.
    const resolved = await ok(rest, LEARNING.resolve, { lesson_id: quarantinedId, resolution: "accept", reason: "approved by the release manager" }, key);
    expect(resolved["lesson"]).toMatchObject({ promotion_state: "", promotion_target_scope: "" });
    expect(await queryIds(key, runId, query)).toContain(quarantinedId);
    expectCode(await rest.call(LEARNING.resolve, { lesson_id: quarantinedId, resolution: "accept" }, key), "failed_precondition", 400);
  });
});

describe("built-in extraction", () => {
  for (const transport of TRANSPORTS) {
    it(`turns a run's traces and step outcomes into lessons with lineage, and learns nothing new twice, over ${transport}`, async () => {
      const c = caller(transport);
      const key = await newUser(`extract-${transport}`);
      const runId = `extract-${transport}`;
      const [failedId, fixId, neutralId] = await ingestAndWait(c, key, runId, [
        { text: "npm install failed with ETIMEDOUT while fetching packages from the default registry.", entry_type: "trace", metadata_json: '{"step_id":"install"}' },
        { text: "Switched to the mirror registry and now it works.", entry_type: "trace", metadata_json: '{"step_id":"install"}' },
        { text: "Compiled 42 modules.", entry_type: "trace" },
      ]);
      const hint = "Run schema migrations outside peak hours to avoid table lock timeouts.";
      const failedStep = await recordStep(c, key, {
        run_id: runId,
        step_id: "migrate",
        step_name: "db_migrate",
        outcome: "failure",
        signal: -1,
        rationale: "The schema migration timed out waiting for a table lock.",
        directive_hint: hint,
      });
      const succeededStep = await recordStep(c, key, {
        run_id: runId,
        step_id: "migrate-2",
        step_name: "db_migrate",
        outcome: "success",
        signal: 1,
        rationale: "Ran the migration at night; it finished in two minutes.",
      });
      const evidence = new Set([failedId, fixId, neutralId, failedStep, succeededStep]);

      const body = await reflect(c, key, { run_id: runId });
      expect(body["evidence_items"]).toBe(5);
      expect(String(body["summary"])).not.toBe("");
      expect(Number(body["confidence"])).toBeGreaterThan(0);
      expect(body["degraded"]).toBe(false);
      const decisions = decisionsOf(body);
      expect(decisions.length).toBeGreaterThan(0);
      expect(decisions.every((d) => d["decision"] === "accepted")).toBe(true);
      expect(body["lessons_stored"]).toBe(decisions.length);

      const listed = await listAll(c, key, { run_id: runId });
      expect(new Set(idsOf(listed))).toEqual(new Set(decisions.map((d) => String(d["lesson_id"]))));
      for (const lesson of listed) {
        expect(lesson).toMatchObject({ auto_extracted: true, source: "reflect", source_run_id: runId, validation_status: "pending" });
        expect(Number(lesson["confidence"])).toBeGreaterThan(0);
        expect(Number(lesson["confidence"])).toBeLessThanOrEqual(1);
        expect(String(lesson["rationale"])).not.toBe("");
        const sources = lesson["source_entry_ids"] as string[];
        expect(sources.length).toBeGreaterThan(0);
        for (const id of sources) expect(evidence.has(id), `${id} is evidence of the run`).toBe(true);
      }
      // The failure in the traces and the fix that followed it.
      const registry = listed.find((l) => (l["source_entry_ids"] as string[]).includes(failedId!));
      expect(registry, JSON.stringify(listed)).toBeDefined();
      expect(registry?.["source_entry_ids"]).toEqual(expect.arrayContaining([failedId, fixId]));
      expect(String(registry?.["content"])).toContain("mirror registry");
      expect((registry?.["conditions"] as string[]).some((cond) => cond.startsWith("when ") && cond.includes("ETIMEDOUT"))).toBe(true);
      expect(String(registry?.["rationale"])).toContain(failedId!);
      // The failed step's directive hint, with the step and its symptom as conditions.
      const hinted = listed.find((l) => l["content"] === hint);
      expect(hinted, JSON.stringify(listed)).toBeDefined();
      expect(hinted?.["source_entry_ids"]).toContain(failedStep);
      expect(hinted?.["conditions"]).toEqual(expect.arrayContaining(["in step db_migrate"]));

      // The same evidence again: every lesson merged into itself, nothing stored, nothing reinforced.
      const again = await reflect(c, key, { run_id: runId });
      expect(again["evidence_items"]).toBe(5);
      expect(again["lessons_stored"]).toBe(0);
      expect(decisionsOf(again).every((d) => d["decision"] === "merged")).toBe(true);
      expect(new Set(decisionsOf(again).map((d) => String(d["lesson_id"])))).toEqual(new Set(idsOf(listed)));
      expect(await listAll(c, key, { run_id: runId })).toEqual(listed);
    });
  }

  it("narrows the evidence by checkpoint_id, step_id, last_n_items and include_step_outcomes", async () => {
    const key = await newUser("narrow");
    const runId = "narrow-run";
    const [failedId] = await ingestAndWait(rest, key, runId, [
      { text: "The deploy to staging failed with HTTP 503 from the load balancer.", entry_type: "trace", metadata_json: '{"step_id":"deploy"}' },
    ]);
    const hint = "Drain the load balancer before deploying to staging.";
    const stepId = await recordStep(rest, key, {
      run_id: runId,
      step_id: "deploy",
      step_name: "deploy_staging",
      outcome: "failure",
      signal: -1,
      rationale: "The deploy step got HTTP 503 errors.",
      directive_hint: hint,
    });
    const checkpointId = String((await ok(rest, RPC.checkpoint, { run_id: runId, context_snapshot: "Saved before the load tests." }, key))["checkpoint_id"]);
    const [ruleTraceId] = await ingestAndWait(rest, key, runId, [
      { text: "Note: always warm the cache before running load tests.", entry_type: "trace", metadata_json: '{"step_id":"load"}' },
      { text: "The load test report was uploaded to the dashboard.", entry_type: "trace", metadata_json: '{"step_id":"load"}' },
    ]);
    const contents = (body: JsonObject): string => lessonsOf(body).map((l) => String(l["content"])).join("\n");

    // After the checkpoint: only the two load-test traces; the failure before it teaches nothing here.
    const afterCheckpoint = await reflect(rest, key, { run_id: runId, checkpoint_id: checkpointId });
    expect(afterCheckpoint["evidence_items"]).toBe(2);
    expect(contents(afterCheckpoint)).toMatch(/warm the cache/i);
    expect(contents(afterCheckpoint)).not.toMatch(/503|load balancer/);
    const listedAfterCheckpoint = await listAll(rest, key);
    expect(listedAfterCheckpoint.every((l) => (l["source_entry_ids"] as string[]).every((id) => id !== failedId && id !== stepId))).toBe(true);
    expect(listedAfterCheckpoint.some((l) => (l["source_entry_ids"] as string[]).includes(ruleTraceId!))).toBe(true);

    // Without step outcomes: the trace, the checkpoint and the two load-test traces; no directive hint.
    const withoutSteps = await reflect(rest, key, { run_id: runId, include_step_outcomes: false });
    expect(withoutSteps["evidence_items"]).toBe(4);
    expect(contents(withoutSteps)).not.toContain(hint);
    expect(contents(withoutSteps)).toMatch(/503/);
    const allSources = (await listAll(rest, key)).flatMap((l) => l["source_entry_ids"] as string[]);
    expect(allSources).not.toContain(stepId);

    // One step: its trace and its outcome (or only the trace).
    const deployStep = await reflect(rest, key, { run_id: runId, step_id: "deploy" });
    expect(deployStep["evidence_items"]).toBe(2);
    expect(contents(deployStep)).toContain(hint);
    expect(contents(deployStep)).not.toMatch(/warm the cache/i);
    expect((await reflect(rest, key, { run_id: runId, step_id: "deploy", include_step_outcomes: false }))["evidence_items"]).toBe(1);
    expect((await reflect(rest, key, { run_id: runId, step_id: "load" }))["evidence_items"]).toBe(2);
    expect((await reflect(rest, key, { run_id: runId, step_id: "no-such-step" }))["evidence_items"]).toBe(0);

    // The N most recent items, after the other filters.
    const lastOne = await reflect(rest, key, { run_id: runId, last_n_items: 1 });
    expect(lastOne["evidence_items"]).toBe(1);
    expect(lessonsOf(lastOne)).toEqual([]);
    expect((await reflect(rest, key, { run_id: runId, last_n_items: 3 }))["evidence_items"]).toBe(3);
    expect((await reflect(rest, key, { run_id: runId, last_n_items: -1 }))["evidence_items"]).toBe(5);
    expect((await reflect(rest, key, { run_id: runId, checkpoint_id: checkpointId, last_n_items: 1 }))["evidence_items"]).toBe(1);
    expect((await reflect(rest, key, { run_id: runId }))["evidence_items"]).toBe(5);

    // The hint lesson names the step outcome it came from.
    const hinted = (await listAll(rest, key)).find((l) => l["content"] === hint);
    expect(hinted?.["source_entry_ids"]).toContain(stepId);
  });

  it("include_step_outcomes: false leaves step outcomes out over Connect and gRPC too", async () => {
    for (const transport of ["connect", "grpc"] as const) {
      const c = caller(transport);
      const key = await newUser(`steps-off-${transport}`);
      const runId = `steps-off-${transport}`;
      await ingestAndWait(c, key, runId, [{ text: "The cache warmer started at noon.", entry_type: "trace" }]);
      await recordStep(c, key, { run_id: runId, step_id: "s1", outcome: "failure", rationale: "The cache warmer crashed.", directive_hint: "Give the cache warmer more memory." });
      expect((await reflect(c, key, { run_id: runId, include_step_outcomes: false }))["evidence_items"]).toBe(1);
      expect((await reflect(c, key, { run_id: runId }))["evidence_items"]).toBe(2);
    }
  });

  it("keeps a fixed failure from the traces when an unrelated step fails right after it", async () => {
    const key = await newUser("unrelated");
    const runId = "unrelated-run";
    const [failedId, fixId] = await ingestAndWait(rest, key, runId, [
      { text: "docker build failed: no space left on device.", entry_type: "trace" },
      { text: "Fixed it by pruning old images with docker image prune.", entry_type: "trace" },
    ]);
    await recordStep(rest, key, {
      run_id: runId,
      step_id: "migrate",
      step_name: "db_migrate",
      outcome: "failure",
      signal: -1,
      rationale: "The schema migration timed out waiting for a table lock.",
      directive_hint: "Run schema migrations outside peak hours to avoid table lock timeouts.",
    });
    const body = await reflect(rest, key, { run_id: runId });
    expect(body["evidence_items"]).toBe(3);
    const docker = (await listAll(rest, key)).find((l) => (l["source_entry_ids"] as string[]).includes(failedId!));
    expect(docker, `no lesson from the docker failure and its fix: ${JSON.stringify(lessonsOf(body))}`).toBeDefined();
    expect(docker?.["source_entry_ids"]).toContain(fixId);
    expect(String(docker?.["content"])).toMatch(/prun/);
  });
});

describe("listing lessons", () => {
  let key: string;
  const ids: Record<string, string> = {};
  /** Names the lessons a reflection stored, in order. */
  const name = (names: string[], body: JsonObject): void => names.forEach((n, i) => (ids[n] = String(decisionsOf(body)[i]?.["lesson_id"])));

  beforeAll(async () => {
    key = await newUser("lister");
    await ingestAndWait(rest, key, "list-1", [{ text: "The staging host is stg-3.", entry_type: "fact" }]);
    const first = await supply(rest, key, "list-1", [
      { content: "When the payment webhook returns HTTP 500, retry it with exponential backoff.", lesson_type: "failure", importance: "high" },
      { content: "Never store customer card numbers in application logs.", lesson_type: "rule", scope: "global", importance: "critical" },
      { content: "The reviewer prefers screenshots attached to every UI change.", lesson_type: "preference", scope: "session", importance: "low" },
    ], { confidence: 0.9 });
    name(["A", "B", "C"], first);
    const second = await supply(rest, key, "list-2", [
      "The nightly export finishes around three in the morning.",
      { content: "Compressing the build artifacts halved the upload time.", lesson_type: "success" },
    ], { confidence: 0.6, user_id: "u-2" });
    name(["D", "E"], second);
    ids["F"] = await supplyOne(rest, key, "list-2", { content: "Never rotate the signing keys during a release freeze.", lesson_type: "rule" });
    const quarantined = await supply(rest, key, "list-2", ["Rotate the signing keys during a release freeze."]);
    expect(kinds(quarantined)).toEqual(["quarantined"]);
    ids["G"] = String(decisionsOf(quarantined)[0]?.["lesson_id"]);
    // A learned again in another run: proposed.
    const relearned = await supply(rest, key, "list-3", [{ content: "When the payment webhook returns HTTP 500, retry it with exponential backoff.", lesson_type: "failure", importance: "high" }]);
    expect(decisionsOf(relearned)[0]).toMatchObject({ decision: "merged", lesson_id: ids["A"], promotion_state: "proposed" });
    await ok(rest, LEARNING.update, { lesson_id: ids["D"]!, validation_status: "validated" }, key);
    await ok(rest, LEARNING.update, { lesson_id: ids["E"]!, stale: true }, key);
    await ok(rest, LEARNING.update, { lesson_id: ids["C"]!, validation_status: "invalidated" }, key);
  });

  const named = (...names: string[]): string[] => names.map((n) => ids[n] as string);

  it("lists newest first, lessons and rules only, and applies every filter", async () => {
    expect(await listedIds(key)).toEqual(named("G", "F", "E", "D", "C", "B", "A"));
    const cases: [JsonObject, string[]][] = [
      [{ run_id: "list-1" }, named("C", "B", "A")],
      [{ run_id: "list-2" }, named("G", "F", "E", "D")],
      [{ run_id: "list-3" }, []],
      [{ scope: "global" }, named("B")],
      [{ scope: "session" }, named("C")],
      [{ scope: "run" }, named("G", "F", "E", "D", "A")],
      [{ importance: "critical" }, named("B")],
      [{ importance: "high" }, named("A")],
      [{ importance: "low" }, named("C")],
      [{ lesson_type: "rule" }, named("F", "B")],
      [{ lesson_type: "failure" }, named("A")],
      [{ lesson_type: "preference" }, named("C")],
      [{ lesson_type: "observation" }, named("G", "D")],
      [{ lesson_type: "success" }, named("E")],
      [{ validation_status: "validated" }, named("D")],
      [{ validation_status: "invalidated" }, named("C")],
      [{ validation_status: "pending" }, named("G", "F", "E", "B", "A")],
      [{ promotion_state: "quarantined" }, named("G")],
      [{ promotion_state: "proposed" }, named("A")],
      [{ promotion_state: "auditioning" }, []],
      [{ pending_promotion: true }, named("G", "A")],
      [{ exclude_stale: true }, named("G", "F", "D", "C", "B", "A")],
      [{ min_confidence: 0.7 }, named("G", "F", "C", "B", "A")],
      [{ min_confidence: 0 }, named("G", "F", "E", "D", "C", "B", "A")],
      [{ user_id: "u-2" }, named("E", "D")],
      [{ user_id: "nobody" }, []],
      [{ run_id: "list-2", lesson_type: "rule" }, named("F")],
      [{ run_id: "list-1", exclude_stale: true, min_confidence: 0.5, lesson_type: "failure", pending_promotion: true }, named("A")],
    ];
    // Soft: every filter is checked and every mismatch reported, not only the first.
    for (const [filters, expected] of cases) expect.soft(await listedIds(key, filters), JSON.stringify(filters)).toEqual(expected);
  });

  it("pages with limit and next_page_token: every lesson exactly once, newest first, the same over every transport", async () => {
    for (const transport of TRANSPORTS) {
      for (const rpc of [LEARNING.list, LEARNING.listLoop]) {
        for (const [filters, limit] of [[{}, 3], [{}, 1], [{}, 7], [{ lesson_type: "rule" }, 1], [{ run_id: "list-2" }, 3]] as const) {
          const seen: string[] = [];
          let token = "";
          for (let page = 0; page < 10; page++) {
            const body = await ok(caller(transport), rpc, { ...filters, limit, page_token: token }, key);
            const lessons = lessonsOf(body);
            expect(lessons.length).toBeLessThanOrEqual(limit);
            seen.push(...idsOf(lessons));
            token = String(body["next_page_token"]);
            if (token === "") break;
          }
          expect(token, `${transport} ${rpc} ${JSON.stringify(filters)} limit ${limit} ended`).toBe("");
          expect(seen, `${transport} ${rpc} ${JSON.stringify(filters)} limit ${limit}`).toEqual(await listedIds(key, filters));
        }
      }
    }
  });

  it("refuses a page_token issued for other filters, a malformed one, and unknown filter values, naming the field", async () => {
    const firstPage = await ok(rest, LEARNING.list, { limit: 2 }, key);
    const token = String(firstPage["next_page_token"]);
    expect(token).not.toBe("");
    for (const transport of TRANSPORTS) {
      const c = caller(transport);
      for (const rpc of [LEARNING.list, LEARNING.listLoop]) {
        expect(lessonsOf(await ok(c, rpc, { limit: 2, page_token: token }, key)).length).toBe(2);
        expectInvalid(await c.call(rpc, { limit: 2, page_token: token, importance: "high" }, key), "page_token");
        expectInvalid(await c.call(rpc, { limit: 2, page_token: token, run_id: "list-2" }, key), "page_token");
        expectInvalid(await c.call(rpc, { limit: 2, page_token: token, exclude_stale: true }, key), "page_token");
        for (const bad of ["not a token!", "abc", Buffer.from('{"x":1}').toString("base64url"), token.slice(0, -4)]) {
          expectInvalid(await c.call(rpc, { page_token: bad }, key), "page_token");
        }
        for (const [field, value] of [
          ["scope", "galaxy"],
          ["importance", "urgent"],
          ["lesson_type", "hint"],
          ["validation_status", "maybe"],
          ["promotion_state", "promoted"],
        ] as const) {
          expectInvalid(await c.call(rpc, { [field]: value }, key), field);
        }
      }
    }
  });

  it("answers GET /v2/loop/lessons with the filters in the query string, the same as POST", async () => {
    const get = async (query: Record<string, string>): Promise<{ status: number; body: JsonObject }> => {
      const url = new URL("/v2/loop/lessons", server.baseUrl);
      for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
      const response = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
      return { status: response.status, body: (await response.json()) as JsonObject };
    };
    const post = (request: JsonObject): Promise<JsonObject> => ok(rest, LEARNING.listLoop, request, key);
    const page1 = await get({ run_id: "list-2", limit: "2" });
    expect(page1.status).toBe(200);
    expect(page1.body).toEqual(await post({ run_id: "list-2", limit: 2 }));
    expect(idsOf(lessonsOf(page1.body))).toEqual(named("G", "F"));
    const page2 = await get({ run_id: "list-2", limit: "2", page_token: String(page1.body["next_page_token"]) });
    expect(idsOf(lessonsOf(page2.body))).toEqual(named("E", "D"));
    expect(page2.body).toEqual(await post({ run_id: "list-2", limit: 2, page_token: String(page1.body["next_page_token"]) }));
    const filtered = await get({ exclude_stale: "true", min_confidence: "0.7", pending_promotion: "true" });
    expect(idsOf(lessonsOf(filtered.body))).toEqual(named("G", "A"));
    expect(await post({ run_id: "list-1" })).toEqual(await ok(rest, LEARNING.list, { run_id: "list-1" }, key));
    const bad = await get({ lesson_type: "hint" });
    expect(bad.status).toBe(400);
    expect(String(bad.body["message"])).toMatch(/^lesson_type:/);
  });
});

describe("lesson maintenance", () => {
  for (const transport of TRANSPORTS) {
    it(`resolve_promotion needs a pending promotion and accept or refuse; delete removes from the listing, over ${transport}`, async () => {
      const c = caller(transport);
      const key = await newUser(`resolve-${transport}`);
      const text = "Warm the dependency cache before the first build of the day.";
      const lessonId = await supplyOne(c, key, "resolve-1", text);
      expectCode(await c.call(LEARNING.resolve, { lesson_id: lessonId, resolution: "accept" }, key), "failed_precondition", 400);
      expectCode(await c.call(LEARNING.resolve, { lesson_id: lessonId, resolution: "refuse" }, key), "failed_precondition", 400);
      expectCode(await c.call(LEARNING.resolve, { lesson_id: "ent_999999", resolution: "accept" }, key), "not_found", 404);
      expectInvalid(await c.call(LEARNING.resolve, { lesson_id: "", resolution: "accept" }, key), "lesson_id");

      // Learned again in another run: proposed; a refusal keeps the scope and is remembered.
      expect(decisionsOf(await supply(c, key, "resolve-2", [text]))[0]).toMatchObject({ decision: "merged", lesson_id: lessonId, promotion_state: "proposed" });
      for (const resolution of ["maybe", "ACCEPTED", ""]) {
        expectInvalid(await c.call(LEARNING.resolve, { lesson_id: lessonId, resolution }, key), "resolution");
      }
      expect(await lessonById(key, lessonId)).toMatchObject({ promotion_state: "proposed" });
      const refused = await ok(c, LEARNING.resolve, { lesson_id: lessonId, resolution: "refuse", reason: "too specific", agent_id: "lead" }, key);
      expect(refused["lesson"]).toMatchObject({ promotion_state: "", scope: "run", promotion_refused: true });
      const trail = (refused["lesson"] as JsonObject)["audit_trail"] as JsonObject[];
      expect(trail.at(-1)).toMatchObject({ field: "promotion", new_value: "refused", agent_id: "lead" });
      // Never proposed again.
      expect(decisionsOf(await supply(c, key, "resolve-3", [text]))[0]).toMatchObject({ decision: "merged", lesson_id: lessonId, promotion_state: "" });

      expect(await ok(c, LEARNING.delete, { lesson_id: lessonId }, key)).toMatchObject({ success: true });
      expect(await listAll(c, key)).toEqual([]);
      expectCode(await c.call(LEARNING.delete, { lesson_id: lessonId }, key), "not_found", 404);
      expectCode(await c.call(LEARNING.resolve, { lesson_id: lessonId, resolution: "accept" }, key), "not_found", 404);
      // Deleted, it is no longer something to merge into.
      expect(kinds(await supply(c, key, "resolve-1", [text]))).toEqual(["accepted"]);
    });
  }
});

describe("two users", () => {
  let alice: string;
  let bob: string;
  const run = "shared-run";
  let failureId: string;
  let ruleId: string;
  let noteId: string;
  let aliceStepId: string;
  let aliceCheckpointId: string;
  const failureText = "When npm install fails with ETIMEDOUT, switch to the mirror registry.";

  beforeAll(async () => {
    alice = await newUser("alice");
    bob = await newUser("bob");
    await ingestAndWait(rest, alice, run, [{ text: "npm install failed with ETIMEDOUT on the CI runner.", entry_type: "trace" }]);
    aliceStepId = await recordStep(rest, alice, { run_id: run, step_id: "install", outcome: "failure", rationale: "npm install timed out.", directive_hint: "Use the mirror registry for npm." });
    aliceCheckpointId = String((await ok(rest, RPC.checkpoint, { run_id: run, context_snapshot: "Alice's saved context." }, alice))["checkpoint_id"]);
    failureId = await supplyOne(rest, alice, run, { content: failureText, lesson_type: "failure" });
    ruleId = await supplyOne(rest, alice, run, { content: "Never deploy to production on Fridays.", lesson_type: "rule", scope: "global" });
    noteId = await supplyOne(rest, alice, run, "Release notes are drafted by the product team.");
    // Alice's own outcome credits her lesson: the routes below work, for her.
    const credited = await ok(rest, LEARNING.outcome, { run_id: run, reference_id: failureId, outcome: "success" }, alice);
    expect(credited).toMatchObject({ reinforcement_count: 1, entries_reinforced: 1 });
  });

  for (const transport of TRANSPORTS) {
    it(`bob can neither list, change, resolve, credit nor diagnose with alice's lessons, over ${transport}`, async () => {
      const c = caller(transport);
      const aliceIds = [failureId, ruleId, noteId];
      for (const rpc of [LEARNING.list, LEARNING.listLoop]) {
        expect(lessonsOf(await ok(c, rpc, { run_id: run }, bob))).toEqual([]);
        const everything = idsOf(lessonsOf(await ok(c, rpc, {}, bob)));
        for (const id of aliceIds) expect(everything).not.toContain(id);
      }
      for (const id of aliceIds) {
        for (const [rpc, request] of [
          [LEARNING.update, { lesson_id: id, confidence: 0.1 }],
          [LEARNING.update, { lesson_id: id, scope: "global" }],
          [LEARNING.resolve, { lesson_id: id, resolution: "accept" }],
          [LEARNING.delete, { lesson_id: id }],
        ] as const) {
          const r = await c.call(rpc, request, bob);
          expectCode(r, "not_found", 404);
          expect(r.message).not.toContain("npm");
        }
      }
      const outcome = await ok(c, LEARNING.outcome, { run_id: run, reference_id: failureId, entry_ids: aliceIds, outcome: "failure", signal: -1 }, bob);
      expect(outcome).toMatchObject({ success: true, reinforcement_count: 0, updated_confidence: 0, entries_reinforced: 0 });
      expect(new Set(outcome["skipped_entry_ids"] as string[])).toEqual(new Set(aliceIds));
      const diagnosis = await ok(c, LEARNING.diagnose, { run_id: run, error_text: "npm install failed: connect ETIMEDOUT" }, bob);
      expect(diagnosis).toMatchObject({ failure_lessons: [], summary: "", total_failure_lessons: 0 });
      const everywhere = await ok(c, LEARNING.diagnose, { error_text: "npm install failed: connect ETIMEDOUT", error_type: "ETIMEDOUT" }, bob);
      expect(everywhere["failure_lessons"]).toEqual([]);
      expectCode(await c.call(LEARNING.reflect, { run_id: run, checkpoint_id: aliceCheckpointId }, bob), "not_found", 404);
      const strategies = await ok(c, LEARNING.strategies, { min_supporting_lessons: 1 }, bob);
      for (const id of aliceIds) expect(JSON.stringify(strategies)).not.toContain(`"${id}"`);
    });
  }

  it("leaves alice's lessons unchanged by all of bob's calls", async () => {
    const lesson = await lessonById(alice, failureId);
    expect(lesson).toMatchObject({ reinforcement_count: 1, content: failureText, scope: "run", stale: false });
    expect(Number(lesson["confidence"])).toBe(1);
    expect(await listedIds(alice)).toEqual([noteId, ruleId, failureId]);
    // Her diagnosis still finds her failure lesson: bob's empty answers were not for lack of a match.
    const diagnosis = await ok(rest, LEARNING.diagnose, { run_id: run, error_text: "npm install failed: connect ETIMEDOUT" }, alice);
    expect(idsOf(diagnosis["failure_lessons"] as JsonObject[])[0]).toBe(failureId);
  });

  it("bob's reflections never merge into, get quarantined by, or read the evidence of alice's", async () => {
    for (const transport of TRANSPORTS) {
      const c = caller(transport);
      const other = await newUser(`bob-${transport}`);
      const same = await supply(c, other, run, [{ content: failureText, lesson_type: "failure" }]);
      expect(decisionsOf(same)[0]).toMatchObject({ decision: "accepted" });
      expect(decisionsOf(same)[0]?.["lesson_id"]).not.toBe(failureId);
      // Alice's global rule says never; the opposite lesson of another user is his own business.
      const opposite = await supply(c, other, run, ["Deploy to production on Fridays."]);
      expect(decisionsOf(opposite)[0]).toMatchObject({ decision: "accepted", promotion_state: "" });
      // A reflection of the shared run id reads none of alice's traces, step outcomes or outcomes.
      const extracted = await reflect(c, other, { run_id: run });
      expect(extracted["evidence_items"]).toBe(0);
      expect(extracted["lessons"]).toEqual([]);
      expect(await listAll(c, other)).toHaveLength(2);
    }
    // Bob's step outcome in the shared run id is not alice's evidence: hers are her trace, checkpoint, step outcome
    // and outcome.
    const bobStep = await recordStep(rest, bob, { run_id: run, step_id: "install", outcome: "failure", rationale: "Bob's build exploded.", directive_hint: "Bob should buy a bigger machine." });
    const aliceReflection = await reflect(rest, alice, { run_id: run });
    expect(aliceReflection["evidence_items"]).toBe(4);
    expect(JSON.stringify(aliceReflection)).not.toContain("bigger machine");
    const aliceLessons = await listAll(rest, alice);
    expect(aliceLessons.flatMap((l) => l["source_entry_ids"] as string[])).not.toContain(bobStep);
    expect(aliceLessons.some((l) => (l["source_entry_ids"] as string[]).includes(aliceStepId))).toBe(true);
    // And bob's reflection of the run reads his step outcome and his outcome, none of hers.
    const bobReflection = await reflect(rest, bob, { run_id: run });
    expect(JSON.stringify(bobReflection)).not.toContain("mirror registry");
    expect(JSON.stringify(await listAll(rest, bob))).not.toContain(aliceStepId);
  });
});

describe("strategies", () => {
  const retryLessons = [
    "Retry flaky payment gateway calls with exponential backoff and jitter.",
    "Retry the flaky payment gateway with exponential backoff, adding jitter.",
    "For flaky payment gateway calls, retry using exponential backoff with jitter.",
  ];
  let key: string;
  const ids: string[] = [];

  beforeAll(async () => {
    key = await newUser("strategist");
    // Three runs, each about another logical user: the gate does not merge them, so three similar lessons are stored.
    for (const [i, content] of retryLessons.entries()) {
      const body = await supply(rest, key, `strategy-${i}`, [{ content, lesson_type: "failure" }], { confidence: [0.9, 0.8, 0.7][i] as number, user_id: `customer-${i}` });
      expect(kinds(body)).toEqual(["accepted"]);
      ids.push(String(decisionsOf(body)[0]?.["lesson_id"]));
    }
    await supply(rest, key, "strategy-0", [
      { content: "The marketing site is rebuilt every night from the CMS export.", lesson_type: "observation" },
      { content: "Screenshots must accompany every pull request that changes the UI.", lesson_type: "rule" },
    ]);
  });

  it("clusters similar lessons across runs into one strategy, the same over every transport", async () => {
    for (const transport of TRANSPORTS) {
      const body = await ok(caller(transport), LEARNING.strategies, {}, key);
      const strategies = body["strategies"] as JsonObject[];
      expect(strategies, `${transport}: ${JSON.stringify(body)}`).toHaveLength(1);
      const strategy = strategies[0] as JsonObject;
      expect(strategy, `${transport}: ${JSON.stringify(body)}`).toMatchObject({ supporting_lesson_count: 3, dominant_lesson_type: "failure", dominant_scope: "run" });
      expect(new Set(strategy["lesson_ids"] as string[])).toEqual(new Set(ids));
      expect(Number(strategy["avg_confidence"])).toBeCloseTo(0.8, 5);
      // The representative statement is the most confident lesson's.
      expect(String(strategy["description"])).toContain(retryLessons[0]);
      expect(String(strategy["strategy_id"])).not.toBe("");
    }
  });

  it("filters by lesson type, refuses unknown types, and leaves out lessons of other runs and stale ones", async () => {
    const strategiesOf = async (request: JsonObject): Promise<JsonObject[]> => (await ok(rest, LEARNING.strategies, request, key))["strategies"] as JsonObject[];
    const supporting = (strategies: JsonObject[]): string[] => strategies.flatMap((s) => s["lesson_ids"] as string[]);
    for (const transport of TRANSPORTS) {
      expectInvalid(await caller(transport).call(LEARNING.strategies, { lesson_types: ["failure", "hint"] }, key), "lesson_types");
      const failures = (await ok(caller(transport), LEARNING.strategies, { lesson_types: ["failure"] }, key))["strategies"] as JsonObject[];
      expect(failures.length).toBeGreaterThan(0);
      for (const id of supporting(failures)) expect(ids).toContain(id);
    }
    expect(await strategiesOf({ lesson_types: ["success", "observation"] })).toEqual([]);
    // Stable: the same lessons give the same strategy.
    expect(await strategiesOf({})).toEqual(await strategiesOf({}));
    // A run sees its own lessons (and global ones) only: one retry lesson is no strategy.
    expect(await strategiesOf({ run_id: "strategy-1" })).toEqual([]);
    expect(await strategiesOf({ run_id: "strategy-1", min_supporting_lessons: 1 })).toMatchObject([{ supporting_lesson_count: 1, lesson_ids: [ids[1]] }]);
    // Stale lessons support nothing.
    await ok(rest, LEARNING.update, { lesson_id: ids[2]!, stale: true }, key);
    const fewer = await strategiesOf({});
    expect(fewer).toHaveLength(1);
    expect(fewer[0]).toMatchObject({ supporting_lesson_count: 2 });
    expect(new Set(supporting(fewer))).toEqual(new Set(ids.slice(0, 2)));
  });
});

describe("diagnose", () => {
  for (const transport of TRANSPORTS) {
    it(`returns the matching failure lesson first with a summary, never a quarantined one, over ${transport}`, async () => {
      const c = caller(transport);
      const key = await newUser(`diagnose-${transport}`);
      const runId = "diagnose-run";
      const failureId = await supplyOne(c, key, runId, { content: "When npm install fails with ETIMEDOUT, switch to the mirror registry.", lesson_type: "failure" });
      const observationId = await supplyOne(c, key, runId, "npm install takes about two minutes on the CI runners.");
      await supplyOne(c, key, runId, { content: "Never run database migrations during peak traffic hours.", lesson_type: "rule" });
      await supplyOne(c, key, runId, { content: "Never disable TLS verification when npm install fails with certificate errors.", lesson_type: "rule" });
      const quarantined = await supply(c, key, runId, [{ content: "Disable TLS verification when npm install fails with certificate errors.", lesson_type: "failure" }]);
      expect(kinds(quarantined)).toEqual(["quarantined"]);
      const quarantinedId = String(decisionsOf(quarantined)[0]?.["lesson_id"]);

      const body = await ok(c, LEARNING.diagnose, { run_id: runId, error_text: "npm ERR! network request to the registry failed, reason: connect ETIMEDOUT", error_type: "ETIMEDOUT" }, key);
      const found = body["failure_lessons"] as JsonObject[];
      expect(found[0], JSON.stringify(body)).toMatchObject({ id: failureId, entry_type: "lesson" });
      expect(idsOf(found)).not.toContain(observationId);
      expect(idsOf(found)).not.toContain(quarantinedId);
      expect(Number(body["total_failure_lessons"])).toBeGreaterThanOrEqual(found.length);
      expect(String(body["summary"])).toContain("mirror registry");

      const tls = await ok(c, LEARNING.diagnose, { error_text: "npm install failed: certificate errors, TLS verification failed" }, key);
      expect(idsOf(tls["failure_lessons"] as JsonObject[])).not.toContain(quarantinedId);
      expect(JSON.stringify(tls)).not.toContain("Disable TLS verification when");

      const limited = await ok(c, LEARNING.diagnose, { run_id: runId, error_text: "npm install failed with ETIMEDOUT", limit: 1 }, key);
      expect(limited["failure_lessons"]).toHaveLength(1);
      expectInvalid(await c.call(LEARNING.diagnose, { run_id: runId, error_text: "" }, key), "error_text");
      expectInvalid(await c.call(LEARNING.diagnose, { run_id: runId, error_text: "   " }, key), "error_text");
    });
  }
});
