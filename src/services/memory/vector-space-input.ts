// Caller vector spaces at the service boundary: a request's `vector_space` and `embedding` checked together, against
// the caller's own spaces and, for a space the request creates, against the request's other items.
import { invalidArgument } from "../../platform/errors.js";
import { MAX_SPACES_PER_OWNER, SPACE_NAME, spaceMismatch, type SpaceVector, type VectorSpaceStore } from "../../storage/vector-space-store.js";
import { callerVector, unitVector } from "./validate.js";

/** A `vector_space` field: "" (the server embedder's space) or a valid space name. */
export function vectorSpaceName(field: string, value: string): string {
  if (value === "" || SPACE_NAME.test(value)) return value;
  throw invalidArgument(field, "must be 1 to 64 characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'");
}

/** The embedding given with a named space: required, unit length, and of the space's dimension once it has one. */
function namedSpaceVector(field: string, space: string, embedding: readonly number[], dimensions: number | undefined): Float32Array {
  if (embedding.length === 0) throw invalidArgument(field, "is required when vector_space is set");
  const vector = unitVector(field, embedding);
  const mismatch = spaceMismatch(space, dimensions, vector.length);
  if (mismatch !== undefined) throw invalidArgument(field, mismatch);
  return vector;
}

/** An item's vectors: a replacement for the server embedder's (no space named), or one for the named space. */
export interface ItemVectors {
  readonly vector: Float32Array | undefined;
  readonly spaceVectors: readonly SpaceVector[];
}

/**
 * The dimensions of the spaces one request writes, as the caller's stored spaces fix them and, for spaces the request
 * creates, as its first item to claim them does. Owner-scoped: only the caller's own spaces are ever read.
 */
export class RequestSpaces {
  readonly #store: VectorSpaceStore;
  readonly #owner: number;
  readonly #serverDimensions: number;
  /** Spaces this request creates → the dimension its first item claimed. */
  readonly #claimed = new Map<string, number>();

  constructor(store: VectorSpaceStore, owner: number, serverDimensions: number) {
    this.#store = store;
    this.#owner = owner;
    this.#serverDimensions = serverDimensions;
  }

  /** Checks an item's `vector_space` and `embedding` (fields `<field>.vector_space`, `<field>.embedding`); claims nothing. */
  check(field: string, space: string, embedding: readonly number[]): ItemVectors {
    const name = vectorSpaceName(`${field}.vector_space`, space);
    if (name === "") return { vector: callerVector(`${field}.embedding`, embedding, this.#serverDimensions), spaceVectors: [] };
    const fixed = this.#store.find(this.#owner, name)?.dimensions ?? this.#claimed.get(name);
    const vector = namedSpaceVector(`${field}.embedding`, name, embedding, fixed);
    if (fixed === undefined && this.#store.countOf(this.#owner) + this.#claimed.size >= MAX_SPACES_PER_OWNER) {
      throw invalidArgument(`${field}.vector_space`, `at most ${MAX_SPACES_PER_OWNER} vector spaces per user; ${JSON.stringify(name)} would be one more`);
    }
    return { vector: undefined, spaceVectors: [{ space: name, vector }] };
  }

  /** The item passed every check and will be written: a space it creates takes its dimension. */
  claim(vectors: ItemVectors): void {
    for (const { space, vector } of vectors.spaceVectors) {
      if (!this.#claimed.has(space) && this.#store.find(this.#owner, space) === undefined) this.#claimed.set(space, vector.length);
    }
  }
}

/**
 * A query's `vector_space` and `embedding`: with a space named, the embedding is required and, when the caller has a
 * space of that name, must have its dimension (other owners' spaces in the scope are matched silently at search).
 */
export function queryVector(store: VectorSpaceStore, owner: number, serverDimensions: number, space: string, embedding: readonly number[]): { vector: Float32Array | undefined; vectorSpace: string } {
  const name = vectorSpaceName("vector_space", space);
  if (name === "") return { vector: callerVector("embedding", embedding, serverDimensions, "search"), vectorSpace: "" };
  return { vector: namedSpaceVector("embedding", name, embedding, store.find(owner, name)?.dimensions), vectorSpace: name };
}
