// Consolidation: a fact written that says what a fact of the same scope (owner, run, user id, lane) already says is
// merged with it right after its commit. A near-duplicate shares nearly all its words, so it holds nearly all of the
// text's rarest index terms: the candidates are the most recent entries of the owner's posting lists of those terms
// (near-duplicate-candidates.ts), narrowed in memory (same run, a current fact, a similar length, the rare terms
// shared, vector cosine) before any record is read. The check so costs a bounded amount per fact, whatever the size of
// the run; the test itself is near-duplicate.ts. A batch's merges are one transaction (entry-store.ts
// absorbInTransaction): the kept entry lists the absorbed id, and every lookup by that id resolves to it. A failed
// merge leaves the entries as written: the write itself already succeeded.
// Facts stored before (by an earlier build, or while consolidation was off) are checked by an opt-in background pass
// at start-up (`sweep`), in bounded slices that yield between them.
import type { EventBus } from "../events/event-bus.js";
import type { BackgroundGate } from "../platform/background-gate.js";
import { inWriteScope } from "../storage/write-scope.js";
import type { Logger } from "../platform/logger.js";
import type { Storage } from "../storage/database.js";
import { isStaleRecord, type EntryRecord, type EntryStore, type PreparedEntry, type WrittenEntry } from "../storage/entry-store.js";
import type { MemoryIndex } from "./memory-index.js";
import { NearDuplicateCandidates } from "./near-duplicate-candidates.js";
import { NEAR_DUPLICATE_COSINE, isNearDuplicate, keepsFirst } from "./near-duplicate.js";
import { SLICE_MS, TimeSlicer } from "./scan.js";

const MERGE_REASON = "near-duplicate merged";
/** Stored entries the background pass reads per slice; it yields to requests between slices. */
const SWEEP_SLICE = 64;

export class Consolidator {
  readonly #storage: Storage;
  readonly #entries: EntryStore;
  readonly #index: MemoryIndex;
  readonly #events: EventBus;
  readonly #logger: Logger;
  readonly #candidates: NearDuplicateCandidates;
  readonly enabled: boolean;
  #sweeping: Promise<void> | undefined;
  #stopped = false;

