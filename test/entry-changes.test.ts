// Update and delete through the public routes: lessons/update, lessons/delete and delete_run change every index at
// once, for the very next request and after a restart; lineage marks what was derived from a deleted entry; other
// owners can neither see nor touch the records.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./harness/server.js";
import { createUser } from "./harness/users.js";
import { callerFor, grpcStream, restCaller, type Caller, type JsonObject } from "./harness/callers.js";
import { RPC, evidenceOf, idsOf, ingestAndWait, ok } from "./harness/memory.js";

const LESSONS = {
  update: "engram.v2.LearningService/UpdateLesson",
  delete: "engram.v2.LearningService/DeleteLesson",
} as const;
const DELETE_RUN = "engram.v2.RunsService/DeleteRun";
const ACTIVITY = "engram.v2.MemoryService/ListActivity";
const EXPORT = "engram.v2.MemoryService/ExportActivity";

let server: TestServer;
let rest: Caller;
let alice: string;
let bob: string;

async function start(dataDir?: string): Promise<void> {
  server = await startTestServer({ SERVICE_CORE_ALLOW_ALL: "true" }, dataDir);
  rest = restCaller(server.baseUrl);
}

async function restart(): Promise<void> {
  const { dataDir, adminKey } = server;
  await server.close();
  server = await startTestServer({ SERVICE_CORE_ALLOW_ALL: "true", SERVICE_ADMIN_KEY: adminKey }, dataDir);
  rest = restCaller(server.baseUrl);
}

beforeAll(async () => {
  await start();
  alice = await createUser(server.baseUrl, server.adminKey, "alice");
  bob = await createUser(server.baseUrl, server.adminKey, "bob");
});

afterAll(async () => {
  await server.close();
});

async function queryIds(key: string, runId: string, query: string, extra: JsonObject = {}): Promise<string[]> {
  // Only the run itself: global lessons of other runs would otherwise join the evidence.
  return idsOf(evidenceOf(await ok(rest, RPC.query, { run_id: runId, query, limit: 50, prefer_current_run: true, ...extra }, key)));
}

async function activityContents(key: string, runId: string): Promise<string[]> {
  const body = await ok(rest, ACTIVITY, { run_id: runId, limit: 500 }, key);
  return (body["entries"] as JsonObject[]).map((e) => String(e["content"]));
}

async function exported(key: string, runId: string): Promise<string> {
  return String((await ok(rest, EXPORT, { run_id: runId }, key))["content"]);
}

function entryCount(stats: JsonObject, name: string): number {
  const row = (stats["databases"] as JsonObject[]).find((d) => d["name"] === name);
  return Number(row?.["key_count"] ?? -1);
}

