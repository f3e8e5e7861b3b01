// Memory entries (lessons and rules included) in an export: read in write order with their vectors (the server
// embedder's, and the owner's caller vector spaces' by space name), and written back
// through the entry store's normal write (run, owner, upsert and reference indexes, index terms, lineage links) with
// their learned state, audit trail and times kept, then indexed in memory like any written entry.
import type { MemoryIndex } from "../../memory/memory-index.js";
import type { EntryWriter } from "../../memory/entry-writer.js";
import { MAX_AUDIT_EVENTS, MAX_CONFIRMED_RUNS, decodeEntry, encodeEntry, seqOfEntryId, type EntryRecord, type EntryStore, type NewEntry, type PreparedEntry, type WrittenEntry } from "../../storage/entry-store.js";
import type { Storage } from "../../storage/database.js";
import { vectorFromBase64, vectorToBase64 } from "../line-format.js";
import { LineFault } from "../import-faults.js";
import { MAX_SPACE_DIMENSIONS, SPACE_NAME, VectorSpaceConflict, scaleToUnitLength, type SpaceVector } from "../../storage/vector-space-store.js";
import { checkId, checkJsonObject } from "../record-checks.js";
import { DEFAULT_TRUST_POLICY, MAX_TOOL_NAME_CHARS, MAX_URL_CHARS, type TrustPolicy } from "../../storage/provenance.js";
import { created, ownerPage, withoutOwner, type ImportContext, type Scanned, type TenantKind } from "../tenant-kind.js";

export interface EntryKindDeps {
  readonly storage: Storage;
  readonly entries: EntryStore;
  readonly index: MemoryIndex;
  readonly writer: EntryWriter;
  /** The trust policy that gives lines exported before provenance existed the trust of origin `import`. */
  readonly trustPolicy?: TrustPolicy;
}

interface EntryLine {
  readonly record: EntryRecord;
  /** The exported vector, when it is of this server's embedder: kept (it may be the caller's own). */
  readonly vector: Float32Array | undefined;
  /** The entry's vectors in the owner's caller vector spaces, unit length. */
  readonly spaceVectors: readonly SpaceVector[];
  prepared?: PreparedEntry;
}

/** An imported entry as the memory index takes it after the commit. */
interface StoredEntry {
  readonly written: WrittenEntry;
  readonly prepared: PreparedEntry;
}

export function entryKind({ storage, entries, index, writer, trustPolicy = DEFAULT_TRUST_POLICY }: EntryKindDeps): TenantKind<EntryLine, StoredEntry> {
  const embedder = index.embedder;
  return {
    kind: "entry",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.entriesByOwner, owner, after, limit).map(({ suffix }) => {
        const seq = suffix[0] as number;
        // Entries of a run being deleted are already invisible: they are not exported.
        const record = entries.get(seq);
        if (record === undefined) return { key: suffix };
        const vector = entries.vector(seq);
        const spaceVectors = entries.spaces.vectorsOf(owner, seq).map((sv) => ({ space: sv.space, vector: vectorToBase64(sv.vector) }));
        return {
          key: suffix,
          line: {
            id: record.id,
            record: {
              ...exportedEntry(entries, record),
              ...(vector === undefined ? {} : { vectorModel: embedder.id, vector: vectorToBase64(vector) }),
              ...(spaceVectors.length === 0 ? {} : { spaceVectors }),
            },
          },
        };
      });
    },

    parse(owner, raw): EntryLine {
      const decoded = decodeEntry({ ...raw, owner }, 0);
      const learning = { ...decoded.learning, confirmedRuns: decoded.learning.confirmedRuns.slice(0, MAX_CONFIRMED_RUNS) };
      // A line exported before provenance existed says nothing of where its text came from: it is an import, as
      // trusted as the policy makes imports. A later line keeps its origin and trust, so a round trip never raises trust.
      const provenance = raw["provenance"] === undefined ? { origin: "import" as const, toolName: "", url: "", trust: trustPolicy.import, keyId: "" } : decoded.provenance;
      if (provenance.toolName.length > MAX_TOOL_NAME_CHARS) throw new LineFault("record.provenance.toolName", `must be at most ${MAX_TOOL_NAME_CHARS} characters`);
      if (provenance.url.length > MAX_URL_CHARS) throw new LineFault("record.provenance.url", `must be at most ${MAX_URL_CHARS} characters`);
      const record: EntryRecord = { ...decoded, learning, provenance };
      checkId("runId", record.runId, false);
      checkJsonObject("metadataJson", record.metadataJson);
      const vector = raw["vector"] === undefined ? undefined : vectorFromBase64("record.vector", raw["vector"]);
      const kept = vector !== undefined && raw["vectorModel"] === embedder.id && vector.length === embedder.dimensions ? vector : undefined;
      return { record, vector: kept, spaceVectors: spaceVectorsOf(raw["spaceVectors"]) };
    },

    async prepare(items) {
      const prepared = await index.prepare(items.map((item) => ({ entry: newEntryOf(item.record), vector: item.vector, spaceVectors: item.spaceVectors })));
      items.forEach((item, i) => (item.prepared = prepared[i]));
    },

    write(ctx, item) {
      const { record } = item;
      const prepared = item.prepared as PreparedEntry;
      // Lineage names entries by id: those imported before are rewritten, those the export did not hold dropped.
      const sourceIds = record.sourceIds.flatMap((id) => mapped(ctx, id));
      // The importing key wrote the entry into this memory; an entry the server derived (no writing key) stays so.
      const keyId = record.provenance.keyId === "" && record.provenance.origin !== "import" ? "" : ctx.keyId;
      // Ids merged into the entry (consolidation) name entries that no longer exist and were not exported: dropped.
      const entry: NewEntry = { ...prepared.entry, sourceIds, provenance: { ...record.provenance, keyId }, absorbedIds: [] };
      // The normal write keeps the creation time it is given; supersession follows from the upsert keys as entries
      // arrive in write order.
      let written: WrittenEntry | undefined;
      try {
        [written] = entries.writeInTransaction([{ ...prepared, entry }], record.createdAt);
      } catch (e: unknown) {
        // A space of the importer's holds vectors of another dimension (or it would be one space too many).
        if (e instanceof VectorSpaceConflict) throw new LineFault("record.spaceVectors", e.message);
        throw e;
      }
      if (written === undefined) throw new Error("the entry store wrote no entry");
      // Trails stay as bounded as the store keeps them, whatever a line holds.
      const audit = record.audit.slice(-MAX_AUDIT_EVENTS);
      const restored: EntryRecord = { ...written.record, updatedAt: record.updatedAt, stale: record.stale, lineageReview: record.lineageReview, audit };
      storage.dbs.entries.put(restored.seq, encodeEntry(restored));
      if (record.referenceId !== "" && restored.referenceId !== "") ctx.remember("reference", record.referenceId, restored.referenceId);
      return { ...created(restored.id), stored: { written: { record: restored, superseded: written.superseded }, prepared: { ...prepared, entry } } };
    },

    committed(stored) {
      writer.committed(
        stored.map((s) => s.written),
        stored.map((s) => s.prepared),
        "import",
      );
    },
  };
}

