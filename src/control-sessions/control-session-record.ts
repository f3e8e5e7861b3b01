// A control session as stored: one record per run of an owner, decoded with its schema version on every read.
import type { Key } from "lmdb";
import { openRecord } from "../storage/record-codec.js";

/** Phases a record can hold; `closing` exists only while a close runs (see ControlSessionStore.phaseOf). */
export const STORED_PHASES = ["active", "closed"] as const;
export type StoredPhase = (typeof STORED_PHASES)[number];
/** Every phase a reader sees: the stored ones and the transient `closing`. */
export type ControlSessionPhase = StoredPhase | "closing";

export const CONTROL_SESSION_RECORD_VERSION = 1;

export interface ControlSessionRecord {
  readonly v: typeof CONTROL_SESSION_RECORD_VERSION;
  readonly owner: number;
  readonly runId: string;
  readonly agentId: string;
  readonly description: string;
  readonly projectId: string;
  readonly phase: StoredPhase;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  /** Milliseconds since the epoch; 0 until closed. */
  readonly closedAt: number;
  /** Highest entry seq when the session was created: entries above it count. */
  readonly startSeq: number;
  /** Highest entry seq when the close began: entries up to it count; 0 while active. */
  readonly endSeq: number;
  /** Reference id of the final checkpoint; "" until closed. */
  readonly finalCheckpointId: string;
}

export function controlSessionKey(owner: number, runId: string): Key {
  return [owner, runId];
}

export function decodeControlSession(key: Key, value: unknown): ControlSessionRecord {
  const r = openRecord("control_sessions", key, value, CONTROL_SESSION_RECORD_VERSION);
  return {
    v: CONTROL_SESSION_RECORD_VERSION,
    owner: r.integer("owner"),
    runId: r.string("runId"),
    agentId: r.string("agentId"),
    description: r.string("description"),
    projectId: r.string("projectId"),
    phase: r.oneOf("phase", STORED_PHASES),
    createdAt: r.number("createdAt"),
    closedAt: r.number("closedAt"),
    startSeq: r.integer("startSeq"),
    endSeq: r.integer("endSeq"),
    finalCheckpointId: r.string("finalCheckpointId"),
  };
}
