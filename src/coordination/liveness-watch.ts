// Announces agents going idle, gone or active again. Liveness is derived from the age of an agent's last heartbeat,
// so nothing is written when it changes; this watch keeps the agents not yet gone in memory (loaded at start-up,
// refreshed by every registration and heartbeat) and publishes `agent.liveness_changed` once per change.
import type { EventBus } from "../events/event-bus.js";
import type { ReplayedWrite, Storage } from "../storage/database.js";
import { decodeAgent, livenessOf, type AgentRecord, type Liveness, type LivenessThresholds } from "./agent-record.js";

interface Watched {
  readonly owner: number;
  readonly runId: string;
  readonly agentId: string;
  heartbeatAt: number;
  /** The liveness last announced; when another node announces the agent, the liveness it last reached. */
  announced: Liveness;
}

/** How often liveness is checked: often enough to announce a change within a quarter of the shorter threshold. */
function intervalOf(thresholds: LivenessThresholds): number {
  return Math.min(15_000, Math.max(10, Math.floor(Math.min(thresholds.idleAfterMs, thresholds.goneAfterMs) / 4)));
}

export class LivenessWatch {
  readonly #events: EventBus;
  readonly #thresholds: LivenessThresholds;
  readonly #now: () => number;
  /** Whether the agent is still registered (a deleted run's agents are dropped, never announced). */
  readonly #exists: (owner: number, runId: string, agentId: string) => boolean;
  /** Agents not yet gone, by owner, run and agent id. */
  readonly #watched = new Map<string, Watched>();
  /**
   * Whether this node announces the owner's agents. Clustered, one node does (the first live node, by id, of the
   * owner's shard: ClusterNode.announcesFor), and the event relay carries its announcements to every node's
   * subscribers; the others follow silently, and the next node takes over if it is lost.
   */
  readonly #announces: (owner: number) => boolean;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    events: EventBus,
    thresholds: LivenessThresholds,
    exists: (owner: number, runId: string, agentId: string) => boolean,
    now: () => number = Date.now,
    announces: (owner: number) => boolean = () => true,
  ) {
    this.#announces = announces;
    this.#events = events;
    this.#exists = exists;
    this.#thresholds = thresholds;
    this.#now = now;
  }

  /** Start-up: every registered agent not gone yet, as it last reads. */
  load(storage: Storage): void {
    const now = this.#now();
    for (const { key, value } of storage.dbs.agents.getRange()) {
      const agent = decodeAgent(key, value);
      const liveness = livenessOf(agent.heartbeatAt, now, this.#thresholds);
      if (liveness !== "gone") this.#watched.set(keyOf(agent), { ...identity(agent), heartbeatAt: agent.heartbeatAt, announced: liveness });
    }
  }

  /**
   * After a committed registration or heartbeat: the agent is active now, announced when it was idle or gone before
   * (`previousHeartbeatAt`: its heartbeat before this one; undefined for a new agent, which `agent.registered` announces).
   */
  seen(agent: AgentRecord, previousHeartbeatAt: number | undefined): void {
    this.#see(agent, previousHeartbeatAt);
  }

  /**
   * Clustered mode: the writes of a command another node computed, committed here: each registration and heartbeat
   * it made is watched here as if made here (announced when this node announces the owner's agents). A removed agent
   * (its run deleted) leaves the watch at its next change of liveness, as when the removal is made here.
   */
  replayed(writes: readonly ReplayedWrite[]): void {
    for (const { db, key, before, after } of writes) {
      if (db !== "agents" || after === undefined) continue;
      this.#see(decodeAgent(key, after), before === undefined ? undefined : decodeAgent(key, before).heartbeatAt);
    }
  }

  #see(agent: AgentRecord, previousHeartbeatAt: number | undefined): void {
    const key = keyOf(agent);
    const watched: Watched = { ...identity(agent), heartbeatAt: agent.heartbeatAt, announced: "active" };
    // What subscribers were last told: the liveness last announced or reached, or else the one the agent had reached
    // by the age of its previous heartbeat.
    const before = this.#watched.get(key)?.announced ?? (previousHeartbeatAt === undefined ? "active" : livenessOf(previousHeartbeatAt, this.#now(), this.#thresholds));
    if (before !== "active" && this.#announces(agent.owner)) this.#announce({ ...watched, announced: before }, "active");
    this.#watched.set(key, watched);
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.check(), intervalOf(this.#thresholds));
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Announces every change of liveness since the last check; gone agents leave the watch until they beat again. */
  check(): void {
    const now = this.#now();
    for (const [key, watched] of this.#watched) {
      const liveness = livenessOf(watched.heartbeatAt, now, this.#thresholds);
      if (liveness === watched.announced) continue;
      if (!this.#exists(watched.owner, watched.runId, watched.agentId)) {
        this.#watched.delete(key);
        continue;
      }
      if (this.#announces(watched.owner)) this.#announce(watched, liveness);
      else watched.announced = liveness;
      if (liveness === "gone") this.#watched.delete(key);
    }
  }

  #announce(watched: Watched, liveness: Liveness): void {
    this.#events.publish({
      type: "agent.liveness_changed",
      owner: watched.owner,
      runId: watched.runId,
      agentId: watched.agentId,
      payload: JSON.stringify({ agent_id: watched.agentId, from: watched.announced, to: liveness, heartbeat_at: new Date(watched.heartbeatAt).toISOString() }),
    });
    watched.announced = liveness;
  }
}

function identity(agent: AgentRecord): { owner: number; runId: string; agentId: string } {
  return { owner: agent.owner, runId: agent.runId, agentId: agent.agentId };
}

function keyOf(agent: Pick<AgentRecord, "owner" | "runId" | "agentId">): string {
  return JSON.stringify([agent.owner, agent.runId, agent.agentId]);
}
