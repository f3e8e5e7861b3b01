// Caller vector spaces in LMDB: each owner's registry of named spaces (id and fixed dimension) and the entry vectors
// stored in them, written and removed inside the entry's own transaction.
import type { Storage } from "./database.js";
import { nextSequence } from "./database.js";
import { decodeOptional, openRecord } from "./record-codec.js";
import { vectorBytes, vectorFromBytes } from "./vector-bytes.js";

/** Most dimensions a caller vector may have (a 4096-d vector is 16 KiB per entry). */
export const MAX_SPACE_DIMENSIONS = 4096;
/** Spaces one owner may create: each costs an in-memory index, and names are caller-chosen. */
export const MAX_SPACES_PER_OWNER = 100;
/** A space name: 1–64 characters of letters, digits, `.`, `_`, `:` and `-`. */
export const SPACE_NAME = /^[A-Za-z0-9._:-]{1,64}$/;

const SPACE_RECORD_VERSION = 1;

export interface VectorSpaceRecord {
  readonly v: 1;
  /** Store-wide id: the vectors are keyed by it, so two owners' spaces of one name never share a key. */
  readonly id: number;
  readonly owner: number;
  readonly name: string;
  /** Fixed by the first vector stored in the space. */
  readonly dimensions: number;
  readonly createdAt: number;
}

/** A vector to store in the owner's space `space`, unit length. */
export interface SpaceVector {
  readonly space: string;
  readonly vector: Float32Array;
}

/** A vector that does not fit its space: of another dimension, or a space the owner may not create. */
export class VectorSpaceConflict extends Error {
  constructor(message: string) {
    super(message);
    this.name = "VectorSpaceConflict";
  }
}

/** Why a vector of `dimensions` cannot go into the owner's space as it stands (`existing`), or undefined when it can. */
export function spaceMismatch(space: string, existing: number | undefined, dimensions: number): string | undefined {
  if (existing === undefined || existing === dimensions) return undefined;
  return `vector space ${JSON.stringify(space)} holds ${existing}-dimension vectors, got ${dimensions}`;
}

/**
 * Scales a caller's vector to unit length in place, as every stored and query vector is (similarity is then a dot
 * product); says why it cannot be: a value that is not finite, or the zero vector.
 */
export function scaleToUnitLength(vector: Float32Array): "scaled" | "not_finite" | "zero" {
  let norm = 0;
  for (const x of vector) {
    if (!Number.isFinite(x)) return "not_finite";
    norm += x * x;
  }
  if (norm === 0) return "zero";
  const scale = 1 / Math.sqrt(norm);
  for (let i = 0; i < vector.length; i++) vector[i] = (vector[i] as number) * scale;
  return "scaled";
}

/** A space record as stored under [owner, name]. */
export function decodeSpace(key: unknown, value: unknown): VectorSpaceRecord {
  const r = openRecord("vector_spaces", key, value, SPACE_RECORD_VERSION);
  return {
    v: SPACE_RECORD_VERSION,
    id: r.integer("id"),
    owner: r.integer("owner"),
    name: r.string("name"),
    dimensions: r.integer("dimensions"),
    createdAt: r.number("createdAt"),
  };
}

export class VectorSpaceStore {
  readonly #storage: Storage;

  constructor(storage: Storage) {
    this.#storage = storage;
  }

