// Opens the one LMDB environment under the data directory, its named databases and the schema version.
import fs from "node:fs";
import path from "node:path";
import { open, type Database as LmdbDatabase, type Key, type RootDatabase } from "lmdb";

export const SCHEMA_VERSION = 1;

/** Named databases, one per record kind. Keys are tuples; values msgpack records unless noted. */
export interface Databases {
  /** Schema version, counters and derived-index markers. */
  readonly meta: LmdbDatabase<unknown, string>;
  /** username → UserRecord */
  readonly users: LmdbDatabase<unknown, string>;
  /** key_id → KeyRecord */
  readonly keys: LmdbDatabase<unknown, string>;
  /** entry seq → EntryRecord */
  readonly entries: LmdbDatabase<unknown, number>;
  /** [owner, run_id, seq] → null: an owner's entries by run */
  readonly entriesByOwnerRun: LmdbDatabase<null, Key>;
  /** [run_id, seq] → null: every owner's entries by run, for admins */
  readonly entriesByRun: LmdbDatabase<null, Key>;
  /** [owner, seq] → null: an owner's entries across runs, in write order */
  readonly entriesByOwner: LmdbDatabase<null, Key>;
  /** [owner, run_id, user_id, upsert_key] → seq of the current entry with that key */
  readonly upserts: LmdbDatabase<number, Key>;
  /** reference_id → seq of an archive block or checkpoint */
  readonly references: LmdbDatabase<number, string>;
  /** [term, seq] → term frequency: the BM25 postings */
  readonly postings: LmdbDatabase<number, Key>;
  /** entry seq → Float32 vector bytes of the current embedder */
  readonly vectors: LmdbDatabase<Buffer, number>;
  /** job_id → IngestJobRecord */
  readonly jobs: LmdbDatabase<unknown, string>;
  /** job_id → the job's validated items */
  readonly jobItems: LmdbDatabase<unknown, string>;
  /** job_seq → job_id: jobs not yet finished, in acceptance order */
  readonly jobQueue: LmdbDatabase<string, number>;
  /** [owner, run_id, idempotency_key] → job_id */
  readonly jobIdempotency: LmdbDatabase<string, Key>;
  /** [owner, run_id, job_seq] → job_id */
  readonly jobsByRun: LmdbDatabase<string, Key>;
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
  const root = open({ path: dir, maxDbs: 64, compression: false });
  const dbs: Databases = {
    meta: root.openDB({ name: "meta" }),
    users: root.openDB({ name: "users" }),
    keys: root.openDB({ name: "keys" }),
    entries: root.openDB({ name: "entries" }),
    entriesByOwnerRun: root.openDB({ name: "entries_by_owner_run" }),
    entriesByRun: root.openDB({ name: "entries_by_run" }),
    entriesByOwner: root.openDB({ name: "entries_by_owner" }),
    upserts: root.openDB({ name: "upserts" }),
    references: root.openDB({ name: "references" }),
    postings: root.openDB({ name: "postings" }),
    vectors: root.openDB({ name: "vectors", encoding: "binary" }),
    jobs: root.openDB({ name: "ingest_jobs" }),
    jobItems: root.openDB({ name: "ingest_job_items" }),
    jobQueue: root.openDB({ name: "ingest_job_queue" }),
    jobIdempotency: root.openDB({ name: "ingest_job_idempotency" }),
    jobsByRun: root.openDB({ name: "ingest_jobs_by_run" }),
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
