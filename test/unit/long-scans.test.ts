// The long scans over a real LMDB store with tens of thousands of entries: activity totals, pages and exports stay
// exact (or are refused past their maximum) while yielding to the event loop, chunked index reads keep the index's
// order, and memory health finds the same contradictions as a brute-force comparison.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openStorage, type Storage } from "../../src/storage/database.js";
import { EntryStore, newEntry, type EntryRecord, type NewEntry } from "../../src/storage/entry-store.js";
import { activityPage, countActivity, exportActivity, ExportTooLarge, type ActivityQuery } from "../../src/memory/activity/activity-scan.js";
import { ActivityTotals } from "../../src/memory/activity/activity-totals.js";
import { DuplicateFinder } from "../../src/memory/batch-dedupe.js";
import { Catalog } from "../../src/retrieval/catalog.js";
import { chunkedVisibleSeqs } from "../../src/memory/scan.js";
import { assessHealth, type LessonVectors } from "../../src/memory/memory-health.js";

const ALICE = 2;
const BOB = 3;
const BIG = 30_000;

let dir: string;
let storage: Storage;
let store: EntryStore;

const prepared = (entry: NewEntry) => ({ entry, vector: new Float32Array(4), termFreqs: new Map<string, number>() });

async function put(entries: NewEntry[]): Promise<EntryRecord[]> {
  const written: EntryRecord[] = [];
  for (let i = 0; i < entries.length; i += 5000) written.push(...(await store.append(entries.slice(i, i + 5000).map(prepared))).map((w) => w.record));
  return written;
}

function query(over: Partial<ActivityQuery> = {}): ActivityQuery {
  return {
    owner: ALICE,
    runId: "big",
    userId: "",
    agentId: "",
    entryTypes: undefined,
    createdAfter: undefined,
    createdBefore: undefined,
    excludeDerived: false,
    sort: "desc",
    granted: [],
    ...over,
  };
}

/** Runs `work` while a 1 ms interval ticks; returns its result and how often the interval got to run. */
async function whileTicking<T>(work: () => Promise<T>): Promise<{ result: T; ticks: number }> {
  let ticks = 0;
  const timer = setInterval(() => (ticks += 1), 1);
  try {
    const result = await work();
    return { result, ticks };
  } finally {
    clearInterval(timer);
  }
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "engram-long-scans-"));
  storage = openStorage(dir);
  store = new EntryStore(storage);
  await put(
    Array.from({ length: BIG }, (_, i) =>
      newEntry({
        owner: ALICE,
        runId: "big",
        agentId: i % 2 === 0 ? "even" : "odd",
        userId: i % 3 === 0 ? "u1" : "",
        entryType: i % 10 === 0 ? "trace" : "fact",
        content: `entry ${i}`,
        occurrenceTime: 1_700_000_000 + i,
      }),
    ),
  );
  await put(Array.from({ length: 10 }, (_, i) => newEntry({ owner: BOB, runId: "big", lane: i < 4 ? "shared" : "", entryType: "fact", content: `bob ${i}`, occurrenceTime: 1 })));
}, 60_000);