  /** The owner's space of this name, when it has one. */
  find(owner: number, name: string): VectorSpaceRecord | undefined {
    const key = [owner, name];
    return decodeOptional(this.#storage.dbs.vectorSpaces.get(key), (value) => decodeSpace(key, value));
  }

  /** How many spaces the owner has. */
  countOf(owner: number): number {
    return this.#storage.dbs.vectorSpaces.getKeysCount({ start: [owner], end: [owner + 1] });
  }

  /** Every space of every owner (start-up). */
  *all(): Generator<VectorSpaceRecord> {
    for (const { key, value } of this.#storage.dbs.vectorSpaces.getRange()) yield decodeSpace(key, value);
  }

  /**
   * Stores an entry's vector in the owner's space, creating the space (its dimension fixed by this vector) when it is
   * new. Throws VectorSpaceConflict, undoing the transaction, on another dimension or one space too many. Call inside
   * the entry's write transaction.
   */
  putInTransaction(owner: number, seq: number, { space, vector }: SpaceVector, now = Date.now()): VectorSpaceRecord {
    const { dbs } = this.#storage;
    let record = this.find(owner, space);
    if (record === undefined) {
      if (this.countOf(owner) >= MAX_SPACES_PER_OWNER) {
        throw new VectorSpaceConflict(`at most ${MAX_SPACES_PER_OWNER} vector spaces per user; ${JSON.stringify(space)} would be one more`);
      }
      record = { v: SPACE_RECORD_VERSION, id: nextSequence(dbs.meta, "vector_space"), owner, name: space, dimensions: vector.length, createdAt: now };
      dbs.vectorSpaces.put([owner, space], record);
    }
    const mismatch = spaceMismatch(space, record.dimensions, vector.length);
    if (mismatch !== undefined) throw new VectorSpaceConflict(mismatch);
    dbs.spaceVectors.put([record.id, seq], vectorBytes(vector));
    dbs.entrySpaceVectors.put([seq, record.id], null);
    return record;
  }

  /** Removes every space vector of an entry (deleted, or its content replaced). Call inside a write transaction. */
  removeInTransaction(seq: number): void {
    const { dbs } = this.#storage;
    const keys = [...dbs.entrySpaceVectors.getKeys({ start: [seq], end: [seq, Infinity] })];
    for (const key of keys) {
      const spaceId = (key as [number, number])[1];
      dbs.spaceVectors.remove([spaceId, seq]);
      dbs.entrySpaceVectors.remove(key);
    }
  }

  /** The ids of the spaces holding a vector of the entry. */
  spaceIdsOf(seq: number): number[] {
    return [...this.#storage.dbs.entrySpaceVectors.getKeys({ start: [seq], end: [seq, Infinity] })].map((key) => (key as [number, number])[1]);
  }

  /** The entry's vector in a space, when it has one. */
  vector(spaceId: number, seq: number): Float32Array | undefined {
    const bytes = this.#storage.dbs.spaceVectors.getBinary([spaceId, seq]);
    return bytes === undefined ? undefined : vectorFromBytes(bytes);
  }

  /** The entry's vectors in the owner's spaces, with the space names (export). */
  vectorsOf(owner: number, seq: number): { space: string; vector: Float32Array }[] {
    const ids = new Set(this.spaceIdsOf(seq));
    if (ids.size === 0) return [];
    const found: { space: string; vector: Float32Array }[] = [];
    for (const { key, value } of this.#storage.dbs.vectorSpaces.getRange({ start: [owner], end: [owner + 1] })) {
      const space = decodeSpace(key, value);
      const vector = ids.has(space.id) ? this.vector(space.id, seq) : undefined;
      if (vector !== undefined) found.push({ space: space.name, vector });
    }
    return found;
  }

  /**
   * Up to `limit` vectors of a space with a seq above `afterSeq`, ascending, read at once: start-up loads a space a
   * page at a time and yields between pages, never holding an iterator across the yield.
   */
  vectorsPage(spaceId: number, afterSeq: number, limit: number): { seq: number; vector: Float32Array }[] {
    const page: { seq: number; vector: Float32Array }[] = [];
    const range = { start: [spaceId, afterSeq], end: [spaceId, Infinity], exclusiveStart: true, limit };
    for (const { key, value } of this.#storage.dbs.spaceVectors.getRange(range)) page.push({ seq: (key as [number, number])[1], vector: vectorFromBytes(value) });
    return page;
  }
}
