// Decodes records read from LMDB: a tiny field checker, so every read checks a record against its schema (version
// included) instead of casting it, and names the record kind, key and field when a record does not fit.
//
// One decoder per record kind, next to its record type, built from `openRecord`:
//
//   export const USER_RECORD_VERSION = 1;
//   export function decodeUser(key: string, value: unknown): UserRecord {
//     const r = openRecord("users", key, value, USER_RECORD_VERSION);  // not an object, or another `v`: throws
//     return {
//       v: USER_RECORD_VERSION,
//       userId: r.number("userId"),
//       role: r.oneOf("role", ROLES),                  // ROLES: the kind's `as const` list
//       activeKeyId: r.optionalString("activeKeyId"),  // missing or undefined → undefined
//       …
//     };
//   }
//   const user = decodeOptional(db.get(name), (value) => decodeUser(name, value));  // db.get's undefined passes
//
// - A record kind without a `v` of its own (a key tuple and a plain value, e.g. ACL grants; the store-wide schema
//   version in `meta` covers it) is read with `openFields(kind, key, { owner: key[0], …, permission: value })`.
// - `kind` is the LMDB database name (`DATABASE_NAMES` in database.ts), so messages read "core_nodes record 42 …".
// - `readable` is the one version this build reads, or a list of them: a decoder upgrades an older one by looking at
//   `r.version` (e.g. `updatedAt: r.version === 1 ? createdAt : r.number("updatedAt")`).
// - Nested objects: `r.object(field)` (no version), `r.record(field, readable)` (an embedded record with its own `v`),
//   `r.objects(field)` (an array of objects): each gives a reader whose errors name the path (`ops[2].record.text`).
// - Any misfit throws `RecordDecodeError` (its `kind`, `key` and `field`); another schema version throws its subclass
//   `RecordVersionError` with the message "<kind> record <key> has schema version 7; this build reads 1 — upgrade
//   Engram or restore a matching backup".
// - `checkVersions(kind, db, readable)` scans a whole database for versions alone; stores run it when they open, so
//   data written by a newer build stops start-up rather than failing later, one request at a time.

/** A record read from LMDB that does not fit its schema. */
export class RecordDecodeError extends Error {
  /** The LMDB database name of the record kind, e.g. `core_nodes`. */
  readonly kind: string;
  /** The record's key as text (tuple keys as JSON arrays). */
  readonly key: string;
  /** Path of the offending field (`ops[2].record.text`), or "" when the record itself is not an object. */
  readonly field: string;

  constructor(kind: string, key: string, field: string, message: string) {
    super(message);
    this.name = "RecordDecodeError";
    this.kind = kind;
    this.key = key;
    this.field = field;
  }
}

/** A record written by another schema version than this build reads. */
export class RecordVersionError extends RecordDecodeError {
  readonly found: unknown;
  readonly readable: readonly number[];

  constructor(kind: string, key: string, field: string, found: unknown, readable: readonly number[]) {
    const at = field === "v" ? "" : ` (at ${field.slice(0, -2)})`;
    super(
      kind,
      key,
      field,
      `${kind} record ${key}${at} has schema version ${describe(found, true)}; this build reads ${listVersions(readable)} — upgrade Engram or restore a matching backup`,
    );
    this.name = "RecordVersionError";
    this.found = found;
    this.readable = readable;
  }
}

/** Checked access to the fields of one record (or of an object nested in it). Every getter throws on a misfit. */
export interface RecordReader {
  /** The record's schema version (of the enclosing record, for a nested object). */
  readonly version: number;
  /** Whether the field is present (not undefined): for upgrades and optional fields. */
  has(field: string): boolean;
  string(field: string): string;
  /** A string, or undefined when the field is missing or undefined. */
  optionalString(field: string): string | undefined;
  /** A finite number. */
  number(field: string): number;
  /** A safe integer. */
  integer(field: string): number;
  boolean(field: string): boolean;
  /** One of an enumeration's values, e.g. `r.oneOf("role", ROLES)`. */
  oneOf<T extends string>(field: string, values: readonly T[]): T;
  strings(field: string): string[];
  numbers(field: string): number[];
  /** A plain object of string values (e.g. metadata). */
  stringMap(field: string): Record<string, string>;
  /** Bytes (msgpack gives a Buffer back). */
  bytes(field: string): Uint8Array;
  /** A nested object without its own version. */
  object(field: string): RecordReader;
  /** A nested record with its own `v`, which must be one of `readable`. */
  record(field: string, readable: number | readonly number[]): RecordReader;
  /** An array of nested objects, one reader each. */
  objects(field: string): RecordReader[];
}

