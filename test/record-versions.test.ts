// Start-up refuses records written by another schema version: a data directory holding a record of a future version
// (written straight into LMDB, as a newer build would) stops the server with a message naming the record and the fix.
import path from "node:path";
import { open, type Key } from "lmdb";
import { afterEach, describe, expect, it } from "vitest";
import { DATABASE_NAMES, SCHEMA_VERSION } from "../src/storage/database.js";
import { startTestServer, tempDataDir, type TestServer } from "./harness/server.js";

const started: TestServer[] = [];

afterEach(async () => {
  for (const server of started.splice(0)) await server.close();
});

/** Opens the data directory's LMDB environment the way the server does, and writes one record into a database. */
async function writeRecord(dataDir: string, name: string, key: Key, value: unknown, more: [string, Key, unknown][] = []): Promise<void> {
  const root = open({ path: path.join(dataDir, "lmdb"), noSubdir: false, maxDbs: 64, compression: false });
  const meta = root.openDB<unknown, string>({ name: DATABASE_NAMES.meta });
  await root.transaction(() => {
    if (meta.get("schema_version") === undefined) void meta.put("schema_version", SCHEMA_VERSION);
    for (const [db, k, v] of [[name, key, value] as [string, Key, unknown], ...more]) void root.openDB<unknown, Key>({ name: db }).put(k, v);
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

  it("stop start-up for memory entries, and read entries of the previous version by upgrading them", async () => {
    const entry = {
      v: 1, seq: 1, id: "ent_1", owner: 1, runId: "r", agentId: "", userId: "", entryType: "fact", content: "Old but readable.",
      lessonScope: "", lessonType: "", importance: "medium", metadataJson: "{}", lane: "", occurrenceTime: 1_700_000_000,
      createdAt: 1_700_000_000_000, supersededBy: "", upsertKey: "", source: "agent", referenceId: "", contentType: "text/plain",
      envTags: [], derived: false, confidence: 1, termCount: 2,
    };
    const future = tempDataDir();
    await writeRecord(future, DATABASE_NAMES.entries, 1, { ...entry, v: 9 });
    await expect(startTestServer({}, future)).rejects.toThrow("entries record 1 has schema version 9; this build reads 1, 2, 3, 4 and 5 — upgrade Engram");

    const previous = tempDataDir();
    // An admin's entry (the admin is user 1) with the run indexes an earlier build wrote beside it.
    await writeRecord(previous, DATABASE_NAMES.entries, 1, entry, [
      [DATABASE_NAMES.entriesByOwnerRun, [1, "r", 1], null],
      [DATABASE_NAMES.entriesByRun, ["r", 1], null],
      [DATABASE_NAMES.entriesByOwner, [1, 1], null],
    ]);
    const server = await startTestServer({}, previous);
    started.push(server);
    const activity = await fetch(`${server.baseUrl}/v2/control/activity`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.adminKey}`, "content-type": "application/json" },
      body: JSON.stringify({ run_id: "r", limit: 10 }),
    });
    const body = (await activity.json()) as { entries: { content: string; lineage_review: string; source_entry_ids: string[] }[] };
    expect(body.entries).toEqual([expect.objectContaining({ content: "Old but readable.", lineage_review: "", source_entry_ids: [] })]);
  });

  it("start normally over records of the current version", async () => {
    const dataDir = tempDataDir();
    await writeRecord(dataDir, DATABASE_NAMES.nodes, 42, { ...node, v: 1 });
    const server = await startTestServer({}, dataDir);
    started.push(server);
    expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(200);
  });
});