describe("lessons/update", () => {
  it("changes scope, validation status, stale and confidence at once, audited, for the next request and after restart", async () => {
    const [lessonId] = await ingestAndWait(rest, alice, "upd-run", [
      { text: "When the build cache is corrupt, wipe node_modules before retrying.", entry_type: "lesson", lesson_type: "failure" },
      { text: "Builds on the CI runner take about four minutes.", entry_type: "fact" },
    ]);
    const updated = await ok(
      rest,
      LESSONS.update,
      { lesson_id: lessonId!, scope: "global", validation_status: "validated", confidence: -3, stale: true, reason: "reviewed", agent_id: "lead" },
      alice,
    );
    expect(updated["success"]).toBe(true);
    expect(new Set(updated["changed_fields"] as string[])).toEqual(new Set(["scope", "validation_status", "confidence", "stale"]));
    const lesson = updated["lesson"] as JsonObject;
    // Confidence is absolute and clamped to [0, 1].
    expect(lesson).toMatchObject({ scope: "global", validation_status: "validated", confidence: 0, stale: true });
    const trail = lesson["audit_trail"] as JsonObject[];
    expect(trail.map((e) => e["field"]).sort()).toEqual(["confidence", "scope", "stale", "validation_status"]);
    expect(trail.find((e) => e["field"] === "scope")).toMatchObject({ old_value: "run", new_value: "global", reason: "reviewed", agent_id: "lead" });

    // The stale flag reaches retrieval at once: the lesson is still returned, marked stale.
    const evidence = evidenceOf(await ok(rest, RPC.query, { run_id: "upd-run", query: "build cache corrupt node_modules", limit: 10 }, alice));
    expect(evidence.find((e) => e["id"] === lessonId)).toMatchObject({ is_stale: true });

    // Setting the same values again changes nothing and adds no audit event.
    const again = await ok(rest, LESSONS.update, { lesson_id: lessonId!, scope: "global", confidence: 0 }, alice);
    expect(again["changed_fields"]).toEqual([]);
    expect((again["lesson"] as JsonObject)["audit_trail"]).toHaveLength(4);

    await restart();
    const afterRestart = await ok(rest, LESSONS.update, { lesson_id: lessonId!, confidence: 0.25 }, alice);
    expect((afterRestart["lesson"] as JsonObject)["audit_trail"]).toHaveLength(5);
    expect(afterRestart["lesson"]).toMatchObject({ scope: "global", validation_status: "validated", stale: true, confidence: 0.25 });
  });

  it("changes content, importance, lane and metadata: re-indexed at once (new words find it, old ones do not) and after restart", async () => {
    const [lessonId] = await ingestAndWait(rest, alice, "content-run", [
      { text: "Rebuild the protobuf stubs after editing a proto file.", entry_type: "lesson" },
      { text: "The lint job runs on every push.", entry_type: "fact" },
    ]);
    const newText = "Regenerate the gRPC gateway swagger bundle whenever annotations move.";
    const updated = await ok(
      rest,
      LESSONS.update,
      { lesson_id: lessonId!, content: newText, importance: "critical", lane: "build", metadata_json: '{"rationale":"the bundle drifted twice"}' },
      alice,
    );
    expect(new Set(updated["changed_fields"] as string[])).toEqual(new Set(["content", "importance", "lane", "metadata_json"]));
    expect(updated["lesson"]).toMatchObject({ content: newText, importance: "critical", rationale: "the bundle drifted twice" });
    const findsBy = async (words: string, lane = ""): Promise<boolean> =>
      (await queryIds(alice, "content-run", words, { lane_filter: lane })).includes(lessonId!);
    expect(await findsBy("swagger bundle annotations")).toBe(true);
    expect(await findsBy("swagger bundle annotations", "build")).toBe(true);
    expect(await findsBy("swagger bundle annotations", "other-lane")).toBe(false);
    const oldWords = evidenceOf(await ok(rest, RPC.query, { run_id: "content-run", query: "protobuf stubs proto file", limit: 10, prefer_current_run: true }, alice));
    expect(oldWords.some((e) => String(e["content"]).includes("protobuf stubs"))).toBe(false);
    expect((await rest.call(LESSONS.update, { lesson_id: lessonId!, content: "   " }, alice)).code).toBe("invalid_argument");
    expect((await rest.call(LESSONS.update, { lesson_id: lessonId!, metadata_json: "[1]" }, alice)).code).toBe("invalid_argument");
    await restart();
    expect(await findsBy("swagger bundle annotations", "build")).toBe(true);
    const again = evidenceOf(await ok(rest, RPC.query, { run_id: "content-run", query: "protobuf stubs proto file", limit: 10, prefer_current_run: true }, alice));
    expect(again.some((e) => String(e["content"]).includes("protobuf stubs"))).toBe(false);
  });

  it("refuses requests naming no change, unknown values, non-lessons, and other owners' lessons (404, nothing changed)", async () => {
    const [lessonId, factId] = await ingestAndWait(rest, alice, "upd-errors", [
      { text: "Retry flaky network calls with backoff.", entry_type: "lesson" },
      { text: "The staging host is stg-3.", entry_type: "fact" },
    ]);
    const noChange = await rest.call(LESSONS.update, { lesson_id: lessonId! }, alice);
    expect(noChange.code).toBe("invalid_argument");
    expect((await rest.call(LESSONS.update, { lesson_id: lessonId!, scope: "galaxy" }, alice)).code).toBe("invalid_argument");
    expect((await rest.call(LESSONS.update, { lesson_id: lessonId!, validation_status: "maybe" }, alice)).code).toBe("invalid_argument");
    expect((await rest.call(LESSONS.update, { lesson_id: "", confidence: 0.5 }, alice)).code).toBe("invalid_argument");
    expect((await rest.call(LESSONS.update, { lesson_id: factId!, confidence: 0.5 }, alice)).code).toBe("not_found");
    const foreign = await rest.call(LESSONS.update, { lesson_id: lessonId!, confidence: 0.1 }, bob);
    expect(foreign.code).toBe("not_found");
    expect(foreign.message).not.toContain("alice");
    expect((await rest.call(LESSONS.delete, { lesson_id: lessonId! }, bob)).code).toBe("not_found");
    // Alice's lesson is unchanged by all of the above.
    const still = await ok(rest, LESSONS.update, { lesson_id: lessonId!, validation_status: "pending" }, alice);
    expect(still["changed_fields"]).toEqual([]);
    expect(still["lesson"]).toMatchObject({ confidence: 1, scope: "run", stale: false });
  });
});

