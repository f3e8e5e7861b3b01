// Start-up refuses records written by another schema version: a data directory holding a record of a future version
// (written straight into LMDB, as a newer build would) stops the server with a message naming the record and the fix.
import path from "node:path";
import { open } from "lmdb";
import { afterEach, describe, expect, it } from "vitest";
import { DATABASE_NAMES, SCHEMA_VERSION } from "../src/storage/database.js";
import { startTestServer, tempDataDir, type TestServer } from "./harness/server.js";

const started: TestServer[] = [];

afterEach(async () => {
  for (const server of started.splice(0)) await server.close();
});

/** Opens the data directory's LMDB environment the way the server does, and writes one record into a database. */
async function writeRecord(dataDir: string, name: string, key: string | number, value: unknown): Promise<void> {
  const root = open({ path: path.join(dataDir, "lmdb"), noSubdir: false, maxDbs: 64, compression: false });
  const meta = root.openDB<unknown, string>({ name: DATABASE_NAMES.meta });
  const db = root.openDB<unknown, string | number>({ name });
  await root.transaction(() => {
    if (meta.get("schema_version") === undefined) void meta.put("schema_version", SCHEMA_VERSION);
    void db.put(key, value);
  });
  await root.close();
}

const node = { id: 42, owner: 1, runId: "r", text: "a node", metadataJson: "{}", createdAt: 1, updatedAt: 1, version: 1 };

describe("records of another schema version", () => {
  it("stop start-up with a message naming the record kind, key, versions and the fix", async () => {
    const dataDir = tempDataDir();
    await writeRecord(dataDir, DATABASE_NAMES.nodes, 42, { ...node, v: 7 });
    await expect(startTestServer({}, dataDir)).rejects.toThrow(
      "core_nodes record 42 has schema version 7; this build reads 1 — upgrade Engram or restore a matching backup",
    );
  });

  it("stop start-up for users too", async () => {
    const dataDir = tempDataDir();
    await writeRecord(dataDir, DATABASE_NAMES.users, "alice", { v: 2, userId: 5, username: "alice", role: "user", createdAt: "", activeKeyId: undefined });
    await expect(startTestServer({}, dataDir)).rejects.toThrow("users record alice has schema version 2; this build reads 1 — upgrade Engram");
  });

  it("start normally over records of the current version", async () => {
    const dataDir = tempDataDir();
    await writeRecord(dataDir, DATABASE_NAMES.nodes, 42, { ...node, v: 1 });
    const server = await startTestServer({}, dataDir);
    started.push(server);
    expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(200);
  });
});
