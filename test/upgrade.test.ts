// Upgrade: data directories written by earlier builds (test/fixtures/upgrade/*, made by make-fixture.mjs with the
// build named in each answers.json) start under this build, which migrates them at start-up: every recorded read
// answers as the earlier build answered, the ingest jobs it left queued are applied, its open core session commits,
// writes work, and a restart changes nothing. A data directory of a newer schema version is refused, naming the fix.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { open } from "lmdb";
import { afterEach, describe, expect, it } from "vitest";
import type { Json, JsonObject } from "./harness/callers.js";
import { pause } from "./harness/memory.js";
import { startTestServer, tempDataDir, type TestServer } from "./harness/server.js";
import { DATABASE_NAMES, SCHEMA_VERSION } from "../src/storage/database.js";

const FIXTURES = path.join(import.meta.dirname, "fixtures", "upgrade");
const ENV = { SERVICE_CORE_ALLOW_ALL: "true", SERVICE_CORE_ENABLE_DIRECT_SEARCH: "true" };

interface Recorded {
  readonly user: string;
  readonly method: "GET" | "POST";
  readonly route: string;
  readonly body: JsonObject | null;
  /** `same`: every field the earlier build answered, with its value; `top`: the same first evidence item. */
  readonly compare: "same" | "top";
  readonly answer: JsonObject;
}

interface Answers {
  readonly commit: string;
  readonly keys: Record<string, string>;
  readonly queued: { readonly run_id: string; readonly user: string; readonly jobs: string[]; readonly items_per_job: number };
  readonly core_session: { readonly id: string; readonly snapshot: string; readonly staged_text: string };
  readonly recorded: Recorded[];
}

const started: TestServer[] = [];

afterEach(async () => {
  for (const server of started.splice(0)) await server.close();
});

/** A fresh copy of a fixture's data directory. */
function unpack(fixture: string): string {
  const dir = tempDataDir();
  const tar = spawnSync("tar", ["-xzf", path.join(FIXTURES, fixture, "data.tar.gz"), "-C", dir]);
  expect(tar.status, tar.stderr.toString()).toBe(0);
  return dir;
}

async function start(dataDir: string, answers: Answers): Promise<TestServer> {
  const server = await startTestServer({ ...ENV, SERVICE_ADMIN_KEY: answers.keys["admin"] as string }, dataDir);
  started.push(server);
  return server;
}