/** Opens a record read from LMDB: it must be an object whose `v` is one of `readable`. */
export function openRecord(kind: string, key: unknown, value: unknown, readable: number | readonly number[]): RecordReader {
  const where = { kind, key: formatKey(key) };
  return versioned(where, "", value, readable);
}

/** Opens a record kind that carries no version of its own: the fields must form an object; `version` reads 0. */
export function openFields(kind: string, key: unknown, fields: unknown): RecordReader {
  const where = { kind, key: formatKey(key) };
  return reader(where, "", asObject(where, "", fields), 0);
}

/** `decode(value)` unless the value is undefined (LMDB's answer for a missing key). */
export function decodeOptional<T>(value: unknown, decode: (value: unknown) => T): T | undefined {
  return value === undefined ? undefined : decode(value);
}

/** Anything whose records can be scanned: an lmdb-js database. */
export interface ScannableDatabase {
  getRange(): Iterable<{ key: unknown; value: unknown }>;
}

/**
 * Start-up: throws RecordVersionError at the first record of `db` whose `v` this build cannot read. Only versions are
 * checked (fields are checked on every read): a cheap scan that refuses data written by a newer build up front.
 * Returns how many records were scanned.
 */
export function checkVersions(kind: string, db: ScannableDatabase, readable: number | readonly number[]): number {
  const versions = typeof readable === "number" ? [readable] : readable;
  let count = 0;
  for (const { key, value } of db.getRange()) {
    const found = isObject(value) ? value["v"] : undefined;
    if (typeof found !== "number" || !versions.includes(found)) openRecord(kind, key, value, versions);
    count++;
  }
  return count;
}

/** A record key as text: strings and numbers as they are, tuples as JSON arrays. */
export function formatKey(key: unknown): string {
  if (typeof key === "string" || typeof key === "number" || typeof key === "bigint") return String(key);
  try {
    return JSON.stringify(key) ?? String(key);
  } catch {
    return String(key);
  }
}

interface Where {
  readonly kind: string;
  readonly key: string;
}

function versioned(where: Where, path: string, value: unknown, readable: number | readonly number[]): RecordReader {
  const versions = typeof readable === "number" ? [readable] : readable;
  const fields = asObject(where, path, value);
  const found = fields["v"];
  if (typeof found !== "number" || !versions.includes(found)) throw new RecordVersionError(where.kind, where.key, join(path, "v"), found, versions);
  return reader(where, path, fields, found);
}

function reader(where: Where, path: string, fields: Readonly<Record<string, unknown>>, version: number): RecordReader {
  return new FieldReader(where, path, fields, version);
}

/**
 * A class rather than an object of closures: every record read (each entry of a query's answer, each item of an
 * ingest job) opens one reader per nested object, and a dozen closures each was a large share of a bulk ingest's
 * garbage.
 */
class FieldReader implements RecordReader {
  readonly #where: Where;
  readonly #path: string;
  readonly #fields: Readonly<Record<string, unknown>>;
  readonly version: number;

  constructor(where: Where, path: string, fields: Readonly<Record<string, unknown>>, version: number) {
    this.#where = where;
    this.#path = path;
    this.#fields = fields;
    this.version = version;
  }

  #fail(field: string, expected: string): never {
    const at = join(this.#path, field);
    const { kind, key } = this.#where;
    throw new RecordDecodeError(kind, key, at, `${kind} record ${key}: field ${at} must be ${expected}, got ${describe(this.#fields[field])}`);
  }

