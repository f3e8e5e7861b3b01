// Retention policies in an export: the owner's, each project's (its project id rewritten to the id the project received
// on import, as a control session's is) and each run's. Imported after the entries and control sessions they govern, and applied once committed:
// the owner's entries are judged again, as when a policy is set.
import { Code } from "@connectrpc/connect";
import type { MemoryIndex } from "../../memory/memory-index.js";
import type { Storage } from "../../storage/database.js";
import { MAX_TTL_SECONDS, decodeRetentionPolicy, type RetentionPolicyRecord, type RetentionStore } from "../../storage/retention-store.js";
import { recordFault } from "../import-faults.js";
import { checkId } from "../record-checks.js";
import { alreadyStored, keyId, ownerPage, withoutOwner, type Scanned, type TenantKind } from "../tenant-kind.js";

export interface RetentionKindDeps {
  readonly storage: Storage;
  readonly retention: RetentionStore;
  readonly index: MemoryIndex;
}

/** Checks what the API checks of a policy it is given, so that no import stores one the API would refuse. */
function checkPolicy(record: RetentionPolicyRecord): void {
  if (record.scope === "owner" && record.scopeId !== "") throw recordFault("scopeId", "must be empty for the owner's policy");
  if (record.scope !== "owner") checkId("scopeId", record.scopeId);
  if (record.rules.length === 0) throw recordFault("rules", "needs at least one rule");
  const seen = new Set<string>();
  record.rules.forEach((rule, i) => {
    if (seen.has(rule.entryType)) throw recordFault(`rules[${i}].entryType`, `${JSON.stringify(rule.entryType)} has a rule already`);
    seen.add(rule.entryType);
    const maxAge = rule.maxAgeSeconds;
    if (!Number.isSafeInteger(maxAge) || maxAge < 1 || maxAge > MAX_TTL_SECONDS) throw recordFault(`rules[${i}].maxAgeSeconds`, `must be 1 to ${MAX_TTL_SECONDS} seconds`);
  });
}

/** Whether two policies keep the same types for the same times. */
function sameRules(a: RetentionPolicyRecord, b: RetentionPolicyRecord): boolean {
  const ages = (p: RetentionPolicyRecord): string => JSON.stringify(p.rules.map((r) => [r.entryType, r.maxAgeSeconds]).sort());
  return ages(a) === ages(b);
}

export function retentionPolicyKind({ storage, retention, index }: RetentionKindDeps): TenantKind<RetentionPolicyRecord, RetentionPolicyRecord> {
  return {
    kind: "retention_policy",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.retentionPolicies, owner, after, limit).map(({ suffix, key, value }) => {
        const record = decodeRetentionPolicy(key, value);
        return { key: suffix, line: { id: keyId([record.scope, record.scopeId]), record: withoutOwner(record) } };
      });
    },

    parse(owner, raw) {
      const record = decodeRetentionPolicy([owner], { ...raw, owner });
      checkPolicy(record);
      return record;
    },

    write(ctx, record) {
      const id = keyId([record.scope, record.scopeId]);
      // A project of this export gets the id it was imported under; a deleted project's id is kept, as a control
      // session keeps it, so that the policy still reaches the runs whose session names it.
      const scopeId = record.scope === "project" ? (ctx.ref("project", record.scopeId) ?? record.scopeId) : record.scopeId;
      const stored: RetentionPolicyRecord = { ...record, owner: ctx.owner, scopeId };
      const existing = retention.get(ctx.owner, record.scope, scopeId);
      if (existing !== undefined) {
        // The owner's own policy for that scope: kept, unless it says something else (then the caller decides which).
        if (sameRules(existing, stored)) return alreadyStored(id);
        throw recordFault("rules", `a retention policy of this ${record.scope} with other rules exists in this memory; clear it first to import this one`, Code.AlreadyExists);
      }
      retention.putInTransaction(stored);
      return { id, existed: false, stored };
    },

    committed(stored) {
      for (const { owner, scope, scopeId } of stored) index.retentionChanged(owner, scope, scopeId);
    },
  };
}
