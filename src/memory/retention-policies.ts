// Setting and clearing retention policies: one durable transaction for the policy, then every entry of the owner is
// judged again at once (entries older than a new limit are invisible to the very next request; the expiry purge
// removes them).
import type { Storage } from "../storage/database.js";
import type { RetentionPolicyRecord, RetentionRule, RetentionScope, RetentionStore } from "../storage/retention-store.js";
import { RETENTION_RECORD_VERSION } from "../storage/retention-store.js";
import type { MemoryIndex } from "./memory-index.js";

export class RetentionPolicies {
  readonly #storage: Storage;
  readonly #store: RetentionStore;
  readonly #index: MemoryIndex;
  readonly #now: () => number;

  constructor(storage: Storage, store: RetentionStore, index: MemoryIndex, now: () => number) {
    this.#storage = storage;
    this.#store = store;
    this.#index = index;
    this.#now = now;
  }

  get(owner: number, scope: RetentionScope, scopeId: string): RetentionPolicyRecord | undefined {
    return this.#store.get(owner, scope, scopeId);
  }

  async set(owner: number, scope: RetentionScope, scopeId: string, rules: readonly RetentionRule[]): Promise<RetentionPolicyRecord> {
    const record: RetentionPolicyRecord = { v: RETENTION_RECORD_VERSION, owner, scope, scopeId, rules, updatedAt: this.#now() };
    await this.#storage.transaction(() => this.#store.putInTransaction(record));
    this.#index.retentionChanged(owner, scope, scopeId);
    return record;
  }

  /** Removes a policy; whether there was one. */
  async clear(owner: number, scope: RetentionScope, scopeId: string): Promise<boolean> {
    const cleared = await this.#storage.transaction(() => this.#store.removeInTransaction(owner, scope, scopeId));
    if (cleared) this.#index.retentionChanged(owner, scope, scopeId);
    return cleared;
  }

  /** A run's project link changed (a control session was created or removed): its entries are judged again. */
  runProjectChanged(owner: number): void {
    if (this.#store.hasPolicies(owner)) this.#index.catalog.reexpire(owner);
  }
}
