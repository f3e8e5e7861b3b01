// Planning records in an export: variables, concepts, goals, actions and decision cycles of the owner's runs. Their
// key holds the run (and name or number), which their records do not: lines carry it as `runId`.
import { Code } from "@connectrpc/connect";
import type { Database as LmdbDatabase, Key } from "lmdb";
import { nextSequence, type Storage } from "../../storage/database.js";
import { runRange } from "../../storage/key-range.js";
import { openFields } from "../../storage/record-codec.js";
import {
  PLANNING_LIMITS,
  actionIdOf,
  decodeAction,
  decodeConcept,
  decodeCycle,
  decodeGoal,
  decodeVariable,
  goalIdOf,
  type ActionRecord,
  type ConceptRecord,
  type CycleRecord,
  type GoalRecord,
  type VariableRecord,
} from "../../planning/planning-records.js";
import { recordFault } from "../import-faults.js";
import { checkId, checkJson, checkJsonObject } from "../record-checks.js";
import { created, keyId, ownerPage, type Scanned, type TenantKind } from "../tenant-kind.js";

interface InRun<R> {
  readonly runId: string;
  readonly record: R;
}

/** The run of a planning line (its key's, carried beside the record). */
function runOf(raw: Readonly<Record<string, unknown>>): string {
  const runId = openFields("planning", 0, raw).string("runId");
  checkId("runId", runId);
  return runId;
}

/** Scans a planning database keyed [owner, run_id, …]: each line is the record with its run. */
function scanRuns<R>(db: LmdbDatabase<unknown, Key>, owner: number, after: readonly (string | number)[] | undefined, limit: number, decode: (key: Key, value: unknown) => R, idOf: (runId: string, record: R) => string): Scanned[] {
  return ownerPage(db, owner, after, limit).map(({ suffix, key, value }) => {
    const runId = suffix[0] as string;
    const record = decode(key, value);
    return { key: suffix, line: { id: idOf(runId, record), record: { runId, ...(record as object) } } };
  });
}

function checkRoom(db: LmdbDatabase<unknown, Key>, owner: number, runId: string, limit: number, what: string): void {
  if (db.getKeysCount(runRange(owner, runId)) >= limit) throw recordFault("runId", `the run already holds ${limit} ${what}, the most a run may hold`, Code.ResourceExhausted);
}

function taken(what: string): never {
  throw recordFault("name", `the run already has a ${what} of this name in this memory`, Code.AlreadyExists);
}

export function variableKind(storage: Storage): TenantKind<InRun<VariableRecord>> {
  return {
    kind: "variable",
    scan: (owner, after, limit) => scanRuns(storage.dbs.planVariables, owner, after, limit, decodeVariable, (runId, r) => keyId([runId, r.name])),
    parse(_owner, raw) {
      const record = decodeVariable(0, raw);
      checkId("name", record.name);
      checkJson("valueJson", record.valueJson);
      return { runId: runOf(raw), record };
    },
    write(ctx, { runId, record }) {
      const { dbs } = storage;
      const key: Key = [ctx.owner, runId, record.name];
      if (dbs.planVariables.get(key) !== undefined) taken("variable");
      checkRoom(dbs.planVariables, ctx.owner, runId, PLANNING_LIMITS.variablesPerRun, "variables");
      // Versions count the server's writes (compare-and-set): the importing server's counter gives the next one.
      dbs.planVariables.put(key, { ...record, version: nextSequence(dbs.meta, "variable_version") });
      return created(keyId([runId, record.name]));
    },
  };
}

