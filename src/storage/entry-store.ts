// Memory entries in LMDB: the record, its indexes, its postings and its vector, all written in one transaction.
import type { Storage } from "./database.js";
import { nextSequence } from "./database.js";

export const ENTRY_TYPES = ["fact", "lesson", "rule", "trace", "working_memory", "archive_block", "checkpoint"] as const;
export type EntryType = (typeof ENTRY_TYPES)[number];
export const IMPORTANCE_LEVELS = ["low", "medium", "high", "critical"] as const;
export type Importance = (typeof IMPORTANCE_LEVELS)[number];
export const SOURCES = ["agent", "human", "system"] as const;

export interface EntryRecord {
  readonly v: 1;
  readonly seq: number;
  readonly id: string;
  /** Auth user id of the key that wrote the entry. */
  readonly owner: number;
  /** Run (session) scope. */
  readonly runId: string;
  readonly agentId: string;
  /** Logical user the entry is about; "" when none. */
  readonly userId: string;
  readonly entryType: EntryType;
  readonly content: string;
  /** `run`, `session` or `global` for lessons; "" otherwise. */
  readonly lessonScope: string;
  /** `success`, `failure`, `observation`, `rule` or `preference` for lessons; "" otherwise. */
  readonly lessonType: string;
  readonly importance: Importance;
  readonly metadataJson: string;
  readonly lane: string;
  /** Unix seconds when the event happened. */
  readonly occurrenceTime: number;
  /** Unix milliseconds when the entry was stored. */
  readonly createdAt: number;
  /** Id of the entry that superseded this one; "" while current. */
  readonly supersededBy: string;
  readonly upsertKey: string;
  readonly source: string;
  /** Stable id for Dereference; "" when the entry is not referenceable. */
  readonly referenceId: string;
  readonly contentType: string;
  readonly envTags: readonly string[];
  /** True when the server derived the entry (reflection, promotion) rather than a caller writing it. */
  readonly derived: boolean;
  /** Confidence in [0, 1]; 1 unless learning adjusts it. */
  readonly confidence: number;
  /** Number of index terms, for BM25 length normalisation. */
  readonly termCount: number;
}

/** What a caller supplies; the store assigns the rest. */
export type NewEntry = Omit<EntryRecord, "v" | "seq" | "id" | "createdAt" | "supersededBy" | "referenceId" | "termCount">;

/** A new entry with the defaults of a plain write: no lesson fields, medium importance, no lane or upsert key. */
export function newEntry(fields: Pick<NewEntry, "owner" | "runId" | "entryType" | "content" | "occurrenceTime"> & Partial<NewEntry>): NewEntry {
  return {
    agentId: "",
    userId: "",
    lessonScope: "",
    lessonType: "",
    importance: "medium",
    metadataJson: "{}",
    lane: "",
    upsertKey: "",
    source: "agent",
    contentType: "text/plain",
    envTags: [],
    derived: false,
    confidence: 1,
    ...fields,
  };
}

export interface PreparedEntry {
  readonly entry: NewEntry;
  readonly vector: Float32Array;
  readonly termFreqs: ReadonlyMap<string, number>;
}

export interface WrittenEntry {
  readonly record: EntryRecord;
  /** The entry this one superseded through its upsert key, as it is after being marked stale. */
  readonly superseded: EntryRecord | undefined;
}

/** Entry types Dereference can return byte for byte, and the prefix of their reference ids. */
const REFERENCE_PREFIX: Partial<Record<EntryType, string>> = { archive_block: "arc", checkpoint: "chk" };

export function entryIdOf(seq: number): string {
  return `ent_${seq.toString(36)}`;
}

export function seqOfEntryId(id: string): number | undefined {
  const match = /^ent_([0-9a-z]{1,12})$/.exec(id);
  return match ? parseInt(match[1] as string, 36) : undefined;
}

