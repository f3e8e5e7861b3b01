// The catalog when entries expire: thousands expiring at one instant (whole groups at a time) or a few at a time, in
// any order of writing, leave every list, count and per-owner statistic — and the run listings — exactly what a fresh
// catalog of the surviving entries holds, while the expired rows wait for their purge.
import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/retrieval/catalog.js";
import { EntryExpiry } from "../../src/storage/entry-expiry.js";
import { RunDirectory } from "../../src/runs/run-directory.js";
import { ENTRY_TYPES, type EntryRecord, type EntryType } from "../../src/storage/entry-store.js";
import { entryRecord as record } from "./entry-records.js";

const A = 11;
const B = 22;
const OWNERS = [A, B];
const RUNS = ["r0", "r1", "r2"];
const AUTHORS = ["payments", "ops", "caroline", "melanie", "agent-3"];
const T0 = 1_800_000_000_000;

/** A mixed corpus: two owners, three runs, every entry type, several agents and speakers, global lessons. */
function corpus(size: number, expiresAt: (seq: number) => number): EntryRecord[] {
  const records: EntryRecord[] = [];
  for (let seq = 1; seq <= size; seq++) {
    const entryType = ENTRY_TYPES[seq % 7 === 0 ? 1 : seq % 11 === 0 ? 2 : seq % 5 === 0 ? 3 : 0] as EntryType;
    const speaker = seq % 13 === 0 ? "Caroline: " : seq % 17 === 0 ? "Melanie: " : "";
    records.push(
      record(seq, {
        owner: seq % 3 === 0 ? B : A,
        runId: RUNS[seq % RUNS.length] as string,
        content: `${speaker}entry ${seq} about ${"word ".repeat(seq % 6)}`.trim(),
        entryType,
        agentId: `agent-${seq % 4}`,
        lessonScope: entryType === "lesson" && seq % 2 === 0 ? "global" : "",
        // Distinct creation times: run listings show their first and newest live entries' times.
        createdAt: 1_700_000_000_000 + seq * 1000,
        expiresAt: expiresAt(seq),
      }),
    );
  }
  return records;
}

function snapshot(catalog: Catalog, runs: RunDirectory): unknown {
  return {
    count: catalog.count,
    owners: OWNERS.map((owner) => ({
      stats: catalog.documentStats(owner),
      authors: AUTHORS.map((name) => catalog.authorId(owner, name) !== undefined),
      runs: RUNS.map((run) => ({ seqs: catalog.runSeqs(owner, run), knowledge: catalog.knowledgeSeqs(owner, run) })),
      globalLessons: catalog.globalLessonSeqs(owner),
      lessons: catalog.lessonSeqs(owner),
      // Agents in order of first appearance: a history, which a fresh catalog does not have.
      listing: runs.page(owner, 10, undefined).runs.map((run) => ({ ...run, agentIds: [...run.agentIds].sort() })),
      runCount: runs.runCount(owner),
    })),
    runs: RUNS.map((run) => ({ all: catalog.runSeqs(undefined, run), knowledge: catalog.knowledgeSeqs(undefined, run), owners: catalog.runOwners(run) })),
  };
}

/** A catalog (with its run listings) on a clock the test moves. */
function catalogAt(clock: { now: number }, records: readonly EntryRecord[]): { catalog: Catalog; runs: RunDirectory; expiry: EntryExpiry } {
  const catalog = new Catalog();
  const runs = new RunDirectory(catalog);
  const expiry = new EntryExpiry(() => clock.now);
  catalog.useExpiry(expiry);
  for (const r of records) catalog.add(r);
  return { catalog, runs, expiry };
}

/** What a catalog of only the entries alive at `now` holds. */
function freshOf(records: readonly EntryRecord[], now: number): unknown {
  const { catalog, runs } = catalogAt({ now }, records.filter((r) => r.expiresAt === 0 || r.expiresAt > now));
  return snapshot(catalog, runs);
}

