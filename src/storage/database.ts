// Opens the one LMDB environment under the data directory, its named databases and the schema version, and lets
// maintenance swap a replacement environment in while writes are held back.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { open, type Database as LmdbDatabase, type Key, type RootDatabase } from "lmdb";
import { WriteFaults } from "./write-faults.js";
import { StoreCap, WriteTally, type StatsSource } from "./store-cap.js";

/** The store's layout version, kept in `meta` under SCHEMA_VERSION_KEY; backups record it in their manifest. */
export const SCHEMA_VERSION = 1;
export const SCHEMA_VERSION_KEY = "schema_version";

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
  /**
   * [term, seq] → term frequency: the BM25 postings as earlier builds stored them, one key per term of an entry.
   * Start-up moves them into `entryTerms` and empties this database.
   */
  readonly postings: LmdbDatabase<number, Key>;
  /**
   * entry seq → { terms, tfs }: each entry's index terms and their frequencies, one key per entry (a write stores one
   * key instead of one per term); BM25's inverted lists are built from these in memory at start-up.
   */
  readonly entryTerms: LmdbDatabase<unknown, number>;
  /** entry seq → Float32 vector bytes of the current embedder */
  readonly vectors: LmdbDatabase<Buffer, number>;
  /** [owner, space name] → VectorSpaceRecord: the caller vector spaces an owner created (vector-space-store.ts) */
  readonly vectorSpaces: LmdbDatabase<unknown, Key>;
  /** [space id, entry seq] → Float32 vector bytes of a caller vector space */
  readonly spaceVectors: LmdbDatabase<Buffer, Key>;
  /** [entry seq, space id] → null: the spaces holding an entry's vectors, so deleting it finds them */
  readonly entrySpaceVectors: LmdbDatabase<null, Key>;
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
  /** [owner, job_seq] → job_id: each owner's unfinished jobs, so the worker can serve owners in turn */
  readonly jobQueueByOwner: LmdbDatabase<string, Key>;
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
  /** [source seq, derived seq] → null: lineage, which entries were made from which */
  readonly derivations: LmdbDatabase<null, Key>;
  /**
   * absorbed entry seq → seq of the entry it was merged into (consolidation of near-duplicates): lookups by the
   * absorbed id resolve to the kept entry. Seqs are never reused, and the kept entry's owner is checked on every read.
   */
  readonly absorbedInto: LmdbDatabase<number, number>;
  /** entry seq → seq of the entry it superseded through its upsert key: an entry's `supersedes` chain, walked back */
  readonly supersedes: LmdbDatabase<number, number>;
  /** [owner, run_id] → highest entry seq covered: deleted runs whose entries are still being purged */
  readonly runTombstones: LmdbDatabase<number, Key>;
  /** [owner, run_id, outcome_seq] → run-level outcome record */
  readonly outcomes: LmdbDatabase<unknown, Key>;
  /** [owner, idempotency_key] → the outcome the key applied */
  readonly outcomeKeys: LmdbDatabase<unknown, Key>;
  /** [owner, run_id, step_id] → step outcome record */
  readonly stepOutcomes: LmdbDatabase<unknown, Key>;
  /** [owner, run_id] → ControlSessionRecord: the run's control session (src/control-sessions) */
  readonly controlSessions: LmdbDatabase<unknown, Key>;
  /** [owner, project_id, run_id] → null: the control sessions created for a project (its run history) */
  readonly controlSessionsByProject: LmdbDatabase<null, Key>;
  /** [owner, run_id, name] → planning variable record */
  readonly planVariables: LmdbDatabase<unknown, Key>;
  /** [owner, run_id, name] → planning concept record */
  readonly planConcepts: LmdbDatabase<unknown, Key>;
  /** [owner, run_id, goal_seq] → planning goal record (deprecated routes) */
  readonly planGoals: LmdbDatabase<unknown, Key>;
  /** [owner, run_id, action_seq] → action log record (deprecated routes) */
  readonly planActions: LmdbDatabase<unknown, Key>;
  /** [owner, run_id, cycle_number] → decision cycle record (deprecated routes) */
  readonly planCycles: LmdbDatabase<unknown, Key>;
  /** [owner, run_id, agent_id] → agent registered in a run (coordination) */
  readonly agents: LmdbDatabase<unknown, Key>;
  /** [owner, run_id, handoff_seq] → handoff between agents of a run, with its feedback (coordination) */
  readonly handoffs: LmdbDatabase<unknown, Key>;
  /** [owner, run_id, linked_run_id] → link from a parent run to a child run (runs) */
  readonly runLinks: LmdbDatabase<unknown, Key>;
  /** [owner, linked_run_id, run_id] → the same link seen from the child, so a run's links both ways are found (runs) */
  readonly runLinkedBy: LmdbDatabase<unknown, Key>;
  /** [owner, project_seq] → ProjectRecord; the project id is `prj_<seq>` (src/resources) */
  readonly projects: LmdbDatabase<unknown, Key>;
  /** [owner, name] → project_seq: each owner's project names are unique (src/resources) */
  readonly projectNames: LmdbDatabase<number, Key>;
  /** [owner, project_id, agent_id] → AgentDefinitionRecord (src/resources) */
  readonly agentDefinitions: LmdbDatabase<unknown, Key>;
  /** [owner, agent_id, project_id] → null: the projects defining an agent id, for prompt owner resolution */
  readonly agentDefinitionsByAgent: LmdbDatabase<null, Key>;
  /** [owner, project_id, agent_id] → PromptHeadRecord: the active and last version numbers of an agent's prompt */
  readonly promptHeads: LmdbDatabase<unknown, Key>;
  /** [owner, project_id, agent_id, version_number] → PromptVersionRecord (src/resources) */
  readonly promptVersions: LmdbDatabase<unknown, Key>;
  /** [owner, skill_id] → SkillRecord (src/resources/skill-record.ts) */
  readonly skills: LmdbDatabase<unknown, Key>;
  /** [owner, skill_id, version_number] → SkillVersionRecord */
  readonly skillVersions: LmdbDatabase<unknown, Key>;
  /** [owner, project_id, agent_id, name] → SkillNameRecord: unique names, and a project's skills by prefix */
  readonly skillNames: LmdbDatabase<unknown, Key>;
  /** [owner, kind, source_id] → target id: what each line of a tenant import created (src/tenant/import-ids.ts) */
  readonly importIds: LmdbDatabase<string, Key>;
  /** [owner, scope kind, scope id] → RetentionPolicyRecord: how long entries of each type are kept (retention-store.ts) */
  readonly retentionPolicies: LmdbDatabase<unknown, Key>;
}

