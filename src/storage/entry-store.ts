// Memory entries in LMDB: the record, its indexes, its postings, its vector and its lineage links, written, changed
// and removed together in one transaction; deleted runs are hidden by a tombstone until purged, and expired entries
// (entry-expiry.ts) by the memory's clock until the expiry purge removes them.
import type { Storage } from "./database.js";
import { lastSequence, perShardKey, reserveSequences, summedOverShards } from "./database.js";
import type { Key } from "lmdb";
import { RecordDecodeError, decodeOptional, openFields } from "./record-codec.js";
import { VectorSpaceStore, type SpaceVector } from "./vector-space-store.js";
import { ENTRY_RECORD_VERSION, MAX_AUDIT_EVENTS, decodeEntry, encodeEntry, initialLearning, type EntryAuditEvent, type LearningState, type EntryRecord, type EntryType, type Importance, type NewEntry } from "./entry-record.js";

import { vectorBytes, vectorFromBytes } from "./vector-bytes.js";
import { DEFAULT_TRUST_POLICY, type Provenance, type TrustPolicy } from "./provenance.js";
import { EntryExpiry } from "./entry-expiry.js";

export * from "./entry-record.js";
export { vectorBytes, vectorFromBytes } from "./vector-bytes.js";

export interface PreparedEntry {
  readonly entry: NewEntry;
  readonly vector: Float32Array;
  readonly termFreqs: ReadonlyMap<string, number>;
  /** Caller vectors stored besides `vector`, each in the owner's named vector space (vector-space-store.ts). */
  readonly spaceVectors?: readonly SpaceVector[] | undefined;
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

/** Fields an update may change; absent fields are unchanged. */
export interface EntryPatch {
  readonly content?: string;
  /** A rule that an edit leaves untrusted becomes a lesson (see learning/lesson-edit.ts). */
  readonly entryType?: EntryType;
  readonly lessonType?: string;
  readonly lane?: string;
  readonly metadataJson?: string;
  readonly importance?: Importance;
  readonly confidence?: number;
  readonly stale?: boolean;
  readonly lessonScope?: string;
  readonly validationStatus?: string;
  /** Bookkeeping of outcomes and promotion: replaced whole, not audited field by field (see `audit`). */
  readonly learning?: LearningState;
  /** Lineage: replaced whole when a merge adds sources; not audited. */
  readonly sourceIds?: readonly string[];
  /** Where the entry came from: replaced whole when corroboration makes it trusted; audited by the caller (`trust`). */
  readonly provenance?: Provenance;
  /** Ingest flags: replaced whole when a person accepts flagged knowledge; audited by the caller (`trust`). */
  readonly flags?: readonly string[];
}

/** Patch fields that are bookkeeping rather than a change someone made: compared by value and never audited. */
const BOOKKEEPING_FIELDS: ReadonlySet<string> = new Set(["learning", "sourceIds", "provenance", "flags"]);

/** Who made a change and why, recorded in the entry's audit trail. */
export interface ChangeAttribution {
  readonly reason: string;
  readonly agentId: string;
}

export interface UpdatedEntry {
  readonly before: EntryRecord;
  readonly after: EntryRecord;
  /** Names of the fields whose value changed (bookkeeping fields, which are not audited, are not named). */
  readonly changed: readonly string[];
  /** When the content changed: the index terms the entry had before, read in the transaction that replaced them. */
  readonly previousTermFreqs: ReadonlyMap<string, number> | undefined;
}

/** What a content change stores besides the record: the new content's index terms and vector. */
export interface Reindex {
  readonly termFreqs: ReadonlyMap<string, number>;
  readonly vector: Float32Array;
}

export interface DeletedEntry {
  readonly record: EntryRecord;
  /** The index terms it was stored with, read in the transaction that removed them. */
  readonly termFreqs: ReadonlyMap<string, number>;
  /** Entries derived from the deleted one, now marked for review (`lineageReview` = `source_deleted`). */
  readonly flagged: readonly EntryRecord[];
}

/** How many near-duplicates one entry absorbs at most: beyond, it absorbs no more (its record stays small). */
export const MAX_ABSORBED_IDS = 64;
/** How many ids of an entry's `supersedes` chain responses show. */
export const MAX_SUPERSEDES_SHOWN = 16;

/** A reader's visibility test, applied inside every lookup by id so that no handler can forget it. */
export type CanRead = (record: EntryRecord) => boolean;

const VECTOR_GENERATION_KEY = "entry_vector_generation";

const tombstoneKey = (owner: number, runId: string): string => `${owner}\u0000${runId}`;

/** What the store knows of an entry beyond its record, for responses (see EntryStore.viewOf). */
export interface EntryView {
  /** Unix ms the entry expires, its own expiry or a retention policy's, whichever is sooner; 0: never. */
  readonly expiresAt: number;
  /** Ids the entry replaced through its upsert key, newest first. */
  readonly supersedes: readonly string[];
}

export class EntryStore {
  readonly #storage: Storage;
  /** The caller vector spaces: an entry's vectors there are written and removed with the entry. */
  readonly spaces: VectorSpaceStore;
  /**
   * Deleted runs whose entries are still being purged: owner and run → highest seq the deletion covers. Entries under
   * a tombstone are invisible to every read from the moment the deletion commits; the purge removes them in slices.
   */
  readonly #tombstones = new Map<string, number>();
  /** Judges expiry (own TTL, retention policies) on the memory's clock; by default only an entry's own expiry counts. */
  #expiry = new EntryExpiry(Date.now);