export function vectorBytes(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

export function vectorFromBytes(bytes: Uint8Array): Float32Array {
  const copy = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(copy.buffer).set(bytes);
  return copy;
}

export class EntryStore {
  readonly #storage: Storage;

  constructor(storage: Storage) {
    this.#storage = storage;
  }

  /**
   * Writes entries with their indexes, postings and vectors, and supersedes older entries with the same upsert key.
   * Must run inside a write transaction, so that callers can commit other records (a job's state) atomically with it.
   */
  writeInTransaction(prepared: readonly PreparedEntry[], now = Date.now()): WrittenEntry[] {
    const { dbs } = this.#storage;
    return prepared.map(({ entry, vector, termFreqs }) => {
      const seq = nextSequence(dbs.meta, "entry");
      const prefix = REFERENCE_PREFIX[entry.entryType];
      let termCount = 0;
      for (const tf of termFreqs.values()) termCount += tf;
      const record: EntryRecord = {
        ...entry,
        v: 1,
        seq,
        id: entryIdOf(seq),
        createdAt: now,
        supersededBy: "",
        referenceId: prefix === undefined ? "" : `${prefix}_${seq.toString(36)}`,
        termCount,
      };
      let superseded: EntryRecord | undefined;
      if (record.upsertKey !== "") {
        const key = [record.owner, record.runId, record.userId, record.upsertKey];
        const previousSeq = dbs.upserts.get(key);
        const previous = previousSeq === undefined ? undefined : this.get(previousSeq);
        if (previous !== undefined && previous.supersededBy === "") {
          superseded = { ...previous, supersededBy: record.id };
          dbs.entries.put(previous.seq, superseded);
        }
        dbs.upserts.put(key, seq);
      }
      dbs.entries.put(seq, record);
      dbs.vectors.put(seq, vectorBytes(vector));
      dbs.entriesByOwnerRun.put([record.owner, record.runId, seq], null);
      dbs.entriesByRun.put([record.runId, seq], null);
      dbs.entriesByOwner.put([record.owner, seq], null);
      if (record.referenceId !== "") dbs.references.put(record.referenceId, seq);
      for (const [term, tf] of termFreqs) dbs.postings.put([term, seq], tf);
      return { record, superseded };
    });
  }

  /** Writes entries in their own transaction; resolves once durable. */
  async append(prepared: readonly PreparedEntry[]): Promise<WrittenEntry[]> {
    return this.#storage.transaction(() => this.writeInTransaction(prepared));
  }

  get(seq: number): EntryRecord | undefined {
    return this.#storage.dbs.entries.get(seq) as EntryRecord | undefined;
  }

  getById(id: string): EntryRecord | undefined {
    const seq = seqOfEntryId(id);
    return seq === undefined ? undefined : this.get(seq);
  }

  byReference(referenceId: string): EntryRecord | undefined {
    const seq = this.#storage.dbs.references.get(referenceId);
    return seq === undefined ? undefined : this.get(seq);
  }

  vector(seq: number): Float32Array | undefined {
    const bytes = this.#storage.dbs.vectors.getBinary(seq);
    return bytes === undefined ? undefined : vectorFromBytes(bytes);
  }

  /** Every entry in write order: start-up loads the in-memory catalog from this. */
  *all(): Generator<EntryRecord> {
    for (const { value } of this.#storage.dbs.entries.getRange()) yield value as EntryRecord;
  }

  /** Every stored vector in write order. */
  *allVectors(): Generator<{ seq: number; vector: Float32Array }> {
    for (const { key, value } of this.#storage.dbs.vectors.getRange()) yield { seq: key, vector: vectorFromBytes(value) };
  }

  /**
   * Postings for the start-up prewarm of the sparse index: up to `limit` after `after` (from the first when
   * undefined), read at once. Callers that await between pages continue from the last key rather than hold an
   * iterator, which a storage swap would close.
   */
  postingsPage(after: { term: string; seq: number } | undefined, limit: number): { term: string; seq: number; tf: number }[] {
    const range = after === undefined ? { limit } : { start: [after.term, after.seq], exclusiveStart: true, limit };
    const page: { term: string; seq: number; tf: number }[] = [];
    for (const { key, value } of this.#storage.dbs.postings.getRange(range)) {
      const [term, seq] = key as [string, number];
      page.push({ term, seq, tf: value });
    }
    return page;
  }

  /** Up to `limit` entries with a seq above `afterSeq`, in write order, read at once (see postingsPage). */
  entriesPage(afterSeq: number, limit: number): EntryRecord[] {
    const page: EntryRecord[] = [];
    for (const { value } of this.#storage.dbs.entries.getRange({ start: afterSeq, exclusiveStart: true, limit })) page.push(value as EntryRecord);
    return page;
  }

  /**
   * Sequence numbers of the entries a reader may see, in one run or across runs, in write order (or reverse),
   * starting after `afterSeq` when given. `owner` undefined reads every owner's entries (admins).
   */
  *visibleSeqs(owner: number | undefined, runId: string | undefined, reverse: boolean, afterSeq?: number): Generator<number> {
    const { dbs } = this.#storage;
    const lo = reverse ? 0 : (afterSeq ?? 0) + (afterSeq === undefined ? 0 : 1);
    const hi = reverse ? (afterSeq === undefined ? Infinity : afterSeq - 1) : Infinity;
    const bounds = (prefix: unknown[]): { start: unknown[]; end: unknown[]; reverse: boolean } =>
      reverse ? { start: [...prefix, hi], end: [...prefix, lo - 1], reverse } : { start: [...prefix, lo], end: [...prefix, hi], reverse };
    if (owner === undefined) {
      if (runId === undefined) {
        const range = reverse ? { start: hi, end: lo - 1, reverse } : { start: lo, end: hi };
        for (const key of dbs.entries.getKeys(range as never)) yield key as number;
      } else {
        for (const key of dbs.entriesByRun.getKeys(bounds([runId]) as never)) yield (key as [string, number])[1];
      }
    } else if (runId === undefined) {
      for (const key of dbs.entriesByOwner.getKeys(bounds([owner]) as never)) yield (key as [number, number])[1];
    } else {
      for (const key of dbs.entriesByOwnerRun.getKeys(bounds([owner, runId]) as never)) yield (key as [number, string, number])[2];
    }
  }

  /** Replaces a stored vector (re-embedding with another model). Call inside a write transaction. */
  putVectorInTransaction(seq: number, vector: Float32Array): void {
    this.#storage.dbs.vectors.put(seq, vectorBytes(vector));
  }

  maxSeq(): number {
    const current = this.#storage.dbs.meta.get("seq:entry");
    return typeof current === "number" ? current : 0;
  }
}