afterAll(async () => {
  await storage.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe("chunked index reads", () => {
  it("give the seqs of visibleSeqs in the same order, in both directions and after a cursor", () => {
    for (const reverse of [false, true]) {
      const direct = [...store.visibleSeqs(ALICE, "big", reverse)];
      expect([...chunkedVisibleSeqs(store, ALICE, "big", reverse)]).toEqual(direct);
      const cursor = direct[1234] as number;
      expect([...chunkedVisibleSeqs(store, ALICE, "big", reverse, cursor)]).toEqual(direct.slice(1235));
    }
  });
});

describe("activity totals, pages and exports", () => {
  it("count exactly, with and without record filters and grants, while the event loop keeps running", async () => {
    const all = await whileTicking(() => countActivity(store, query()));
    expect(all.result).toBe(BIG);
    const filtered = await whileTicking(() => countActivity(store, query({ agentId: "even", entryTypes: new Set(["fact"]) })));
    // Even i with i % 10 !== 0: 15000 even minus the 3000 traces.
    expect(filtered.result).toBe(12_000);
    expect(filtered.ticks).toBeGreaterThan(0);
    expect(await countActivity(store, query({ userId: "u1" }))).toBe(BIG / 3);
    expect(await countActivity(store, query({ granted: [{ owner: BOB, runId: "big", lanes: undefined }] }))).toBe(BIG + 10);
    expect(await countActivity(store, query({ granted: [{ owner: BOB, runId: "big", lanes: new Set(["shared"]) }] }))).toBe(BIG + 4);
  });

  it("a page behind a filter that matches nothing walks the whole run without holding the loop", async () => {
    const { result, ticks } = await whileTicking(() => activityPage(store, query({ agentId: "nobody" }), 500));
    expect(result).toEqual({ page: [], more: false });
    expect(ticks).toBeGreaterThan(0);
    const last = await activityPage(store, query({ agentId: "odd", sort: "asc" }), 3);
    expect(last.page.map((e) => e.content)).toEqual(["entry 1", "entry 3", "entry 5"]);
    expect(last.more).toBe(true);
  });

  it("exports every matching entry, and refuses rather than truncates past the maximum", async () => {
    const line = (e: EntryRecord): string => `${e.id}\n`;
    const traces = await exportActivity(store, query({ entryTypes: new Set(["trace"]), sort: "asc" }), line);
    expect(traces.entryCount).toBe(BIG / 10);
    expect(traces.content.split("\n").filter((l) => l !== "")).toHaveLength(BIG / 10);
    await expect(exportActivity(store, query({ entryTypes: new Set(["trace"]) }), line, { maxEntries: BIG / 10 - 1, maxChars: 1e9 })).rejects.toThrow(ExportTooLarge);
    await expect(exportActivity(store, query({ entryTypes: new Set(["trace"]) }), line, { maxEntries: 1e9, maxChars: 1000 })).rejects.toThrow(/characters/);
    const exact = await exportActivity(store, query({ entryTypes: new Set(["trace"]) }), line, { maxEntries: BIG / 10, maxChars: 1e9 });
    expect(exact.entryCount).toBe(BIG / 10);
  });
});

describe("remembered totals", () => {
  it("stay exact across appends and deletions, and reread only what was written since", async () => {
    const written = await put(Array.from({ length: 3000 }, (_, i) => newEntry({ owner: ALICE, runId: "totals", agentId: i % 2 === 0 ? "even" : "odd", entryType: "fact", content: `t ${i}`, occurrenceTime: 1 })));
    const totals = new ActivityTotals(store);
    const evens = query({ runId: "totals", agentId: "even" });
    let reads = 0;
    const get = store.get.bind(store);
    store.get = (seq: number) => {
      reads += 1;
      return get(seq);
    };
    try {
      expect(await totals.count(evens)).toBe(1500);
      expect(reads).toBe(3000);
      reads = 0;
      expect(await totals.count(evens)).toBe(1500);
      expect(reads).toBe(0);
      await put([newEntry({ owner: ALICE, runId: "totals", agentId: "even", entryType: "fact", content: "late", occurrenceTime: 1 }), newEntry({ owner: ALICE, runId: "totals", agentId: "odd", entryType: "fact", content: "late", occurrenceTime: 1 })]);
      expect(await totals.count(evens)).toBe(1501);
      expect(reads).toBe(2);
      // A deletion below the remembered seq is noticed and the total recounted.
      await storage.transaction(() => store.deleteInTransaction((written[0] as EntryRecord).seq));
      reads = 0;
      expect(await totals.count(evens)).toBe(1500);
      expect(reads).toBe(3001);
      expect(await countActivity(store, evens)).toBe(1500);
    } finally {
      delete (store as { get?: unknown }).get;
    }
  });
});

describe("batch deduplication digests", () => {
  it("find current duplicates, read only new entries on later batches, and rebuild after a deletion", async () => {
    const catalog = new Catalog();
    const write = async (entries: NewEntry[]): Promise<EntryRecord[]> => {
      const records = await put(entries);
      for (const record of records) catalog.add(record);
      return records;
    };
    const fact = (content: string, over: Partial<NewEntry> = {}): NewEntry => newEntry({ owner: ALICE, runId: "dedup", entryType: "fact", content, occurrenceTime: 1, ...over });
    const stored = await write(Array.from({ length: 2000 }, (_, i) => fact(`fact ${i}`)));
    const finder = new DuplicateFinder(catalog, store);
    let reads = 0;
    const get = store.get.bind(store);
    store.get = (seq: number) => {
      reads += 1;
      return get(seq);
    };
    try {
      const asked = [fact("fact 7"), fact("fact 7", { entryType: "rule" }), fact("fact 8", { userId: "someone" }), fact("fact 9"), fact("new")];
      const first = await finder.find(ALICE, "dedup", asked);
      expect([...first.values()]).toEqual([stored[7]?.id, stored[9]?.id]);
      // 2000 to digest the run, then one read to confirm each proposed match.
      expect(reads).toBe(2002);
      reads = 0;
      const [late] = await write([fact("late")]);
      const second = await finder.find(ALICE, "dedup", [fact("late"), fact("fact 7")]);
      expect([...second.values()]).toEqual([late?.id, stored[7]?.id]);
      expect(reads).toBe(3);
      // Superseded since it was digested: proposed, checked, refused.
      await storage.transaction(() => store.updateInTransaction((stored[7] as EntryRecord).seq, { stale: true }, { reason: "test", agentId: "" }));
      catalog.markStale((stored[7] as EntryRecord).seq);
      expect((await finder.find(ALICE, "dedup", [fact("fact 7")])).size).toBe(0);
      // A deletion shrinks the run below the digested seq: the digest is rebuilt, without the deleted entry.
      await storage.transaction(() => store.deleteInTransaction((stored[9] as EntryRecord).seq));
      catalog.remove((stored[9] as EntryRecord).seq);
      reads = 0;
      expect((await finder.find(ALICE, "dedup", [fact("fact 9"), fact("fact 10")])).size).toBe(1);
      expect(reads).toBeGreaterThan(1990);
      // With room for fewer entries than the run holds, nothing is kept, and answers stay right.
      const small = new DuplicateFinder(catalog, store, 100);
      expect([...(await small.find(ALICE, "dedup", [fact("fact 11")])).values()]).toEqual([stored[11]?.id]);
      expect([...(await small.find(ALICE, "dedup", [fact("fact 12")])).values()]).toEqual([stored[12]?.id]);
    } finally {
      delete (store as { get?: unknown }).get;
    }
  });
});

describe("memory health over many lessons", () => {
  it("finds exactly the contradicting pairs a brute-force comparison finds, newest lessons first", async () => {
    const lessons = await put(
      Array.from({ length: 400 }, (_, i) =>
        newEntry({
          owner: ALICE,
          runId: "lessons",
          entryType: "lesson",
          lessonType: i % 4 === 0 ? "failure" : "success",
          content: i % 5 === 0 ? `never do thing ${i % 7}` : `do thing ${i % 7}`,
          occurrenceTime: 1,
        }),
      ),
    );
    // Lessons about the same thing (i % 7) point the same way; the others are orthogonal.
    const vectorOf = (seq: number): Float32Array => {
      const v = new Float32Array(7);
      const lesson = lessons.find((l) => l.seq === seq) as EntryRecord;
      v[Number(lesson.content.at(-1))] = 1;
      return v;
    };
    const vectors: LessonVectors = {
      vector: (seq) => vectorOf(seq),
      similarity: (seq, q) => vectorOf(seq).reduce((sum, x, k) => sum + x * (q[k] as number), 0),
    };
    const report = await assessHealth(store, vectors, { owner: ALICE, runId: "lessons", userId: "", staleDays: 30, limit: 10_000, now: Date.now() });
    expect(report.inspected).toBe(400);
    const newestFirst = [...lessons].reverse();
    const expected: string[] = [];
    newestFirst.forEach((a, i) => {
      for (const b of newestFirst.slice(i + 1)) {
        const opposite = new Set([a.lessonType, b.lessonType]).size === 2;
        const negation = a.content.startsWith("never") !== b.content.startsWith("never");
        if (a.content.at(-1) === b.content.at(-1) && (opposite || negation)) expected.push(`${Math.min(a.seq, b.seq)}-${Math.max(a.seq, b.seq)}`);
      }
    });
    expect(report.contradictions.map((c) => `${c.older.seq}-${c.newer.seq}`)).toEqual(expected);
    expect(expected.length).toBeGreaterThan(1000);
  });
});