/** LMDB name of each database; values are msgpack unless the database is listed in BINARY_DATABASES. */
export const DATABASE_NAMES: Readonly<Record<keyof Databases, string>> = {
  meta: "meta",
  users: "users",
  keys: "keys",
  entries: "entries",
  entriesByOwnerRun: "entries_by_owner_run",
  entriesByRun: "entries_by_run",
  entriesByOwner: "entries_by_owner",
  upserts: "upserts",
  references: "references",
  postings: "postings",
  entryTerms: "entry_terms",
  vectors: "vectors",
  vectorSpaces: "vector_spaces",
  spaceVectors: "vector_space_vectors",
  entrySpaceVectors: "entry_vector_spaces",
  jobs: "ingest_jobs",
  jobItems: "ingest_job_items",
  jobQueue: "ingest_job_queue",
  jobIdempotency: "ingest_job_idempotency",
  jobsByRun: "ingest_jobs_by_run",
  jobQueueByOwner: "ingest_job_queue_by_owner",
  nodes: "core_nodes",
  nodeVectors: "core_node_vectors",
  nodesByOwnerRun: "core_nodes_by_owner_run",
  scratchpad: "core_scratchpad",
  coreSessions: "core_sessions",
  coreSnapshots: "core_session_snapshots",
  grants: "acl_grants",
  derivations: "entry_derivations",
  absorbedInto: "entry_absorbed_into",
  supersedes: "entry_supersedes",
  runTombstones: "run_tombstones",
  outcomes: "learning_outcomes",
  outcomeKeys: "learning_outcome_keys",
  stepOutcomes: "learning_step_outcomes",
  controlSessions: "control_sessions",
  controlSessionsByProject: "control_sessions_by_project",
  planVariables: "planning_variables",
  planConcepts: "planning_concepts",
  planGoals: "planning_goals",
  planActions: "planning_actions",
  planCycles: "planning_cycles",
  agents: "coordination_agents",
  handoffs: "coordination_handoffs",
  runLinks: "run_links",
  runLinkedBy: "run_linked_by",
  projects: "resource_projects",
  projectNames: "resource_project_names",
  agentDefinitions: "resource_agent_definitions",
  agentDefinitionsByAgent: "resource_agent_definitions_by_agent",
  promptHeads: "resource_prompt_heads",
  promptVersions: "resource_prompt_versions",
  skills: "resource_skills",
  skillVersions: "resource_skill_versions",
  skillNames: "resource_skill_names",
  importIds: "tenant_import_ids",
  retentionPolicies: "retention_policies",
};