/** Most spaces one exported entry may carry vectors for (a write stores one). */
const MAX_LINE_SPACE_VECTORS = 16;

/** A line's `spaceVectors`: `[{ space, vector }]`, the vector base64 of Float32 values; normalised to unit length. */
function spaceVectorsOf(value: unknown): SpaceVector[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new LineFault("record.spaceVectors", "must be an array of { space, vector }");
  if (value.length > MAX_LINE_SPACE_VECTORS) throw new LineFault("record.spaceVectors", `must hold at most ${MAX_LINE_SPACE_VECTORS} vectors`);
  const seen = new Set<string>();
  return value.map((item: unknown, i) => {
    const field = `record.spaceVectors[${i}]`;
    if (typeof item !== "object" || item === null || Array.isArray(item)) throw new LineFault(field, "must be an object { space, vector }");
    const { space, vector: text } = item as Record<string, unknown>;
    if (typeof space !== "string" || !SPACE_NAME.test(space)) throw new LineFault(`${field}.space`, "must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'");
    if (seen.has(space)) throw new LineFault(`${field}.space`, `names space ${JSON.stringify(space)} twice`);
    seen.add(space);
    const vector = vectorFromBase64(`${field}.vector`, text);
    if (vector.length === 0 || vector.length > MAX_SPACE_DIMENSIONS) throw new LineFault(`${field}.vector`, `must have 1 to ${MAX_SPACE_DIMENSIONS} dimensions, got ${vector.length}`);
    if (scaleToUnitLength(vector) !== "scaled") throw new LineFault(`${field}.vector`, "must be a non-zero vector");
    return { space, vector };
  });
}

/** The entry id an earlier line of this import (or an earlier import) gave the entry `id`; none when it has none. */
function mapped(ctx: ImportContext, id: string): string[] {
  const target = ctx.ref("entry", id);
  return target === undefined ? [] : [target];
}

/**
 * An entry as a line carries it. Supersession is rebuilt from upsert keys on import; an entry superseded by one that
 * no longer exists would come back current, so it travels as stale instead.
 */
function exportedEntry(entries: EntryStore, record: EntryRecord): Record<string, unknown> {
  const line = withoutOwner(record);
  if (record.supersededBy === "") return line;
  const seq = seqOfEntryId(record.supersededBy);
  const superseder = seq === undefined ? undefined : entries.get(seq);
  return superseder === undefined ? { ...line, supersededBy: "", stale: true } : line;
}

/** What the store's write takes of an imported record; it assigns seq, ids and indexes itself. */
function newEntryOf(record: EntryRecord): NewEntry {
  const {
    v: _v,
    seq: _seq,
    id: _id,
    createdAt: _createdAt,
    updatedAt: _updatedAt,
    supersededBy: _supersededBy,
    stale: _stale,
    referenceId: _referenceId,
    termCount: _termCount,
    lineageReview: _lineageReview,
    audit: _audit,
    ...entry
  } = record;
  return entry;
}
