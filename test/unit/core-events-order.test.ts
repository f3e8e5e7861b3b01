// The core data plane's events, observed on its bus in-process: published only once a write commits (staged writes
// at their session's commit, never for a refused or dropped one), in commit order, with the fields the spec names.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AccessControl } from "../../src/acl/access-control.js";
import type { Principal } from "../../src/auth/principal.js";
import { CoreData } from "../../src/core/core-data.js";
import { CoreEventBus, type CoreEvent } from "../../src/core/core-events.js";
import type { NodeWrite } from "../../src/core/node-writes.js";
import { createLogger } from "../../src/platform/logger.js";
import { HashedEmbedder } from "../../src/retrieval/embedders/hashed-embedder.js";
import { openStorage, type Storage } from "../../src/storage/database.js";

const ALICE: Principal = { userId: 7, username: "alice", role: "user", keyId: "k1" };

let dir: string;
let storage: Storage;
let core: CoreData;
let events: CoreEvent[];
const embedder = new HashedEmbedder();

function write(runId: string, text: string, nodeId?: number): NodeWrite {
  return { nodeId, runId, text, vector: embedder.embedOne(text), metadataJson: `{"text":${JSON.stringify(text)}}`, field: "" };
}

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-core-events-"));
  storage = openStorage(dir);
  const bus = new CoreEventBus();
  events = [];
  bus.listen((event) => events.push(event));
  core = new CoreData({ storage, dataDir: dir, embedder, bus, acl: new AccessControl(storage), logger: createLogger("silent") });
  core.load();
});

afterEach(async () => {
  core.close();
  await storage.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("core events", () => {
  it("announce direct writes after their commit, with the spec's fields", async () => {
    const [inserted] = await core.writer.upsert(ALICE, [write("r1", "hello")], "");
    const id = inserted?.record.id as number;
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: "node.inserted", owner: 7, nodeId: BigInt(id), runId: "r1", metadataJson: '{"text":"hello"}' });
    expect(events[0]?.createdAt).toBe(new Date(inserted?.record.createdAt as number).toISOString());
    expect(events[0]?.updatedAt).toBe(events[0]?.createdAt);
    expect(events[0]?.vector).toHaveLength(embedder.dimensions);
    await core.writer.upsert(ALICE, [write("r1", "hello again", id)], "");
    await core.writer.delete(ALICE, id, "");
    expect(events.map((e) => e.type)).toEqual(["node.inserted", "node.updated", "node.deleted"]);
    expect(events[2]).toMatchObject({ nodeId: BigInt(id), owner: 7 });
    const entry = await core.scratchpads.write(ALICE, { sessionId: "pad", agentId: "a", key: "", content: "note", entryJson: "", metadata: {}, ttlMs: 0 }, "");
    expect(events[3]).toMatchObject({ type: "memory.added", owner: 7, sessionId: "pad" });
    expect(JSON.parse(events[3]?.entryJson as string)).toMatchObject({ id: entry.id, session_id: "pad", content: "note", agent_id: "a" });
  });

  it("publish concurrent writes in commit order", async () => {
    const writes = Array.from({ length: 50 }, (_, i) => core.writer.upsert(ALICE, [write("r2", `node ${i}`)], ""));
    const written = (await Promise.all(writes)).flat();
    const ids = events.map((e) => Number(e.nodeId));
    // Ids are taken inside each transaction, so commit order is id order.
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids)).toEqual(new Set(written.map((w) => w.record.id)));
  });

  it("hold a session's events until its commit, then publish them in staging order", async () => {
    const [existing] = await core.writer.upsert(ALICE, [write("r3", "existing")], "");
    const existingId = existing?.record.id as number;
    events.length = 0;
    const session = await core.lifecycle.create(ALICE, "");
    const [staged] = await core.writer.upsert(ALICE, [write("r3", "staged")], session.id);
    await core.scratchpads.write(ALICE, { sessionId: "pad", agentId: "", key: "k", content: "staged note", entryJson: "", metadata: {}, ttlMs: 0 }, session.id);
    await core.writer.delete(ALICE, existingId, session.id);
    expect(events).toEqual([]);
    const outcome = await core.commit(ALICE, session.id, "refuse");
    expect(outcome).toMatchObject({ applied: 3, skipped: 0 });
    expect(events.map((e) => e.type)).toEqual(["node.inserted", "memory.added", "node.deleted"]);
    expect(events[0]?.nodeId).toBe(BigInt(staged?.record.id as number));
    expect(events[2]?.nodeId).toBe(BigInt(existingId));
  });

  it("publish nothing for a refused commit, a child's commit into its parent, or a dropped session", async () => {
    const [node] = await core.writer.upsert(ALICE, [write("r4", "base")], "");
    const id = node?.record.id as number;
    const session = await core.lifecycle.create(ALICE, "");
    await core.writer.upsert(ALICE, [write("r4", "in session", id), write("r4", "new in session")], session.id);
    await core.writer.upsert(ALICE, [write("r4", "outside", id)], "");
    events.length = 0;
    await expect(core.commit(ALICE, session.id, "refuse")).rejects.toThrow(/conflicts/);
    expect(events).toEqual([]);

    const parent = await core.lifecycle.create(ALICE, "");
    const child = await core.lifecycle.create(ALICE, parent.id);
    await core.writer.upsert(ALICE, [write("r4", "from child")], child.id);
    await core.commit(ALICE, child.id, "refuse");
    expect(events).toEqual([]);
    await core.lifecycle.drop(ALICE, parent.id);
    await core.lifecycle.drop(ALICE, session.id);
    expect(events).toEqual([]);
  });

  it("announce and index only the last run of a transaction computed again, and keep later commits flowing", async () => {
    // As a replicated transaction that lost a conflict (clustered mode): computed once, its writes discarded, then again.
    const transaction = storage.transaction.bind(storage);
    let rerunning = false;
    storage.transaction = async <T>(fn: () => T): Promise<T> => {
      if (!rerunning) {
        rerunning = true;
        try {
          await storage.captureWrites(fn);
        } finally {
          rerunning = false;
        }
      }
      return transaction(fn);
    };
    const [first] = await core.writer.upsert(ALICE, [write("r5", "first")], "");
    await core.scratchpads.write(ALICE, { sessionId: "pad", agentId: "", key: "", content: "note", entryJson: "", metadata: {}, ttlMs: 0 }, "");
    const [second] = await core.writer.upsert(ALICE, [write("r5", "second")], "");
    expect(events.map((e) => [e.type, e.nodeId])).toEqual([
      ["node.inserted", BigInt(first?.record.id as number)],
      ["memory.added", undefined],
      ["node.inserted", BigInt(second?.record.id as number)],
    ]);
    expect(core.index.idsOf(ALICE.userId, "r5")).toEqual([first?.record.id, second?.record.id]);
  });
});
