// The caller's runs at a glance: a small in-memory summary per owner and run (entry counts by type, the agents that
// wrote, the newest entry), kept current by the catalog's add/remove notifications and so rebuilt from LMDB with the
// catalog at start-up. Listing reads these summaries, never the entries: its cost grows with the owner's number of
// runs, not with the number of entries.
import type { Catalog, CatalogObserver, ExpiredGroup } from "../retrieval/catalog.js";
import type { EntryRecord, EntryType } from "../storage/entry-store.js";

/** What is known of one of an owner's runs. */
interface RunStats {
  count: number;
  readonly byType: Map<EntryType, number>;
  /** Agent id → entries by it; insertion order is the order of first appearance. */
  readonly agents: Map<string, number>;
  /** Seq of the run's newest entry; -1 once it was removed, until the next listing looks it up again. */
  newestSeq: number;
}

/** One run as a listing shows it. */
export interface RunView {
  readonly runId: string;
  readonly entryCount: number;
  readonly entryCounts: Readonly<Record<string, number>>;
  readonly agentIds: readonly string[];
  /** Unix milliseconds of the run's oldest and newest present entries. */
  readonly createdAt: number;
  readonly lastActivityAt: number;
}

/** Where a page starts: after this run in the listing order (newest activity first, then run id). */
export interface RunCursor {
  readonly lastActivityAt: number;
  readonly runId: string;
}

export interface RunPage {
  readonly runs: readonly RunView[];
  /** The caller's runs over all pages. */
  readonly total: number;
  /** Where the next page starts; undefined on the last page. */
  readonly next: RunCursor | undefined;
}

function increment<K>(counts: Map<K, number>, key: K): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

function decrement<K>(counts: Map<K, number>, key: K, by = 1): void {
  const next = (counts.get(key) ?? 0) - by;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}

/** Whether run `a` is listed before run `b`: newer activity first, then run id ascending. */
function before(a: RunCursor, b: RunCursor): boolean {
  return a.lastActivityAt !== b.lastActivityAt ? a.lastActivityAt > b.lastActivityAt : a.runId < b.runId;
}

export class RunDirectory implements CatalogObserver {
  readonly #catalog: Catalog;
  /** owner → run id → summary. */
  readonly #owners = new Map<number, Map<string, RunStats>>();
  /** Agent id of each entry (interned), so that a removal knows whose count to lower. */
  #agentOf = new Int32Array(1024);
  readonly #agentIds = new Map<string, number>();
  readonly #agentNames: string[] = [];

  /** Observes the catalog: construct before the catalog loads, so every stored entry is counted. */
  constructor(catalog: Catalog) {
    this.#catalog = catalog;
    catalog.observe(this);
  }

  added(record: EntryRecord): void {
    // Run "" holds knowledge that outlived its deleted run (see EntryStore.rehomeInTransaction): not a run to list.
    if (record.runId === "") return;
    let runs = this.#owners.get(record.owner);
    if (runs === undefined) this.#owners.set(record.owner, (runs = new Map()));
    let stats = runs.get(record.runId);
    if (stats === undefined) runs.set(record.runId, (stats = { count: 0, byType: new Map(), agents: new Map(), newestSeq: record.seq }));
    stats.count++;
    increment(stats.byType, record.entryType);
    if (record.agentId !== "") increment(stats.agents, record.agentId);
    if (stats.newestSeq !== -1 && record.seq > stats.newestSeq) stats.newestSeq = record.seq;
    this.#rememberAgent(record.seq, record.agentId);
  }

  removed(seq: number, owner: number, runId: string, entryType: EntryType): void {
    const runs = this.#owners.get(owner);
    const stats = runs?.get(runId);
    if (runs === undefined || stats === undefined) return;
    stats.count--;
    decrement(stats.byType, entryType);
    const agent = this.#agentNames[this.#agentOf[seq] ?? 0] ?? "";
    if (agent !== "") decrement(stats.agents, agent);
    if (seq === stats.newestSeq) stats.newestSeq = -1;
    if (stats.count <= 0) runs.delete(runId);
    if (runs.size === 0) this.#owners.delete(owner);
  }