  constructor(storage: Storage, entries: EntryStore, index: MemoryIndex, events: EventBus, logger: Logger, enabled: boolean) {
    this.#storage = storage;
    this.#entries = entries;
    this.#index = index;
    this.#candidates = new NearDuplicateCandidates(index.catalog, index.sparse);
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
        const termFreqs = record === undefined ? undefined : this.#entries.termsOf(record.seq);
        if (record === undefined || vector === undefined || termFreqs === undefined || !mergeable(record) || !worksFor(record.owner) || !this.#index.catalog.has(record.seq)) continue;
        try {
          if (await inWriteScope(record.owner, () => this.#consolidate(record, termFreqs, vector))) merged++;
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
   * Starts the near-duplicate check of a write: the indexing of its entries calls `indexed(i)` as each one is indexed
   * (MemoryIndex.indexWritten), which finds a written fact's candidates among the entries indexed before it while its
   * posting lists are at hand, so that a fact is checked against what was stored before it however the writes were
   * batched. `afterWrite` merges what it found. Undefined when consolidation is off.
   */
  check(written: readonly WrittenEntry[], prepared: readonly PreparedEntry[], wanted?: readonly boolean[]): WriteCheck | undefined {
    if (!this.enabled) return undefined;
    const candidates: (readonly number[] | undefined)[] = [];
    return {
      written,
      prepared,
      candidates,
      indexed: (i) => {
        const record = written[i]?.record;
        const entry = prepared[i];
        if (wanted?.[i] === false || record === undefined || entry === undefined || !mergeable(record)) return;
        // A failed check costs a merge, never the indexing of the write it runs inside.
        try {
          const found = this.#candidates.of(record, entry.termFreqs);
          if (found.length > 0) candidates[i] = found;
        } catch (e: unknown) {
          this.#logger.warn({ err: e, entry_id: record.id }, "near-duplicates not looked for; the entry stays as written");
        }
      },
    };
  }

  /**
   * Merges each fact of a checked write that has a near-duplicate of its scope with it, all in one transaction. Call
   * once the entries are committed and indexed. Never throws: a merge that fails is logged and both entries stay.
   */
  async afterWrite({ written, prepared, candidates }: WriteCheck): Promise<void> {
    if (candidates.length === 0) return;
    const pairs: MergePair[] = [];
    // Entries an earlier pair of the batch absorbs: not candidates for the later ones.
    const absorbed = new Set<number>();
    const slicer = new TimeSlicer(SLICE_MS, 1);
    // The check's pauses serve requests; the graph catches up once it is done (see VectorIndex.holdIndexing).
    const release = this.#index.dense.holdIndexing();
    try {
      for (let i = 0; i < candidates.length; i++) {
        const found = candidates[i];
        const entry = prepared[i];
        if (found === undefined || entry === undefined) continue;
        const pair = this.#pairOf((written[i] as WrittenEntry).record, found, entry.vector, absorbed);
        if (pair !== undefined) {
          pairs.push(pair);
          absorbed.add(pair.absorbed);
        }
        const pause = slicer.tick();
        if (pause) await pause;
      }
    } finally {
      release();
    }
    try {
      await this.#merge(pairs, written[0]?.record.agentId ?? "");
    } catch (e: unknown) {
      this.#logger.warn({ err: e, entries: pairs.length }, "near-duplicates not merged; the entries stay as written");
    }
  }

  /** Merges `record` with a near-duplicate of its scope; whether it did. */
  async #consolidate(record: EntryRecord, termFreqs: ReadonlyMap<string, number>, vector: Float32Array): Promise<boolean> {
    const pair = this.#pairOf(record, this.#candidates.of(record, termFreqs), vector, new Set());
    return pair !== undefined && (await this.#merge([pair], "")) > 0;
  }

  /** Of `candidates`, the near-duplicate `record` merges with, and which of the two is kept; undefined when none is. */
  #pairOf(record: EntryRecord, candidates: readonly number[], vector: Float32Array, absorbed: ReadonlySet<number>): MergePair | undefined {
    for (const seq of candidates) {
      if (absorbed.has(seq)) continue;
      // The vectors first, without reading the record: equal words make equal vectors, so a text equal once
      // normalised passes too.
      const cosine = this.#index.dense.similarity(seq, vector);
      if (cosine < NEAR_DUPLICATE_COSINE) continue;
      const other = this.#entries.get(seq);
      if (other === undefined || !mergeable(other) || !sameScope(record, other)) continue;
      if (!isNearDuplicate(record.content, other.content, cosine)) continue;
      return keepsFirst(other, record) ? { kept: other.seq, absorbed: record.seq } : { kept: record.seq, absorbed: other.seq };
    }
    return undefined;
  }

  /** Merges the pairs in one transaction (each read again there; a pair an earlier one undid is skipped); how many. */
  async #merge(pairs: readonly MergePair[], agentId: string): Promise<number> {
    if (pairs.length === 0) return 0;
    const merges = await this.#storage.transaction(() =>
      pairs.flatMap(({ kept, absorbed }) => {
        // Read again in the transaction: a write since, or an earlier pair, may have changed or removed either entry.
        const keptNow = this.#entries.get(kept);
        const absorbedNow = this.#entries.get(absorbed);
        if (keptNow === undefined || absorbedNow === undefined || !mergeable(keptNow) || !mergeable(absorbedNow)) return [];
        return this.#entries.absorbInTransaction(kept, absorbed, MERGE_REASON) ?? [];
      }),
    );
    for (const merged of merges) {
      this.#index.unindex(merged.absorbed.record.seq, merged.absorbed.record.owner, merged.absorbed.termFreqs);
      this.#index.catalog.replace(merged.kept);
      this.#events.publish({
        type: "entry.merged",
        owner: merged.kept.owner,
        runId: merged.kept.runId,
        agentId,
        payload: JSON.stringify({ entry_id: merged.kept.id, absorbed_id: merged.absorbed.record.id, absorbed_ids: merged.kept.absorbedIds, reason: MERGE_REASON }),
      });
    }
    return merges.length;
  }
}

/** The near-duplicate check of one write (Consolidator.check). */
export interface WriteCheck {
  readonly written: readonly WrittenEntry[];
  readonly prepared: readonly PreparedEntry[];
  /** Candidates of each written fact that has any, by its index in the write. */
  readonly candidates: (readonly number[] | undefined)[];
  /** Call once the write's entry `i` is indexed, before the next one is. */
  readonly indexed: (i: number) => void;
}

/** A near-duplicate and the entry it is merged into, by seq. */
interface MergePair {
  readonly kept: number;
  readonly absorbed: number;
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

