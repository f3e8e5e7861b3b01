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
  /** node_id → core node record (without its vector) */
  readonly nodes: LmdbDatabase<unknown, number>;
  /** node_id → Float32 vector bytes of the node */
  readonly nodeVectors: LmdbDatabase<Buffer, number>;
  /** [owner, run_id, node_id] → null: an owner's nodes by run */
  readonly nodesByOwnerRun: LmdbDatabase<null, Key>;
  /** [owner, session_id, entry_seq] → scratchpad entry */
  readonly scratchpad: LmdbDatabase<unknown, Key>;
  /** session_id → open transactional core session with its staged writes */
  readonly coreSessions: LmdbDatabase<unknown, string>;
  /** [owner, name] → snapshot of a core session's staged writes */
  readonly coreSnapshots: LmdbDatabase<unknown, Key>;
  /** [owner, run_id, principal_type, principal_id, lane] → "read" | "write": access grants on an owner's runs */
  readonly grants: LmdbDatabase<string, Key>;
}

/**
 * The LMDB environment and its databases. Every write goes through `transaction`, so that maintenance (a compacting
 * copy swapped in) can hold writes back with `exclusive` and none is lost. Handles are read through `root` and `dbs`
 * at call time because `exclusive` may reopen the environment.
 */
export class Storage {
  readonly dir: string;
  #root: RootDatabase;
  #dbs: Databases;
  #inFlight = 0;
  #idle: (() => void)[] = [];
  #gate: Promise<void> | undefined;

  constructor(dir: string) {
    this.dir = dir;
    this.#root = openRoot(dir);
    this.#dbs = openDatabases(this.#root);
  }

  get root(): RootDatabase {
    return this.#root;
  }

  get dbs(): Databases {
    return this.#dbs;
  }

  /** Runs `fn` in one write transaction; resolves with its result once the transaction is durable. */
  async transaction<T>(fn: () => T): Promise<T> {
    while (this.#gate !== undefined) await this.#gate;
    this.#inFlight++;
    try {
      return await this.#root.transaction(fn);
    } finally {
      this.#inFlight--;
      if (this.#inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve();
    }
  }

  /**
   * Holds new writes back, waits for those in flight, then runs `work` with the environment to itself. `work` may
   * replace the environment's files and asks for a reopen by returning true. Writes resume afterwards, in order.
   */
  async exclusive(work: (root: RootDatabase) => Promise<boolean>): Promise<void> {
    while (this.#gate !== undefined) await this.#gate;
    let release!: () => void;
    this.#gate = new Promise<void>((resolve) => (release = resolve));
    try {
      if (this.#inFlight > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
      await this.#root.flushed;
      const reopen = await work(this.#root);
      if (reopen) {
        await this.#root.close();
        this.#root = openRoot(this.dir);
        this.#dbs = openDatabases(this.#root);
      }
    } finally {
      this.#gate = undefined;
      release();
    }
  }

  async close(): Promise<void> {
    while (this.#gate !== undefined) await this.#gate;
    await this.#root.close();
  }
}

function openRoot(dir: string): RootDatabase {
  return open({ path: dir, maxDbs: 64, compression: false });
}

function openDatabases(root: RootDatabase): Databases {
  return {
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
    nodes: root.openDB({ name: "core_nodes" }),
    nodeVectors: root.openDB({ name: "core_node_vectors", encoding: "binary" }),
    nodesByOwnerRun: root.openDB({ name: "core_nodes_by_owner_run" }),
    scratchpad: root.openDB({ name: "core_scratchpad" }),
    coreSessions: root.openDB({ name: "core_sessions" }),
    coreSnapshots: root.openDB({ name: "core_session_snapshots" }),
    grants: root.openDB({ name: "acl_grants" }),
  };
}

export class SchemaVersionError extends Error {}

export function openStorage(dataDir: string): Storage {
  fs.mkdirSync(dataDir, { recursive: true });
  const storage = new Storage(path.join(dataDir, "lmdb"));
  const { meta } = storage.dbs;
  const version = meta.get("schema_version");
  if (version === undefined) {
    meta.putSync("schema_version", SCHEMA_VERSION);
  } else if (version !== SCHEMA_VERSION) {
    throw new SchemaVersionError(`data in ${storage.dir} has schema version ${String(version)}; this build reads ${SCHEMA_VERSION}`);
  }
  return storage;
}

/** Next value of a named counter; call inside a write transaction so the increment commits with its use. */
export function nextSequence(meta: LmdbDatabase<unknown, string>, name: string): number {
  const key = `seq:${name}`;
  const current = meta.get(key);
  const next = (typeof current === "number" ? current : 0) + 1;
  meta.put(key, next);
  return next;
}