describe("lessons/delete", () => {
  it("removes the lesson from query, context, activity, export and dereference at once and after restart, over every transport", async () => {
    for (const transport of ["rest", "connect", "grpc"] as const) {
      const c = callerFor(transport, server.baseUrl, server.port);
      const runId = `del-${transport}`;
      const [lessonId, keptId] = await ingestAndWait(c, alice, runId, [
        { text: "Pin the terraform provider version: upgrades broke the plan twice.", entry_type: "lesson" },
        { text: "Terraform state lives in the ops bucket.", entry_type: "fact" },
      ]);
      expect(await queryIds(alice, runId, "terraform provider version")).toContain(lessonId);
      expect(await ok(c, LESSONS.delete, { lesson_id: lessonId! }, alice)).toMatchObject({ success: true });
      expect((await c.call(LESSONS.delete, { lesson_id: lessonId! }, alice)).code).toBe("not_found");
      const ids = await queryIds(alice, runId, "terraform provider version pin");
      expect(ids).not.toContain(lessonId);
      expect(ids).toContain(keptId);
      const context = await ok(rest, RPC.context, { run_id: runId, query: "terraform provider", max_token_budget: 2000 }, alice);
      expect(JSON.stringify(context)).not.toContain("upgrades broke the plan");
      expect(await activityContents(alice, runId)).toEqual(["Terraform state lives in the ops bucket."]);
      expect(await exported(alice, runId)).not.toContain("upgrades broke the plan");
      expect(await ok(rest, RPC.dereference, { reference_id: lessonId! }, alice)).toMatchObject({ found: false });
    }
    await restart();
    for (const transport of ["rest", "connect", "grpc"]) {
      const runId = `del-${transport}`;
      expect(await activityContents(alice, runId)).toEqual(["Terraform state lives in the ops bucket."]);
      expect(JSON.stringify(await ok(rest, RPC.query, { run_id: runId, query: "terraform provider version pin" }, alice))).not.toContain("upgrades broke");
    }
  });

  it("marks a checkpoint made from the deleted lesson for review (lineage)", async () => {
    const [lessonId, factId] = await ingestAndWait(rest, alice, "lineage-run", [
      { text: "Rotate the signing key before it expires in March.", entry_type: "lesson" },
      { text: "The signing key is stored in the vault.", entry_type: "fact" },
    ]);
    const bad = await rest.call(RPC.checkpoint, { run_id: "lineage-run", context_snapshot: "summary", source_entry_ids: ["ent_zzzz"] }, alice);
    expect(bad.code).toBe("invalid_argument");
    expect(bad.message).toContain("source_entry_ids[0]");
    const [bobsLesson] = await ingestAndWait(rest, bob, "lineage-run", [{ text: "Bob's lesson.", entry_type: "lesson" }]);
    expect((await rest.call(RPC.checkpoint, { run_id: "lineage-run", context_snapshot: "x", source_entry_ids: [bobsLesson!] }, alice)).code).toBe("invalid_argument");

    await ok(rest, RPC.checkpoint, { run_id: "lineage-run", context_snapshot: "Summary: rotate the key; it is in the vault.", source_entry_ids: [lessonId!, factId!] }, alice);
    const checkpointOf = async (): Promise<JsonObject> => {
      const body = await ok(rest, ACTIVITY, { run_id: "lineage-run", limit: 500, entry_types: ["checkpoint"] }, alice);
      return (body["entries"] as JsonObject[])[0] as JsonObject;
    };
    expect(await checkpointOf()).toMatchObject({ source_entry_ids: [lessonId, factId], lineage_review: "" });
    await ok(rest, LESSONS.delete, { lesson_id: lessonId! }, alice);
    expect(await checkpointOf()).toMatchObject({ lineage_review: "source_deleted" });
    await restart();
    expect(await checkpointOf()).toMatchObject({ lineage_review: "source_deleted" });
  });
});

