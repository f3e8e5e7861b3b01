// Removing expired entries: expired entries are invisible from the instant they expire (the catalog and every lookup
// judge expiry on the memory's clock); this background pass then deletes them from LMDB and the indexes in bounded
// slices, with the rules of a delete: lineage links go, entries derived from one are marked `source_deleted`, and an
// `entry.deleted` or `lesson.deleted` event (reason `expired`) is published for each.
import type { BackgroundGate } from "../platform/background-gate.js";
import type { Logger } from "../platform/logger.js";
import type { EntryStore } from "../storage/entry-store.js";
import { inWriteScope } from "../storage/write-scope.js";
import type { EntryChanges } from "./entry-changes.js";
import type { MemoryIndex } from "./memory-index.js";
import { TimeSlicer } from "./scan.js";

/** Entries removed per transaction: as run deletion's purge, so one slice never holds the event loop for long. */
const PURGE_SLICE = 32;
/** Slices committed together (see #sweep). */
const SLICES_IN_FLIGHT = 4;
/** Expired entries a sweep looks at before it lets the next timer tick go on: each sweep stays bounded. */
const SWEEP_LIMIT = 100_000;

export interface ExpiryPurgeDeps {
  readonly entries: EntryStore;
  readonly index: MemoryIndex;
  /** Deletes as a user's delete does (lineage, events); the purge's deletions carry the reason `expired`. */
  readonly changes: EntryChanges;
  readonly logger: Logger;
  readonly gate: BackgroundGate;
  /** Whether this node purges the owner's entries (clustered: the owner's shard is one it serves). */
  readonly worksFor: (owner: number) => boolean;
  /** Period of the background sweep in ms; 0 leaves sweeping to `sweep()` calls. */
  readonly periodMs: number;
}

export class ExpiryPurge {
  readonly #deps: ExpiryPurgeDeps;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<number> | undefined;
  #stopped = false;

  constructor(deps: ExpiryPurgeDeps) {
    this.#deps = deps;
  }

  start(): void {
    if (this.#deps.periodMs === 0 || this.#timer !== undefined || this.#stopped) return;
    this.#timer = setInterval(() => void this.sweep(), this.#deps.periodMs);
    this.#timer.unref();
  }

  /** Purges what has expired by now; resolves with how many entries it removed (a running sweep is joined). */
  sweep(): Promise<number> {
    if (this.#sweeping !== undefined) return this.#sweeping;
    this.#sweeping = this.#sweep()
      .catch((e: unknown) => {
        this.#deps.logger.error({ err: e }, "expiry purge stopped; the next sweep resumes it");
        return 0;
      })
      .finally(() => {
        this.#sweeping = undefined;
      });
    return this.#sweeping;
  }

  /** Resolves once no sweep runs (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#sweeping !== undefined) await this.#sweeping;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    await this.idle();
  }

  async #sweep(): Promise<number> {
    const { entries, index, worksFor } = this.#deps;
    // Entries whose time came since the last read are counted out first.
    index.catalog.expireDue();
    const byOwner = new Map<number, number[]>();
    const add = (owner: number, seq: number): void => {
      if (worksFor(owner)) (byOwner.get(owner) ?? byOwner.set(owner, []).get(owner))?.push(seq);
    };
    // Entries the catalog never held (expired before start-up): a record read each tells their owner and whether they
    // are still there. Those it holds: their owner and run are in its columns.
    const slicer = new TimeSlicer();
    for (const seq of entries.expiry.unheld(SWEEP_LIMIT)) {
      const pause = slicer.tick();
      if (pause !== undefined) await pause;
      if (this.#stopped) return 0;
      const owner = entries.ownerOfStored(seq);
      // Gone already (removed on another node, or its run's purge took it): nothing left to hide.
      if (owner === undefined) entries.expiry.purged(seq);
      else add(owner, seq);
    }
    const { catalog } = index;
    for (const seq of catalog.expiredSeqs(SWEEP_LIMIT)) {
      const owner = catalog.ownerOf(seq);
      // A deleted run's purge removes its entries, expired or not.
      if (!entries.inDeletedRun(owner, catalog.runOf(seq), seq)) add(owner, seq);
    }
    let removed = 0;
    for (const [owner, seqs] of byOwner) {
      for (let at = 0; at < seqs.length && !this.#stopped; at += PURGE_SLICE * SLICES_IN_FLIGHT) {
        await this.#deps.gate.pass();
        if (this.#stopped) break;
        // A few slices in flight at once: LMDB commits them together, so the purge is not bound by one commit's
        // latency per slice, while each slice's synchronous part stays as short as one slice.
        const slices: Promise<number>[] = [];
        for (let k = 0; k < SLICES_IN_FLIGHT && at + k * PURGE_SLICE < seqs.length; k++) {
          const from = at + k * PURGE_SLICE;
          slices.push(this.#purgeSlice(owner, seqs.slice(from, from + PURGE_SLICE)));
        }
        for (const count of await Promise.all(slices)) removed += count;
      }
    }
    if (removed > 0) {
      index.dense.saveSoon();
      this.#deps.logger.info({ entries: removed }, "expired entries purged");
    }
    return removed;
  }

  async #purgeSlice(owner: number, seqs: readonly number[]): Promise<number> {
    // The purge's writes are the owner's (clustered: on the owner's shard).
    const deleted = await inWriteScope(owner, () => this.#deps.changes.deleteAll(seqs, { reason: "expired", agentId: "" }));
    return deleted.length;
  }
}