  #get<T>(field: string, check: (x: unknown) => x is T, expected: string): T {
    const x = this.#fields[field];
    return check(x) ? x : this.#fail(field, expected);
  }

  has(field: string): boolean {
    return this.#fields[field] !== undefined;
  }

  string(field: string): string {
    return this.#get(field, isString, "a string");
  }

  optionalString(field: string): string | undefined {
    return this.#fields[field] === undefined ? undefined : this.#get(field, isString, "a string or absent");
  }

  number(field: string): number {
    return this.#get(field, isFiniteNumber, "a finite number");
  }

  integer(field: string): number {
    return this.#get(field, Number.isSafeInteger as (x: unknown) => x is number, "an integer");
  }

  boolean(field: string): boolean {
    return this.#get(field, isBoolean, "a boolean");
  }

  oneOf<T extends string>(field: string, values: readonly T[]): T {
    const x = this.#fields[field];
    return typeof x === "string" && (values as readonly string[]).includes(x) ? (x as T) : this.#fail(field, `one of ${values.join(", ")}`);
  }

  strings(field: string): string[] {
    return [...this.#get(field, isStringArray, "an array of strings")];
  }

  numbers(field: string): number[] {
    return [...this.#get(field, isNumberArray, "an array of numbers")];
  }

  stringMap(field: string): Record<string, string> {
    return { ...this.#get(field, isStringMap, "an object of strings") };
  }

  bytes(field: string): Uint8Array {
    return this.#get(field, isBytes, "bytes");
  }

  object(field: string): RecordReader {
    const at = join(this.#path, field);
    return reader(this.#where, at, asObject(this.#where, at, this.#fields[field]), this.version);
  }

  record(field: string, readable: number | readonly number[]): RecordReader {
    return versioned(this.#where, join(this.#path, field), this.#fields[field], readable);
  }

  objects(field: string): RecordReader[] {
    const items = this.#get(field, Array.isArray as (x: unknown) => x is unknown[], "an array");
    const path = join(this.#path, field);
    return items.map((item, i) => {
      const at = `${path}[${i}]`;
      return reader(this.#where, at, asObject(this.#where, at, item), this.version);
    });
  }
}

function isStringArray(x: unknown): x is string[] {
  return Array.isArray(x) && x.every(isString);
}

function isNumberArray(x: unknown): x is number[] {
  return Array.isArray(x) && x.every(isFiniteNumber);
}

function isStringMap(x: unknown): x is Record<string, string> {
  return isObject(x) && Object.values(x).every(isString);
}

function isBytes(x: unknown): x is Uint8Array {
  return x instanceof Uint8Array;
}

function asObject(where: Where, path: string, value: unknown): Readonly<Record<string, unknown>> {
  if (isObject(value)) return value;
  const what = path === "" ? "" : `: field ${path}`;
  throw new RecordDecodeError(where.kind, where.key, path, `${where.kind} record ${where.key}${what} must be an object, got ${describe(value)}`);
}

function join(path: string, field: string): string {
  return path === "" ? field : `${path}.${field}`;
}

function isObject(x: unknown): x is Readonly<Record<string, unknown>> {
  return typeof x === "object" && x !== null && !Array.isArray(x) && !(x instanceof Uint8Array);
}

function isString(x: unknown): x is string {
  return typeof x === "string";
}

function isFiniteNumber(x: unknown): x is number {
  return typeof x === "number" && Number.isFinite(x);
}

function isBoolean(x: unknown): x is boolean {
  return typeof x === "boolean";
}

/** A short description of a value for messages; never the value of a long string. */
function describe(x: unknown, bare = false): string {
  if (x === undefined) return bare ? "none" : "nothing (missing)";
  if (x === null) return "null";
  if (typeof x === "number" || typeof x === "boolean") return bare ? String(x) : `${typeof x} ${String(x)}`;
  if (typeof x === "string") return bare ? JSON.stringify(x.slice(0, 40)) : `string ${JSON.stringify(x.slice(0, 40))}`;
  if (Array.isArray(x)) return "an array";
  if (x instanceof Uint8Array) return "bytes";
  return typeof x === "object" ? "an object" : typeof x;
}

function listVersions(versions: readonly number[]): string {
  if (versions.length <= 1) return versions.map(String).join("");
  return `${versions.slice(0, -1).join(", ")} and ${String(versions[versions.length - 1])}`;
}
