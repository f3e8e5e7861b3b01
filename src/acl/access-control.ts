// Access grants on runs: persisted in LMDB, cached in memory (rebuilt at start-up while /readyz answers
// `acl_rebuild_in_progress`), and consulted wherever a caller reaches a run it does not own.
import type { Key } from "lmdb";
import type { Principal } from "../auth/principal.js";
import type { ReplayedWrite, Storage } from "../storage/database.js";
import { openFields } from "../storage/record-codec.js";

export const PERMISSIONS = ["read", "write"] as const;
export type Permission = (typeof PERMISSIONS)[number];
export const PRINCIPAL_TYPES = ["user", "agent"] as const;
export type PrincipalType = (typeof PRINCIPAL_TYPES)[number];

export interface Grant {
  /** Auth user id of the run's owner, who made the grant. */
  readonly owner: number;
  readonly runId: string;
  readonly principalType: PrincipalType;
  /** A username for `user`, an agent id for `agent`. */
  readonly principalId: string;
  /** "" for the whole run. */
  readonly lane: string;
  readonly permission: Permission;
}

/**
 * A grant as stored: key [owner, run_id, principal_type, principal_id, lane], value the permission. The value is a
 * bare string with no version of its own (the store's schema version covers it), so the decoder checks key and value.
 */
export function decodeGrant(key: unknown, value: unknown): Grant {
  const [owner, runId, principalType, principalId, lane] = Array.isArray(key) ? (key as unknown[]) : [];
  const r = openFields("acl_grants", key, { owner, runId, principalType, principalId, lane, permission: value });
  return {
    owner: r.integer("owner"),
    runId: r.string("runId"),
    principalType: r.oneOf("principalType", PRINCIPAL_TYPES),
    principalId: r.string("principalId"),
    lane: r.string("lane"),
    permission: r.oneOf("permission", PERMISSIONS),
  };
}

function grantKey(owner: number, runId: string, principalType: PrincipalType, principalId: string, lane: string): Key {
  return [owner, runId, principalType, principalId, lane];
}

/** Another owner's run a caller may read, and which of its lanes (undefined: all of them). */
export interface GrantedRun {
  readonly owner: number;
  readonly runId: string;
  readonly lanes: ReadonlySet<string> | undefined;
}

export type CheckReason = "owner" | "run_grant" | "lane_grant" | "none";

function covers(held: Permission, wanted: Permission): boolean {
  return held === "write" || wanted === "read";
}

export class AccessControl {
  readonly #storage: Storage;
  /** `${principalType}/${principalId}` → the grants it holds. */
  readonly #byPrincipal = new Map<string, Grant[]>();

  constructor(storage: Storage) {
    this.#storage = storage;
  }

  /** Loads every grant into the cache. */
  rebuild(): number {
    this.#byPrincipal.clear();
    let count = 0;
    for (const { key, value } of this.#storage.dbs.grants.getRange()) {
      this.#cache(decodeGrant(key, value));
      count++;
    }
    return count;
  }