describe("delete_run", () => {
  it("deletes the caller's run whole: invisible at once, other runs and owners untouched, purged from every index", async () => {
    const items = Array.from({ length: 600 }, (_, i) => ({ text: `Incident ${i}: the payments queue stalled at step ${i % 7}.`, lane: i % 2 ? "ops" : "" }));
    for (let i = 0; i < items.length; i += 200) await ingestAndWait(rest, alice, "doomed", items.slice(i, i + 200));
    await ingestAndWait(rest, alice, "kept", [{ text: "Incident report: the payments queue is healthy." }]);
    await ingestAndWait(rest, bob, "doomed", [{ text: "Bob's incident: the payments queue stalled." }]);
    const before = await ok(rest, "engram.v2.CoreService/GetStorageStats", {}, server.adminKey);

    expect(await ok(rest, DELETE_RUN, { run_id: "doomed" }, alice)).toMatchObject({ deleted: true });
    expect(await queryIds(alice, "doomed", "payments queue stalled")).toEqual([]);
    expect(await activityContents(alice, "doomed")).toEqual([]);
    expect(await exported(alice, "doomed")).toBe("");
    expect(await ok(rest, ACTIVITY, { run_id: "doomed", limit: 1 }, alice)).toMatchObject({ total_visible: 0 });
    expect((await rest.call("engram.v2.RunsService/GetContextSnapshot", { run_id: "doomed" }, alice)).code).toBe("not_found");
    expect(await activityContents(alice, "kept")).toEqual(["Incident report: the payments queue is healthy."]);
    expect(await activityContents(bob, "doomed")).toEqual(["Bob's incident: the payments queue stalled."]);
    expect(await queryIds(bob, "doomed", "payments queue stalled")).toHaveLength(1);
    // Nothing left to delete; a new write to the same run id is a new run.
    expect(await ok(rest, DELETE_RUN, { run_id: "doomed" }, alice)).toMatchObject({ deleted: false });
    const [fresh] = await ingestAndWait(rest, alice, "doomed", [{ text: "A fresh start for the payments queue." }]);
    expect(await queryIds(alice, "doomed", "payments queue")).toEqual([fresh]);

    // The purge removes the records, postings and vectors (LMDB key counts fall by the deleted entries' share).
    await server.engram.testHooks.backgroundIdle();
    const after = await ok(rest, "engram.v2.CoreService/GetStorageStats", {}, server.adminKey);
    expect(entryCount(after, "entries")).toBe(entryCount(before, "entries") - 600 + 1);
    expect(entryCount(after, "vectors")).toBe(entryCount(before, "vectors") - 600 + 1);
    expect(entryCount(after, "entry_terms")).toBe(entryCount(before, "entry_terms") - 600 + 1);
    expect(entryCount(after, "run_tombstones")).toBe(0);
    await restart();
    expect(await queryIds(alice, "doomed", "payments queue")).toEqual([fresh]);
    expect(await activityContents(bob, "doomed")).toEqual(["Bob's incident: the payments queue stalled."]);
  });

  it("deleting again while the purge runs is a no-op; a deletion of newer entries raises the tombstone and the purge takes both", async () => {
    await ingestAndWait(rest, alice, "twice", [{ text: "First wave: the cache warmer crashed." }, { text: "First wave: retry succeeded." }]);
    const release = server.engram.testHooks.holdBackground();
    try {
      expect(await ok(rest, DELETE_RUN, { run_id: "twice" }, alice)).toMatchObject({ deleted: true });
      expect(await ok(rest, DELETE_RUN, { run_id: "twice" }, alice)).toMatchObject({ deleted: false });
      await ok(rest, RPC.remember, { session_id: "twice", content: "Second wave: the cache warmer is healthy." }, alice);
      expect(await activityContents(alice, "twice")).toEqual(["Second wave: the cache warmer is healthy."]);
      expect(await ok(rest, DELETE_RUN, { run_id: "twice" }, alice)).toMatchObject({ deleted: true });
      expect(await activityContents(alice, "twice")).toEqual([]);
    } finally {
      release();
    }
    await server.engram.testHooks.backgroundIdle();
    const stats = await ok(rest, "engram.v2.CoreService/GetStorageStats", {}, server.adminKey);
    expect(entryCount(stats, "run_tombstones")).toBe(0);
    expect(await activityContents(alice, "twice")).toEqual([]);
    await restart();
    expect(await activityContents(alice, "twice")).toEqual([]);
  });

  it("requires run_id, and drops the run's ingest jobs", async () => {
    expect((await rest.call(DELETE_RUN, { run_id: "" }, alice)).code).toBe("invalid_argument");
    const accepted = await ok(rest, RPC.ingest, { run_id: "jobs-run", items: [{ text: "queued item" }] }, alice);
    await ok(rest, DELETE_RUN, { run_id: "jobs-run" }, alice);
    expect((await rest.call(RPC.getIngestJob, { job_id: String(accepted["job_id"]) }, alice)).code).toBe("not_found");
    expect(await activityContents(alice, "jobs-run")).toEqual([]);
  });
});