describe("Catalog expiry", () => {
  it("takes thousands of entries expiring at one instant out of every list and count, as a fresh catalog of the rest", () => {
    // Batches share an expiry, as a batch_insert with one TTL does; every other entry is kept.
    const records = corpus(6_000, (seq) => (seq % 2 === 0 ? T0 + 1000 * Math.floor(seq / 1000) : 0));
    const clock = { now: T0 - 1 };
    const { catalog, runs, expiry } = catalogAt(clock, records);
    expect(snapshot(catalog, runs)).toEqual(freshOf(records, clock.now));
    clock.now = T0 + 10_000;
    // Counted out at once; the lists filtered by the background pass here (reads filter those it has not reached).
    expect(catalog.count).toBe(3_000);
    let tidied = 0;
    while (catalog.tidy()) tidied++;
    expect(tidied).toBeGreaterThan(0);
    expect(snapshot(catalog, runs)).toEqual(freshOf(records, clock.now));
    const expired = records.filter((r) => r.expiresAt !== 0).map((r) => r.seq);
    for (const seq of expired) {
      expect(catalog.has(seq)).toBe(false);
      expect(expiry.isHidden(seq)).toBe(true);
    }
    expect(catalog.expiredSeqs(100_000).sort((a, b) => a - b)).toEqual(expired);
    const inScope = catalog.scopeMatcher([{ owner: A, runId: "r0" }], A);
    const passes = catalog.matcher({ entryTypes: undefined, userId: undefined, laneFilter: "", minTimestamp: undefined, maxTimestamp: undefined });
    expect(expired.some((seq) => inScope(seq) || passes(seq))).toBe(false);
  });

  it("expires entries at their own times, whatever the order they were written in, through partly due groups", () => {
    // Expiry times out of seq order, many sharing a time, so that the clock stops inside groups.
    const records = corpus(3_000, (seq) => (seq % 4 === 0 ? 0 : T0 + ((seq * 7919) % 600) * 1000));
    const clock = { now: T0 - 1 };
    const { catalog, runs } = catalogAt(clock, records);
    for (const step of [0, 1, 59, 60, 61, 250, 599, 600]) {
      clock.now = T0 + step * 1000 + (step % 2 === 0 ? 0 : 500);
      expect(snapshot(catalog, runs), `at +${step} s`).toEqual(freshOf(records, clock.now));
    }
  });

  it("changes nothing when expired entries are purged, deleted or updated, or the clock moves back", () => {
    const records = corpus(1_500, (seq) => (seq % 3 === 0 ? T0 + seq : 0));
    const clock = { now: T0 + 2_000 };
    const { catalog, runs } = catalogAt({ now: T0 - 1 }, records);
    // Only now do they expire: the rows were added live.
    catalog.useExpiry(new EntryExpiry(() => clock.now));
    const expected = freshOf(records, clock.now);
    expect(snapshot(catalog, runs)).toEqual(expected);
    const expired = records.filter((r) => r.expiresAt !== 0);
    for (const r of expired.slice(0, 200)) catalog.remove(r.seq);
    catalog.removeAll(expired.slice(200, 300).map((r) => r.seq));
    for (const r of expired.slice(300, 400)) catalog.replace({ ...r, content: "changed", expiresAt: 0 });
    clock.now = T0;
    expect(snapshot(catalog, runs)).toEqual(expected);
    expect(catalog.expiredSeqs(10_000)).toEqual(expired.slice(200 + 100).map((r) => r.seq));
    // A live entry deleted after the expiry: counted out once.
    const live = records.find((r) => r.expiresAt === 0 && r.owner === A) as EntryRecord;
    catalog.remove(live.seq);
    expect(snapshot(catalog, runs)).toEqual(freshOf(records.filter((r) => r.seq !== live.seq), T0 + 2_000));
  });

  it("follows live entries deleted or updated before they expire: each expires once, at its latest time", () => {
    let records = corpus(2_000, (seq) => T0 + (seq % 50) * 1000);
    const clock = { now: T0 - 1 };
    const { catalog, runs } = catalogAt(clock, records);
    const deleted = new Set(records.filter((r) => r.seq % 5 === 0).map((r) => r.seq));
    for (const seq of deleted) catalog.remove(seq);
    // Updates moving expiries later, earlier and off, and changing the groups entries expire in.
    const updated = records
      .filter((r) => r.seq % 5 === 1)
      .map((r) => ({ ...r, agentId: "agent-9", expiresAt: r.seq % 3 === 0 ? 0 : T0 + ((r.seq * 13) % 50) * 1000 }));
    for (const r of updated) catalog.replace(r);
    const bySeq = new Map(updated.map((r) => [r.seq, r]));
    records = records.filter((r) => !deleted.has(r.seq)).map((r) => bySeq.get(r.seq) ?? r);
    for (const step of [0, 10, 25, 49, 50]) {
      clock.now = T0 + step * 1000;
      expect(snapshot(catalog, runs), `at +${step} s`).toEqual(freshOf(records, clock.now));
    }
  });

  it("keeps an entry written with an expiry already past out of the catalog", () => {
    const clock = { now: T0 };
    const { catalog, expiry } = catalogAt(clock, [record(1, { owner: A, runId: "r0", content: "late", expiresAt: T0 - 1 })]);
    expect(catalog.has(1)).toBe(false);
    expect(catalog.count).toBe(0);
    expect(expiry.isHidden(1)).toBe(true);
    expect(expiry.unheld(10)).toEqual([1]);
  });
});