  /** Gives records written before provenance existed the trust of their origin (see decodeEntry). */
  readonly #trustPolicy: TrustPolicy;

  constructor(storage: Storage, trustPolicy: TrustPolicy = DEFAULT_TRUST_POLICY) {
    this.#storage = storage;
    this.#trustPolicy = trustPolicy;
    this.spaces = new VectorSpaceStore(storage);
    for (const { key, value } of storage.dbs.runTombstones.getRange()) {
      const [owner, runId] = key as [number, string];
      this.#tombstones.set(tombstoneKey(owner, runId), value);
    }
  }

  /**
   * Writes entries with their indexes, postings and vectors, and supersedes older entries with the same upsert key.
   * Must run inside a write transaction, so that callers can commit other records (a job's state) atomically with it.
   */
  writeInTransaction(prepared: readonly PreparedEntry[], now = this.#expiry.now()): WrittenEntry[] {
    const { dbs } = this.#storage;
    if (prepared.length === 0) return [];
    const seqs = reserveSequences(dbs.meta, "entry", prepared.length);
    return prepared.map(({ entry, vector, termFreqs, spaceVectors }, i) => {
      const seq = seqs[i] as number;
      const prefix = REFERENCE_PREFIX[entry.entryType];
      // Every field named: V8 then lays the record out in place. A spread (`{ ...entry, v, seq, … }`) copied the
      // entry's property descriptors once per field added after it (~25 µs and ~12 KB of garbage a record), and
      // Object.assign onto `{}` grew its properties out of place (~2.8 KB of garbage a record, the largest allocation
      // of a bulk ingest, and slower reads of the record after). The type checker keeps the list complete.
      const record: EntryRecord = {
        v: ENTRY_RECORD_VERSION,
        seq,
        id: entryIdOf(seq),
        owner: entry.owner,
        runId: entry.runId,
        agentId: entry.agentId,
        userId: entry.userId,
        entryType: entry.entryType,
        content: entry.content,
        lessonScope: entry.lessonScope,
        lessonType: entry.lessonType,
        importance: entry.importance,
        metadataJson: entry.metadataJson,
        lane: entry.lane,
        occurrenceTime: entry.occurrenceTime,
        createdAt: now,
        updatedAt: now,
        supersededBy: "",
        stale: false,
        upsertKey: entry.upsertKey,
        source: entry.source,
        referenceId: prefix === undefined ? "" : `${prefix}_${seq.toString(36)}`,
        contentType: entry.contentType,
        envTags: entry.envTags,
        derived: entry.derived,
        confidence: entry.confidence,
        validationStatus: entry.validationStatus ?? (entry.entryType === "lesson" || entry.entryType === "rule" ? "pending" : ""),
        sourceIds: entry.sourceIds,
        lineageReview: "",
        audit: [],
        learning: entry.learning ?? initialLearning(entry.confidence, entry.runId),
        termCount: termCountOf(termFreqs),
        provenance: entry.provenance,
        flags: entry.flags,
        expiresAt: entry.expiresAt,
        absorbedIds: entry.absorbedIds,
      };
      let superseded: EntryRecord | undefined;
      if (record.upsertKey !== "") {
        const key = [record.owner, record.runId, record.userId, record.upsertKey];
        const previousSeq = dbs.upserts.get(key);
        const previous = previousSeq === undefined ? undefined : this.get(previousSeq);
        if (previous !== undefined && previous.supersededBy === "") {
          superseded = { ...previous, supersededBy: record.id };
          dbs.entries.put(previous.seq, encodeEntry(superseded));
          dbs.supersedes.put(seq, previous.seq);
        }
        dbs.upserts.put(key, seq);
      }
      dbs.entries.put(seq, encodeEntry(record));
      dbs.vectors.put(seq, vectorBytes(vector));
      for (const spaceVector of spaceVectors ?? []) this.spaces.putInTransaction(record.owner, seq, spaceVector, now);
      dbs.entriesByOwnerRun.put([record.owner, record.runId, seq], null);
      dbs.entriesByRun.put([record.runId, seq], null);
      dbs.entriesByOwner.put([record.owner, seq], null);
      if (record.referenceId !== "") dbs.references.put(record.referenceId, seq);
      dbs.entryTerms.put(seq, encodeTerms(termFreqs));
      for (const sourceId of record.sourceIds) {
        const sourceSeq = seqOfEntryId(sourceId);
        if (sourceSeq !== undefined) dbs.derivations.put([sourceSeq, seq], null);
      }
      return { record, superseded };
    });
  }

