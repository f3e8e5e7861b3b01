// Memory entries (lessons and rules included) in an export: read in write order with their vector, and written back
// through the entry store's normal write (run, owner, upsert and reference indexes, index terms, lineage links) with
// their learned state, audit trail and times kept, then indexed in memory like any written entry.
import type { MemoryIndex } from "../../memory/memory-index.js";
import type { EntryWriter } from "../../memory/entry-writer.js";
import { MAX_AUDIT_EVENTS, MAX_CONFIRMED_RUNS, decodeEntry, seqOfEntryId, type EntryRecord, type EntryStore, type NewEntry, type PreparedEntry, type WrittenEntry } from "../../storage/entry-store.js";
import type { Storage } from "../../storage/database.js";
import { vectorFromBase64, vectorToBase64 } from "../line-format.js";
import { checkId, checkJsonObject } from "../record-checks.js";
import { created, ownerPage, withoutOwner, type ImportContext, type Scanned, type TenantKind } from "../tenant-kind.js";

export interface EntryKindDeps {
  readonly storage: Storage;
  readonly entries: EntryStore;
  readonly index: MemoryIndex;
  readonly writer: EntryWriter;
}

interface EntryLine {
  readonly record: EntryRecord;
  /** The exported vector, when it is of this server's embedder: kept (it may be the caller's own). */
  readonly vector: Float32Array | undefined;
  prepared?: PreparedEntry;
  written?: WrittenEntry;
}

export function entryKind({ storage, entries, index, writer }: EntryKindDeps): TenantKind<EntryLine> {
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
        return { key: suffix, line: { id: record.id, record: { ...exportedEntry(entries, record), ...(vector === undefined ? {} : { vectorModel: embedder.id, vector: vectorToBase64(vector) }) } } };
      });
    },

    parse(owner, raw): EntryLine {
      const decoded = decodeEntry({ ...raw, owner }, 0);
      const record: EntryRecord = { ...decoded, learning: { ...decoded.learning, confirmedRuns: decoded.learning.confirmedRuns.slice(0, MAX_CONFIRMED_RUNS) } };
      checkId("runId", record.runId, false);
      checkJsonObject("metadataJson", record.metadataJson);
      const vector = raw["vector"] === undefined ? undefined : vectorFromBase64("record.vector", raw["vector"]);
      const kept = vector !== undefined && raw["vectorModel"] === embedder.id && vector.length === embedder.dimensions ? vector : undefined;
      return { record, vector: kept };
    },

    async prepare(items) {
      const prepared = await index.prepare(items.map((item) => ({ entry: newEntryOf(item.record), vector: item.vector })));
      items.forEach((item, i) => (item.prepared = prepared[i]));
    },

    write(ctx, item) {
      const { record } = item;
      const prepared = item.prepared as PreparedEntry;
      // Lineage names entries by id: those imported before are rewritten, those the export did not hold dropped.
      const sourceIds = record.sourceIds.flatMap((id) => mapped(ctx, id));
      const entry: NewEntry = { ...prepared.entry, sourceIds };
      // The normal write keeps the creation time it is given; supersession follows from the upsert keys as entries
      // arrive in write order.
      const [written] = entries.writeInTransaction([{ ...prepared, entry }], record.createdAt);
      if (written === undefined) throw new Error("the entry store wrote no entry");
      // Trails stay as bounded as the store keeps them, whatever a line holds.
      const audit = record.audit.slice(-MAX_AUDIT_EVENTS);
      const restored: EntryRecord = { ...written.record, updatedAt: record.updatedAt, stale: record.stale, lineageReview: record.lineageReview, audit };
      storage.dbs.entries.put(restored.seq, restored);
      if (record.referenceId !== "" && restored.referenceId !== "") ctx.remember("reference", record.referenceId, restored.referenceId);
      item.prepared = { ...prepared, entry };
      item.written = { record: restored, superseded: written.superseded };
      return created(restored.id);
    },

    committed(items) {
      writer.committed(
        items.map((item) => item.written as WrittenEntry),
        items.map((item) => item.prepared as PreparedEntry),
        "import",
      );
    },
  };
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
