// Request validation shared by the memory routes: every problem is INVALID_ARGUMENT naming its field.
import { invalidArgument, quoted } from "../../platform/errors.js";
import { assertJsonDepth } from "../../transport/json-depth.js";
import { ENTRY_TYPES, type EntryType } from "../../storage/entry-store.js";
import type { Budget, RankBy } from "../../retrieval/search-engine.js";
import { MAX_SPACE_DIMENSIONS, scaleToUnitLength } from "../../storage/vector-space-store.js";

/**
 * Identifiers become parts of LMDB keys, which LMDB bounds in bytes (1,978 for a whole key): an identifier may hold at
 * most this many bytes of UTF-8, and no NUL or unpaired surrogate (neither survives a key's encoding intact).
 */
export const MAX_ID_BYTES = 256;
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/u;
export const MAX_CONTENT_BYTES = 1024 * 1024;

export function required(field: string, value: string): string {
  if (value.trim() === "") throw invalidArgument(field, "is required");
  return bounded(field, value);
}

export function bounded(field: string, value: string): string {
  if (value.length === 0) return value;
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes > MAX_ID_BYTES) throw invalidArgument(field, `must be at most ${MAX_ID_BYTES} bytes of UTF-8, got ${bytes}`);
  if (value.includes("\u0000")) throw invalidArgument(field, "must not contain NUL characters");
  if (UNPAIRED_SURROGATE.test(value)) throw invalidArgument(field, "must not contain unpaired surrogates");
  return value;
}

export function content(field: string, value: string, allowEmpty = false): string {
  if (!allowEmpty && value.trim() === "") throw invalidArgument(field, "is required");
  if (Buffer.byteLength(value, "utf8") > MAX_CONTENT_BYTES) throw invalidArgument(field, "is larger than 1 MiB");
  return value;
}

/** Case-insensitive choice among allowed values; "" gives the fallback. */
export function oneOf<T extends string>(field: string, value: string, allowed: readonly T[], fallback: T): T {
  if (value === "") return fallback;
  const lower = value.toLowerCase();
  const match = allowed.find((a) => a === lower);
  if (match === undefined) throw invalidArgument(field, `must be one of ${allowed.join(", ")}; got ${quoted(value)}`);
  return match;
}

/** A JSON object text; "" becomes "{}". */
export function jsonObject(field: string, value: string): string {
  if (value === "") return "{}";
  const parsed = parseJson(field, value);
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw invalidArgument(field, "must be a JSON object");
  return value;
}

/**
 * Parses a JSON text field. Its nesting is bounded as a request body's is: JSON.parse copes with any depth, but what
 * later walks the value recursively (JSON.stringify, schema compilers) overflows the stack on a text nested thousands deep.
 */
export function parseJson(field: string, value: string): unknown {
  assertJsonDepth(field, Buffer.from(value, "utf8"));
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw invalidArgument(field, "must be valid JSON");
  }
}

export function entryTypeFilter(field: string, values: readonly string[]): ReadonlySet<EntryType> | undefined {
  if (values.length === 0) return undefined;
  const known = new Set<string>(ENTRY_TYPES);
  for (const value of values) {
    if (!known.has(value)) throw invalidArgument(field, `unknown entry type ${quoted(value)}; known: ${ENTRY_TYPES.join(", ")}`);
  }
  return new Set(values as EntryType[]);
}

export const BUDGETS: readonly Budget[] = ["low", "mid", "high"];
export const RANK_BY: readonly RankBy[] = ["relevance", "freshness", "balanced"];

export interface TimeBounds {
  readonly min: number | undefined;
  readonly max: number | undefined;
}

/** Unix seconds from an int64 field; negative values are refused. 0 stays 0 ("not given"). */
export function unixSeconds(field: string, value: bigint): number {
  if (value < 0n) throw invalidArgument(field, "must be unix seconds >= 0");
  return Number(value);
}

/** Inclusive unix-second bounds; 0 means none. */
export function timeBounds(min: bigint, max: bigint): TimeBounds {
  const lo = min === 0n ? undefined : unixSeconds("min_timestamp", min);
  const hi = max === 0n ? undefined : unixSeconds("max_timestamp", max);
  if (lo !== undefined && hi !== undefined && lo > hi) throw invalidArgument("min_timestamp", "must not be greater than max_timestamp");
  return { min: lo, max: hi };
}

export function clampLimit(value: number, fallback: number, max: number): number {
  return value === 0 ? fallback : Math.min(max, Math.max(1, value));
}

/**
 * A caller-supplied vector for the server embedder's space: must match the embedder's dimension; normalised to unit
 * length. `use` says what a vector space would let the caller do with another dimension ("store", "search").
 */
export function callerVector(field: string, values: readonly number[], dimensions: number, use = "store"): Float32Array | undefined {
  if (values.length === 0) return undefined;
  if (values.length !== dimensions) {
    throw invalidArgument(field, `must have ${dimensions} dimensions (the server embedder's), got ${values.length}; name a vector_space to ${use} vectors of another dimension`);
  }
  return unitVector(field, values);
}

/** A caller-supplied vector of any dimension up to MAX_SPACE_DIMENSIONS, finite and not zero; normalised to unit length. */
export function unitVector(field: string, values: readonly number[]): Float32Array {
  if (values.length === 0) throw invalidArgument(field, "is required");
  if (values.length > MAX_SPACE_DIMENSIONS) throw invalidArgument(field, `must have at most ${MAX_SPACE_DIMENSIONS} dimensions, got ${values.length}`);
  const vector = Float32Array.from(values);
  const scaled = scaleToUnitLength(vector);
  if (scaled === "not_finite") throw invalidArgument(field, "must contain only finite numbers");
  if (scaled === "zero") throw invalidArgument(field, "must not be the zero vector");
  return vector;
}