  /** Writes entries in their own transaction; resolves once durable. */
  async append(prepared: readonly PreparedEntry[]): Promise<WrittenEntry[]> {
    return this.#storage.transaction(() => this.writeInTransaction(prepared));
  }

  /**
   * Changes an entry in place, with its postings and vector when the content changes (`reindex` carries the new
   * ones), and appends one audit event per changed field. Call inside a write transaction. Returns undefined when
   * the entry does not exist.
   */
  updateInTransaction(
    seq: number,
    patch: EntryPatch,
    by: ChangeAttribution,
    reindex?: Reindex,
    now = this.#expiry.now(),
    /** Events describing the change as a whole (an outcome, a promotion), recorded after the per-field ones. */
    extraAudit: readonly EntryAuditEvent[] = [],
  ): UpdatedEntry | undefined {
    const { dbs } = this.#storage;
    const before = this.get(seq);
    if (before === undefined) return undefined;
    const changes: EntryAuditEvent[] = [];
    const changed: string[] = [];
    let bookkeeping = false;
    const next: Record<string, unknown> = { ...before };
    for (const [field, value] of Object.entries(patch) as [keyof EntryPatch, unknown][]) {
      if (value === undefined) continue;
      if (BOOKKEEPING_FIELDS.has(field)) {
        if (JSON.stringify(before[field]) === JSON.stringify(value)) continue;
        next[field] = value;
        bookkeeping = true;
        continue;
      }
      if (before[field] === value) continue;
      next[field] = value;
      changed.push(field);
      changes.push({ at: now, field, from: auditText(before[field]), to: auditText(value), reason: by.reason, agentId: by.agentId });
    }
    if (changed.length === 0 && !bookkeeping && extraAudit.length === 0 && reindex === undefined) return { before, after: before, changed: [], previousTermFreqs: undefined };
    let termCount = before.termCount;
    let previousTermFreqs: ReadonlyMap<string, number> | undefined;
    const contentChanged = patch.content !== undefined && patch.content !== before.content;
    if (contentChanged && reindex === undefined) throw new Error("a content change needs its new postings and vector");
    // A lesson is also found by its situations: when they change, its postings and vector are made again.
    if (reindex !== undefined) {
      previousTermFreqs = this.termsOf(seq) ?? new Map<string, number>();
      dbs.entryTerms.put(seq, encodeTerms(reindex.termFreqs));
      dbs.vectors.put(seq, vectorBytes(reindex.vector));
      // A caller's vector described the old content: kept, it would match queries about what the entry no longer says.
      if (contentChanged) this.spaces.removeInTransaction(seq);
      this.#bumpVectorGeneration();
      termCount = termCountOf(reindex.termFreqs);
    }
    if (patch.sourceIds !== undefined) {
      for (const sourceId of patch.sourceIds) {
        const sourceSeq = seqOfEntryId(sourceId);
        if (sourceSeq !== undefined && !before.sourceIds.includes(sourceId)) dbs.derivations.put([sourceSeq, seq], null);
      }
    }
    const audit = [...before.audit, ...changes, ...extraAudit].slice(-MAX_AUDIT_EVENTS);
    const after = { ...(next as unknown as EntryRecord), termCount, updatedAt: now, audit };
    dbs.entries.put(seq, encodeEntry(after));
    return { before, after, changed, previousTermFreqs };
  }

