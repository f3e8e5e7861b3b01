// The derived, in-memory side of memory: catalog, BM25 postings and vectors. Built from LMDB at start-up
// (re-embedding first when the embedder changed) and updated after every committed write.
import path from "node:path";
import type { Logger } from "../platform/logger.js";
import type { Readiness } from "../platform/readiness.js";
import type { ReplayedWrite, Storage } from "../storage/database.js";
import { decodeTerms, vectorFromBytes, type EntryStore, type NewEntry, type PreparedEntry, type Reindex, type UpdatedEntry, type WrittenEntry } from "../storage/entry-store.js";
import type { Embedder } from "../retrieval/embedder.js";
import { Catalog } from "../retrieval/catalog.js";
import { SparseIndex } from "../retrieval/sparse-index.js";
import { readSparseSnapshot, writeSparseSnapshot, type SnapshotStamp } from "../retrieval/sparse-snapshot.js";
import { VectorIndex } from "../retrieval/vector-index.js";
import { SearchEngine } from "../retrieval/search-engine.js";
import { SituationVectors } from "../retrieval/ranking/situation-match.js";
import { indexTextOf } from "../retrieval/situations.js";
import { LessonSituationIndex } from "../retrieval/lesson-situation-index.js";
import { termFrequencies } from "../retrieval/text.js";
import type { SpaceVector } from "../storage/vector-space-store.js";
import { VectorSpaces } from "./vector-spaces.js";
import { SLICE_MS } from "./scan.js";
import type { RetentionScope } from "../storage/retention-store.js";

const EMBEDDER_META_KEY = "embedder_id";
const REEMBED_BATCH = 512;
/** Entries whose terms are indexed between two yields of the start-up prewarm. */
const PREWARM_SLICE = 5_000;
const LEGACY_POSTINGS_SLICE = 50_000;

export class MemoryIndex {
  readonly catalog = new Catalog();
  /** Postings and vectors are filed by owner: each owner's statistics and graph are its own (retrieval/ranking/owner-scope.ts). */
  readonly sparse = new SparseIndex((seq) => this.catalog.presentOwnerOf(seq));
  readonly dense: VectorIndex;
  /** Caller vector spaces: vectors of any dimension, one index per owner and space. */
  readonly spaces: VectorSpaces;
  readonly search: SearchEngine;
  /** Situations (failure signatures) embedded on the spot, for matching lessons by meaning. */
  readonly situations: SituationVectors;
  /** Every lesson's situations, kept with the catalog. */
  readonly lessonSituations = new LessonSituationIndex();
  readonly embedder: Embedder;
  readonly #storage: Storage;
  readonly #entries: EntryStore;
  readonly #logger: Logger;
  /** Where a clean shutdown leaves the lexical index for the next start-up. */
  readonly #snapshotFile: string;
  /** Whether a background pass filters lists of expired entries (see #tidySoon). */
  #tidying = false;

