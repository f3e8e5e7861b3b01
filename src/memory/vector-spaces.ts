// The caller vector spaces in memory: one SpaceIndex per owner and space, loaded from LMDB at start-up a page at a
// time and kept in step with committed writes and removals; gives a query's dense branch the spaces it may read.
import type { Logger } from "../platform/logger.js";
import type { ReplayedWrite } from "../storage/database.js";
import type { Catalog } from "../retrieval/catalog.js";
import { SpaceIndex } from "../retrieval/space-index.js";
import type { DenseHit, DenseSource } from "../retrieval/vector-index.js";
import { decodeSpace, type SpaceVector, type VectorSpaceRecord, type VectorSpaceStore } from "../storage/vector-space-store.js";
import { vectorFromBytes } from "../storage/vector-bytes.js";

/** Space vectors read between two yields of the start-up load. */
const LOAD_PAGE = 2_000;

interface Space {
  readonly record: VectorSpaceRecord;
  readonly index: SpaceIndex;
}

export class VectorSpaces {
  readonly #store: VectorSpaceStore;
  readonly #catalog: Catalog;
  readonly #logger: Logger;
  /** owner → space name → space. */
  readonly #byOwner = new Map<number, Map<string, Space>>();
  /** The same spaces by store-wide id, as their vectors are keyed in LMDB. */
  readonly #byId = new Map<number, Space>();

  constructor(store: VectorSpaceStore, catalog: Catalog, logger: Logger) {
    this.#store = store;
    this.#catalog = catalog;
    this.#logger = logger;
  }

  #space(record: VectorSpaceRecord): Space {
    let spaces = this.#byOwner.get(record.owner);
    if (spaces === undefined) this.#byOwner.set(record.owner, (spaces = new Map()));
    let space = spaces.get(record.name);
    if (space === undefined) {
      space = { record, index: new SpaceIndex(record.dimensions, this.#logger) };
      spaces.set(record.name, space);
      this.#byId.set(record.id, space);
    }
    return space;
  }

  /** The owner's space of this name in memory, when it has one. */
  #find(owner: number, name: string): Space | undefined {
    return this.#byOwner.get(owner)?.get(name);
  }

  /** Spaces given vectors since the last scheduleIndexing(). */
  readonly #touched = new Set<SpaceIndex>();

  /** Makes an entry's committed space vectors searchable; scheduleIndexing() after a batch queues their graphs. */
  add(owner: number, seq: number, vectors: readonly SpaceVector[]): void {
    for (const { space: name, vector } of vectors) {
      // The write committed the space: its record is in LMDB when this is the first the index hears of it.
      const record = this.#find(owner, name)?.record ?? this.#store.find(owner, name);
      if (record === undefined || record.dimensions !== vector.length) continue;
      const space = this.#space(record);
      space.index.add(seq, vector);
      this.#touched.add(space.index);
    }
  }

  /** Once per committed batch, not per entry: each touched space's graph catches up in the background. */
  scheduleIndexing(): void {
    for (const index of this.#touched) index.scheduleIndexing();
    this.#touched.clear();
  }

  /**
   * Forgets an entry's vectors in every space of its owner (it was deleted, or its content replaced). The owner is
   * given: a deleted entry has already left the catalog.
   */
  remove(seq: number, owner: number): void {
    const spaces = this.#byOwner.get(owner);
    if (spaces === undefined) return;
    for (const { index } of spaces.values()) index.remove(seq);
  }

  /**
   * Clustered mode: the writes of a command another node computed, committed here: the spaces it created and the
   * entry vectors it stored and removed, kept as `add` and `remove` kept them there. Call once the catalog has heard
   * the same writes.
   */
  replayed(writes: readonly ReplayedWrite[]): void {
    for (const { db, key, after } of writes) {
      if (db === "vectorSpaces" && after !== undefined) this.#space(decodeSpace(key, after));
      if (db !== "spaceVectors") continue;
      const [spaceId, seq] = key as [number, number];
      const space = this.#byId.get(spaceId);
      if (space === undefined) continue;
      if (after === undefined) space.index.remove(seq);
      else {
        const vector = vectorFromBytes(after as Uint8Array);
        if (vector.length !== space.record.dimensions) continue;
        space.index.add(seq, vector);
        this.#touched.add(space.index);
      }
    }
    this.scheduleIndexing();
  }

  /**
   * Start-up: every space and the vectors of live entries, a page at a time with a yield between pages so probes are
   * answered meanwhile; graphs of large spaces are built afterwards in the background (exact search covers them).
   */
  async load(isLive: (seq: number) => boolean): Promise<void> {
    const started = Date.now();
    let vectors = 0;
    for (const record of [...this.#store.all()]) {
      const space = this.#space(record);
      for (let page = this.#store.vectorsPage(record.id, 0, LOAD_PAGE); page.length > 0; ) {
        for (const { seq, vector } of page) {
          if (!isLive(seq) || vector.length !== record.dimensions) continue;
          space.index.add(seq, vector);
          vectors++;
        }
        const last = (page[page.length - 1] as { seq: number }).seq;
        await new Promise((resolve) => setImmediate(resolve));
        page = page.length < LOAD_PAGE ? [] : this.#store.vectorsPage(record.id, last, LOAD_PAGE);
      }
      void space.index.indexPending();
    }
    if (this.#byOwner.size > 0) this.#logger.info({ owners: this.#byOwner.size, vectors, ms: Date.now() - started }, "caller vector spaces loaded");
  }

  /**
   * The dense branch of a query in the space `name` with a vector of `dimensions`: each owner's entries are compared
   * in that owner's space of the name when it has the same dimension, and have no similarity otherwise.
   */
  source(name: string, dimensions: number): DenseSource {
    const spaceOf = (owner: number): SpaceIndex | undefined => {
      const space = this.#find(owner, name);
      return space !== undefined && space.record.dimensions === dimensions ? space.index : undefined;
    };
    return {
      search: (query, lists, accept, k): DenseHit[] => {
        const byOwner = new Map<number, (readonly number[])[]>();
        for (const list of lists) {
          const first = list[0];
          if (first === undefined) continue;
          // Each list holds one owner's entries (see ranking/owner-scope.ts).
          const owner = this.#catalog.ownerOf(first);
          const group = byOwner.get(owner);
          if (group === undefined) byOwner.set(owner, [list]);
          else group.push(list);
        }
        const found: DenseHit[] = [];
        for (const [owner, group] of byOwner) found.push(...(spaceOf(owner)?.search(query, group, accept, k) ?? []));
        return byOwner.size <= 1 ? found : found.sort((a, b) => b.similarity - a.similarity || b.seq - a.seq).slice(0, k);
      },
      similarity: (seq, query): number => spaceOf(this.#catalog.ownerOf(seq))?.similarity(seq, query) ?? 0,
    };
  }

  close(): void {
    for (const spaces of this.#byOwner.values()) for (const { index } of spaces.values()) index.close();
  }
}