  /**
   * Removes an entry and everything derived from it in LMDB: its indexes, index terms, vectors (server and caller
   * spaces), reference, upsert key and lineage links; entries derived from it are marked for review. Call inside a
   * write transaction. Returns undefined when the entry does not exist.
   */
  deleteInTransaction(seq: number, now = this.#expiry.now(), absorbedInto?: number): DeletedEntry | undefined {
    const record = this.#read(seq);
    if (record === undefined) return undefined;
    const { dbs } = this.#storage;
    dbs.supersedes.remove(seq);
    // Ids merged into this entry resolved to it; they now name nothing (or, absorbed in turn, the new kept entry).
    for (const id of record.absorbedIds) {
      const absorbedSeq = seqOfEntryId(id);
      if (absorbedSeq === undefined) continue;
      if (absorbedInto === undefined) dbs.absorbedInto.remove(absorbedSeq);
      else dbs.absorbedInto.put(absorbedSeq, absorbedInto);
    }
    const termFreqs = this.termsOf(seq) ?? new Map<string, number>();
    dbs.entries.remove(seq);
    dbs.vectors.remove(seq);
    this.spaces.removeInTransaction(seq);
    this.#bumpVectorGeneration();
    dbs.entriesByOwnerRun.remove([record.owner, record.runId, seq]);
    dbs.entriesByRun.remove([record.runId, seq]);
    dbs.entriesByOwner.remove([record.owner, seq]);
    if (record.referenceId !== "") dbs.references.remove(record.referenceId);
    if (record.upsertKey !== "") {
      const key = [record.owner, record.runId, record.userId, record.upsertKey];
      if (dbs.upserts.get(key) === seq) dbs.upserts.remove(key);
    }
    dbs.entryTerms.remove(seq);
    for (const sourceId of record.sourceIds) {
      const sourceSeq = seqOfEntryId(sourceId);
      if (sourceSeq !== undefined) dbs.derivations.remove([sourceSeq, seq]);
    }
    const flagged: EntryRecord[] = [];
    const derivedSeqs = [...dbs.derivations.getKeys({ start: [seq], end: [seq, Infinity] })].map((key) => (key as [number, number])[1]);
    for (const derivedSeq of derivedSeqs) {
      dbs.derivations.remove([seq, derivedSeq]);
      // Merged, not lost: the derived entry's source id resolves to the kept entry, whose deletion flags it later.
      if (absorbedInto !== undefined) {
        dbs.derivations.put([absorbedInto, derivedSeq], null);
        continue;
      }
      const derived = this.get(derivedSeq);
      if (derived === undefined || derived.lineageReview !== "") continue;
      const event: EntryAuditEvent = { at: now, field: "lineage_review", from: "", to: "source_deleted", reason: `source ${record.id} deleted`, agentId: "" };
      const marked: EntryRecord = { ...derived, lineageReview: "source_deleted", updatedAt: now, audit: [...derived.audit, event] };
      dbs.entries.put(derivedSeq, encodeEntry(marked));
      flagged.push(marked);
    }
    return { record, termFreqs, flagged };
  }