describe("events of changes", () => {
  it("reach the owner's stream (lesson.updated, lesson.deleted, run.deleted) and never another user's", async () => {
    const streams = new Map<string, JsonObject[]>();
    const wakers: (() => void)[] = [];
    const cancels: (() => void)[] = [];
    for (const [name, key] of [["alice", alice], ["bob", bob]] as const) {
      const received: JsonObject[] = [];
      streams.set(name, received);
      const stream = grpcStream(server.port, "engram.v2.EventsService/Subscribe", {}, key);
      stream.on("data", (event: JsonObject) => {
        received.push(event);
        for (const wake of wakers.splice(0)) wake();
      });
      stream.on("error", () => undefined);
      cancels.push(() => stream.cancel());
    }
    const until = async (name: string, match: (e: JsonObject) => boolean): Promise<void> => {
      while (!(streams.get(name) ?? []).some(match)) await new Promise<void>((resolve) => wakers.push(resolve));
    };
    try {
      await until("alice", (e) => e["type"] === "subscribed");
      await until("bob", (e) => e["type"] === "subscribed");
      const [lessonId] = await ingestAndWait(rest, alice, "evented", [{ text: "Cache the dependency tarballs.", entry_type: "lesson" }]);
      await ok(rest, LESSONS.update, { lesson_id: lessonId!, confidence: 0.5, reason: "checked" }, alice);
      await ok(rest, LESSONS.delete, { lesson_id: lessonId! }, alice);
      await ingestAndWait(rest, alice, "evented", [{ text: "Another note." }]);
      await ok(rest, DELETE_RUN, { run_id: "evented" }, alice);
      await until("alice", (e) => e["type"] === "run.deleted");
      const aliceTypes = (streams.get("alice") ?? []).map((e) => e["type"]);
      expect(aliceTypes).toEqual(expect.arrayContaining(["lesson.updated", "lesson.deleted", "run.deleted"]));
      const updated = (streams.get("alice") ?? []).find((e) => e["type"] === "lesson.updated") as JsonObject;
      expect(JSON.parse(String(updated["payload"]))).toMatchObject({ entry_id: lessonId, changed_fields: ["confidence"], reason: "checked" });
      // Bob's own marker arrives after everything above was published: his stream holds none of Alice's events.
      await ok(rest, RPC.remember, { session_id: "bob-marker", content: "marker" }, bob);
      await until("bob", (e) => e["run_id"] === "bob-marker");
      expect((streams.get("bob") ?? []).filter((e) => e["type"] !== "subscribed").every((e) => e["run_id"] === "bob-marker")).toBe(true);
    } finally {
      for (const cancel of cancels) cancel();
    }
  });
});

