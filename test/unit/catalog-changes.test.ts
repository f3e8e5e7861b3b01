// The catalog under updates and deletes: scopes, lists and every per-owner statistic (document counts and lengths,
// authors, run owners) stay exactly what a fresh catalog of the surviving records would hold.
import { describe, expect, it } from "vitest";
import { Catalog } from "../../src/retrieval/catalog.js";
import type { EntryRecord } from "../../src/storage/entry-store.js";
import { entryRecord as record } from "./entry-records.js";

/** Everything observable about a catalog's view of some owners and runs. */
function snapshot(catalog: Catalog, owners: number[], runs: string[]): unknown {
  return {
    count: catalog.count,
    owners: owners.map((owner) => ({
      owner,
      stats: catalog.documentStats(owner),
      authors: ["payments", "caroline", "melanie", "ops"].map((name) => catalog.authorId(owner, name) !== undefined),
      runs: runs.map((run) => ({
        seqs: catalog.runSeqs(owner, run),
        knowledge: catalog.knowledgeSeqs(owner, run),
      })),
      globalLessons: catalog.globalLessonSeqs(owner),
    })),
    runs: runs.map((run) => ({ all: catalog.runSeqs(undefined, run), knowledge: catalog.knowledgeSeqs(undefined, run), owners: catalog.runOwners(run) })),
  };
}

const A = 11;
const B = 22;

function corpus(): EntryRecord[] {
  return [
    record(1, { owner: A, runId: "r", content: "deploy on friday", agentId: "payments" }),
    record(2, { owner: B, runId: "r", content: "payments service deploy friday afternoon", agentId: "payments" }),
    record(3, { owner: A, runId: "r", content: "Caroline: I went to the support group" }),
    record(4, { owner: A, runId: "r", content: "never push to main", entryType: "rule" }),
    record(5, { owner: A, runId: "other", content: "retry with backoff", entryType: "lesson", lessonScope: "global" }),
    record(6, { owner: B, runId: "other", content: "cache the token", entryType: "lesson", lessonScope: "global", agentId: "ops" }),
    record(7, { owner: A, runId: "r", content: "the build takes ten minutes", lane: "ci" }),
  ];
}

function catalogOf(records: readonly EntryRecord[]): Catalog {
  const catalog = new Catalog();
  for (const r of records) catalog.add(r);
  return catalog;
}

const OWNERS = [A, B];
const RUNS = ["r", "other"];

describe("Catalog per-owner statistics", () => {
  it("keeps document statistics and authors per owner", () => {
    const catalog = catalogOf(corpus());
    expect(catalog.documentStats(A)).toEqual({ count: 5, averageTermCount: (3 + 7 + 4 + 3 + 5) / 5 });
    expect(catalog.documentStats(B)).toEqual({ count: 2, averageTermCount: (5 + 3) / 2 });
    expect(catalog.documentStats(99)).toEqual({ count: 0, averageTermCount: 0 });
    // Both wrote as "payments"; only B wrote as "ops"; only A has Caroline's speaker label.
    expect(catalog.authorId(A, "payments")).toBeDefined();
    expect(catalog.authorId(A, "ops")).toBeUndefined();
    expect(catalog.authorId(B, "ops")).toBeDefined();
    expect(catalog.authorId(B, "caroline")).toBeUndefined();
    expect(catalog.authorId(A, "caroline")).toBeDefined();
    expect(catalog.authorId(A, "")).toBeUndefined();
    expect(catalog.runOwners("r")).toEqual([A, B]);
    expect(catalog.runOwners("nowhere")).toEqual([]);
  });

  it("is unchanged for one owner by another owner's entries", () => {
    const all = catalogOf(corpus());
    const onlyA = catalogOf(corpus().filter((r) => r.owner === A));
    const ofA = (c: Catalog): unknown => (snapshot(c, [A], RUNS) as { owners: unknown[] }).owners;
    expect(ofA(all)).toEqual(ofA(onlyA));
  });
});

