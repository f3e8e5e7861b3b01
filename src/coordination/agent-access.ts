// What a registered agent may write and read: its lanes (plus no lane) and the entry types of its scopes.
import type { EntryType } from "../storage/entry-record.js";
import type { AgentRecord } from "./agent-record.js";

/** One item an agent wants to write: its lane ("" none) and entry type. */
export interface WriteIntent {
  readonly lane: string;
  readonly entryType: EntryType;
}

/** Why an agent may not write an item: the item's field at fault and the reason. */
export interface WriteRefusal {
  readonly field: "lane" | "entry_type";
  readonly reason: string;
}

/** Why the agent may not write the item, or undefined when it may. */
export function writeRefusal(agent: AgentRecord, item: WriteIntent): WriteRefusal | undefined {
  if (item.lane !== "" && !agent.lanes.includes(item.lane)) {
    return { field: "lane", reason: `agent "${agent.agentId}" does not participate in lane "${item.lane}" (its shared_memory_lanes: ${listed(agent.lanes)})` };
  }
  if (agent.writeScopes.length > 0 && !agent.writeScopes.includes(item.entryType)) {
    return { field: "entry_type", reason: `agent "${agent.agentId}" may not write entry type "${item.entryType}" (its write_scopes: ${listed(agent.writeScopes)})` };
  }
  return undefined;
}

/** What queries naming the agent may see: entries without a lane or in these lanes, of these types (undefined: all). */
export interface ReadView {
  readonly lanes: ReadonlySet<string>;
  readonly entryTypes: ReadonlySet<EntryType> | undefined;
}

export function readViewOf(agent: AgentRecord): ReadView {
  return {
    lanes: new Set(["", ...agent.lanes]),
    entryTypes: agent.readScopes.length === 0 ? undefined : new Set(agent.readScopes),
  };
}

/**
 * The entry types both a request's filter and the agent's read scopes allow (an empty set when they share none); the
 * request's filter alone without a view.
 */
export function narrowEntryTypes(requested: ReadonlySet<EntryType> | undefined, view: ReadView | undefined): ReadonlySet<EntryType> | undefined {
  if (view?.entryTypes === undefined) return requested;
  if (requested === undefined) return view.entryTypes;
  return new Set([...requested].filter((t) => view.entryTypes?.has(t) === true));
}

function listed(values: readonly string[]): string {
  return values.length === 0 ? "none" : values.join(", ");
}
