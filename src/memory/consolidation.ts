// Consolidation: a fact written that says what a fact of the same scope (owner, run, user id, lane) already says is
// merged with it right after its commit. The candidates are the scope's nearest facts by vector (the index already
// holds them), so the check costs one small vector search per fact written; the test itself is near-duplicate.ts.
// The merge is one transaction (entry-store.ts absorbInTransaction): the kept entry lists the absorbed id, and every
// lookup by that id resolves to it. A failed merge leaves both entries as written: the write itself already succeeded.
// Facts stored before (by an earlier build, or while consolidation was off) are checked by an opt-in background pass
// at start-up (`sweep`), in bounded slices that yield between them.
import type { EventBus } from "../events/event-bus.js";
import type { BackgroundGate } from "../platform/background-gate.js";
import { inWriteScope } from "../storage/write-scope.js";
import type { Logger } from "../platform/logger.js";
import type { Storage } from "../storage/database.js";
import { isStaleRecord, type EntryRecord, type EntryStore, type PreparedEntry, type WrittenEntry } from "../storage/entry-store.js";
import type { MemoryIndex } from "./memory-index.js";
import { isNearDuplicate, keepsFirst } from "./near-duplicate.js";

/** Nearest facts of the scope checked per written fact. */
const CANDIDATES = 4;
const MERGE_REASON = "near-duplicate merged";
/** Stored entries the background pass reads per slice; it yields to requests between slices. */
const SWEEP_SLICE = 64;

export class Consolidator {
  readonly #storage: Storage;
  readonly #entries: EntryStore;
  readonly #index: MemoryIndex;
  readonly #events: EventBus;
  readonly #logger: Logger;
  readonly enabled: boolean;
  #sweeping: Promise<void> | undefined;
  #stopped = false;

  constructor(storage: Storage, entries: EntryStore, index: MemoryIndex, events: EventBus, logger: Logger, enabled: boolean) {
    this.#storage = storage;
    this.#entries = entries;
    this.#index = index;
    this.#events = events;
    this.#logger = logger;
    this.enabled = enabled;
  }

