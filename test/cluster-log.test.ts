// The replicated command log of clustered mode (src/cluster/) on a real three-server NATS JetStream cluster, started as
// loopback child processes: appends acknowledged by a quorum survive a server killed mid-load and are stored exactly
// once (a repeated append is dropped), an append that expected an older shard position is refused, a store applies
// each command exactly once across an interrupted catch-up, and transactions replicated from two nodes at once are
// serializable and leave both nodes' stores byte-identical, what one node writes is searchable on the other, and a new
// node starts from a snapshot plus the log's tail.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CommandLog, LogTruncated, ShardMovedOn } from "../src/cluster/command-log.js";
import { appliedSequence, catchUp } from "../src/cluster/shard-applier.js";
import { CommandTooLarge, ShardReplica, acceptedSequence } from "../src/cluster/replicated-transaction.js";
import { Storage } from "../src/storage/database.js";
import { EntryStore, newEntry } from "../src/storage/entry-store.js";
import { MemoryIndex } from "../src/memory/memory-index.js";
import { HashedEmbedder } from "../src/retrieval/embedders/hashed-embedder.js";
import { createLogger } from "../src/platform/logger.js";
import { SnapshotStore } from "../src/cluster/shard-snapshots.js";
import { MAX_PAYLOAD, NatsCluster } from "./harness/nats-cluster.js";

const SHARDS = 4;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

let nats: NatsCluster;

beforeAll(async () => {
  nats = await NatsCluster.start(3);
}, 60_000);

afterAll(async () => {
  await nats.stop();
});

interface TestNode {
  readonly dir: string;
  readonly storage: Storage;
  readonly log: CommandLog;
  readonly replica: ShardReplica;
}

/** A node of `shard`: its own store, and a connection that prefers server `i` of the cluster. */
async function openNode(shard: number, i: number, listener?: ConstructorParameters<typeof ShardReplica>[3]): Promise<TestNode> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `engram-node${i}-`));
  const storage = new Storage(dir);
  const log = await CommandLog.open({ servers: [...nats.urls.slice(i), ...nats.urls.slice(0, i)] });
  return { dir, storage, log, replica: new ShardReplica(log, storage, shard, listener) };
}

/** Closes a test node's log and store and removes its directory. */
async function closeNode(node: { dir: string; log: CommandLog; storage: Storage }): Promise<void> {
  await node.log.close();
  await node.storage.close();
  fs.rmSync(node.dir, { recursive: true, force: true });
}

/** Every command of every shard, as (id, sequence). */
async function everything(log: CommandLog): Promise<{ id: string; sequence: number }[]> {
  const out: { id: string; sequence: number }[] = [];
  for (let shard = 0; shard < SHARDS; shard++) {
    for await (const command of log.read(shard, 0)) out.push({ id: decoder.decode(command.data), sequence: command.sequence });
  }
  return out;
}

