// Opens the one LMDB environment under the data directory, its named databases and the schema version.
import fs from "node:fs";
import path from "node:path";
import { open, type Database as LmdbDatabase, type Key, type RootDatabase } from "lmdb";

export const SCHEMA_VERSION = 1;

/** Named databases, one per record kind. Keys are tuples; values msgpack records unless noted. */
export interface Databases {
  /** Schema version and counters. */
  readonly meta: LmdbDatabase<unknown, string>;
  /** username → UserRecord */
  readonly users: LmdbDatabase<unknown, string>;
  /** key_id → KeyRecord */
  readonly keys: LmdbDatabase<unknown, string>;
  /** entry seq → EntryRecord */
  readonly entries: LmdbDatabase<unknown, number>;
  /** [owner_id, session_id, seq] → null: an owner's entries by scope */
  readonly entriesByOwnerScope: LmdbDatabase<null, Key>;
  /** [session_id, seq] → null: all owners' entries by scope, for admins */
  readonly entriesByScope: LmdbDatabase<null, Key>;
  /** [owner_id, seq] → null: an owner's global lessons */
  readonly globalLessons: LmdbDatabase<null, Key>;
  /** entry seq → Float32 vector bytes */
  readonly vectors: LmdbDatabase<Buffer, number>;
}

export interface Storage {
  readonly root: RootDatabase;
  readonly dbs: Databases;
  readonly dir: string;
  close(): Promise<void>;
}

export class SchemaVersionError extends Error {}

export function openStorage(dataDir: string): Storage {
  fs.mkdirSync(dataDir, { recursive: true });
  const dir = path.join(dataDir, "lmdb");
  const root = open({ path: dir, maxDbs: 32, compression: false });
  const dbs: Databases = {
    meta: root.openDB({ name: "meta" }),
    users: root.openDB({ name: "users" }),
    keys: root.openDB({ name: "keys" }),
    entries: root.openDB({ name: "entries" }),
    entriesByOwnerScope: root.openDB({ name: "entries_by_owner_scope" }),
    entriesByScope: root.openDB({ name: "entries_by_scope" }),
    globalLessons: root.openDB({ name: "entries_global_lessons" }),
    vectors: root.openDB({ name: "vectors", encoding: "binary" }),
  };
  const version = dbs.meta.get("schema_version");
  if (version === undefined) {
    dbs.meta.putSync("schema_version", SCHEMA_VERSION);
  } else if (version !== SCHEMA_VERSION) {
    throw new SchemaVersionError(`data in ${dir} has schema version ${String(version)}; this build reads ${SCHEMA_VERSION}`);
  }
  return {
    root,
    dbs,
    dir,
    close: () => root.close(),
  };
}

/** Next value of a named counter; call inside a write transaction so the increment commits with its use. */
export function nextSequence(meta: LmdbDatabase<unknown, string>, name: string): number {
  const key = `seq:${name}`;
  const current = meta.get(key);
  const next = (typeof current === "number" ? current : 0) + 1;
  meta.put(key, next);
  return next;
}
