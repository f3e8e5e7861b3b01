// Run-scoped variables: JSON values under a name, written durably with an optional compare-and-set on their version,
// and announced on the control event stream after the commit.
import { Code, ConnectError } from "@connectrpc/connect";
import type { EventBus } from "../events/event-bus.js";
import { nextSequence, type Storage } from "../storage/database.js";
import { decodeOptional } from "../storage/record-codec.js";
import { quoted } from "../platform/errors.js";
import { PLANNING_LIMITS, decodeVariable, newRecordVersion, type VarType, type VariableRecord, type VariableSource } from "./planning-records.js";
import { runRange } from "../storage/key-range.js";

export interface VariableWrite {
  readonly owner: number;
  readonly runId: string;
  readonly name: string;
  readonly valueJson: string;
  readonly varType: VarType;
  readonly source: VariableSource;
  /** Compare-and-set: the version the variable must be at (0: must not exist); undefined writes unconditionally. */
  readonly expectedVersion: number | undefined;
}

export interface VariablePage {
  readonly variables: readonly VariableRecord[];
  /** Name to continue after; undefined on the last page. */
  readonly nextAfter: string | undefined;
}

export class Variables {
  readonly #storage: Storage;
  readonly #events: EventBus;

  constructor(storage: Storage, events: EventBus) {
    this.#storage = storage;
    this.#events = events;
  }

  async set(write: VariableWrite): Promise<VariableRecord> {
    const { owner, runId, name } = write;
    const record = await this.#storage.transaction(() => {
      const { dbs } = this.#storage;
      const current = this.#read(owner, runId, name);
      checkVersion(name, current, write.expectedVersion);
      if (current === undefined && this.count(owner, runId) >= PLANNING_LIMITS.variablesPerRun) {
        throw new ConnectError(`run already holds ${PLANNING_LIMITS.variablesPerRun} variables; delete one first`, Code.ResourceExhausted);
      }
      const now = Date.now();
      const next: VariableRecord = {
        v: newRecordVersion,
        name,
        valueJson: write.valueJson,
        varType: write.varType,
        source: write.source,
        version: nextSequence(dbs.meta, "variable_version"),
        accessCount: current?.accessCount ?? 0,
        createdAt: current?.createdAt ?? now,
        updatedAt: now,
      };
      dbs.planVariables.put([owner, runId, name], next);
      return next;
    });
    this.#events.publish({
      type: "variable.set",
      owner,
      runId,
      agentId: "",
      payload: JSON.stringify({ name, var_type: record.varType, version: record.version }),
    });
    return record;
  }

  /** Reads a variable and durably counts the access; undefined when it does not exist. */
  async get(owner: number, runId: string, name: string): Promise<VariableRecord | undefined> {
    if (this.#read(owner, runId, name) === undefined) return undefined;
    return this.#storage.transaction(() => {
      const current = this.#read(owner, runId, name);
      if (current === undefined) return undefined;
      const counted: VariableRecord = { ...current, accessCount: current.accessCount + 1 };
      this.#storage.dbs.planVariables.put([owner, runId, name], counted);
      return counted;
    });
  }

  list(owner: number, runId: string, after: string | undefined, limit: number): VariablePage {
    const range = runRange(owner, runId);
    const start = after === undefined ? range.start : [owner, runId, after];
    const variables: VariableRecord[] = [];
    let more = false;
    for (const { key, value } of this.#storage.dbs.planVariables.getRange({ start, end: range.end, limit: limit + 2 })) {
      const record = decodeVariable(key, value);
      if (record.name === after) continue;
      if (variables.length === limit) {
        more = true;
        break;
      }
      variables.push(record);
    }
    return { variables, nextAfter: more ? variables[variables.length - 1]?.name : undefined };
  }

  /** Deletes a variable; false when it does not exist. */
  async delete(owner: number, runId: string, name: string, expectedVersion: number | undefined): Promise<boolean> {
    const deleted = await this.#storage.transaction(() => {
      const current = this.#read(owner, runId, name);
      if (current === undefined) return false;
      checkVersion(name, current, expectedVersion);
      this.#storage.dbs.planVariables.remove([owner, runId, name]);
      return true;
    });
    if (deleted) this.#events.publish({ type: "variable.deleted", owner, runId, agentId: "", payload: JSON.stringify({ name }) });
    return deleted;
  }

  count(owner: number, runId: string): number {
    return this.#storage.dbs.planVariables.getKeysCount(runRange(owner, runId));
  }

  #read(owner: number, runId: string, name: string): VariableRecord | undefined {
    const key = [owner, runId, name];
    return decodeOptional(this.#storage.dbs.planVariables.get(key), (value) => decodeVariable(key, value));
  }
}

/** Compare-and-set: refuses with ABORTED (409) unless the variable is at the expected version (0: absent). */
function checkVersion(name: string, current: VariableRecord | undefined, expected: number | undefined): void {
  if (expected === undefined) return;
  const actual = current?.version ?? 0;
  if (actual === expected) return;
  const now = current === undefined ? "does not exist" : `is at version ${actual}`;
  throw new ConnectError(`variable ${quoted(name)} ${now}, not at expected_version ${expected}`, Code.Aborted);
}
