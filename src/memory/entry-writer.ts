// The one path by which entries are stored: prepare (embed, postings), commit durably, index, announce.
import type { EventBus } from "../events/event-bus.js";
import type { Metrics } from "../platform/metrics.js";
import { seqOfEntryId, type EntryStore, type NewEntry, type PreparedEntry, type WrittenEntry } from "../storage/entry-store.js";
import type { MemoryIndex } from "./memory-index.js";
import type { SpaceVector } from "../storage/vector-space-store.js";
import type { Consolidator } from "./consolidation.js";

export interface EntryToWrite {
  readonly entry: NewEntry;
  /** A caller-supplied vector of the embedder's dimension; the content is embedded when absent. */
  readonly vector?: Float32Array | undefined;
  /** Caller vectors of any dimension, stored besides the entry's vector in the owner's named vector spaces. */
  readonly spaceVectors?: readonly SpaceVector[] | undefined;
  /** False: this fact is not merged with a near-duplicate of its scope (consolidation.ts); default true. */
  readonly consolidate?: boolean | undefined;
}

export class EntryWriter {
  readonly #entries: EntryStore;
  readonly #index: MemoryIndex;
  readonly #events: EventBus;
  readonly #metrics: Metrics;
  #consolidator: Consolidator | undefined;

  constructor(entries: EntryStore, index: MemoryIndex, events: EventBus, metrics: Metrics) {
    this.#entries = entries;
    this.#index = index;
    this.#events = events;
    this.#metrics = metrics;
  }

  /** Merges near-duplicate facts after each write from now on (wired once at start-up). */
  consolidateWith(consolidator: Consolidator): void {
    this.#consolidator = consolidator;
  }

  /**
   * After a commit made elsewhere (an ingest job's transaction): `committed`, then written facts (where `wanted[i]` is
   * not false) merged with near-duplicates of their scope, each checked as it is indexed (never throws for a merge).
   */
  async indexAndMerge(written: readonly WrittenEntry[], prepared: readonly PreparedEntry[], source: string, wanted?: readonly boolean[]): Promise<void> {
    const check = this.#consolidator?.check(written, prepared, wanted);
    this.committed(written, prepared, source, check?.indexed);
    if (check !== undefined) await this.#consolidator?.afterWrite(check);
  }

  prepare(items: readonly EntryToWrite[]): Promise<PreparedEntry[]> {
    return this.#index.prepare(items);
  }

  /** Stores entries in one durable transaction and makes them searchable before resolving. */
  async write(items: readonly EntryToWrite[], source = "write"): Promise<WrittenEntry[]> {
    if (items.length === 0) return [];
    const prepared = await this.prepare(items);
    const written = await this.#entries.append(prepared);
    await this.indexAndMerge(written, prepared, source, items.map((item) => item.consolidate !== false));
    return written;
  }

  /**
   * Whether stored entries are searchable here. Clustered, a command another node computed is in this store a moment
   * before its entries are indexed (they are, once its commit is done): an entry the store holds and the index does
   * not yet is not. One the store no longer holds (deleted since) does not hold anything back.
   */
  searchable(ids: readonly string[]): boolean {
    return ids.every((id) => {
      const seq = seqOfEntryId(id);
      return seq === undefined || this.#index.catalog.has(seq) || this.#entries.get(seq) === undefined;
    });
  }

  /**
   * After a commit made elsewhere: index, count and announce the entries; `indexed(i)` is called as the `i`-th is
   * indexed (see MemoryIndex.indexWritten).
   */
  committed(written: readonly WrittenEntry[], prepared: readonly PreparedEntry[], source: string, indexed?: (i: number) => void): void {
    this.#index.indexWritten(written, prepared, indexed);
    this.#metrics.storageWrites.inc({ kind: "entry" }, written.length);
    // Counted per entry type in one call each, and events built only when someone subscribes: a bulk ingest
    // otherwise spent more on these than on its LMDB writes' bookkeeping.
    const byType = new Map<string, number>();
    for (const { record } of written) byType.set(record.entryType, (byType.get(record.entryType) ?? 0) + 1);
    for (const [entryType, count] of byType) this.#metrics.ingestItems.inc({ entry_type: entryType }, count);
    if (!this.#events.listened) return;
    for (const { record, superseded } of written) {
      this.#events.publish({
        type: "entry.created",
        owner: record.owner,
        runId: record.runId,
        agentId: record.agentId,
        payload: JSON.stringify({
          entry_id: record.id,
          entry_type: record.entryType,
          user_id: record.userId,
          lane: record.lane,
          upsert_key: record.upsertKey,
          source,
        }),
      });
      if (superseded !== undefined) {
        this.#events.publish({
          type: "entry.superseded",
          owner: record.owner,
          runId: record.runId,
          agentId: record.agentId,
          payload: JSON.stringify({ entry_id: superseded.id, superseded_by: record.id }),
        });
      }
      if (record.entryType === "lesson" || record.entryType === "rule") {
        this.#events.publish({
          type: "lesson.created",
          owner: record.owner,
          runId: record.runId,
          agentId: record.agentId,
          payload: JSON.stringify({
            lesson_id: record.id,
            lesson_type: record.lessonType,
            scope: record.lessonScope,
            importance: record.importance,
            auto_extracted: record.derived,
          }),
        });
      }
    }
  }
}