  /**
   * The background pass: checks every fact stored up to now, oldest first, as a write would, SWEEP_SLICE entries
   * at a time, waiting at `gate` and yielding between slices. Only the owners `worksFor` admits (clustered: the
   * shards this node serves). Facts written meanwhile were checked on write.
   */
  sweep(gate: BackgroundGate, worksFor: (owner: number) => boolean): void {
    if (!this.enabled || this.#sweeping !== undefined) return;
    const upTo = this.#entries.highestStoredSeq();
    this.#sweeping = this.#sweep(gate, worksFor, upTo)
      .catch((e: unknown) => this.#logger.error({ err: e }, "consolidation pass stopped; it runs again at the next start"))
      .finally(() => (this.#sweeping = undefined));
  }

  /** Resolves once no background pass runs (tests, shutdown). */
  async idle(): Promise<void> {
    await this.#sweeping;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#sweeping;
  }

  async #sweep(gate: BackgroundGate, worksFor: (owner: number) => boolean, upTo: number): Promise<void> {
    let merged = 0;
    for (let after = 0; after < upTo && !this.#stopped; ) {
      await gate.pass();
      const page = this.#entries.entriesPage(after, SWEEP_SLICE);
      if (page.length === 0) break;
      for (const stored of page) {
        if (stored.seq > upTo) break;
        // Read again: an earlier merge of this pass may have absorbed it.
        const record = this.#entries.get(stored.seq);
        const vector = record === undefined ? undefined : this.#index.dense.vector(record.seq);
        if (record === undefined || vector === undefined || !mergeable(record) || !worksFor(record.owner) || !this.#index.catalog.has(record.seq)) continue;
        try {
          if (await inWriteScope(record.owner, () => this.#consolidate(record, vector))) merged++;
        } catch (e: unknown) {
          this.#logger.warn({ err: e, entry_id: record.id }, "near-duplicate not merged; both entries kept");
        }
      }
      after = (page.at(-1) as EntryRecord).seq;
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (merged > 0) this.#logger.info({ merged }, "consolidation pass merged near-duplicate facts");
  }

  /**
   * Merges each written fact (where `wanted[i]` is not false) with a near-duplicate of its scope, if it has one. Call
   * once the entries are committed and indexed. Never throws: a merge that fails is logged and both entries stay.
   */
  async afterWrite(written: readonly WrittenEntry[], prepared: readonly PreparedEntry[], wanted?: readonly boolean[]): Promise<void> {
    if (!this.enabled) return;
    for (let i = 0; i < written.length; i++) {
      const { record } = written[i] as WrittenEntry;
      const vector = prepared[i]?.vector;
      if (wanted?.[i] === false || vector === undefined || !mergeable(record)) continue;
      try {
        await this.#consolidate(record, vector);
      } catch (e: unknown) {
        this.#logger.warn({ err: e, entry_id: record.id }, "near-duplicate not merged; both entries kept");
      }
    }
  }

  /** Merges `record` with a near-duplicate of its scope; whether it did. */
  async #consolidate(record: EntryRecord, vector: Float32Array): Promise<boolean> {
    const { catalog } = this.#index;
    const accept = (seq: number): boolean => seq !== record.seq && catalog.entryType(seq) === "fact" && !catalog.isStale(seq);
    const hits = this.#index.dense.search(vector, [catalog.runSeqs(record.owner, record.runId)], accept, CANDIDATES);
    for (const hit of hits) {
      const other = this.#entries.get(hit.seq);
      if (other === undefined || !mergeable(other) || !sameScope(record, other)) continue;
      if (!isNearDuplicate(record.content, other.content, hit.similarity)) continue;
      const [kept, absorbed] = keepsFirst(other, record) ? [other, record] : [record, other];
      const merged = await this.#storage.transaction(() => {
        // Read again in the transaction: a write since may have changed or removed either entry.
        const keptNow = this.#entries.get(kept.seq);
        const absorbedNow = this.#entries.get(absorbed.seq);
        if (keptNow === undefined || absorbedNow === undefined || !mergeable(keptNow) || !mergeable(absorbedNow)) return undefined;
        return this.#entries.absorbInTransaction(kept.seq, absorbed.seq, MERGE_REASON);
      });
      if (merged === undefined) continue;
      this.#index.unindex(merged.absorbed.record.seq, merged.absorbed.record.owner, merged.absorbed.termFreqs);
      this.#index.catalog.replace(merged.kept);
      this.#events.publish({
        type: "entry.merged",
        owner: merged.kept.owner,
        runId: merged.kept.runId,
        agentId: record.agentId,
        payload: JSON.stringify({ entry_id: merged.kept.id, absorbed_id: merged.absorbed.record.id, absorbed_ids: merged.kept.absorbedIds, reason: MERGE_REASON }),
      });
      return true;
    }
    return false;
  }
}

/** Facts written directly and current; entries with an upsert key are replaced through it instead. */
function mergeable(record: EntryRecord): boolean {
  return record.entryType === "fact" && record.upsertKey === "" && !record.derived && !isStaleRecord(record);
}

/**
 * Same scope (owner, run, user id, lane) and the same context around the text: tags, metadata, content type, trust
 * and expiry. Two facts that differ there tell a reader different things even in the same words.
 */
function sameScope(a: EntryRecord, b: EntryRecord): boolean {
  return (
    a.owner === b.owner &&
    a.runId === b.runId &&
    a.userId === b.userId &&
    a.lane === b.lane &&
    a.metadataJson === b.metadataJson &&
    a.contentType === b.contentType &&
    a.provenance.trust === b.provenance.trust &&
    a.expiresAt === b.expiresAt &&
    a.envTags.length === b.envTags.length &&
    a.envTags.every((tag, i) => tag === b.envTags[i])
  );
}
