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
    await Promise.all(writes.slice(0, 30));
    await first.kill("SIGKILL");
    await Promise.allSettled(writes);
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
