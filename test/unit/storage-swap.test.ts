// Unit tests of the storage write gate and environment swap over a real LMDB store: writes outside a transaction are
// refused, writes made during exclusive work wait and land afterwards, reads never meet a closed environment while a
// compacted copy is swapped in, a copy that does not verify is discarded, and a leftover staged copy is deleted.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStorage, type Storage } from "../../src/storage/database.js";
import { Compactor, LAST_COMPACTION_KEY } from "../../src/storage/compaction.js";
import { createLogger } from "../../src/platform/logger.js";

const open: Storage[] = [];

function fresh(dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-swap-"))): Storage {
  const storage = openStorage(dataDir);
  open.push(storage);
  return storage;
}

afterEach(async () => {
  for (const storage of open.splice(0)) await storage.close();
});

async function fill(storage: Storage, from: number, count: number): Promise<void> {
  await storage.transaction(() => {
    for (let i = from; i < from + count; i++) storage.dbs.jobQueue.put(i, `job-${i}-${"x".repeat(200)}`);
  });
}

describe("Storage", () => {
  it("refuses LMDB writes made outside Storage.transaction", async () => {
    const storage = fresh();
    expect(() => storage.dbs.meta.put("k", 1)).toThrow(/outside Storage.transaction/);
    expect(() => storage.dbs.meta.putSync("k", 1)).toThrow(/outside Storage.transaction/);
    expect(() => storage.dbs.meta.remove("k")).toThrow(/outside Storage.transaction/);
    await storage.transaction(() => storage.dbs.meta.put("k", 2));
    expect(storage.dbs.meta.get("k")).toBe(2);
  });

  it("holds writes made during exclusive work and applies every one afterwards, in order", async () => {
    const storage = fresh();
    let seenDuringWork = -1;
    const order: number[] = [];
    const work = storage.exclusive(async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      seenDuringWork = storage.dbs.jobQueue.getCount();
      return "done";
    });
    const writes = Array.from({ length: 50 }, (_, i) => storage.transaction(() => storage.dbs.jobQueue.put(i, `job-${i}`)).then(() => order.push(i)));
    expect(await work).toBe("done");
    await Promise.all(writes);
    expect(seenDuringWork).toBe(0);
    expect(storage.dbs.jobQueue.getCount()).toBe(50);
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });

  it("compacts: the copy replaces the data file, reads keep answering throughout, and writes land in the new file", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-swap-"));
    const storage = fresh(dataDir);
    await fill(storage, 0, 20_000);
    await storage.transaction(() => {
      for (let i = 0; i < 19_000; i++) storage.dbs.jobQueue.remove(i);
    });
    const before = storage.dataFileBytes();
    const compactor = new Compactor(storage, createLogger("silent"));
    let reads = 0;
    let readErrors = 0;
    let reading = true;
    const read = (): void => {
      try {
        if (storage.dbs.jobQueue.get(19_999) !== undefined) reads++;
      } catch {
        readErrors++;
      }
    };
    // Reads from macrotasks and from microtasks, as request handlers would make them, for as long as the swap runs.
    const loop = (async () => {
      while (reading) {
        read();
        await Promise.resolve();
        read();
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const start = compactor.start();
    expect(start.started).toBe(true);
    expect(compactor.start().started).toBe(false);
    const held = storage.transaction(() => storage.dbs.jobQueue.put(50_000, "written during compaction"));
    if (!start.started) throw new Error("not started");
    const result = await start.done;
    reading = false;
    await loop;
    await held;
    expect(readErrors).toBe(0);
    expect(reads).toBeGreaterThan(0);
    expect(result.sizeBeforeBytes).toBe(before);
    expect(result.sizeAfterBytes).toBeLessThan(before / 2);
    expect(compactor.running).toBe(false);
    expect(compactor.lastCompactionAt()).toBe(result.finishedAt);
    expect(storage.dbs.meta.get(LAST_COMPACTION_KEY)).toBe(result.finishedAt);
    expect(storage.dbs.jobQueue.getCount()).toBe(1_001);
    expect(fs.existsSync(storage.stagingDir)).toBe(false);
    await storage.close();
    open.splice(open.indexOf(storage), 1);
    const reopened = fresh(dataDir);
    expect(reopened.dbs.jobQueue.get(50_000)).toBe("written during compaction");
    expect(reopened.dbs.jobQueue.getCount()).toBe(1_001);
    expect(reopened.dataFileBytes()).toBeLessThan(before / 2);
  });

  it("discards a copy that does not verify and keeps the live environment", async () => {
    const storage = fresh();
    await fill(storage, 0, 100);
    await expect(
      storage.exclusive(async (access) => {
        await access.root.backup(access.stagingDir, true);
        // Tamper with the live environment after the copy: the copy no longer matches it.
        access.writeSync(() => storage.dbs.jobQueue.put(999, "after the copy"));
        await access.swapInStaged();
      }),
    ).rejects.toThrow(/differs in ingest_job_queue/);
    expect(fs.existsSync(storage.stagingDir)).toBe(false);
    expect(storage.dbs.jobQueue.getCount()).toBe(101);
    await storage.transaction(() => storage.dbs.jobQueue.put(1000, "still writable"));
    expect(storage.dbs.jobQueue.get(1000)).toBe("still writable");
  });

  it("deletes a staged copy left by a crash instead of using it", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-swap-"));
    const first = fresh(dataDir);
    await fill(first, 0, 10);
    await first.close();
    open.splice(open.indexOf(first), 1);
    fs.mkdirSync(first.stagingDir, { recursive: true });
    fs.writeFileSync(path.join(first.stagingDir, "data.mdb"), "half a copy");
    const second = fresh(dataDir);
    expect(fs.existsSync(second.stagingDir)).toBe(false);
    expect(second.dbs.jobQueue.getCount()).toBe(10);
  });
});