const BINARY_DATABASES: ReadonlySet<keyof Databases> = new Set(["vectors", "nodeVectors", "spaceVectors"]);

/** Databases whose records record a deletion: the store cap counts a write there as a removal (see StoreCap). */
const DELETION_RECORDS: ReadonlySet<keyof Databases> = new Set(["runTombstones"]);

export interface StorageOptions {
  /** SERVICE_MAX_STORE_BYTES: writes that would take the store past it are refused (see StoreCap); unset: none. */
  readonly maxStoreBytes?: number | undefined;
}

/** LMDB's data file inside an environment directory. */
const DATA_FILE = "data.mdb";

/** Methods that write outside a transaction callback when called there; they are refused unless `transaction` runs. */
const WRITE_METHODS = ["put", "remove", "putSync", "removeSync", "ifNoExists", "ifVersion", "clearAsync", "clearSync", "drop", "dropSync"];

export class StorageClosedError extends Error {}

/**
 * One write a transaction made, as its callback made it: the database (its field in `Databases`), the method and its
 * arguments. A transaction's writes replayed in order on another store leave it byte-identical (clustered mode).
 */
export interface WriteOp {
  readonly db: keyof Databases;
  readonly method: "put" | "remove";
  readonly args: readonly unknown[];
}

/** A write replayed from the log, with the value it replaced (undefined: none) and the one it left (undefined: removed). */
export interface ReplayedWrite {
  readonly db: keyof Databases;
  readonly key: unknown;
  readonly before: unknown;
  readonly after: unknown;
}

/** Thrown inside a capturing transaction once its writes are recorded, so that LMDB discards them. */
class CaptureDone extends Error {}

/** What `exclusive` hands its work: the environment to itself, and the means to replace it. */
export interface ExclusiveAccess {
  /** The current environment; no write runs on it until the work ends. */
  readonly root: RootDatabase;
  /** Empty directory where a replacement environment is built (e.g. `root.backup(stagingDir, true)`). */
  readonly stagingDir: string;
  /**
   * Checks that the environment in `stagingDir` opens and holds the same databases with the same entry counts, then
   * makes it the live environment: its data file atomically replaces the current one (which stays in place until
   * then), and reads are served without a gap throughout. Throws, leaving the current environment live, if the copy
   * does not verify.
   */
  swapInStaged(): Promise<void>;
  /** Writes in one synchronous, durable transaction: the holder of exclusive access may, nobody else can meanwhile. */
  writeSync<T>(fn: () => T): T;
}

/**
 * The LMDB environment and its databases.
 *
 * Every write goes through `transaction`: a put or remove made anywhere else throws, because it would slip past
 * `exclusive` — it could land in an environment being copied after the copy was taken (and be lost at the swap), or
 * hit a closed one. `exclusive` holds new transactions back (they wait, in order, none is lost), waits for those in
 * flight, and gives its work the environment to itself; the work may replace the environment with `swapInStaged`.
 *
 * Handles must be read through `root` and `dbs` at call time, never kept across an await, and a range iterator must
 * never be held across an await either (read a page synchronously, then continue from its last key): a swap closes
 * the environment such handles and iterators belong to. Between two awaits `dbs` always belongs to an open
 * environment holding every committed write.
 */
export class Storage {
  /** The environment directory. */
  readonly dir: string;
  /** Where a replacement environment is staged; whatever a crash left there is deleted on open, never used. */
  readonly stagingDir: string;
  #root: RootDatabase;
  #dbs: Databases;
  /** The directory of the live environment: `dir`, or `stagingDir` if a swap failed half-way (see swapInStaged). */
  #liveDir: string;
  #inFlight = 0;
  /** Copies (backups) in progress. */
  readonly #copies = new Set<Promise<void>>();
  #idle: (() => void)[] = [];
  #gate: Promise<void> | undefined;
  /** Non-zero while a write callback of ours runs (or exclusive work writes): only then may LMDB write. */
  #writing = 0;
  #closed = false;
  /** Set while `applyLog`'s callback runs. */
  #applyingLog = false;
  /** Runs every transaction in clustered mode (replicateThrough); undefined: standalone. */
  #replicator: Replicator | undefined;
  /** The writes of the transaction being captured (captureWrites); undefined otherwise. */
  #captured: WriteOp[] | undefined;
  /** Guarded write calls in progress: lmdb-js's own writes run inside ours and are not recorded twice. */
  #writeDepth = 0;
  /** Test-only: injects a failure at a chosen write (see WriteFaults). */
  readonly faults = new WriteFaults();
  /** The SERVICE_MAX_STORE_BYTES cap; undefined when the store is unbounded (nothing is counted then). */
  readonly #cap: StoreCap | undefined;