  constructor(storage: Storage, entries: EntryStore, embedder: Embedder, logger: Logger) {
    this.#storage = storage;
    this.#entries = entries;
    // One clock and one set of policies for the store's lookups and the catalog's candidates.
    this.catalog.useExpiry(entries.expiry);
    this.catalog.onStale(() => this.#tidySoon());
    this.embedder = embedder;
    this.#logger = logger;
    this.#snapshotFile = path.join(path.dirname(storage.dir), "sparse-postings.snapshot");
    this.dense = new VectorIndex(path.join(path.dirname(storage.dir), "vectors"), embedder.id, embedder.dimensions, logger, (seq) => this.catalog.ownerOf(seq));
    this.spaces = new VectorSpaces(entries.spaces, this.catalog, logger);
    this.situations = new SituationVectors(embedder);
    this.catalog.observe(this.lessonSituations);
    this.search = new SearchEngine(entries, this.catalog, this.sparse, this.dense, this.situations, this.lessonSituations);
  }

  /**
   * Lists that an expiry left holding expired entries are filtered in the background, a few milliseconds at a time,
   * so that reads find them clean (a read of one that is not yet filters that one list itself).
   */
  #tidySoon(): void {
    if (this.#tidying) return;
    this.#tidying = true;
    const step = (): void => {
      const started = performance.now();
      let more = true;
      while (more && performance.now() - started < SLICE_MS) more = this.catalog.tidy();
      if (more) setImmediate(step);
      else this.#tidying = false;
    };
    setImmediate(step);
  }

  /** Embeds what has no caller vector and computes postings: everything a write needs besides the record. */
  async prepare(items: readonly { entry: NewEntry; vector?: Float32Array | undefined; spaceVectors?: readonly SpaceVector[] | undefined }[]): Promise<PreparedEntry[]> {
    const missing = items.flatMap((item, i) => (item.vector === undefined ? [i] : []));
    const embedded = await this.embedder.embed(missing.map((i) => indexTextOf((items[i] as { entry: NewEntry }).entry)));
    const vectors = items.map((item) => item.vector);
    missing.forEach((at, j) => (vectors[at] = embedded[j]));
    return items.map((item, i) => ({
      entry: item.entry,
      vector: vectors[i] as Float32Array,
      termFreqs: termFrequencies(indexTextOf(item.entry)),
      spaceVectors: item.spaceVectors,
    }));
  }

  /** The postings and vector of an entry's index text (a lesson's with its situations): what a re-index writes. */
  async reindexOf(entry: { readonly entryType: string; readonly content: string; readonly metadataJson: string }): Promise<Reindex> {
    const text = indexTextOf(entry);
    const [vector] = await this.embedder.embed([text]);
    if (vector === undefined) throw new Error("the embedder returned no vector");
    return { termFreqs: termFrequencies(text), vector };
  }

  /** Makes committed writes searchable, calling `indexed(i)` once the `i`-th is (and before the next one is). */
  indexWritten(written: readonly WrittenEntry[], prepared: readonly PreparedEntry[], indexed?: (i: number) => void): void {
    written.forEach(({ record, superseded }, i) => {
      this.catalog.add(record);
      this.sparse.add(record.seq, (prepared[i] as PreparedEntry).termFreqs);
      this.dense.add(record.seq, (prepared[i] as PreparedEntry).vector);
      this.spaces.add(record.owner, record.seq, (prepared[i] as PreparedEntry).spaceVectors ?? []);
      if (superseded !== undefined) this.catalog.markStale(superseded.seq);
      indexed?.(i);
    });
    this.dense.scheduleIndexing();
    this.spaces.scheduleIndexing();
    this.dense.saveSoon();
  }

  /** Makes a committed update searchable: the catalog's copy, and the postings and vector when the content changed. */
  indexUpdated({ before, after, previousTermFreqs }: UpdatedEntry, reindex: Reindex | undefined): void {
    this.catalog.replace(after);
    if (reindex !== undefined) {
      this.sparse.remove(after.seq, previousTermFreqs ?? new Map<string, number>());
      this.sparse.add(after.seq, reindex.termFreqs);
      this.dense.remove(after.seq);
      this.dense.add(after.seq, reindex.vector);
      // The store dropped the entry's caller vectors with its old content.
      if (before.content !== after.content) this.spaces.remove(after.seq, after.owner);
      this.dense.generation = this.#entries.vectorGeneration();
      this.dense.scheduleIndexing();
      this.dense.saveSoon();
    }
  }

  /**
   * Clustered mode: the writes of a command another node computed, replayed into this store and committed, made
   * searchable here as that node's own code made them there: entries, their index terms, their vectors (the
   * embedder's and those of caller vector spaces), and runs deleted.
   */
  replayed(writes: readonly ReplayedWrite[]): void {
    for (const { db, key, before, after } of writes) {
      const seq = key as number;
      // Written before its terms and vector, removed after them: the catalog answers for the entry's owner.
      if (db === "entries") {
        if (after === undefined) {
          this.catalog.remove(seq);
          this.#entries.expiry.purged(seq);
        } else if (before === undefined) this.catalog.add(this.#entries.decode(after, seq));
        else this.catalog.replace(this.#entries.decode(after, seq));
      } else if (db === "entryTerms") {
        if (before !== undefined) this.sparse.remove(seq, decodeTerms(seq, before));
        if (after !== undefined) this.sparse.add(seq, decodeTerms(seq, after));
      } else if (db === "vectors") {
        if (after === undefined) this.dense.remove(seq);
        else this.dense.add(seq, vectorFromBytes(after as Uint8Array));
      } else if (db === "retentionPolicies") {
        const [owner, scope, scopeId] = key as [number, RetentionScope, string];
        this.retentionChanged(owner, scope, scopeId);
      } else if (db === "runTombstones") {
        // A run deleted on another node: hidden here at once too; its purge's removals arrive as later commands.
        const [owner, runId] = key as [number, string];
        if (after === undefined) this.#entries.tombstoneCleared(owner, runId);
        else {
          this.#entries.tombstoneCommitted(owner, runId, after as number);
          this.hideRun(owner, runId, after as number);
        }
      }
    }
    this.dense.generation = this.#entries.vectorGeneration();
    this.dense.scheduleIndexing();
    this.spaces.replayed(writes);
  }

  /** Forgets a committed deletion: nothing of the entry remains searchable. */
  unindex(seq: number, owner: number, termFreqs: ReadonlyMap<string, number>): void {
    this.catalog.remove(seq);
    this.forgetHidden(seq, owner, termFreqs);
    this.dense.saveSoon();
  }

  /**
   * Hides every entry of an owner's run up to `maxSeq` from retrieval at once (a run deletion); their postings and
   * vectors go when the purge reaches them (`forgetHidden`). Returns how many entries were hidden.
   */
  hideRun(owner: number, runId: string, maxSeq: number): number {
    const seqs = this.catalog.runSeqs(owner, runId).filter((seq) => seq <= maxSeq);
    this.catalog.removeAll(seqs);
    return seqs.length;
  }

  /**
   * A retention policy of the owner changed (committed here, or replayed from another node): what the former policies
   * expired stays expired, then every entry of the owner is judged by the new ones.
   */
  retentionChanged(owner: number, scope: RetentionScope, scopeId: string): void {
    this.catalog.expireDue();
    this.#entries.expiry.retention?.applied(owner, scope, scopeId);
    this.catalog.reexpire(owner);
  }

  /** The purge removed a hidden entry from LMDB: drop what the indexes still hold of it. */
  forgetHidden(seq: number, owner: number, termFreqs: ReadonlyMap<string, number>): void {
    // A run's purge also removes its entries that had expired before the run was deleted: the catalog held their rows.
    this.catalog.remove(seq);
    this.#entries.expiry.purged(seq);
    this.sparse.remove(seq, termFreqs);
    this.dense.remove(seq);
    this.spaces.remove(seq, owner);
    this.dense.generation = this.#entries.vectorGeneration();
  }

  /**
   * Start-up, first step: re-embeds stored entries if the embedder changed, then loads the catalog, the vectors and
   * the saved vector graph (entries newer than the graph are indexed in the background; exact search covers them).
   */
  async load(): Promise<void> {
    const started = Date.now();
    await this.#reembedIfChanged();
    for (const record of this.#entries.all()) this.catalog.add(record);
    for (const { seq, bytes } of this.#entries.allVectorBytes((seq) => this.catalog.has(seq))) {
      if (bytes.byteLength === this.dense.dimensions * 4) this.dense.restore(seq, bytes);
    }
    this.dense.generation = this.#entries.vectorGeneration();
    this.dense.loadGraph();
    await this.spaces.load((seq) => this.catalog.has(seq));
    this.#logger.info({ entries: this.catalog.count, vector_graph: this.dense.size, ms: Date.now() - started }, "memory catalog loaded");
    void this.dense.indexPending();
  }

  /** Start-up, last step: prewarms BM25 from the entries' stored terms while /readyz says `sparse_prewarm_in_progress`. */
  async prewarmSparse(readiness: Readiness): Promise<void> {
    readiness.enter("sparse_prewarm_in_progress");
    const started = Date.now();
    let moved = 0;
    for (let n = await this.#entries.migrateLegacyPostings(LEGACY_POSTINGS_SLICE); n > 0; n = await this.#entries.migrateLegacyPostings(LEGACY_POSTINGS_SLICE)) moved += n;
    if (moved > 0) this.#logger.info({ postings: moved }, "moved postings of an earlier build into per-entry term records");
    if (moved === 0 && (await readSparseSnapshot(this.#snapshotFile, this.sparse, this.#snapshotStamp()))) {
      this.#logger.info({ postings: this.sparse.postingCount, ms: Date.now() - started }, "sparse index loaded from the shutdown snapshot");
      return;
    }
    let entries = 0;
    // Page by seq rather than hold one iterator across the yields: a held iterator pins an LMDB snapshot and would
    // break if the environment were swapped meanwhile.
    for (let page = this.#entries.termsPage(0, PREWARM_SLICE); page.length > 0; ) {
      for (const { seq, termFreqs } of page) {
        if (!this.catalog.has(seq)) continue;
        this.sparse.add(seq, termFreqs);
        entries++;
      }
      const last = (page[page.length - 1] as { seq: number }).seq;
      // Yield so probes (and /livez) are answered while a large index loads.
      await new Promise((resolve) => setImmediate(resolve));
      page = page.length < PREWARM_SLICE ? [] : this.#entries.termsPage(last, PREWARM_SLICE);
    }
    this.#logger.info({ entries, postings: this.sparse.postingCount, ms: Date.now() - started }, "sparse index prewarmed");
  }

  async #reembedIfChanged(): Promise<void> {
    const { meta } = this.#storage.dbs;
    const stored = meta.get(EMBEDDER_META_KEY);
    if (stored === this.embedder.id) return;
    const total = this.#entries.maxSeq();
    if (stored !== undefined && total > 0) {
      this.#logger.warn({ from: stored, to: this.embedder.id }, "embedder changed: re-embedding every entry");
      // Batches are read a page at a time, never through an iterator held across the awaits (see Storage).
      for (let batch = this.#entries.entriesPage(0, REEMBED_BATCH); batch.length > 0; ) {
        const rows = batch;
        const vectors = await this.embedder.embed(rows.map((row) => indexTextOf(row)));
        await this.#storage.transaction(() => rows.forEach((row, i) => this.#entries.putVectorInTransaction(row.seq, vectors[i] as Float32Array)));
        batch = rows.length < REEMBED_BATCH ? [] : this.#entries.entriesPage((rows[rows.length - 1] as { seq: number }).seq, REEMBED_BATCH);
      }
    }
    await this.#storage.transaction(() => this.#storage.dbs.meta.put(EMBEDDER_META_KEY, this.embedder.id));
  }

  /**
   * A clean shutdown, once nothing writes any more: the lexical index is written for the next start-up to read back
   * instead of prewarming (retrieval/sparse-snapshot.ts). A failure only costs that start-up its prewarm.
   */
  saveSparseSnapshot(): void {
    const started = Date.now();
    try {
      writeSparseSnapshot(this.#snapshotFile, this.sparse, this.#snapshotStamp());
      this.#logger.info({ postings: this.sparse.postingCount, ms: Date.now() - started }, "sparse index snapshot written");
    } catch (e: unknown) {
      this.#logger.warn({ err: e }, "sparse index snapshot not written; the next start-up prewarms");
    }
  }

  #snapshotStamp(): SnapshotStamp {
    return { generation: this.#entries.vectorGeneration(), maxSeq: this.#entries.highestStoredSeq(), termRecords: this.#entries.termRecordCount() };
  }

  close(): void {
    this.dense.close();
    this.spaces.close();
  }
}
