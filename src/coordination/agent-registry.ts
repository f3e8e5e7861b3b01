// Agents registered in runs: registration (create or replace), heartbeats, paged listing, and the lookups the memory
// routes use to apply an agent's lanes and scopes. Records are filed under [owner, run_id, agent_id]; every write runs
// in one transaction and its event is published after the commit.
import type { Key } from "lmdb";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Storage } from "../storage/database.js";
import { decodeOptional } from "../storage/record-codec.js";
import type { EventBus } from "../events/event-bus.js";
import type { EntryType } from "../storage/entry-record.js";
import { AGENT_RECORD_VERSION, decodeAgent, type AgentRecord } from "./agent-record.js";
import { runEnd, runRange } from "../storage/key-range.js";
import { readViewOf, writeRefusal, type ReadView, type WriteIntent, type WriteRefusal } from "./agent-access.js";
import type { LivenessWatch } from "./liveness-watch.js";

/** Most agents one run may hold: a run's agent list is read whole by ListAgents pages and never grows without bound. */
export const MAX_AGENTS_PER_RUN = 1000;

export interface Registration {
  readonly owner: number;
  readonly runId: string;
  readonly agentId: string;
  readonly role: string;
  readonly capabilities: readonly string[];
  readonly status: string;
  readonly readScopes: readonly EntryType[];
  readonly writeScopes: readonly EntryType[];
  readonly lanes: readonly string[];
  readonly metadataJson: string;
}

export interface Heartbeat {
  readonly owner: number;
  readonly runId: string;
  readonly agentId: string;
  /** "" keeps the current one. */
  readonly status: string;
  /** "" keeps the current one. */
  readonly progress: string;
}

export interface AgentPage {
  readonly agents: AgentRecord[];
  /** The last agent id of the page when more may follow; undefined on the last page. */
  readonly nextAfter: string | undefined;
}

export class AgentRegistry {
  readonly #storage: Storage;
  readonly #events: EventBus;
  readonly #now: () => number;
  /** Told of every committed registration and heartbeat, to announce liveness changes (see liveness-watch.ts). */
  #watch: Pick<LivenessWatch, "seen"> | undefined;

  constructor(storage: Storage, events: EventBus, now: () => number = Date.now) {
    this.#storage = storage;
    this.#events = events;
    this.#now = now;
  }

  now(): number {
    return this.#now();
  }

  watchWith(watch: Pick<LivenessWatch, "seen">): void {
    this.#watch = watch;
  }

  get(owner: number, runId: string, agentId: string): AgentRecord | undefined {
    const key: Key = [owner, runId, agentId];
    return decodeOptional(this.#storage.dbs.agents.get(key), (value) => decodeAgent(key, value));
  }

  /** Creates or replaces the agent; a replacement keeps `registeredAt`. Registration counts as a heartbeat. */
  async register(reg: Registration): Promise<{ agent: AgentRecord; created: boolean }> {
    const now = this.#now();
    const result = await this.#storage.transaction(() => {
      const { agents } = this.#storage.dbs;
      const key: Key = [reg.owner, reg.runId, reg.agentId];
      const existing = decodeOptional(agents.get(key), (value) => decodeAgent(key, value));
      if (existing === undefined && this.#count(reg.owner, reg.runId) >= MAX_AGENTS_PER_RUN) {
        throw new ConnectError(`run_id: the run already holds ${MAX_AGENTS_PER_RUN} agents, the most a run may hold`, Code.ResourceExhausted);
      }
      const agent: AgentRecord = {
        v: AGENT_RECORD_VERSION,
        ...reg,
        capabilities: [...reg.capabilities],
        readScopes: [...reg.readScopes],
        writeScopes: [...reg.writeScopes],
        lanes: [...reg.lanes],
        progress: existing?.progress ?? "",
        registeredAt: existing?.registeredAt ?? now,
        heartbeatAt: now,
      };
      agents.put(key, agent);
      return { agent, created: existing === undefined, previousHeartbeatAt: existing?.heartbeatAt };
    });
    this.#events.publish({
      type: "agent.registered",
      owner: reg.owner,
      runId: reg.runId,
      agentId: reg.agentId,
      payload: JSON.stringify({ agent_id: reg.agentId, role: reg.role, status: reg.status, shared_memory_lanes: reg.lanes, created: result.created }),
    });
    this.#watch?.seen(result.agent, result.previousHeartbeatAt);
    return { agent: result.agent, created: result.created };
  }

  /** Records a heartbeat; undefined when the agent is not registered in the run. */
  async heartbeat(beat: Heartbeat): Promise<AgentRecord | undefined> {
    const now = this.#now();
    const result = await this.#storage.transaction(() => {
      const key: Key = [beat.owner, beat.runId, beat.agentId];
      const existing = decodeOptional(this.#storage.dbs.agents.get(key), (value) => decodeAgent(key, value));
      if (existing === undefined) return undefined;
      const agent: AgentRecord = {
        ...existing,
        status: beat.status === "" ? existing.status : beat.status,
        progress: beat.progress === "" ? existing.progress : beat.progress,
        heartbeatAt: now,
      };
      this.#storage.dbs.agents.put(key, agent);
      return { agent, previousStatus: existing.status, previousHeartbeatAt: existing.heartbeatAt };
    });
    if (result === undefined) return undefined;
    this.#watch?.seen(result.agent, result.previousHeartbeatAt);
    if (result.agent.status !== result.previousStatus) {
      this.#events.publish({
        type: "agent.status_changed",
        owner: beat.owner,
        runId: beat.runId,
        agentId: beat.agentId,
        payload: JSON.stringify({ agent_id: beat.agentId, from: result.previousStatus, to: result.agent.status }),
      });
    }
    return result.agent;
  }

  /** A page of the run's agents by agent id, starting after `after` ("" from the start). */
  list(owner: number, runId: string, after: string, limit: number): AgentPage {
    const agents: AgentRecord[] = [];
    const start: Key = after === "" ? [owner, runId] : [owner, runId, after];
    for (const { key, value } of this.#storage.dbs.agents.getRange({ start, end: runEnd(owner, runId) })) {
      const agent = decodeAgent(key, value);
      if (after !== "" && agent.agentId === after) continue;
      if (agents.length === limit) return { agents, nextAfter: agents[agents.length - 1]?.agentId };
      agents.push(agent);
    }
    return { agents, nextAfter: undefined };
  }

  /**
   * A check of the items a write names `agentId` for: each item's refusal (undefined when allowed), by index. Every
   * item is allowed when `agentId` is empty or not registered in the run.
   */
  writeCheck(owner: number, runId: string, agentId: string): (item: WriteIntent) => WriteRefusal | undefined {
    const agent = agentId === "" ? undefined : this.get(owner, runId, agentId);
    return agent === undefined ? () => undefined : (item) => writeRefusal(agent, item);
  }

  /** The read view of a registered agent; undefined when `agentId` is empty or not registered in the run. */
  readView(owner: number, runId: string, agentId: string): ReadView | undefined {
    if (agentId === "") return undefined;
    const agent = this.get(owner, runId, agentId);
    return agent === undefined ? undefined : readViewOf(agent);
  }

  /** Removes every agent of a run; call inside a write transaction (run deletion). Returns how many. */
  deleteRunInTransaction(owner: number, runId: string): number {
    const { agents } = this.#storage.dbs;
    let removed = 0;
    for (const key of agents.getKeys(runRange(owner, runId))) {
      agents.remove(key);
      removed++;
    }
    return removed;
  }

  #count(owner: number, runId: string): number {
    return this.#storage.dbs.agents.getKeysCount(runRange(owner, runId));
  }
}