async function call(server: TestServer, key: string, method: string, route: string, body?: JsonObject | null): Promise<{ status: number; body: JsonObject }> {
  const response = await fetch(`${server.baseUrl}${route}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined || body === null ? {} : { "content-type": "application/json" }) },
    body: body === undefined || body === null ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: (text === "" ? {} : JSON.parse(text)) as JsonObject };
}

/** Fields that measure time spent or elapsed (an agent's liveness ages with its last heartbeat): they differ between two identical reads. */
const TIMING_FIELD = /(latency|elapsed|duration|took|_ms$|^liveness$|age_hours|age_seconds)/;

/** The JSON values a text field holds: one JSON document, or JSON Lines; undefined when it is plain text. */
function jsonIn(text: string): Json[] | undefined {
  try {
    return [JSON.parse(text) as Json];
  } catch {
    try {
      const lines = text.split("\n").filter((line) => line !== "");
      return lines.length > 1 ? lines.map((line) => JSON.parse(line) as Json) : undefined;
    } catch {
      return undefined;
    }
  }
}

/**
 * Where `actual` lacks a field of `expected` or holds another value; fields later builds added are not compared,
 * also inside text fields holding JSON (metadata, JSON Lines exports).
 */
function differences(expected: Json, actual: Json | undefined, at = "$"): string[] {
  if (typeof expected === "string" && typeof actual === "string" && expected !== actual) {
    const [before, after] = [jsonIn(expected), jsonIn(actual)];
    if (before !== undefined && after !== undefined) return differences(before, after, `${at}(json)`);
  }
  if (expected === null || typeof expected !== "object") return expected === actual ? [] : [`${at}: ${JSON.stringify(expected)} became ${JSON.stringify(actual)}`];
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return [`${at}: ${expected.length} items became ${Array.isArray(actual) ? actual.length : JSON.stringify(actual)}`];
    return expected.flatMap((item, i) => differences(item, actual[i], `${at}[${i}]`));
  }
  if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return [`${at}: an object became ${JSON.stringify(actual)}`];
  return Object.entries(expected)
    .filter(([key]) => !TIMING_FIELD.test(key))
    .flatMap(([key, value]) => differences(value, actual[key], `${at}.${key}`));
}

function firstEvidence(body: JsonObject): JsonObject | undefined {
  return (body["evidence"] as JsonObject[] | undefined)?.[0];
}

async function expectRecordedAnswers(server: TestServer, answers: Answers): Promise<void> {
  for (const r of answers.recorded) {
    const got = await call(server, answers.keys[r.user] as string, r.method, r.route, r.body);
    const what = `${r.method} ${r.route} ${JSON.stringify(r.body)}`;
    expect(got.status, `${what}: ${JSON.stringify(got.body)}`).toBe(200);
    if (r.compare === "top") {
      const [before, after] = [firstEvidence(r.answer), firstEvidence(got.body)];
      expect({ id: after?.["id"], content: after?.["content"] }, what).toEqual({ id: before?.["id"], content: before?.["content"] });
    } else {
      expect(differences(r.answer, got.body), what).toEqual([]);
    }
  }
}

async function expectQueuedJobsApplied(server: TestServer, answers: Answers): Promise<void> {
  const { queued } = answers;
  const key = answers.keys[queued.user] as string;
  for (const jobId of queued.jobs) {
    let job: JsonObject = {};
    for (let poll = 0; poll < 400 && job["done"] !== true; poll++) {
      if (poll > 0) await pause(25);
      job = (await call(server, key, "GET", `/v2/control/ingest/jobs/${jobId}`)).body;
    }
    expect(job, jobId).toMatchObject({ status: "completed", item_count: queued.items_per_job, entry_count: queued.items_per_job });
  }
  const stats = (await call(server, key, "POST", "/v2/control/ingest/stats", { run_id: queued.run_id })).body;
  expect(stats).toMatchObject({ total_ingested: queued.jobs.length * queued.items_per_job, completed_jobs: queued.jobs.length });
  const found = await call(server, key, "POST", "/v2/control/query", { run_id: queued.run_id, query: "token3x17", limit: 1 });
  expect(String(firstEvidence(found.body)?.["content"])).toContain("token3x17 ");
}

function fixtures(): string[] {
  return fs.readdirSync(FIXTURES).filter((name) => fs.existsSync(path.join(FIXTURES, name, "data.tar.gz")));
}

describe.each(fixtures())("a data directory written by the build %s", (fixture) => {
  const answers = JSON.parse(fs.readFileSync(path.join(FIXTURES, fixture, "answers.json"), "utf8")) as Answers;

  it("starts migrated: old reads answer alike, queued jobs are applied, writes work, and a restart keeps it all", async () => {
    const dataDir = unpack(fixture);
    let server = await start(dataDir, answers);
    await expectRecordedAnswers(server, answers);
    await expectQueuedJobsApplied(server, answers);

    // The earlier build's open core session commits: its staged node becomes readable.
    const alice = answers.keys["alice"] as string;
    const committed = await call(server, alice, "POST", `/v2/core/session/${answers.core_session.id}/commit`, {});
    expect(committed.status, JSON.stringify(committed.body)).toBe(200);
    const search = await call(server, alice, "POST", "/v2/core/search", { query_text: answers.core_session.staged_text, run_id: "ops", k: 1 });
    expect((search.body["results"] as JsonObject[] | undefined)?.[0]?.["text"], JSON.stringify(search.body)).toBe(answers.core_session.staged_text);

    // A new write (carol's: no recorded answer counts her entries) is there after a restart.
    const carol = answers.keys[answers.queued.user] as string;
    const written = await call(server, carol, "POST", "/v2/control/remember", { session_id: answers.queued.run_id, content: "The upgraded store takes new capybara facts." });
    expect(written.status).toBe(200);
    const entryId = String(written.body["entry_id"]);
    await server.close();
    started.splice(0);

    server = await start(dataDir, answers);
    await expectRecordedAnswers(server, answers);
    const found = await call(server, carol, "POST", "/v2/control/query", { run_id: answers.queued.run_id, query: "upgraded store capybara", limit: 1 });
    expect(firstEvidence(found.body)?.["id"]).toBe(entryId);
    await server.close();
    started.splice(0);

    const root = open({ path: path.join(dataDir, "lmdb"), noSubdir: false, maxDbs: 64, compression: false, readOnly: true });
    expect(root.openDB<unknown, string>({ name: DATABASE_NAMES.meta }).get("schema_version")).toBe(SCHEMA_VERSION);
    // Postings an earlier build kept one key per term were moved into per-entry term records at start-up.
    expect(root.openDB({ name: DATABASE_NAMES.postings }).getCount()).toBe(0);
    expect(root.openDB({ name: DATABASE_NAMES.entryTerms }).getCount()).toBeGreaterThan(answers.queued.jobs.length * answers.queued.items_per_job);
    await root.close();
  }, 120_000);
});

describe("a data directory of a newer schema version", () => {
  it("is refused at start-up with a message naming the versions and what to do, and left as it was", async () => {
    const dataDir = unpack(fixtures()[0] as string);
    const lmdbDir = path.join(dataDir, "lmdb");
    const root = open({ path: lmdbDir, noSubdir: false, maxDbs: 64, compression: false });
    await root.openDB<unknown, string>({ name: DATABASE_NAMES.meta }).put("schema_version", SCHEMA_VERSION + 1);
    await root.close();
    const before = fs.readFileSync(path.join(lmdbDir, "data.mdb"));

    await expect(startTestServer(ENV, dataDir)).rejects.toThrow(
      `the data directory ${dataDir} was written by a newer Engram (store schema version ${SCHEMA_VERSION + 1}; this build reads ${SCHEMA_VERSION}): ` +
        "run that version or a later one, or restore a backup made by this version with `engram restore`",
    );
    expect(fs.readFileSync(path.join(lmdbDir, "data.mdb")).equals(before)).toBe(true);
  });
});
