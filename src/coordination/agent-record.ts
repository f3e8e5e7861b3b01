// The agent record: an agent identity registered in a run, its decoder, and its liveness derived from heartbeats.
import { openRecord } from "../storage/record-codec.js";
import { ENTRY_TYPES, type EntryType } from "../storage/entry-record.js";

export const AGENT_RECORD_VERSION = 1;

/** Derived when an agent is read, from the age of its last heartbeat (see coordination_service.proto). */
export const LIVENESS = ["active", "idle", "gone"] as const;
export type Liveness = (typeof LIVENESS)[number];

export interface AgentRecord {
  readonly v: typeof AGENT_RECORD_VERSION;
  readonly owner: number;
  readonly runId: string;
  readonly agentId: string;
  readonly role: string;
  readonly capabilities: readonly string[];
  /** Self-reported status, e.g. `active`. */
  readonly status: string;
  readonly readScopes: readonly EntryType[];
  readonly writeScopes: readonly EntryType[];
  readonly lanes: readonly string[];
  readonly metadataJson: string;
  readonly progress: string;
  /** Unix milliseconds. */
  readonly registeredAt: number;
  readonly heartbeatAt: number;
}

export function decodeAgent(key: unknown, value: unknown): AgentRecord {
  const r = openRecord("coordination_agents", key, value, AGENT_RECORD_VERSION);
  const entryTypes = (field: string): EntryType[] => {
    const values = r.strings(field);
    for (const value of values) if (!(ENTRY_TYPES as readonly string[]).includes(value)) r.oneOf(field, ENTRY_TYPES);
    return values as EntryType[];
  };
  return {
    v: AGENT_RECORD_VERSION,
    owner: r.integer("owner"),
    runId: r.string("runId"),
    agentId: r.string("agentId"),
    role: r.string("role"),
    capabilities: r.strings("capabilities"),
    status: r.string("status"),
    readScopes: entryTypes("readScopes"),
    writeScopes: entryTypes("writeScopes"),
    lanes: r.strings("lanes"),
    metadataJson: r.string("metadataJson"),
    progress: r.string("progress"),
    registeredAt: r.number("registeredAt"),
    heartbeatAt: r.number("heartbeatAt"),
  };
}

export interface LivenessThresholds {
  /** Age of the last heartbeat from which an agent is `idle`, in milliseconds. */
  readonly idleAfterMs: number;
  /** Age from which it is `gone`. */
  readonly goneAfterMs: number;
}

export function livenessOf(heartbeatAt: number, now: number, thresholds: LivenessThresholds): Liveness {
  const age = now - heartbeatAt;
  if (age >= thresholds.goneAfterMs) return "gone";
  if (age >= thresholds.idleAfterMs) return "idle";
  return "active";
}
