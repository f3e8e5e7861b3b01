// Memory entries in LMDB: the record, its scope indexes and its vector, written in one transaction.
import type { Storage } from "./database.js";
import { nextSequence } from "./database.js";

export const ENTRY_TYPES = ["fact", "lesson", "rule", "trace", "working_memory", "archive_block", "checkpoint"] as const;
export type EntryType = (typeof ENTRY_TYPES)[number];

export interface EntryRecord {
  readonly v: 1;
  readonly seq: number;
  readonly id: string;
  /** Auth user id of the key that wrote the entry. */
  readonly owner: number;
  readonly sessionId: string;
  readonly agentId: string;
  /** Logical user the entry is about; "" when none. */
  readonly userId: string;
  readonly entryType: EntryType;
  readonly content: string;
  /** `run`, `session` or `global` for lessons; "" otherwise. */
  readonly lessonScope: string;
  readonly importance: string;
  readonly metadataJson: string;
  readonly lane: string;
  /** Unix seconds when the event happened. */
  readonly occurrenceTime: number;
  /** Unix milliseconds when the entry was stored. */
  readonly createdAt: number;
  readonly supersededBy: string;
}

export type NewEntry = Omit<EntryRecord, "v" | "seq" | "id" | "createdAt" | "supersededBy">;

/** Whose entries a read may see: one owner's, or everyone's (admins). */
export type Visibility = { readonly owner: number } | { readonly everyone: true };

export function entryIdOf(seq: number): string {
  return `ent_${seq.toString(36)}`;
}

export function seqOfEntryId(id: string): number | undefined {
  const match = /^ent_([0-9a-z]+)$/.exec(id);
  return match ? parseInt(match[1] as string, 36) : undefined;
}

function vectorBytes(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

export class EntryStore {
  readonly #storage: Storage;

  constructor(storage: Storage) {
    this.#storage = storage;
  }

  /** Writes entries with their vectors in one transaction; resolves once durable. */
  async append(entries: readonly { entry: NewEntry; vector: Float32Array }[]): Promise<EntryRecord[]> {
    const { root, dbs } = this.#storage;
    return root.transaction(() => {
      const now = Date.now();
      return entries.map(({ entry, vector }) => {
        const seq = nextSequence(dbs.meta, "entry");
        const record: EntryRecord = { ...entry, v: 1, seq, id: entryIdOf(seq), createdAt: now, supersededBy: "" };
        dbs.entries.put(seq, record);
        dbs.vectors.put(seq, vectorBytes(vector));
        dbs.entriesByOwnerScope.put([record.owner, record.sessionId, seq], null);
        dbs.entriesByScope.put([record.sessionId, seq], null);
        if (record.entryType === "lesson" && record.lessonScope === "global") {
          dbs.globalLessons.put([record.owner, record.userId, seq], null);
        }
        return record;
      });
    });
  }

  get(seq: number): EntryRecord | undefined {
    return this.#storage.dbs.entries.get(seq) as EntryRecord | undefined;
  }

  vector(seq: number): Float32Array | undefined {
    const bytes = this.#storage.dbs.vectors.getBinary(seq);
    if (bytes === undefined) return undefined;
    const copy = new Float32Array(bytes.byteLength / 4);
    new Uint8Array(copy.buffer).set(bytes);
    return copy;
  }

  /** Sequence numbers of the entries of one session visible to the reader. */
  sessionSeqs(visibility: Visibility, sessionId: string): number[] {
    const { dbs } = this.#storage;
    const seqs: number[] = [];
    if ("owner" in visibility) {
      const prefix = [visibility.owner, sessionId];
      for (const key of dbs.entriesByOwnerScope.getKeys({ start: prefix, end: [...prefix, Infinity] })) {
        seqs.push((key as [number, string, number])[2]);
      }
    } else {
      for (const key of dbs.entriesByScope.getKeys({ start: [sessionId], end: [sessionId, Infinity] })) {
        seqs.push((key as [string, number])[1]);
      }
    }
    return seqs;
  }

  /** Sequence numbers of an owner's global lessons; about one logical user when `userId` is given. */
  globalLessonSeqs(owner: number, userId: string | undefined): number[] {
    const { dbs } = this.#storage;
    const seqs: number[] = [];
    const ranges: { start: unknown[]; end: unknown[] }[] =
      userId === undefined
        ? [{ start: [owner], end: [owner + 1] }]
        : [
            { start: [owner, ""], end: [owner, "", Infinity] },
            ...(userId === "" ? [] : [{ start: [owner, userId], end: [owner, userId, Infinity] }]),
          ];
    for (const range of ranges) {
      for (const key of dbs.globalLessons.getKeys(range as never)) seqs.push((key as [number, string, number])[2]);
    }
    return seqs;
  }
}
