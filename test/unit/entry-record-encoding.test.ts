// Entry records as the entries database stores them (version 5, src/storage/entry-record.ts): a field holding its
// default is left out and read back as that default, so every record reads back exactly as it was written, whichever
// of its fields differ from a plain write's; records of version 4 (every field present) still read as they did.
import { Packr } from "msgpackr";
import { describe, expect, it } from "vitest";
import { decodeEntry, encodeEntry, initialLearning, type EntryRecord } from "../../src/storage/entry-record.js";
import { entryRecord } from "./entry-records.js";

/** What LMDB would hand back: the stored value packed and unpacked as msgpack. */
const packr = new Packr({ structures: [] });
const roundTrip = (record: EntryRecord): EntryRecord => decodeEntry(packr.unpack(packr.pack(encodeEntry(record))), record.seq);

const plain = entryRecord(7, { owner: 3, runId: "run-1", content: "Deploy took 12 minutes." });

describe("entry record encoding", () => {
  it("leaves out what a plain write holds by default, and reads it back", () => {
    const stored = encodeEntry(plain);
    expect(Object.keys(stored).sort()).toEqual(["content", "createdAt", "entryType", "id", "occurrenceTime", "owner", "provenance", "runId", "seq", "termCount", "v"]);
    expect(stored["provenance"]).toEqual({ origin: "agent", trust: "trusted" });
    expect(roundTrip(plain)).toEqual(plain);
  });

  it.each<[string, Partial<EntryRecord>]>([
    ["agent and user", { agentId: "planner", userId: "u-9" }],
    ["lesson fields", { entryType: "lesson", lessonScope: "global", lessonType: "failure", validationStatus: "validated" }],
    ["importance, metadata, lane", { importance: "critical", metadataJson: '{"k":1}', lane: "ops" }],
    ["an update", { updatedAt: 1_700_000_009_000, stale: true, supersededBy: "ent_z" }],
    ["upsert key, source, reference, content type", { upsertKey: "k", source: "human", referenceId: "chk_7", contentType: "text/markdown" }],
    ["tags, lineage, derivation", { envTags: ["os:linux"], sourceIds: ["ent_1", "ent_2"], derived: true, lineageReview: "source_deleted" }],
    ["audit", { audit: [{ at: 5, field: "lane", from: "", to: "ops", reason: "moved", agentId: "a" }] }],
    ["confidence alone (learning from before it changed)", { confidence: 0.4 }],
    ["learning", { confidence: 0.7, learning: { ...initialLearning(0.7, "run-1"), reinforcementCount: 3, confirmedRuns: ["run-1", "run-2"] } }],
    ["a learning state of another run", { learning: initialLearning(1, "elsewhere") }],
    ["provenance", { provenance: { origin: "web", toolName: "browser", url: "https://example.com/a", trust: "untrusted", keyId: "" } }],
    ["flags, expiry, absorbed ids", { flags: ["instruction_like"], expiresAt: 1_800_000_000_000, absorbedIds: ["ent_3"] }],
    ["empty run and content", { runId: "", content: "" }],
  ])("reads back a record with %s", (_, fields) => {
    const record: EntryRecord = { ...plain, ...fields };
    expect(roundTrip(record)).toEqual(record);
  });

  it("keeps a learning state that differs from the initial one in any single field", () => {
    const initial = initialLearning(1, "run-1");
    const changed: Record<string, unknown> = { evidenceFor: 5, evidenceAgainst: 1, reinforcementCount: 1, verifiedInProduction: true, promotionState: "proposed", promotionTargetScope: "global", promotionRefused: true, confirmedRuns: ["run-2"], auditionWins: 1, auditionLosses: 1, negativeStreak: 2 };
    expect(Object.keys(changed).sort()).toEqual(Object.keys(initial).sort());
    for (const [field, value] of Object.entries(changed)) {
      const record: EntryRecord = { ...plain, learning: { ...initial, [field]: value } };
      expect(roundTrip(record)).toEqual(record);
    }
  });

  it("stores a third of what version 4 did for a plain fact", () => {
    const v4 = { ...plain, v: 4 };
    const size = packr.pack(encodeEntry(plain)).length;
    expect(size * 2).toBeLessThan(packr.pack(v4).length);
    // A version 4 record, every field present, reads as it did.
    expect(decodeEntry(packr.unpack(packr.pack(v4)), plain.seq)).toEqual(plain);
  });

  it("still refuses a version 4 record that lacks a field", () => {
    const { lane: _lane, ...lacking } = { ...plain, v: 4 };
    expect(() => decodeEntry(lacking, plain.seq)).toThrow("field lane must be a string");
  });
});