  /** The stored permission under a grant key, decoded. */
  #stored(key: Key): Permission | undefined {
    const value = this.#storage.dbs.grants.get(key);
    return value === undefined ? undefined : decodeGrant(key, value).permission;
  }

  #cache(grant: Grant): void {
    const key = `${grant.principalType}/${grant.principalId}`;
    const list = (this.#byPrincipal.get(key) ?? []).filter(
      (g) => !(g.owner === grant.owner && g.runId === grant.runId && g.lane === grant.lane),
    );
    list.push(grant);
    this.#byPrincipal.set(key, list);
  }

  #uncache(owner: number, runId: string, principalType: PrincipalType, principalId: string, lane: string): void {
    const key = `${principalType}/${principalId}`;
    const list = (this.#byPrincipal.get(key) ?? []).filter((g) => !(g.owner === owner && g.runId === runId && g.lane === lane));
    if (list.length === 0) this.#byPrincipal.delete(key);
    else this.#byPrincipal.set(key, list);
  }

  /** Grants (or widens) a permission; `write` implies `read`. Resolves whether anything changed. */
  async grant(grant: Grant): Promise<boolean> {
    const key = grantKey(grant.owner, grant.runId, grant.principalType, grant.principalId, grant.lane);
    const changed = await this.#storage.transaction(() => {
      const current = this.#stored(key);
      if (current !== undefined && covers(current, grant.permission)) return false;
      this.#storage.dbs.grants.put(key, grant.permission);
      return true;
    });
    if (changed) this.#cache(grant);
    return changed;
  }

  /**
   * Revokes a permission; revoking `read` (or "" for both) removes the grant, revoking `write` leaves `read`.
   * Resolves whether a grant matched.
   */
  async revoke(owner: number, runId: string, principalType: PrincipalType, principalId: string, lane: string, permission: Permission | ""): Promise<boolean> {
    const key = grantKey(owner, runId, principalType, principalId, lane);
    const result = await this.#storage.transaction((): Permission | "removed" | undefined => {
      const current = this.#stored(key);
      if (current === undefined) return undefined;
      if (permission === "write" && current === "write") {
        this.#storage.dbs.grants.put(key, "read");
        return "read";
      }
      if (permission === "write") return undefined;
      this.#storage.dbs.grants.remove(key);
      return "removed";
    });
    if (result === "removed") this.#uncache(owner, runId, principalType, principalId, lane);
    else if (result === "read") this.#cache({ owner, runId, principalType, principalId, lane, permission: "read" });
    return result !== undefined;
  }

  /**
   * Clustered mode: the writes of a command another node computed, committed here: its grants made, widened, narrowed
   * and revoked are cached here as that node's own `grant` and `revoke` cached them there.
   */
  replayed(writes: readonly ReplayedWrite[]): void {
    for (const { db, key, before, after } of writes) {
      if (db !== "grants") continue;
      if (after !== undefined) this.#cache(decodeGrant(key, after));
      else if (before !== undefined) {
        const { owner, runId, principalType, principalId, lane } = decodeGrant(key, before);
        this.#uncache(owner, runId, principalType, principalId, lane);
      }
    }
  }

  /** Whether a principal holds a permission on an owner's run (and lane, when not ""), and why. */
  check(owner: number, runId: string, principalType: PrincipalType, principalId: string, lane: string, permission: Permission): CheckReason {
    for (const g of this.#byPrincipal.get(`${principalType}/${principalId}`) ?? []) {
      if (g.owner !== owner || g.runId !== runId || !covers(g.permission, permission)) continue;
      if (g.lane === "") return "run_grant";
      if (lane !== "" && g.lane === lane) return "lane_grant";
    }
    return "none";
  }

  /** Whether the caller may act on an entry or node of `owner` in `runId` (and `lane`). */
  allows(caller: Principal, owner: number, runId: string, lane: string, permission: Permission): boolean {
    if (caller.role === "admin" || caller.userId === owner) return true;
    return this.check(owner, runId, "user", caller.username, lane, permission) !== "none";
  }

  /** Runs of other owners with this id that the caller may read, with the lanes it may read in each. */
  readableRuns(caller: Principal, runId: string): GrantedRun[] {
    const byOwner = new Map<number, Set<string> | undefined>();
    for (const g of this.#byPrincipal.get(`user/${caller.username}`) ?? []) {
      if (g.runId !== runId || g.owner === caller.userId) continue;
      if (g.lane === "") byOwner.set(g.owner, undefined);
      else if (!byOwner.has(g.owner) || byOwner.get(g.owner) !== undefined) {
        const lanes = byOwner.get(g.owner) ?? new Set<string>();
        lanes.add(g.lane);
        byOwner.set(g.owner, lanes);
      }
    }
    return [...byOwner].map(([owner, lanes]) => ({ owner, runId, lanes }));
  }
}