  /**
   * Moves an entry out of its run (to run "", no run) so that the run's deletion does not take it: knowledge that was
   * promoted beyond the run outlives it. When it was derived from entries of that run, it is marked for review
   * (`source_deleted`). Call inside a write transaction, before the run's tombstone. Undefined when absent.
   */
  rehomeInTransaction(seq: number, reason: string, now = this.#expiry.now()): EntryRecord | undefined {
    const before = this.get(seq);
    if (before === undefined || before.runId === "") return undefined;
    const { dbs } = this.#storage;
    const fromRun = before.sourceIds.some((id) => {
      const sourceSeq = seqOfEntryId(id);
      const source = sourceSeq === undefined ? undefined : this.get(sourceSeq);
      return source === undefined || source.runId === before.runId;
    });
    const review = fromRun && before.lineageReview === "" ? "source_deleted" : before.lineageReview;
    const audit: EntryAuditEvent[] = [{ at: now, field: "run_id", from: before.runId, to: "", reason, agentId: "" }];
    if (review !== before.lineageReview) audit.push({ at: now, field: "lineage_review", from: before.lineageReview, to: review, reason, agentId: "" });
    const after: EntryRecord = { ...before, runId: "", lineageReview: review, updatedAt: now, audit: [...before.audit, ...audit].slice(-MAX_AUDIT_EVENTS) };
    dbs.entriesByOwnerRun.remove([before.owner, before.runId, seq]);
    dbs.entriesByRun.remove([before.runId, seq]);
    dbs.entriesByOwnerRun.put([after.owner, after.runId, seq], null);
    dbs.entriesByRun.put([after.runId, seq], null);
    if (before.upsertKey !== "") {
      const key = [before.owner, before.runId, before.userId, before.upsertKey];
      if (dbs.upserts.get(key) === seq) dbs.upserts.remove(key);
    }
    dbs.entries.put(seq, encodeEntry(after));
    return after;
  }

  /**
   * Hides every entry the owner has in the run now, at once, and leaves their removal to the purge. Call
   * inside a write transaction, then `tombstoneCommitted` once it is durable. Returns the highest seq it covers, or
   * undefined when the owner has no entry in the run.
   */
  tombstoneRunInTransaction(owner: number, runId: string): number | undefined {
    const { dbs } = this.#storage;
    let last: number | undefined;
    for (const key of dbs.entriesByOwnerRun.getKeys({ start: [owner, runId, Infinity], end: [owner, runId, -1], reverse: true, limit: 1 })) {
      last = (key as [number, string, number])[2];
    }
    // Entries a running purge has not reached yet are already deleted: only newer ones make this a new deletion.
    const covered = dbs.runTombstones.get([owner, runId]);
    if (last === undefined || (covered !== undefined && last <= covered)) return undefined;
    dbs.runTombstones.put([owner, runId], last);
    return last;
  }

  tombstoneCommitted(owner: number, runId: string, maxSeq: number): void {
    this.#tombstones.set(tombstoneKey(owner, runId), maxSeq);
  }

  /** Runs deleted but not yet purged, for the purge to resume after a restart. */
  pendingTombstones(): { owner: number; runId: string; maxSeq: number }[] {
    return [...this.#storage.dbs.runTombstones.getRange()].map(({ key, value }) => {
      const [owner, runId] = key as [number, string];
      return { owner, runId, maxSeq: value };
    });
  }

  /** Up to `limit` seqs of a tombstoned run still stored, oldest first. */
  tombstonedSeqs(owner: number, runId: string, maxSeq: number, limit: number): number[] {
    const keys = this.#storage.dbs.entriesByOwnerRun.getKeys({ start: [owner, runId, 0], end: [owner, runId, maxSeq + 1], limit });
    return [...keys].map((key) => (key as [number, string, number])[2]);
  }

  /**
   * The purge of a run up to `maxSeq` is complete: drops its tombstone, unless a later deletion of the run raised it
   * meanwhile (then false: the purge goes on). Call inside a write transaction.
   */
  clearTombstoneInTransaction(owner: number, runId: string, maxSeq: number): boolean {
    const { dbs } = this.#storage;
    if (dbs.runTombstones.get([owner, runId]) !== maxSeq) return false;
    dbs.runTombstones.remove([owner, runId]);
    return true;
  }

  tombstoneCleared(owner: number, runId: string): void {
    this.#tombstones.delete(tombstoneKey(owner, runId));
  }

  /** Whether the entry belongs to a deleted run awaiting its purge (which removes it; no one else should). */
  inDeletedRun(owner: number, runId: string, seq: number): boolean {
    return this.#isTombstoned({ owner, runId, seq });
  }