  constructor(dir: string, options: StorageOptions = {}) {
    this.dir = dir;
    this.stagingDir = `${dir}-staging`;
    fs.rmSync(this.stagingDir, { recursive: true, force: true });
    this.#liveDir = dir;
    this.#root = openRoot(dir);
    // A store of another schema is refused before this build opens (and so creates) its own databases in it.
    const version = (this.#root.openDB<unknown, string>({ name: DATABASE_NAMES.meta }).get(SCHEMA_VERSION_KEY) as unknown) ?? SCHEMA_VERSION;
    try {
      refuseOtherSchema(version, dir);
    } catch (e: unknown) {
      void this.#root.close();
      throw e;
    }
    this.#dbs = this.#openDatabases(this.#root);
    this.#cap = options.maxStoreBytes === undefined ? undefined : new StoreCap(options.maxStoreBytes);
    this.#cap?.measure(this.#databaseList());
  }

  get root(): RootDatabase {
    return this.#root;
  }

  get dbs(): Databases {
    return this.#dbs;
  }

  /**
   * A digest of every key and value of every database (tests: proof that a failed write left nothing behind). Reads
   * the whole store: for small test stores only.
   */
  /** Whether any database but `meta` holds a record: the store was written to, not only opened. */
  holdsRecords(): boolean {
    return Object.keys(DATABASE_NAMES).some((field) => field !== "meta" && (this.#dbs[field as keyof Databases] as LmdbDatabase<unknown, Key>).getKeysCount({ limit: 1 }) > 0);
  }

  fingerprint(): Record<string, string> {
    const digest: Record<string, string> = {};
    for (const [field, name] of Object.entries(DATABASE_NAMES)) {
      const hash = createHash("sha256");
      const db = this.#dbs[field as keyof Databases] as LmdbDatabase<unknown, Key>;
      for (const { key, value } of db.getRange()) hash.update(JSON.stringify([key, value instanceof Uint8Array ? Buffer.from(value).toString("base64") : value]));
      digest[name] = hash.digest("hex");
    }
    return digest;
  }

  /**
   * Runs `fn` as a transaction whose writes are recorded and then discarded: the store is left as it was, and the
   * caller gets `fn`'s result and its writes, to have them replicated before they are applied (`replayWrites`).
   * Inside `fn`, reads see its own writes as in any transaction, after `base` (writes of transactions computed before
   * it into the same replicated command, applied first and not recorded again).
   */
  async captureWrites<T>(fn: () => T, sequences?: SequenceStride, base: readonly WriteOp[] = []): Promise<{ result: T; writes: WriteOp[] }> {
    let result: { result: T; writes: WriteOp[] } | undefined;
    try {
      const capture = (): void => {
        if (this.#captured !== undefined) throw new Error("a write capture is already in progress");
        // Transactions queued before this one in the same command: their writes first, not recorded again.
        if (base.length > 0) {
          this.#applyingLog = true;
          try {
            this.replayWrites(base);
          } finally {
            this.#applyingLog = false;
          }
        }
        this.#captured = [];
        capturedStride = sequences;
        try {
          result = { result: fn(), writes: this.#captured };
        } finally {
          this.#captured = undefined;
          capturedStride = undefined;
        }
      };
      // Discarded only after the store cap has checked the writes, as it checks any transaction's.
      await this.#commit(capture, true, true);
    } catch (e: unknown) {
      if (!(e instanceof CaptureDone) || result === undefined) throw e;
    }
    return result as { result: T; writes: WriteOp[] };
  }

  /**
   * Replays captured writes, in order; call inside a transaction (clustered mode applies them with its log position).
   * `observe` sees each write with the value it replaced, for the in-memory state derived from the store.
   */
  replayWrites(writes: readonly WriteOp[], observe?: (write: ReplayedWrite) => void): void {
    for (const { db, method, args } of writes) {
      const target = this.#dbs[db] as unknown as (Record<string, ((...a: unknown[]) => unknown) | undefined> & { get(key: unknown): unknown }) | undefined;
      const write = target?.[method];
      if (target === undefined || write === undefined) throw new Error(`no database ${String(db)} to replay a ${method} on`);
      const key = args[0];
      const before = observe === undefined ? undefined : target.get(key);
      write.apply(target, [...args]);
      observe?.({ db, key, before, after: method === "put" ? args[1] : undefined });
    }
  }

  #record(db: keyof Databases, method: string, args: unknown[]): void {
    const captured = this.#captured;
    if (captured === undefined) return;
    if (method !== "put" && method !== "remove") throw new Error(`LMDB ${method} cannot be captured for replication`);
    captured.push({ db, method, args: [...args] });
  }

  /** Size in bytes of the live environment's data file. */
  dataFileBytes(): number {
    return fileSize(path.join(this.dir, DATA_FILE));
  }

  /**
   * Runs `fn` in one write transaction; resolves with its result once the transaction is durable. All or nothing:
   * when `fn` throws, every write it made is rolled back and the promise rejects with its error. lmdb-js batches
   * concurrent transactions into one commit (group commit) and does not undo a throwing plain callback's writes, so
   * each callback runs as a child transaction of that batch, which LMDB aborts alone; the others still commit.
   */
  transaction<T>(fn: () => T): Promise<T> {
    return this.#replicator === undefined ? this.localTransaction(fn) : this.#replicator(fn);
  }

  /**
   * Clustered mode: every `transaction` from now on is run by `replicator`, which has it replicated through the log
   * (and applies it here with `localTransaction`).
   */
  replicateThrough(replicator: Replicator): void {
    this.#replicator = replicator;
  }

  /**
   * Applies replicated commands (clustered mode) in one local transaction: their writes were checked where they were
   * computed — test write faults, the store cap — and a replica refusing them would only fall behind for good.
   */
  applyLog<T>(fn: () => T): Promise<T> {
    const applying = (): T => {
      this.#applyingLog = true;
      try {
        return fn();
      } finally {
        this.#applyingLog = false;
      }
    };
    return this.#commit(applying, false);
  }

  /** `transaction` on this store alone, whatever the mode: what capturing a replicated transaction uses. */
  localTransaction<T>(fn: () => T): Promise<T> {
    return this.#commit(fn, true);
  }

  /**
   * One local write transaction; `capped`: refused when it would take the store past the cap (else only counted);
   * `discard`: rolled back once `fn` and the cap's check are through (CaptureDone), for captureWrites.
   */
  async #commit<T>(fn: () => T, capped: boolean, discard = false): Promise<T> {
    while (this.#gate !== undefined) await this.#gate;
    if (this.#closed) throw new StorageClosedError("storage is closed");
    this.#inFlight++;
    try {
      const cap = this.#cap;
      // Queued as a child of lmdb-js's batched transaction: its writes are aborted alone when it throws.
      const discarding = (run: () => T) => (): T => {
        const result = run();
        if (discard) throw new CaptureDone();
        return result;
      };
      if (cap === undefined) return (await this.#root.childTransaction(discarding(() => this.#allowWrites(fn)))) as T;
      // With a cap, the callback's writes are counted and a transaction that would overfill the store throws.
      const tally = new WriteTally();
      let committed = false;
      try {
        const result = (await this.#root.childTransaction(discarding(() => this.#allowWrites(() => cap.within(tally, () => this.#databaseList(), fn, capped))))) as T;
        committed = true;
        return result;
      } finally {
        cap.settled(tally, committed);
      }
    } finally {
      this.#inFlight--;
      if (this.#inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve();
    }
  }

  /**
   * Holds new writes back, waits for those in flight and their flush, then runs `work` with the environment to
   * itself. Writes resume afterwards, in the order they arrived, on whatever environment is then live.
   */
  async exclusive<T>(work: (access: ExclusiveAccess) => Promise<T>): Promise<T> {
    while (this.#gate !== undefined) await this.#gate;
    if (this.#closed) throw new StorageClosedError("storage is closed");
    let release!: () => void;
    this.#gate = new Promise<void>((resolve) => (release = resolve));
    let active = true;
    const ensureActive = (): void => {
      if (!active) throw new Error("exclusive access has ended");
    };
    const liveRoot = (): RootDatabase => {
      ensureActive();
      return this.#root;
    };
    try {
      if (this.#inFlight > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
      await this.#root.flushed;
      if (this.#liveDir === this.dir) {
        fs.rmSync(this.stagingDir, { recursive: true, force: true });
        fs.mkdirSync(this.stagingDir, { recursive: true });
      }
      return await work({
        get root() {
          return liveRoot();
        },
        stagingDir: this.stagingDir,
        swapInStaged: async () => {
          ensureActive();
          await this.#swapInStaged();
        },
        writeSync: <R>(fn: () => R): R => {
          ensureActive();
          return this.#root.transactionSync(() => this.#allowWrites(fn));
        },
      });
    } finally {
      active = false;
      // The work may have written, or swapped in a compacted copy: the cap counts the store afresh.
      try {
        this.#cap?.measure(this.#databaseList());
      } catch {
        // The running count stands; the next refusal recounts exactly.
      }
      // The staging directory holds the replacement's lock file while it is live; only a healthy swap empties it.
      if (this.#liveDir === this.dir) fs.rmSync(this.stagingDir, { recursive: true, force: true });
      this.#gate = undefined;
      release();
    }
  }

  /**
   * Copies the live environment into the empty directory `dir` (its `data.mdb`), compacted, as one consistent
   * snapshot: every transaction committed when the copy begins and nothing after, while writes go on (LMDB copies
   * from a read transaction, off the event loop). Exclusive work (compaction) waits for the copy, and so does close.
   */
  async copyTo(dir: string): Promise<void> {
    while (this.#gate !== undefined) await this.#gate;
    if (this.#closed) throw new StorageClosedError("storage is closed");
    this.#inFlight++;
    const copy = this.#root.backup(dir, true);
    this.#copies.add(copy);
    try {
      await copy;
    } finally {
      this.#copies.delete(copy);
      this.#inFlight--;
      if (this.#inFlight === 0) for (const resolve of this.#idle.splice(0)) resolve();
    }
  }

  async close(): Promise<void> {
    while (this.#gate !== undefined) await this.#gate;
    if (this.#closed) return;
    this.#closed = true;
    // A copy reads the environment from another thread: it must end before the environment closes.
    await Promise.allSettled([...this.#copies]);
    await this.#root.close();
  }

  #allowWrites<T>(fn: () => T): T {
    this.#writing++;
    try {
      return fn();
    } finally {
      this.#writing--;
    }
  }

  /**
   * Swaps in the environment staged in `stagingDir`, in steps that leave a usable store after a crash at any point:
   * until the rename, the old data file is intact and the staged copy is deleted on the next open; after it, the
   * new data file is complete and durable. Reads never meet a closed environment: the staged copy (identical, since
   * writes are held) serves them while the old environment closes, until the environment reopened on the new file
   * takes over. The old environment must be closed before the reopen: lmdb-js would otherwise hand back the same
   * environment, still mapping the old file, as both share the lock file.
   */
  async #swapInStaged(): Promise<void> {
    if (this.#liveDir !== this.dir) throw new Error("a previous swap did not finish; restart the server before swapping again");
    const stagedFile = path.join(this.stagingDir, DATA_FILE);
    fsyncFile(stagedFile);
    const old = this.#root;
    const oldDbs = this.#dbs;
    const staged = openRoot(this.stagingDir);
    let stagedDbs: Databases;
    try {
      stagedDbs = this.#openDatabases(staged);
      verifyCopy(oldDbs, stagedDbs);
    } catch (e: unknown) {
      await staged.close();
      throw e;
    }
    this.#use(staged, stagedDbs, this.stagingDir);
    try {
      // Atomic: the path names the old complete file until it names the new one. The old environment keeps its
      // (now unlinked) file mapped until it closes.
      fs.renameSync(stagedFile, path.join(this.dir, DATA_FILE));
    } catch (e: unknown) {
      this.#use(old, oldDbs, this.dir);
      await staged.close();
      throw e;
    }
    fsyncDirectory(this.dir);
    await old.close();
    // The staged environment now maps the live data file and serves until the reopen; should the reopen fail, it
    // stays live (its lock file in the staging directory, which is then kept) until a restart.
    const reopened = openRoot(this.dir);
    this.#use(reopened, undefined, this.dir);
    await staged.close();
  }

  #use(root: RootDatabase, dbs: Databases | undefined, dir: string): void {
    const opened = dbs ?? this.#openDatabases(root);
    this.#root = root;
    this.#dbs = opened;
    this.#liveDir = dir;
  }

  #openDatabases(root: RootDatabase): Databases {
    const allowed = (method: string, db: StatsSource, recordsDeletion: boolean): boolean => {
      if (this.#writing === 0) return false;
      // Applying the log: its writes were faulted and capped where the transaction was computed (captureWrites);
      // the cap still counts them, since they fill the store.
      if (!this.#applyingLog) this.faults.beforeWrite(method);
      this.#cap?.beforeWrite(db, method, recordsDeletion);
      return true;
    };
    guardWrites(root, (method) => {
      if (this.#captured !== undefined) throw new Error(`LMDB ${method} on the root database cannot be captured`);
      return allowed(method, root, false);
    });
    const dbs: Record<string, LmdbDatabase<unknown, Key>> = {};
    for (const [field, name] of Object.entries(DATABASE_NAMES)) {
      const db = root.openDB<unknown, Key>({ name, ...(BINARY_DATABASES.has(field as keyof Databases) ? { encoding: "binary" as const } : {}) });
      const recordsDeletion = DELETION_RECORDS.has(field as keyof Databases);
      guardWrites(
        db,
        (method) => allowed(method, db, recordsDeletion),
        (method, args) => this.#record(field as keyof Databases, method, args),
        (delta) => (this.#writeDepth += delta),
      );
      dbs[field] = db;
    }
    return dbs as unknown as Databases;
  }

  /** Every named database of the live environment. */
  #databaseList(): StatsSource[] {
    return Object.values(this.#dbs) as StatsSource[];
  }

  /**
   * Start-up: records the schema version in a new store and refuses one written by a newer build. Stores of earlier
   * builds carry the same version: what changed since is upgraded by the readers (record versions, see
   * record-codec.ts) and by start-up moves (legacy postings), so they open as they are.
   */
  checkSchema(): void {
    const version = this.#dbs.meta.get(SCHEMA_VERSION_KEY);
    if (version === undefined) this.#allowWrites(() => this.#dbs.meta.putSync(SCHEMA_VERSION_KEY, SCHEMA_VERSION));
    else refuseOtherSchema(version, this.dir);
  }
}

function openRoot(dir: string): RootDatabase {
  // noSubdir false: lmdb-js would otherwise take a directory name with a dot for a file name.
  return open({ path: dir, noSubdir: false, maxDbs: 64, compression: false });
}

/**
 * Makes the write methods of one LMDB handle throw unless `allowed()`; lmdb-js's own writes run inside ours. `record`
 * sees each outermost write call with its arguments (nested calls are lmdb-js's own), `depth` tracks the nesting.
 */
function guardWrites(db: object, allowed: (method: string) => boolean, record?: (method: string, args: unknown[]) => void, depth?: (delta: number) => number): void {
  const methods = db as Record<string, unknown>;
  for (const name of WRITE_METHODS) {
    const original = methods[name];
    if (typeof original !== "function") continue;
    methods[name] = function guarded(this: unknown, ...args: unknown[]): unknown {
      if (!allowed(name)) throw new Error(`LMDB ${name} outside Storage.transaction: it would bypass the write gate that compaction relies on`);
      if (depth === undefined) return Reflect.apply(original, this, args) as unknown;
      if (depth(1) === 1) record?.(name, args);
      try {
        return Reflect.apply(original, this, args) as unknown;
      } finally {
        depth(-1);
      }
    };
  }
}

/** The staged copy must hold every database with as many entries as the live one: writes are held meanwhile. */
function verifyCopy(live: Databases, copy: Databases): void {
  for (const field of Object.keys(DATABASE_NAMES) as (keyof Databases)[]) {
    const expected = live[field].getStats() as { entryCount?: number };
    const actual = copy[field].getStats() as { entryCount?: number };
    if (expected.entryCount !== actual.entryCount) {
      throw new Error(`compacted copy differs in ${DATABASE_NAMES[field]}: ${String(actual.entryCount)} entries, expected ${String(expected.entryCount)}`);
    }
  }
  if (copy.meta.get("schema_version") !== live.meta.get("schema_version")) throw new Error("compacted copy has another schema version");
}

function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

function fsyncFile(file: string): void {
  const fd = fs.openSync(file, "r+");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Makes a rename inside `dir` durable. */
function fsyncDirectory(dir: string): void {
  const fd = fs.openSync(dir, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

export class SchemaVersionError extends Error {}

/** Throws unless `version` is the one this build reads, naming what to do about a newer store. */
function refuseOtherSchema(version: unknown, lmdbDir: string): void {
  if (version === SCHEMA_VERSION) return;
  const dataDir = path.dirname(lmdbDir);
  if (typeof version === "number" && Number.isInteger(version) && version > SCHEMA_VERSION) {
    throw new SchemaVersionError(
      `the data directory ${dataDir} was written by a newer Engram (store schema version ${version}; this build reads ${SCHEMA_VERSION}): ` +
        "run that version or a later one, or restore a backup made by this version with `engram restore`",
    );
  }
  throw new SchemaVersionError(`the data directory ${dataDir} has an unknown store schema version ${JSON.stringify(version)}; this build reads ${SCHEMA_VERSION}`);
}

export function openStorage(dataDir: string, options: StorageOptions = {}): Storage {
  fs.mkdirSync(dataDir, { recursive: true });
  const storage = new Storage(path.join(dataDir, "lmdb"), options);
  storage.checkSchema();
  return storage;
}

/** Runs a transaction replicated (clustered mode): resolves like `Storage.transaction`, once applied here. */
export type Replicator = <T>(fn: () => T) => Promise<T>;

/**
 * How a clustered shard numbers what it creates: `shard` of `shards` takes every `shards`-th value of each counter,
 * so that shards written on different nodes never hand out the same entry seq or id, and each shard's values grow.
 */
export interface SequenceStride {
  readonly shard: number;
  readonly shards: number;
}

/** The stride of the transaction being captured: set only while its callback runs (callbacks are synchronous). */
let capturedStride: SequenceStride | undefined;
/** Clustered mode's stride for the current request outside a transaction (setSequenceStrides). */
let scopeStride: () => SequenceStride | undefined = () => undefined;

/** Clustered mode: the stride of whatever runs outside a replicated transaction, from its write scope. */
export function setSequenceStrides(strideOfScope: () => SequenceStride | undefined): void {
  scopeStride = strideOfScope;
}

const activeStride = (): SequenceStride | undefined => capturedStride ?? scopeStride();
const strideKey = (name: string, stride: SequenceStride): string => `seq:${name}@${stride.shard}`;
/** The `n`th value (from 1) of a counter of a shard. */
const strideValue = (n: number, stride: SequenceStride): number => (n - 1) * stride.shards + stride.shard + 1;

/**
 * The last value a counter handed out, 0 for none; in clustered mode, the last of the current shard's (entries
 * written after it have higher seqs within that shard, which is where an owner's entries are).
 */
export function lastSequence(meta: LmdbDatabase<unknown, string>, name: string): number {
  const stride = activeStride();
  const standalone = numberAt(meta, `seq:${name}`);
  if (stride === undefined) return standalone;
  const current = meta.get(strideKey(name, stride));
  // Nothing handed out by the shard yet: what the store held before it joined a cluster came before.
  return typeof current === "number" && current > 0 ? strideValue(current, stride) : standalone;
}

const numberAt = (meta: LmdbDatabase<unknown, string>, key: string): number => {
  const value = meta.get(key);
  return typeof value === "number" ? value : 0;
};

/**
 * A shard's counter, the first time the shard takes from it: past every value the store handed out before it joined
 * a cluster (a standalone store made the cluster's first node), so that no value is handed out twice.
 */
function strideStart(meta: LmdbDatabase<unknown, string>, name: string, stride: SequenceStride): number {
  const standalone = numberAt(meta, `seq:${name}`);
  return standalone <= stride.shard ? 0 : Math.floor((standalone - stride.shard - 1) / stride.shards) + 1;
}

/**
 * The `meta` key of a value every shard changes (a generation): in a clustered transaction, the shard's own, so that
 * two shards computed on different nodes never overwrite each other's change; `summedOverShards` reads them all.
 */
export function perShardKey(name: string): string {
  return capturedStride === undefined ? name : `${name}@${capturedStride.shard}`;
}

/** The sum of a number kept under `perShardKey(name)`: standalone, the one value; clustered, every shard's. */
export function summedOverShards(meta: LmdbDatabase<unknown, string>, name: string): number {
  let sum = 0;
  for (const { value } of meta.getRange({ start: name, end: `${name}@\uffff` })) if (typeof value === "number") sum += value;
  return sum;
}

/** Next value of a named counter; call inside a write transaction so the increment commits with its use. */
export function nextSequence(meta: LmdbDatabase<unknown, string>, name: string): number {
  return reserveSequences(meta, name, 1)[0] as number;
}

/**
 * Takes the counter's next `count` values at once, in increasing order: one read and one write for a whole batch (an
 * ingest job's thousand entries) instead of one each. Call inside a write transaction.
 */
export function reserveSequences(meta: LmdbDatabase<unknown, string>, name: string, count: number): number[] {
  const stride = capturedStride;
  const key = stride === undefined ? `seq:${name}` : strideKey(name, stride);
  const current = meta.get(key);
  const first = (typeof current === "number" ? current : stride === undefined ? 0 : strideStart(meta, name, stride)) + 1;
  meta.put(key, first + count - 1);
  return Array.from({ length: count }, (_, i) => (stride === undefined ? first + i : strideValue(first + i, stride)));
}