export function conceptKind(storage: Storage): TenantKind<InRun<ConceptRecord>> {
  return {
    kind: "concept",
    scan: (owner, after, limit) => scanRuns(storage.dbs.planConcepts, owner, after, limit, decodeConcept, (runId, r) => keyId([runId, r.name])),
    parse(_owner, raw) {
      const record = decodeConcept(0, raw);
      checkId("name", record.name);
      checkJsonObject("schemaJson", record.schemaJson);
      return { runId: runOf(raw), record };
    },
    write(ctx, { runId, record }) {
      const { dbs } = storage;
      const key: Key = [ctx.owner, runId, record.name];
      if (dbs.planConcepts.get(key) !== undefined) taken("concept");
      checkRoom(dbs.planConcepts, ctx.owner, runId, PLANNING_LIMITS.conceptsPerRun, "concepts");
      dbs.planConcepts.put(key, { ...record, entryId: record.entryId === "" ? "" : (ctx.ref("entry", record.entryId) ?? "") });
      return created(keyId([runId, record.name]));
    },
  };
}

export function goalKind(storage: Storage): TenantKind<InRun<GoalRecord>> {
  return {
    kind: "goal",
    scan: (owner, after, limit) => scanRuns(storage.dbs.planGoals, owner, after, limit, decodeGoal, (_runId, r) => r.id),
    parse(_owner, raw) {
      return { runId: runOf(raw), record: decodeGoal(0, raw) };
    },
    write(ctx, { runId, record }) {
      const { dbs } = storage;
      checkRoom(dbs.planGoals, ctx.owner, runId, PLANNING_LIMITS.goalsPerRun, "goals");
      // A parent goal is older than its children: an export lists it first.
      const parentId = record.parentId === "" ? "" : ctx.requireRef("goal", record.parentId, "record.parentId");
      const seq = nextSequence(dbs.meta, "goal");
      const goal: GoalRecord = { ...record, seq, id: goalIdOf(seq), parentId };
      dbs.planGoals.put([ctx.owner, runId, seq], goal);
      return created(goal.id);
    },
  };
}

export function actionKind(storage: Storage): TenantKind<InRun<ActionRecord>> {
  return {
    kind: "action",
    scan: (owner, after, limit) => scanRuns(storage.dbs.planActions, owner, after, limit, decodeAction, (_runId, r) => r.id),
    parse(_owner, raw) {
      const record = decodeAction(0, raw);
      checkJson("actionJson", record.actionJson);
      return { runId: runOf(raw), record };
    },
    write(ctx, { runId, record }) {
      const { dbs } = storage;
      checkRoom(dbs.planActions, ctx.owner, runId, PLANNING_LIMITS.logPerRun, "actions");
      const seq = nextSequence(dbs.meta, "action");
      const action: ActionRecord = { ...record, seq, id: actionIdOf(seq) };
      dbs.planActions.put([ctx.owner, runId, seq], action);
      return created(action.id);
    },
  };
}

export function cycleKind(storage: Storage): TenantKind<InRun<CycleRecord>> {
  return {
    kind: "cycle",
    scan: (owner, after, limit) => scanRuns(storage.dbs.planCycles, owner, after, limit, decodeCycle, (runId, r) => keyId([runId, r.cycleNumber])),
    parse(_owner, raw) {
      const record = decodeCycle(0, raw);
      if (record.cycleNumber < 1) throw recordFault("cycleNumber", "must be a positive integer");
      return { runId: runOf(raw), record };
    },
    write(ctx, { runId, record }) {
      const { dbs } = storage;
      const key: Key = [ctx.owner, runId, record.cycleNumber];
      if (dbs.planCycles.get(key) !== undefined) throw recordFault("cycleNumber", "the run already has a decision cycle of this number in this memory", Code.AlreadyExists);
      checkRoom(dbs.planCycles, ctx.owner, runId, PLANNING_LIMITS.logPerRun, "decision cycles");
      // The log keeps a run's latest actions only: a cycle's action may be gone, and then it names none.
      const actionId = record.actionId === "" ? "" : (ctx.ref("action", record.actionId) ?? "");
      const { selected, ...rest } = record;
      // msgpack would keep an undefined field; a cycle without a decision is stored without it.
      dbs.planCycles.put(key, selected === undefined ? { ...rest, actionId } : { ...rest, selected, actionId });
      return created(keyId([runId, record.cycleNumber]));
    },
  };
}