  #isTombstoned(record: Pick<EntryRecord, "owner" | "runId" | "seq">): boolean {
    if (this.#tombstones.size === 0) return false;
    const maxSeq = this.#tombstones.get(tombstoneKey(record.owner, record.runId));
    return maxSeq !== undefined && record.seq <= maxSeq;
  }

  /** Judges expiry with this clock and these retention policies from now on (start-up wiring). */
  useExpiry(expiry: EntryExpiry): void {
    this.#expiry = expiry;
  }

  get expiry(): EntryExpiry {
    return this.#expiry;
  }

  /**
   * The entry with this seq, unless deleted or expired. Seqs come from scoped indexes; lookups by id go through `find`.
   */
  get(seq: number): EntryRecord | undefined {
    const record = this.#read(seq);
    return record === undefined || this.#isTombstoned(record) || this.#expiry.isExpired(record) ? undefined : record;
  }

  /** The owner of a stored entry, expired or not (what the expiry purge needs); undefined when gone or its run deleted. */
  ownerOfStored(seq: number): number | undefined {
    const record = this.#read(seq);
    return record === undefined || this.#isTombstoned(record) ? undefined : record.owner;
  }

  /** The entry with this id (or reference id), when the reader may see it; undefined otherwise, whoever owns it. */
  find(idOrReference: string, canRead: CanRead): EntryRecord | undefined {
    const seq = seqOfEntryId(idOrReference) ?? this.#storage.dbs.references.get(idOrReference);
    let record = seq === undefined ? undefined : this.get(seq);
    // A near-duplicate merged into another entry: its id names the kept entry from then on (see absorbInTransaction).
    if (record === undefined && seq !== undefined) {
      const keptSeq = this.#storage.dbs.absorbedInto.get(seq);
      if (keptSeq !== undefined) record = this.get(keptSeq);
    }
    return record !== undefined && canRead(record) ? record : undefined;
  }

  /** What a response shows of an entry beyond its record: its expiry with retention policies, its supersedes chain. */
  viewOf(record: EntryRecord): EntryView {
    return { expiresAt: this.#expiry.expiryOfRecord(record), supersedes: this.supersededIds(record) };
  }

  /** Ids of the entries this one superseded through its upsert key, newest first, at most `limit`. */
  supersededIds(record: EntryRecord, limit = MAX_SUPERSEDES_SHOWN): string[] {
    if (record.upsertKey === "") return [];
    const ids: string[] = [];
    for (let seq = this.#storage.dbs.supersedes.get(record.seq); seq !== undefined && ids.length < limit; seq = this.#storage.dbs.supersedes.get(seq)) {
      ids.push(entryIdOf(seq));
    }
    return ids;
  }

  /**
   * Merges a near-duplicate into the entry kept in its place, in the caller's write transaction: the absorbed entry
   * is removed with everything stored with it (as a deletion is), its lineage links move to the kept entry instead of
   * flagging what was derived from it, and its id (and the ids it had absorbed) resolve to the kept entry, whose
   * `absorbedIds` lists them and whose audit trail records the merge. Undefined when either entry is gone, they belong
   * to different owners, or the kept entry has absorbed MAX_ABSORBED_IDS already.
   */
  absorbInTransaction(keptSeq: number, absorbedSeq: number, reason: string, now = Date.now()): { kept: EntryRecord; absorbed: DeletedEntry } | undefined {
    const kept = this.get(keptSeq);
    const absorbed = this.get(absorbedSeq);
    if (kept === undefined || absorbed === undefined || kept.owner !== absorbed.owner || keptSeq === absorbedSeq) return undefined;
    const absorbedIds = [...kept.absorbedIds, absorbed.id, ...absorbed.absorbedIds];
    if (absorbedIds.length > MAX_ABSORBED_IDS) return undefined;
    const deleted = this.deleteInTransaction(absorbedSeq, now, keptSeq);
    if (deleted === undefined) return undefined;
    this.#storage.dbs.absorbedInto.put(absorbedSeq, keptSeq);
    const event: EntryAuditEvent = { at: now, field: "absorbed_ids", from: "", to: absorbed.id, reason, agentId: "" };
    const after: EntryRecord = { ...kept, absorbedIds, updatedAt: now, audit: [...kept.audit, event].slice(-MAX_AUDIT_EVENTS) };
    this.#storage.dbs.entries.put(keptSeq, encodeEntry(after));
    return { kept: after, absorbed: deleted };
  }

  #read(seq: number): EntryRecord | undefined {
    const value = this.#storage.dbs.entries.get(seq);
    return value === undefined ? undefined : this.decode(value, seq);
  }

