// Retention policies: how long an owner keeps entries of each type, set for the owner as a whole, for a project or for
// one run. Stored in LMDB ([owner, scope kind, scope id] → record) and mirrored in memory, so that judging an entry's
// expiry costs a few map reads, never a database read per candidate.
import type { Key } from "lmdb";
import type { Storage } from "./database.js";
import { ENTRY_TYPES, type EntryType } from "./entry-record.js";
import { openRecord } from "./record-codec.js";

export const RETENTION_RECORD_VERSION = 1;

/** Longest lifetime an entry may be given (its TTL) or a policy may keep a type for: 100 years, in seconds. */
export const MAX_TTL_SECONDS = 3_153_600_000;

/** What a policy covers: every run of the owner, the runs of one project, or one run. */
export const RETENTION_SCOPES = ["owner", "project", "run"] as const;
export type RetentionScope = (typeof RETENTION_SCOPES)[number];

export interface RetentionRule {
  readonly entryType: EntryType;
  /** Entries of this type older than this (by creation time) are expired. */
  readonly maxAgeSeconds: number;
}

export interface RetentionPolicyRecord {
  readonly v: typeof RETENTION_RECORD_VERSION;
  readonly owner: number;
  readonly scope: RetentionScope;
  /** The run id or project id; "" for the owner's policy. */
  readonly scopeId: string;
  readonly rules: readonly RetentionRule[];
  /** Unix milliseconds of the last change. */
  readonly updatedAt: number;
}

export function decodeRetentionPolicy(key: Key, value: unknown): RetentionPolicyRecord {
  const r = openRecord("retention_policies", JSON.stringify(key), value, RETENTION_RECORD_VERSION);
  return {
    v: RETENTION_RECORD_VERSION,
    owner: r.integer("owner"),
    scope: r.oneOf("scope", RETENTION_SCOPES),
    scopeId: r.string("scopeId"),
    rules: r.objects("rules").map((rule) => ({ entryType: rule.oneOf("entryType", ENTRY_TYPES), maxAgeSeconds: rule.number("maxAgeSeconds") })),
    updatedAt: r.number("updatedAt"),
  };
}

/** One policy as max age in milliseconds by entry type index (0: the type is not limited by this policy). */
type AgeTable = Float64Array;

function ageTable(rules: readonly RetentionRule[]): AgeTable {
  const table = new Float64Array(ENTRY_TYPES.length);
  for (const rule of rules) table[ENTRY_TYPES.indexOf(rule.entryType)] = rule.maxAgeSeconds * 1000;
  return table;
}

interface OwnerPolicies {
  owner: AgeTable | undefined;
  readonly projects: Map<string, AgeTable>;
  readonly runs: Map<string, AgeTable>;
}

/**
 * The policies in force. A run's rule for a type wins over its project's, which wins over the owner's: the most
 * specific policy naming the type decides, and a type no policy names is kept. A run belongs to the project its
 * control session was created for (`projectOfRun`); a run without one has no project policy.
 */
export class RetentionStore {
  readonly #storage: Storage;
  readonly #byOwner = new Map<number, OwnerPolicies>();
  /** The project a run's control session names, "" for none (read from LMDB only for owners with project policies). */
  #projectOfRun: (owner: number, runId: string) => string = () => "";

  constructor(storage: Storage) {
    this.#storage = storage;
    for (const { key, value } of storage.dbs.retentionPolicies.getRange()) this.#cache(decodeRetentionPolicy(key, value));
  }

  /** Tells the store how a run's project is found (the control sessions know). */
  useProjectOfRun(projectOfRun: (owner: number, runId: string) => string): void {
    this.#projectOfRun = projectOfRun;
  }

  /** Whether any policy of the owner exists: most owners have none, and their entries only expire by their own TTL. */
  hasPolicies(owner: number): boolean {
    return this.#byOwner.has(owner);
  }

  /** Max age in ms of the owner's entries of this type in this run; 0 when kept forever. */
  maxAgeMs(owner: number, runId: string, typeIndex: number): number {
    const policies = this.#byOwner.get(owner);
    if (policies === undefined) return 0;
    const run = policies.runs.get(runId)?.[typeIndex] ?? 0;
    if (run > 0) return run;
    if (policies.projects.size > 0) {
      const projectId = this.#projectOfRun(owner, runId);
      const project = projectId === "" ? 0 : (policies.projects.get(projectId)?.[typeIndex] ?? 0);
      if (project > 0) return project;
    }
    return policies.owner?.[typeIndex] ?? 0;
  }

  get(owner: number, scope: RetentionScope, scopeId: string): RetentionPolicyRecord | undefined {
    const key = [owner, scope, scopeId];
    const value = this.#storage.dbs.retentionPolicies.get(key);
    return value === undefined ? undefined : decodeRetentionPolicy(key, value);
  }

  /** Stores a policy; call inside a write transaction, then `applied` once it is durable. */
  putInTransaction(record: RetentionPolicyRecord): void {
    this.#storage.dbs.retentionPolicies.put([record.owner, record.scope, record.scopeId], record);
  }

  /** Removes a policy; call inside a write transaction, then `applied`. Returns whether there was one. */
  removeInTransaction(owner: number, scope: RetentionScope, scopeId: string): boolean {
    const key = [owner, scope, scopeId];
    if (this.#storage.dbs.retentionPolicies.get(key) === undefined) return false;
    this.#storage.dbs.retentionPolicies.remove(key);
    return true;
  }

  /** A committed change (here or, clustered, replayed from another node): the in-memory mirror follows LMDB. */
  applied(owner: number, scope: RetentionScope, scopeId: string): void {
    const record = this.get(owner, scope, scopeId);
    if (record !== undefined) {
      this.#cache(record);
      return;
    }
    const policies = this.#byOwner.get(owner);
    if (policies === undefined) return;
    if (scope === "owner") policies.owner = undefined;
    else (scope === "run" ? policies.runs : policies.projects).delete(scopeId);
    if (policies.owner === undefined && policies.runs.size === 0 && policies.projects.size === 0) this.#byOwner.delete(owner);
  }

  #cache(record: RetentionPolicyRecord): void {
    let policies = this.#byOwner.get(record.owner);
    if (policies === undefined) this.#byOwner.set(record.owner, (policies = { owner: undefined, projects: new Map(), runs: new Map() }));
    const table = ageTable(record.rules);
    if (record.scope === "owner") policies.owner = table;
    else (record.scope === "run" ? policies.runs : policies.projects).set(record.scopeId, table);
  }
}