describe("the command log", () => {
  it("keeps every acknowledged append exactly once when a server is killed mid-load and comes back", async () => {
    // Each writer prefers another server, so one of them loses its connection when server 1 dies.
    const logs = await Promise.all(nats.urls.map((_, w) => CommandLog.open({ servers: [...nats.urls.slice(w), ...nats.urls.slice(0, w)] })));
    const acknowledged = new Map<string, number>();
    let killed: Promise<void> | undefined;
    let restarted: Promise<void> | undefined;
    const write = async (w: number): Promise<void> => {
      for (let i = 0; i < 120; i++) {
        const id = `w${w}-${i}`;
        // A lost acknowledgement is retried with the same id: JetStream stores the command once.
        for (let attempt = 0; ; attempt++) {
          try {
            acknowledged.set(id, await (logs[w] as CommandLog).append((w + i) % SHARDS, encoder.encode(id), id));
            break;
          } catch (e: unknown) {
            if (attempt >= 40) throw e;
            await new Promise((resolve) => setTimeout(resolve, 250));
          }
        }
        if (acknowledged.size === 90) killed ??= nats.kill(1);
        if (acknowledged.size === 240) restarted ??= nats.restart(1);
      }
    };
    await Promise.all([0, 1, 2].map(write));
    await killed;
    await restarted;

    const reader = await CommandLog.open({ servers: nats.urls });
    const stored = await everything(reader);
    const ids = stored.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(acknowledged.size).toBe(360);
    for (const [id, sequence] of acknowledged) expect(stored.find((c) => c.id === id)?.sequence, id).toBe(sequence);
    await Promise.all([...logs, reader].map((log) => log.close()));
  }, 120_000);

  it("drops a repeated append and refuses one that expected an older position of the shard", async () => {
    const log = await CommandLog.open({ servers: nats.urls });
    const shard = 2;
    const before = await log.lastSequence(shard);
    const first = await log.append(shard, encoder.encode("once"), "repeat-me");
    expect(await log.append(shard, encoder.encode("once"), "repeat-me")).toBe(first);
    expect(await log.lastSequence(shard)).toBe(first);
    expect(first).toBeGreaterThan(before);
    const next = await log.append(shard, encoder.encode("next"), "next", first);
    await expect(log.append(shard, encoder.encode("late"), "late", first)).rejects.toBeInstanceOf(ShardMovedOn);
    expect(await log.lastSequence(shard)).toBe(next);
    await log.close();
  }, 30_000);

  it("applies each command to a store exactly once, across a catch-up that failed part-way", async () => {
    const log = await CommandLog.open({ servers: nats.urls });
    const shard = 3;
    const base = await log.lastSequence(shard);
    const ids = Array.from({ length: 50 }, (_, i) => `apply-${i}`);
    for (const id of ids) await log.append(shard, encoder.encode(id), id);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-applier-"));
    const storage = new Storage(dir);
    try {
      // Earlier commands of the shard (other tests') are applied too; only ours are counted.
      const count = (command: { data: Uint8Array }): void => {
        const key = `test:${decoder.decode(command.data)}`;
        const seen = storage.dbs.meta.get(key);
        storage.dbs.meta.put(key, (typeof seen === "number" ? seen : 0) + 1);
      };
      let applied = 0;
      await expect(
        catchUp(log, storage, shard, (command) => {
          if (decoder.decode(command.data) === "apply-20") throw new Error("crash while applying");
          count(command);
          applied++;
        }),
      ).rejects.toThrow("crash while applying");
      expect(applied).toBeGreaterThan(19);
      const last = await catchUp(log, storage, shard, count);
      expect(last).toBe(await log.lastSequence(shard));
      expect(last).toBeGreaterThanOrEqual(base + 50);
      expect(appliedSequence(storage, shard)).toBe(last);
      for (const id of ids) expect(storage.dbs.meta.get(`test:${id}`), id).toBe(1);
      // Nothing left to apply.
      expect(await catchUp(log, storage, shard, () => expect.unreachable())).toBe(last);
    } finally {
      await storage.close();
      await log.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it("replicates transactions written on two nodes at once: serializable, and both stores byte-identical", async () => {
    // A shard no other test writes: its commands are all write sets.
    const shard = 7;
    const nodes = await Promise.all([0, 1].map((i) => openNode(shard, i)));
    try {
      // A read-modify-write of one counter, and a record per transaction: a lost or doubled update would show.
      const increment = (node: (typeof nodes)[number], n: number) =>
        node.replica.transaction(() => {
          const current = node.storage.dbs.meta.get("test:counter");
          const next = (typeof current === "number" ? current : 0) + 1;
          node.storage.dbs.meta.put("test:counter", next);
          node.storage.dbs.meta.put(`test:by:${n}`, { n, next, at: [next, "x"], bytes: new Uint8Array([n % 256, 7]) });
          if (next % 5 === 0) node.storage.dbs.meta.remove(`test:by:${n - 1}`);
          return next;
        });
      const seen = await Promise.all(
        nodes.map(async (node, i) => {
          const results: number[] = [];
          for (let n = 0; n < 40; n++) results.push((await increment(node, i * 1000 + n)).result);
          return results;
        }),
      );
      // Every transaction saw a distinct counter value: none was computed on a state another had already changed.
      expect(new Set(seen.flat()).size).toBe(80);
      for (const node of nodes) await node.replica.apply();
      for (const node of nodes) expect(node.storage.dbs.meta.get("test:counter")).toBe(80);
      expect(appliedSequence(nodes[0]!.storage, shard)).toBe(appliedSequence(nodes[1]!.storage, shard));
      expect(acceptedSequence(nodes[0]!.storage, shard)).toBe(acceptedSequence(nodes[1]!.storage, shard));
      expect(nodes[0]!.storage.fingerprint()).toEqual(nodes[1]!.storage.fingerprint());
      // A capture leaves the store as it was until the command comes back from the log.
      const before = nodes[0]!.storage.fingerprint();
      await nodes[0]!.storage.captureWrites(() => nodes[0]!.storage.dbs.meta.put("test:counter", -1));
      expect(nodes[0]!.storage.fingerprint()).toEqual(before);
    } finally {
      for (const node of nodes) await closeNode(node);
    }
  }, 60_000);

  it("makes entries one node writes, supersedes and deletes searchable (and unsearchable) on another", async () => {
    const shard = 9;
    const embedder = new HashedEmbedder(64);
    const nodes = await Promise.all(
      [0, 1].map(async (i) => {
        // The replica hears replays before the index exists only if commands arrive first: none do here.
        const late: { index?: MemoryIndex } = {};
        const node = await openNode(shard, i, (writes) => late.index?.replayed(writes));
        const entries = new EntryStore(node.storage);
        const index = new MemoryIndex(node.storage, entries, embedder, createLogger("silent"));
        late.index = index;
        return { ...node, entries, index };
      }),
    );
    const [a, b] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
    const search = (node: typeof a, text: string): string[] =>
      node.index.search
        .search({
          owner: 1,
          scopes: [{ owner: 1, runId: "ops" }],
          includeGlobalLessons: false,
          text,
          queryVector: undefined,
          filter: { entryTypes: undefined, userId: undefined, laneFilter: "", minTimestamp: undefined, maxTimestamp: undefined },
          includeWorkingMemory: true,
          limit: 5,
          budget: "mid",
          rankBy: "relevance",
        })
        .hits.map((hit) => hit.entry.content);
    const write = async (contents: string[], upsertKey = ""): Promise<number[]> => {
      const prepared = await a.index.prepare(contents.map((content) => ({ entry: newEntry({ owner: 1, runId: "ops", entryType: "fact", content, occurrenceTime: 0, upsertKey }) })));
      const { result: written } = await a.replica.transaction(() => a.entries.writeInTransaction(prepared));
      a.index.indexWritten(written, prepared);
      return written.map((w) => w.record.seq);
    };
    try {
      const [stalled] = await write(["The payments queue stalled at noon.", "Deploys freeze on Fridays.", "The cache warmer crashed twice."]);
      await write(["The payments queue is healthy again."], "queue-state");
      await write(["The payments queue stalled again after the deploy."], "queue-state");
      await b.replica.apply();
      expect(search(b, "payments queue")).toEqual(search(a, "payments queue"));
      expect(search(b, "payments queue")).toContain("The payments queue stalled again after the deploy.");
      expect(b.index.catalog.count).toBe(a.index.catalog.count);

      const { result: deleted } = await a.replica.transaction(() => a.entries.deleteInTransaction(stalled as number));
      a.index.unindex(deleted!.record.seq, deleted!.record.owner, deleted!.termFreqs);
      await b.replica.apply();
      expect(search(b, "stalled at noon")).not.toContain("The payments queue stalled at noon.");
      expect(search(b, "payments queue")).toEqual(search(a, "payments queue"));
      expect(b.index.sparse.postingCount).toBe(a.index.sparse.postingCount);
      expect(a.storage.fingerprint()).toEqual(b.storage.fingerprint());
    } finally {
      for (const node of nodes) {
        node.index.close();
        await closeNode(node);
      }
    }
  }, 60_000);

  it("starts a new node from a snapshot and the log's tail, byte-identical to the node that took it", async () => {
    const shard = 11;
    const snapshots = await SnapshotStore.open({ servers: nats.urls });
    const a = await openNode(shard, 0);
    const fresh = fs.mkdtempSync(path.join(os.tmpdir(), "engram-snapfresh-"));
    const increment = (): Promise<unknown> =>
      a.replica.transaction(() => {
        const current = a.storage.dbs.meta.get("test:counter");
        const next = (typeof current === "number" ? current : 0) + 1;
        a.storage.dbs.meta.put("test:counter", next);
        a.storage.dbs.meta.put(`test:row:${next}`, { next, text: "x".repeat(next) });
      });
    let c: { storage: Storage; log: CommandLog; replica: ShardReplica } | undefined;
    try {
      for (let i = 0; i < 30; i++) await increment();
      const taken = await snapshots.publish(a.storage, "shard-11", [shard]);
      expect(taken.positions["11"]).toBe(appliedSequence(a.storage, shard));
      for (let i = 0; i < 20; i++) await increment();

      expect(await snapshots.restore("missing", path.join(fresh, "never"))).toBeUndefined();
      const restored = await snapshots.restore("shard-11", path.join(fresh, "lmdb"));
      expect(restored?.positions).toEqual(taken.positions);
      const storage = new Storage(path.join(fresh, "lmdb"));
      const log = await CommandLog.open({ servers: nats.urls });
      c = { storage, log, replica: new ShardReplica(log, storage, shard) };
      // The copy holds the commands up to its position and nothing after: the new node applies only the tail.
      expect(appliedSequence(storage, shard)).toBe(taken.positions["11"]);
      expect(storage.dbs.meta.get("test:counter")).toBe(30);
      await c.replica.apply();
      await a.replica.apply();
      expect(storage.dbs.meta.get("test:counter")).toBe(50);
      expect(storage.fingerprint()).toEqual(a.storage.fingerprint());

      // The log is bounded by the snapshot: what it holds is dropped, a reader from before it is told to restore, a
      // node from the snapshot still catches up.
      await a.log.truncate(shard, taken.positions["11"] as number);
      expect(await a.log.truncatedUpTo(shard)).toBe(taken.positions["11"]);
      await expect(a.log.read(shard, 0).next()).rejects.toBeInstanceOf(LogTruncated);
      const wiped = new Storage(fs.mkdtempSync(path.join(os.tmpdir(), "engram-wiped-")));
      await expect(new ShardReplica(a.log, wiped, shard).apply()).rejects.toBeInstanceOf(LogTruncated);
      await wiped.close();
      fs.rmSync(wiped.dir, { recursive: true, force: true });
      const tail: number[] = [];
      for await (const command of a.log.read(shard, taken.positions["11"] as number)) tail.push(command.sequence);
      expect(tail).toHaveLength(20);
      expect(tail[tail.length - 1]).toBe(appliedSequence(a.storage, shard));
    } finally {
      await closeNode(a);
      if (c !== undefined) await closeNode({ ...c, dir: fresh });
      await snapshots.close();
    }
  }, 60_000);

  it("keeps a following replica current: a read carrying a write's token sees the write, and waits a bounded time", async () => {
    const shard = 13;
    const nodes = await Promise.all([0, 1].map((i) => openNode(shard, i)));
    const [a, b] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
    const stop = b.replica.follow();
    try {
      for (let n = 1; n <= 10; n++) {
        const { sequence } = await a.replica.transaction(() => a.storage.dbs.meta.put("test:last", n));
        // No write on b: only its follower brings the command, and the token says when it has.
        expect(await b.replica.waitFor(sequence, 10_000)).toBe(true);
        expect(b.storage.dbs.meta.get("test:last")).toBe(n);
      }
      const last = appliedSequence(b.storage, shard);
      expect(await b.replica.waitFor(last + 1_000_000, 200)).toBe(false);
      expect(b.storage.fingerprint()).toEqual(a.storage.fingerprint());
    } finally {
      stop();
      for (const node of nodes) await closeNode(node);
    }
  }, 60_000);

  it("refuses a transaction too large for one command of the log, writing nothing anywhere", async () => {
    const node = await openNode(9, 0);
    try {
      await node.replica.transaction(() => node.storage.dbs.meta.put("small", 1));
      const before = { last: await node.log.lastSequence(9), fingerprint: node.storage.fingerprint() };
      const huge = "x".repeat(MAX_PAYLOAD + 1);
      await expect(node.replica.transaction(() => node.storage.dbs.meta.put("huge", huge))).rejects.toBeInstanceOf(CommandTooLarge);
      expect(await node.log.lastSequence(9)).toBe(before.last);
      expect(node.storage.fingerprint()).toEqual(before.fingerprint);
    } finally {
      await closeNode(node);
    }
  }, 60_000);

  it("commits transactions queued together as one command; one that throws is refused alone", async () => {
    const node = await openNode(10, 0);
    try {
      // The first starts at once; the nine queued behind it go to the log together.
      const outcomes = await Promise.allSettled(
        Array.from({ length: 10 }, (_, i) =>
          node.replica.transaction(() => {
            node.storage.dbs.meta.put(`batched:${i}`, i);
            if (i === 5) throw new Error("refused");
            return i;
          }),
        ),
      );
      expect(outcomes[5]?.status).toBe("rejected");
      const sequences = outcomes.filter((o) => o.status === "fulfilled").map((o) => (o as PromiseFulfilledResult<{ result: number; sequence: number }>).value);
      expect(sequences.map((v) => v.result)).toEqual([0, 1, 2, 3, 4, 6, 7, 8, 9]);
      expect(new Set(sequences.slice(1).map((v) => v.sequence)).size).toBe(1);
      expect(sequences[1]?.sequence).toBeGreaterThan(sequences[0]?.sequence ?? Infinity);
      for (let i = 0; i < 10; i++) expect(node.storage.dbs.meta.get(`batched:${i}`)).toBe(i === 5 ? undefined : i);
    } finally {
      await closeNode(node);
    }
  }, 60_000);
});