  expired({ owner, runId, entryType, agentId, count }: ExpiredGroup): void {
    const runs = this.#owners.get(owner);
    const stats = runs?.get(runId);
    if (runs === undefined || stats === undefined) return;
    stats.count -= count;
    decrement(stats.byType, entryType, count);
    if (agentId !== "") decrement(stats.agents, agentId, count);
    // Whether the newest entry was among them is not known here: the next listing looks it up (from the list's end).
    stats.newestSeq = -1;
    if (stats.count <= 0) runs.delete(runId);
    if (runs.size === 0) this.#owners.delete(owner);
  }

  /** Nothing to do: an expired entry left the counts when it expired. */
  released(): void {}

  /** How many runs the owner has. */
  runCount(owner: number): number {
    this.#catalog.expireDue();
    return this.#owners.get(owner)?.size ?? 0;
  }

  /** One of the owner's runs as a listing shows it; undefined when it holds no entry. */
  run(owner: number, runId: string): RunView | undefined {
    this.#catalog.expireDue();
    const stats = this.#owners.get(owner)?.get(runId);
    if (stats === undefined) return undefined;
    return this.#view(owner, { runId, lastActivityAt: this.#catalog.createdAt(this.#newestSeq(owner, runId, stats)) }, stats);
  }

  /**
   * One page of the owner's runs, newest activity first. Reads each of the owner's run summaries once and keeps the
   * `limit` first after the cursor (a bounded insertion), so a page costs O(runs · log limit).
   */
  page(owner: number, limit: number, after: RunCursor | undefined): RunPage {
    this.#catalog.expireDue();
    const runs = this.#owners.get(owner);
    if (runs === undefined) return { runs: [], total: 0, next: undefined };
    const kept: RunCursor[] = [];
    let more = false;
    for (const [runId, stats] of runs) {
      const at: RunCursor = { runId, lastActivityAt: this.#catalog.createdAt(this.#newestSeq(owner, runId, stats)) };
      if (after !== undefined && !before(after, at)) continue;
      let lo = 0;
      let hi = kept.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (before(kept[mid] as RunCursor, at)) lo = mid + 1;
        else hi = mid;
      }
      if (lo >= limit) {
        more = true;
        continue;
      }
      kept.splice(lo, 0, at);
      if (kept.length > limit) {
        kept.pop();
        more = true;
      }
    }
    const views = kept.map((at) => this.#view(owner, at, runs.get(at.runId) as RunStats));
    return { runs: views, total: runs.size, next: more ? kept[kept.length - 1] : undefined };
  }

  #view(owner: number, at: RunCursor, stats: RunStats): RunView {
    const first = this.#catalog.edgeSeq(owner, at.runId, false);
    return {
      runId: at.runId,
      entryCount: stats.count,
      entryCounts: Object.fromEntries(stats.byType),
      agentIds: [...stats.agents.keys()],
      createdAt: first === undefined ? at.lastActivityAt : this.#catalog.createdAt(first),
      lastActivityAt: at.lastActivityAt,
    };
  }

  /** The run's newest entry, looked up again in the catalog after it was removed. */
  #newestSeq(owner: number, runId: string, stats: RunStats): number {
    if (stats.newestSeq === -1) stats.newestSeq = this.#catalog.edgeSeq(owner, runId, true) ?? 0;
    return stats.newestSeq;
  }

  #rememberAgent(seq: number, agentId: string): void {
    if (seq >= this.#agentOf.length) {
      const grown = new Int32Array(Math.max(seq + 1, this.#agentOf.length * 2));
      grown.set(this.#agentOf);
      this.#agentOf = grown;
    }
    let id = this.#agentIds.get(agentId);
    if (id === undefined) {
      id = this.#agentNames.length;
      this.#agentIds.set(agentId, id);
      this.#agentNames.push(agentId);
    }
    this.#agentOf[seq] = id;
  }
}