describe("Catalog.remove and removeAll", () => {
  it("leaves exactly what a catalog of the surviving records holds", () => {
    for (const gone of corpus().map((r) => r.seq)) {
      const catalog = catalogOf(corpus());
      catalog.remove(gone);
      expect(catalog.has(gone)).toBe(false);
      expect(snapshot(catalog, OWNERS, RUNS)).toEqual(snapshot(catalogOf(corpus().filter((r) => r.seq !== gone)), OWNERS, RUNS));
    }
  });

  it("forgets an author once the owner's last entry by them is gone", () => {
    const catalog = catalogOf(corpus());
    catalog.remove(1);
    expect(catalog.authorId(A, "payments")).toBeUndefined();
    expect(catalog.authorId(B, "payments")).toBeDefined();
  });

  it("ignores absent and repeated removals", () => {
    const catalog = catalogOf(corpus());
    catalog.remove(3);
    catalog.remove(3);
    catalog.remove(1234);
    expect(catalog.count).toBe(6);
    expect(catalog.documentStats(A).count).toBe(4);
  });

  it("removes many at once as one by one would", () => {
    const batch = catalogOf(corpus());
    batch.removeAll([1, 3, 4, 7, 7, 999]);
    const single = catalogOf(corpus());
    for (const seq of [1, 3, 4, 7]) single.remove(seq);
    expect(snapshot(batch, OWNERS, RUNS)).toEqual(snapshot(single, OWNERS, RUNS));
    expect(batch.runSeqs(A, "r")).toEqual([]);
    expect(batch.runOwners("r")).toEqual([B]);
  });

  it("drops removed entries from scope matching and filters", () => {
    const catalog = catalogOf(corpus());
    catalog.remove(3);
    const inScope = catalog.scopeMatcher([{ owner: A, runId: "r" }], A);
    expect([1, 2, 3, 4, 5, 6, 7].filter(inScope)).toEqual([1, 4, 5, 7]);
  });
});

describe("Catalog.replace", () => {
  it("takes a changed record as a fresh catalog would", () => {
    const changes: EntryRecord[] = [
      record(1, { owner: A, runId: "r", content: "deploy on friday", agentId: "payments", lane: "ops", importance: "critical" }),
      record(3, { owner: A, runId: "r", content: "Melanie: the group met on a long quiet sunday evening" }),
      record(4, { owner: A, runId: "r", content: "never push to main", entryType: "rule", stale: true }),
      record(5, { owner: A, runId: "other", content: "retry with backoff", entryType: "lesson", lessonScope: "run" }),
      record(7, { owner: A, runId: "r", content: "the build takes ten minutes", confidence: 0.2, metadataJson: '{"k":1}' }),
    ];
    for (const changed of changes) {
      const catalog = catalogOf(corpus());
      catalog.replace(changed);
      const expected = catalogOf(corpus().map((r) => (r.seq === changed.seq ? changed : r)));
      expect(snapshot(catalog, OWNERS, RUNS)).toEqual(snapshot(expected, OWNERS, RUNS));
      expect(catalog.isStale(changed.seq)).toBe(expected.isStale(changed.seq));
      expect(catalog.importanceLevel(changed.seq)).toBe(expected.importanceLevel(changed.seq));
      expect(catalog.termCount(changed.seq)).toBe(changed.termCount);
      expect(catalog.isGlobalLesson(changed.seq)).toBe(expected.isGlobalLesson(changed.seq));
    }
  });

  it("follows a new speaker label in changed content", () => {
    const catalog = catalogOf(corpus());
    catalog.replace(record(3, { owner: A, runId: "r", content: "Melanie: the group met on sunday" }));
    expect(catalog.authorOf(3)).toBe(catalog.authorId(A, "melanie"));
    expect(catalog.authorId(A, "caroline")).toBeUndefined();
  });

  it("moves an entry between lanes for lane filters and lane-limited scopes", () => {
    const catalog = catalogOf(corpus());
    const inCi = (c: Catalog): boolean => c.scopeMatcher([{ owner: A, runId: "r", lanes: new Set(["ci"]) }], undefined)(7);
    expect(inCi(catalog)).toBe(true);
    catalog.replace(record(7, { owner: A, runId: "r", content: "the build takes ten minutes", lane: "release" }));
    expect(inCi(catalog)).toBe(false);
    const laneFilter = catalog.matcher({ entryTypes: undefined, userId: undefined, laneFilter: "release", minTimestamp: undefined, maxTimestamp: undefined });
    expect(laneFilter(7)).toBe(true);
  });

  it("does not bring back an entry that was removed", () => {
    const catalog = catalogOf(corpus());
    catalog.remove(2);
    catalog.replace(record(2, { owner: B, runId: "r", content: "changed" }));
    expect(catalog.has(2)).toBe(false);
    expect(catalog.documentStats(B).count).toBe(1);
  });

  it("keeps ascending lists when an older entry is re-added", () => {
    const catalog = catalogOf(corpus());
    catalog.replace(record(1, { owner: A, runId: "r", content: "deploy on monday" }));
    expect(catalog.runSeqs(A, "r")).toEqual([1, 3, 4, 7]);
    expect(catalog.runSeqs(undefined, "r")).toEqual([1, 2, 3, 4, 7]);
  });
});
