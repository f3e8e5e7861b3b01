// Run and step outcomes in an export. An imported outcome is stored as recorded (its idempotency key with it) and does
// not reinforce anything again: the entries it credited carry what it taught them already.
import { Code } from "@connectrpc/connect";
import { decodeOutcome, decodeStepOutcome, type OutcomeStore } from "../../learning/outcome-store.js";
import type { Storage } from "../../storage/database.js";
import { recordFault } from "../import-faults.js";
import { checkId, checkJsonObject } from "../record-checks.js";
import { created, ownerPage, withoutOwner, type Scanned, type TenantKind } from "../tenant-kind.js";
import type { OutcomeRecord, StepOutcomeRecord } from "../../learning/outcome-store.js";

export interface OutcomeKindDeps {
  readonly storage: Storage;
  readonly outcomes: OutcomeStore;
}

/** Whether the owner's run is being deleted: its records left are purged soon and are not exported. */
export function runDeleting(storage: Storage, owner: number, runId: string): boolean {
  return storage.dbs.runTombstones.get([owner, runId]) !== undefined;
}

export function outcomeKind({ storage, outcomes }: OutcomeKindDeps): TenantKind<OutcomeRecord> {
  return {
    kind: "outcome",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.outcomes, owner, after, limit).map(({ suffix, key, value }) => {
        const record = decodeOutcome(key, value);
        return runDeleting(storage, owner, record.runId) ? { key: suffix } : { key: suffix, line: { id: record.id, record: withoutOwner(record) } };
      });
    },

    parse(owner, raw) {
      const record = decodeOutcome(0, { ...raw, owner });
      checkId("runId", record.runId);
      return record;
    },

    write(ctx, record) {
      if (record.idempotencyKey !== "" && outcomes.keyed(ctx.owner, record.idempotencyKey) !== undefined) {
        throw recordFault("idempotencyKey", "an outcome with this idempotency key is already recorded in this memory", Code.AlreadyExists);
      }
      const entryRef = (id: string): string[] => {
        const target = ctx.ref("entry", id);
        return target === undefined ? [] : [target];
      };
      const stored = outcomes.putOutcomeInTransaction({
        owner: ctx.owner,
        runId: record.runId,
        referenceId: entryRef(record.referenceId)[0] ?? "",
        outcome: record.outcome,
        signal: record.signal,
        rationale: record.rationale,
        agentId: record.agentId,
        userId: record.userId,
        verifiedInProduction: record.verifiedInProduction,
        reinforcedIds: record.reinforcedIds.flatMap(entryRef),
        idempotencyKey: record.idempotencyKey,
        createdAt: record.createdAt,
      });
      return created(stored.id);
    },
  };
}

export function stepOutcomeKind({ storage, outcomes }: OutcomeKindDeps): TenantKind<StepOutcomeRecord> {
  return {
    kind: "step_outcome",

    scan(owner, after, limit): Scanned[] {
      return ownerPage(storage.dbs.stepOutcomes, owner, after, limit).map(({ suffix, key, value }) => {
        const record = decodeStepOutcome(key, value);
        return runDeleting(storage, owner, record.runId) ? { key: suffix } : { key: suffix, line: { id: record.id, record: withoutOwner(record) } };
      });
    },

    parse(owner, raw) {
      const record = decodeStepOutcome(0, { ...raw, owner });
      checkId("runId", record.runId);
      checkId("stepId", record.stepId);
      checkJsonObject("metadataJson", record.metadataJson);
      return record;
    },

    write(ctx, record) {
      if (outcomes.stepOutcome(ctx.owner, record.runId, record.stepId) !== undefined) {
        throw recordFault("stepId", `run ${JSON.stringify(record.runId)} already has an outcome of this step in this memory`, Code.AlreadyExists);
      }
      const { v: _v, ...fields } = record;
      const stored = outcomes.putStepOutcomeInTransaction({ ...fields, owner: ctx.owner, id: outcomes.nextStepOutcomeId() });
      return created(stored.id);
    },
  };
}
