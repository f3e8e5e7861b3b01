// The built server as a process: first-start admin bootstrap, durability across kill -9, and secret-free logs.
import fs from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, startChild } from "./harness/child-server.js";
import { tempDataDir } from "./harness/server.js";
import { mintApiKey } from "../src/auth/api-key.js";

beforeAll(() => ensureBuilt(), 120_000);

async function call(baseUrl: string, route: string, key: string, body: object): Promise<Record<string, unknown>> {
  const response = await fetch(`${baseUrl}${route}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, ...((await response.json()) as object) };
}

describe("admin bootstrap", () => {
  it("creates an admin on first start, prints its key once to stderr and saves it with mode 0600", async () => {
    const dataDir = tempDataDir();
    const first = await startChild({ SERVICE_DATA_DIR: dataDir });
    const file = path.join(dataDir, "admin.key");
    const key = fs.readFileSync(file, "utf8").trim();
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(first.stderr()).toContain(key);
    expect((await call(first.baseUrl, "/v2/control/recall", key, { session_id: "s", query: "q" }))["status"]).toBe(200);
    await first.kill("SIGTERM");

    const second = await startChild({ SERVICE_DATA_DIR: dataDir });
    expect(second.stderr()).not.toContain(key);
    expect((await call(second.baseUrl, "/v2/control/recall", key, { session_id: "s", query: "q" }))["status"]).toBe(200);
    await second.kill("SIGTERM");
  });

  it("accepts SERVICE_ADMIN_KEY as the admin's and never logs a secret", async () => {
    const admin = mintApiKey("local");
    const server = await startChild({ SERVICE_DATA_DIR: tempDataDir(), SERVICE_ADMIN_KEY: admin.key });
    const created = await call(server.baseUrl, "/v2/core/auth/users", admin.key, { username: "dana" });
    expect(created["status"]).toBe(200);
    const danaKey = String(created["api_key"]);
    await call(server.baseUrl, "/v2/control/remember", danaKey, { session_id: "s", content: "hello" });
    await call(server.baseUrl, "/v2/control/recall", `${danaKey.slice(0, -4)}0000`, { session_id: "s", query: "q" });
    const rotated = await call(server.baseUrl, "/v2/core/auth/users/dana/rotate_key", admin.key, {});
    await server.kill("SIGTERM");
    const logs = server.stdout() + server.stderr();
    expect(logs).toContain(`"key_id":"${admin.keyId}"`);
    for (const secret of [admin.secret, danaKey.split("_")[3], String(rotated["api_key"]).split("_")[3]]) {
      expect(logs).not.toContain(secret as string);
    }
  });

  it("refuses to start with a malformed SERVICE_ADMIN_KEY", async () => {
    await expect(startChild({ SERVICE_DATA_DIR: tempDataDir(), SERVICE_ADMIN_KEY: "mem_local_short" })).rejects.toThrow(/SERVICE_ADMIN_KEY/);
  });
});

describe("durability", () => {
  it("every acknowledged remember survives kill -9 and restart", async () => {
    const dataDir = tempDataDir();
    const admin = mintApiKey("local");
    const env = { SERVICE_DATA_DIR: dataDir, SERVICE_ADMIN_KEY: admin.key };
    const first = await startChild(env);
    const acknowledged: string[] = [];
    // Writes in flight while the process dies: whatever was acknowledged must be there afterwards.
    const writes = Array.from({ length: 40 }, async (_, i) => {
      const r = await call(first.baseUrl, "/v2/control/remember", admin.key, { session_id: "crash", content: `durable fact number ${i}` });
      if (r["status"] === 200) acknowledged.push(String(r["entry_id"]));
    });
    // Settle-watch every write from the start: a write the kill cuts off rejects while the kill is awaited.
    const settled = Promise.allSettled(writes);
    await Promise.all(writes.slice(0, 30));
    await first.kill("SIGKILL");
    await settled;
    expect(acknowledged.length).toBeGreaterThanOrEqual(30);

    const second = await startChild(env);
    const recalled = await call(second.baseUrl, "/v2/control/recall", admin.key, {
      session_id: "crash",
      query: "durable fact number",
      limit: 100,
    });
    const ids = (recalled["evidence"] as { id: string }[]).map((e) => e.id);
    for (const id of acknowledged) expect(ids).toContain(id);
    expect(new Set(ids).size).toBe(ids.length);
    await second.kill("SIGTERM");
  });
});

describe("ingest durability", () => {
  const JOBS = 20;
  const ITEMS_PER_JOB = 500;
  /** A token no other item contains, so a query for it must find exactly that item. */
  const token = (job: number, i: number): string => `tok${job}x${i}`;
  const text = (job: number, i: number): string => `item ${job}-${i} ${token(job, i)} records sensor reading ${job * ITEMS_PER_JOB + i}`;

  /** Ingest and job bodies have a `status` field of their own, so the HTTP status is kept apart. */
  async function request(baseUrl: string, route: string, key: string, body?: object): Promise<{ http: number; body: Record<string, unknown> }> {
    const response = await fetch(`${baseUrl}${route}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { http: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  it(
    "every acknowledged ingest job completes after kill -9 and restart, each item stored exactly once",
    async () => {
      const dataDir = tempDataDir();
      const admin = mintApiKey("local");
      const env = { SERVICE_DATA_DIR: dataDir, SERVICE_ADMIN_KEY: admin.key };
      const first = await startChild(env);
      const acknowledged: string[] = [];
      // All jobs at once: the worker is still busy with the first ones when the last is acknowledged.
      await Promise.all(
        Array.from({ length: JOBS }, async (_, job) => {
          const items = Array.from({ length: ITEMS_PER_JOB }, (_, i) => ({ text: text(job, i) }));
          const r = await request(first.baseUrl, "/v2/control/ingest", admin.key, { run_id: "crash-ingest", items });
          expect(r.http, JSON.stringify(r.body)).toBe(200);
          acknowledged.push(String(r.body["job_id"]));
        }),
      );
      const killedAt = Date.now();
      await first.kill("SIGKILL");
      expect(new Set(acknowledged).size).toBe(JOBS);

      const second = await startChild(env);
      try {
        const finishedAt: number[] = [];
        for (const jobId of acknowledged) {
          let job: Record<string, unknown> = {};
          for (let poll = 0; poll < 200 && job["done"] !== true; poll++) {
            if (poll > 0) await new Promise((r) => setTimeout(r, 100));
            const r = await request(second.baseUrl, `/v2/control/ingest/jobs/${encodeURIComponent(jobId)}`, admin.key);
            expect(r.http, JSON.stringify(r.body)).toBe(200);
            job = r.body;
          }
          expect(job, `job ${jobId}`).toMatchObject({ status: "completed", done: true, error: "", item_count: ITEMS_PER_JOB, entry_count: ITEMS_PER_JOB });
          finishedAt.push(Date.parse(String(job["finished_at"])));
        }
        // The crash must have interrupted the ingest, or this test proved nothing: some job finished after it.
        expect(finishedAt.some((t) => t >= killedAt)).toBe(true);

        const stats = await call(second.baseUrl, "/v2/control/ingest/stats", admin.key, { run_id: "crash-ingest" });
        expect(stats).toMatchObject({ total_ingested: JOBS * ITEMS_PER_JOB, total_jobs: JOBS, completed_jobs: JOBS, total_items: JOBS * ITEMS_PER_JOB });
        const exported = await call(second.baseUrl, "/v2/control/activity/export", admin.key, { run_id: "crash-ingest" });
        const lines = String(exported["content"]).split("\n").filter((line) => line !== "");
        const contents = lines.map((line) => String((JSON.parse(line) as { content: string }).content));
        expect(contents).toHaveLength(JOBS * ITEMS_PER_JOB);
        const expected = new Set(Array.from({ length: JOBS }, (_, job) => Array.from({ length: ITEMS_PER_JOB }, (_, i) => text(job, i))).flat());
        expect(new Set(contents)).toEqual(expected);

        for (const [job, i] of [[0, 0], [7, 250], [JOBS - 1, ITEMS_PER_JOB - 1]] as const) {
          const found = await call(second.baseUrl, "/v2/control/query", admin.key, { run_id: "crash-ingest", query: token(job, i), limit: 3 });
          expect((found["evidence"] as { content: string }[])[0]?.content).toBe(text(job, i));
        }
      } finally {
        await second.kill("SIGTERM");
      }
    },
    120_000,
  );
});