  /** A stored entry value as a current record (a replayed write's, too), with this server's trust policy. */
  decode(value: unknown, seq: number): EntryRecord {
    return decodeEntry(value, seq, this.#trustPolicy);
  }

  vector(seq: number): Float32Array | undefined {
    const bytes = this.#storage.dbs.vectors.getBinary(seq);
    return bytes === undefined ? undefined : vectorFromBytes(bytes);
  }

  /** Every live entry in write order: start-up loads the in-memory catalog from this. */
  *all(): Generator<EntryRecord> {
    for (const { key, value } of this.#storage.dbs.entries.getRange()) {
      const record = this.decode(value, key);
      if (!this.#isTombstoned(record)) yield record;
    }
  }

  /** Every stored vector of a live entry, in write order, as its stored bytes (valid until the next read). */
  *allVectorBytes(isLive: (seq: number) => boolean): Generator<{ seq: number; bytes: Uint8Array }> {
    for (const { key, value } of this.#storage.dbs.vectors.getRange()) if (isLive(key)) yield { seq: key, bytes: value };
  }

  /** Stored term records: one per entry with index terms. */
  termRecordCount(): number {
    return (this.#storage.dbs.entryTerms.getStats() as { entryCount: number }).entryCount;
  }

  /** The index terms an entry was stored with (its postings), or undefined when it has none stored. */
  termsOf(seq: number): Map<string, number> | undefined {
    return decodeOptional(this.#storage.dbs.entryTerms.get(seq), (value) => decodeTerms(seq, value));
  }

  /**
   * Entries' index terms for the start-up prewarm of the sparse index: up to `limit` entries after `afterSeq`, read at
   * once. Callers that await between pages continue from the last seq rather than hold an iterator, which a storage
   * swap would close.
   */
  termsPage(afterSeq: number, limit: number): { seq: number; termFreqs: Map<string, number> }[] {
    const page: { seq: number; termFreqs: Map<string, number> }[] = [];
    for (const { key, value } of this.#storage.dbs.entryTerms.getRange({ start: afterSeq, exclusiveStart: true, limit })) {
      page.push({ seq: key, termFreqs: decodeTerms(key, value) });
    }
    return page;
  }

  /**
   * Moves postings stored by earlier builds (one key per term and entry) into per-entry term records, a slice at a
   * time (call until it returns 0; each call is one transaction). Returns how many postings it moved.
   */
  async migrateLegacyPostings(limit: number): Promise<number> {
    // Stores written by this build have none: start-up then spends no write transaction here.
    if ([...this.#storage.dbs.postings.getKeys({ limit: 1 })].length === 0) return 0;
    return this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      const byEntry = new Map<number, Map<string, number>>();
      const keys: Key[] = [];
      for (const { key, value } of dbs.postings.getRange({ limit })) {
        const [term, seq] = key as [string, number];
        const existing = byEntry.get(seq) ?? this.termsOf(seq) ?? new Map<string, number>();
        existing.set(term, value);
        byEntry.set(seq, existing);
        keys.push(key);
      }
      for (const [seq, termFreqs] of byEntry) if (dbs.entries.get(seq) !== undefined) dbs.entryTerms.put(seq, encodeTerms(termFreqs));
      for (const key of keys) dbs.postings.remove(key);
      return keys.length;
    });
  }

  /** Up to `limit` stored entries with a seq above `afterSeq`, in write order, read at once (see termsPage). */
  entriesPage(afterSeq: number, limit: number): EntryRecord[] {
    const page: EntryRecord[] = [];
    for (const { key, value } of this.#storage.dbs.entries.getRange({ start: afterSeq, exclusiveStart: true, limit })) page.push(this.decode(value, key));
    return page;
  }

  /**
   * Sequence numbers of the entries a reader may see, in one run or across runs, in write order (or reverse),
   * starting after `afterSeq` when given. `owner` undefined reads every owner's entries (admins). Entries of
   * deleted runs awaiting their purge, and expired entries awaiting theirs, are skipped.
   */
  *visibleSeqs(owner: number | undefined, runId: string | undefined, reverse: boolean, afterSeq?: number): Generator<number> {
    const hidden = this.#hiddenIn(owner, runId);
    const expiry = this.#expiry;
    expiry.settle();
    for (const seq of this.#storedSeqs(owner, runId, reverse, afterSeq)) {
      // Expired entries awaiting their purge: a set lookup and a catalog row read, no record read.
      if (expiry.isHidden(seq)) continue;
      // Reading a record to learn its run costs ~1 µs: a scan of a large run would hold the event loop for seconds.
      if (hidden === "none" || (typeof hidden === "number" ? seq > hidden : this.get(seq) !== undefined)) yield seq;
    }
  }

  /**
   * Which seqs of a scan a pending run deletion hides: "none"; those up to a seq (one owner's run, deleted up to it);
   * or "read" when only each record can tell (a scan across runs while one of them awaits its purge).
   */
  #hiddenIn(owner: number | undefined, runId: string | undefined): "none" | "read" | number {
    if (this.#tombstones.size === 0) return "none";
    if (owner !== undefined && runId !== undefined) return this.#tombstones.get(tombstoneKey(owner, runId)) ?? "none";
    for (const key of this.#tombstones.keys()) {
      const at = key.indexOf("\u0000");
      if ((owner === undefined || Number(key.slice(0, at)) === owner) && (runId === undefined || key.slice(at + 1) === runId)) return "read";
    }
    return "none";
  }

  *#storedSeqs(owner: number | undefined, runId: string | undefined, reverse: boolean, afterSeq?: number): Generator<number> {
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

  /**
   * Counts changes and removals of stored vectors (appends do not count: a saved graph catches up on newer seqs by
   * itself). A vector graph saved at another generation may hold stale or deleted vectors and is rebuilt instead.
   */
  vectorGeneration(): number {
    return summedOverShards(this.#storage.dbs.meta, VECTOR_GENERATION_KEY);
  }

  #bumpVectorGeneration(): void {
    const { meta } = this.#storage.dbs;
    const key = perShardKey(VECTOR_GENERATION_KEY);
    const current = meta.get(key);
    meta.put(key, (typeof current === "number" ? current : 0) + 1);
  }

  /** The highest seq of a stored entry, 0 for none: in either mode, whatever shard wrote it. */
  highestStoredSeq(): number {
    for (const key of this.#storage.dbs.entries.getKeys({ reverse: true, limit: 1 })) return key;
    return 0;
  }

  /** The last entry seq handed out (clustered: of the current shard, which holds the current owner's entries). */
  maxSeq(): number {
    return lastSequence(this.#storage.dbs.meta, "entry");
  }
}

/** An entry's terms as stored: two parallel arrays, compact in msgpack. */
function encodeTerms(termFreqs: ReadonlyMap<string, number>): { terms: string[]; tfs: number[] } {
  return { terms: [...termFreqs.keys()], tfs: [...termFreqs.values()] };
}

/** An entry's stored index terms (an `entry_terms` value) as term → frequency. */
export function decodeTerms(seq: number, value: unknown): Map<string, number> {
  const r = openFields("entry_terms", seq, value);
  const terms = r.strings("terms");
  const tfs = r.numbers("tfs");
  if (terms.length !== tfs.length) throw new RecordDecodeError("entry_terms", String(seq), "tfs", `entry_terms record ${seq} has ${terms.length} terms but ${tfs.length} frequencies`);
  return new Map(terms.map((term, i) => [term, tfs[i] as number]));
}

function termCountOf(termFreqs: ReadonlyMap<string, number>): number {
  let count = 0;
  for (const tf of termFreqs.values()) count += tf;
  return count;
}

/** Audit trails keep values short: a changed content is recorded by its first characters. */
const MAX_AUDIT_VALUE_CHARS = 200;

function auditText(value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > MAX_AUDIT_VALUE_CHARS ? `${text.slice(0, MAX_AUDIT_VALUE_CHARS)}…` : text;
}
