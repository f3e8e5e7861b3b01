// The planning record kinds in LMDB (variables, concepts, goals, actions, decision cycles), their vocabularies and
// limits, and one decoder per kind: every read checks a record against its schema version instead of casting it.
import type { Key } from "lmdb";
import { openRecord, type RecordReader } from "../storage/record-codec.js";
import { IMPORTANCE_LEVELS } from "../storage/entry-record.js";

export const VARIABLE_SOURCES = ["explicit", "system", "reasoning", "retrieval", "perception"] as const;
export type VariableSource = (typeof VARIABLE_SOURCES)[number];
export const VAR_TYPES = ["string", "number", "boolean", "object", "array", "null"] as const;
export type VarType = (typeof VAR_TYPES)[number];
export const GOAL_STATUSES = ["active", "suspended", "achieved", "abandoned", "failed"] as const;
export type GoalStatus = (typeof GOAL_STATUSES)[number];
/** Goal priorities are the entry importance levels. */
export const GOAL_PRIORITIES = IMPORTANCE_LEVELS;
export type GoalPriority = (typeof GOAL_PRIORITIES)[number];
export const ACTION_TYPES = ["reason", "retrieve", "learn", "ground"] as const;
export type ActionType = (typeof ACTION_TYPES)[number];

/** Limits that keep a run's planning state bounded (written out in planning_service.proto). */
export const PLANNING_LIMITS = {
  variablesPerRun: 1000,
  conceptsPerRun: 1000,
  goalsPerRun: 1000,
  /** The action log and the cycle history keep this many of a run's latest records. */
  logPerRun: 1000,
  valueBytes: 64 * 1024,
  textBytes: 16 * 1024,
  relatedConcepts: 32,
  goalDepth: 16,
  candidates: 100,
  pageSize: 1000,
} as const;

const VERSION = 1;

export interface VariableRecord {
  readonly v: typeof VERSION;
  readonly name: string;
  readonly valueJson: string;
  readonly varType: VarType;
  readonly source: VariableSource;
  /** Store-wide write counter at the last write: the compare-and-set version. */
  readonly version: number;
  readonly accessCount: number;
  /** Unix milliseconds. */
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface ConceptRecord {
  readonly v: typeof VERSION;
  readonly name: string;
  readonly definition: string;
  readonly relatedConcepts: readonly string[];
  readonly schemaJson: string;
  /** Id of the memory entry holding the definition. */
  readonly entryId: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface GoalRecord {
  readonly v: typeof VERSION;
  readonly seq: number;
  readonly id: string;
  readonly description: string;
  readonly priority: GoalPriority;
  readonly status: GoalStatus;
  /** "" for a root goal. */
  readonly parentId: string;
  /** 1 for a root goal. */
  readonly depth: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface ActionRecord {
  readonly v: typeof VERSION;
  readonly seq: number;
  readonly id: string;
  readonly agentId: string;
  readonly actionType: ActionType;
  readonly actionJson: string;
  /** 0 for an action submitted directly. */
  readonly cycleNumber: number;
  readonly createdAt: number;
}

export interface CandidateRecord {
  readonly actionType: ActionType;
  readonly actionJson: string;
  readonly score: number;
  readonly rationale: string;
}

export interface CycleRecord {
  readonly v: typeof VERSION;
  readonly cycleNumber: number;
  readonly agentId: string;
  readonly observation: string;
  /** The decision; undefined when the cycle had no candidates. */
  readonly selected: CandidateRecord | undefined;
  /** Id of the action recorded for the decision; "" when none. */
  readonly actionId: string;
  readonly planningTimeMs: number;
  readonly createdAt: number;
}

export function goalIdOf(seq: number): string {
  return `goal_${seq.toString(36)}`;
}

export function seqOfGoalId(id: string): number | undefined {
  const match = /^goal_([0-9a-z]{1,10})$/.exec(id);
  return match ? parseInt(match[1] as string, 36) : undefined;
}

export function actionIdOf(seq: number): string {
  return `act_${seq.toString(36)}`;
}

export const newRecordVersion = VERSION;

export function decodeVariable(key: Key, value: unknown): VariableRecord {
  const r = openRecord("planning_variables", key, value, VERSION);
  return {
    v: VERSION,
    name: r.string("name"),
    valueJson: r.string("valueJson"),
    varType: r.oneOf("varType", VAR_TYPES),
    source: r.oneOf("source", VARIABLE_SOURCES),
    version: r.integer("version"),
    accessCount: r.integer("accessCount"),
    createdAt: r.number("createdAt"),
    updatedAt: r.number("updatedAt"),
  };
}

export function decodeConcept(key: Key, value: unknown): ConceptRecord {
  const r = openRecord("planning_concepts", key, value, VERSION);
  return {
    v: VERSION,
    name: r.string("name"),
    definition: r.string("definition"),
    relatedConcepts: r.strings("relatedConcepts"),
    schemaJson: r.string("schemaJson"),
    entryId: r.string("entryId"),
    createdAt: r.number("createdAt"),
    updatedAt: r.number("updatedAt"),
  };
}

export function decodeGoal(key: Key, value: unknown): GoalRecord {
  const r = openRecord("planning_goals", key, value, VERSION);
  return {
    v: VERSION,
    seq: r.integer("seq"),
    id: r.string("id"),
    description: r.string("description"),
    priority: r.oneOf("priority", GOAL_PRIORITIES),
    status: r.oneOf("status", GOAL_STATUSES),
    parentId: r.string("parentId"),
    depth: r.integer("depth"),
    createdAt: r.number("createdAt"),
    updatedAt: r.number("updatedAt"),
  };
}

export function decodeAction(key: Key, value: unknown): ActionRecord {
  const r = openRecord("planning_actions", key, value, VERSION);
  return {
    v: VERSION,
    seq: r.integer("seq"),
    id: r.string("id"),
    agentId: r.string("agentId"),
    actionType: r.oneOf("actionType", ACTION_TYPES),
    actionJson: r.string("actionJson"),
    cycleNumber: r.integer("cycleNumber"),
    createdAt: r.number("createdAt"),
  };
}

function decodeCandidate(r: RecordReader): CandidateRecord {
  return { actionType: r.oneOf("actionType", ACTION_TYPES), actionJson: r.string("actionJson"), score: r.number("score"), rationale: r.string("rationale") };
}

export function decodeCycle(key: Key, value: unknown): CycleRecord {
  const r = openRecord("planning_cycles", key, value, VERSION);
  return {
    v: VERSION,
    cycleNumber: r.integer("cycleNumber"),
    agentId: r.string("agentId"),
    observation: r.string("observation"),
    selected: r.has("selected") ? decodeCandidate(r.object("selected")) : undefined,
    actionId: r.string("actionId"),
    planningTimeMs: r.number("planningTimeMs"),
    createdAt: r.number("createdAt"),
  };
}

