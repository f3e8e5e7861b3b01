// One caller vector space in memory: its vectors filed under compact local rows rather than entry seqs (seqs are
// store-wide, and a wide space holding a few entries of a large store must not cost a seq-sized matrix), searched
// through a VectorIndex keyed by row.
import type { Logger } from "../platform/logger.js";
import { VectorIndex, type DenseHit, type DenseSource } from "./vector-index.js";

/** Rows freed by removals are reclaimed (the index rebuilt) once they outnumber live rows and pass this floor. */
const RECLAIM_MIN_FREE_ROWS = 1024;
/** Scopes up to this many entries are compared exactly (as VectorIndex does below its own graph threshold). */
const EXACT_SCOPE_LIMIT = 6000;

export class SpaceIndex implements DenseSource {
  readonly dimensions: number;
  readonly #logger: Logger;
  #index: VectorIndex;
  readonly #rowOf = new Map<number, number>();
  /** row → seq; -1 for a row freed by a removal. Rows are handed out in ascending order and never reused. */
  #seqOf: number[] = [];
  #free = 0;
  /** Cache of #liveRows(); undefined after any change. */
  #live: number[] | undefined;

  constructor(dimensions: number, logger: Logger) {
    this.dimensions = dimensions;
    this.#logger = logger;
    this.#index = this.#newIndex();
  }

  #newIndex(): VectorIndex {
    // Graphs of caller spaces are not saved: they are rebuilt in the background after a restart, exact search
    // covering them meanwhile.
    return new VectorIndex("", "space", this.dimensions, this.#logger, () => 0, { persist: false });
  }

  /** Vectors held. */
  get size(): number {
    return this.#rowOf.size;
  }

  /** Approximate bytes held: proportional to the vectors held (and rows freed since the last reclaim), not to seqs. */
  get memoryBytes(): number {
    return this.#index.memoryBytes + this.#seqOf.length * 8 + this.#rowOf.size * 16;
  }

  has(seq: number): boolean {
    return this.#rowOf.has(seq);
  }

  /** Keeps an entry's vector (replacing one it had); `vector` has this space's dimension. */
  add(seq: number, vector: Float32Array): void {
    let row = this.#rowOf.get(seq);
    if (row === undefined) {
      row = this.#seqOf.length;
      this.#seqOf.push(seq);
      this.#rowOf.set(seq, row);
      // New rows are the highest: the cached ascending list stays valid with it appended.
      this.#live?.push(row);
    }
    this.#index.add(row, vector);
  }

  remove(seq: number): void {
    const row = this.#rowOf.get(seq);
    if (row === undefined) return;
    this.#live = undefined;
    this.#index.remove(row);
    this.#rowOf.delete(seq);
    this.#seqOf[row] = -1;
    this.#free++;
    if (this.#free > RECLAIM_MIN_FREE_ROWS && this.#free > this.#rowOf.size) this.#reclaim();
  }

  /** Rebuilds the index over the live vectors, in seq order, so freed rows stop costing memory. */
  #reclaim(): void {
    const old = this.#index;
    const live = [...this.#rowOf].sort((a, b) => a[0] - b[0]);
    this.#index = this.#newIndex();
    this.#rowOf.clear();
    this.#seqOf = [];
    this.#free = 0;
    this.#live = undefined;
    for (const [seq, row] of live) {
      const vector = old.vector(row);
      if (vector !== undefined) this.add(seq, vector);
    }
    old.close();
    this.#index.scheduleIndexing();
  }

  /** After adds: the graph (for spaces large enough to have one) catches up in the background, in slices. */
  scheduleIndexing(): void {
    this.#index.scheduleIndexing();
  }

  indexPending(): Promise<void> {
    return this.#index.indexPending();
  }

  similarity(seq: number, query: Float32Array): number {
    const row = this.#rowOf.get(seq);
    return row === undefined ? 0 : this.#index.similarity(row, query);
  }

  /** Top `k` admissible entries of the lists (entry seqs, each list ascending) that have a vector in this space. */
  search(query: Float32Array, lists: readonly (readonly number[])[], accept: (seq: number) => boolean, k: number): DenseHit[] {
    const acceptRow = (row: number): boolean => accept(this.#seqOf[row] as number);
    const scopeSize = lists.reduce((sum, list) => sum + list.length, 0);
    // A narrow scope is compared exactly, row by row; a wide one goes to the whole space (graph and unindexed tail),
    // `accept` keeping the scope, so a query never maps a large scope's seqs to rows one by one.
    const rowLists = scopeSize <= EXACT_SCOPE_LIMIT ? [this.#rowsOf(lists)] : [this.#liveRows()];
    return this.#index.search(query, rowLists, acceptRow, k).map((hit) => ({ seq: this.#seqOf[hit.seq] as number, similarity: hit.similarity }));
  }

  #rowsOf(lists: readonly (readonly number[])[]): number[] {
    const rows = new Set<number>();
    for (const list of lists) {
      for (const seq of list) {
        const row = this.#rowOf.get(seq);
        if (row !== undefined) rows.add(row);
      }
    }
    // Rows follow the order vectors arrived in, which commits may have made differ from seq order.
    return [...rows].sort((a, b) => a - b);
  }

  /** Every live row, ascending: kept between queries, remade after a change. */
  #liveRows(): readonly number[] {
    if (this.#live === undefined) {
      const rows: number[] = [];
      this.#seqOf.forEach((seq, row) => {
        if (seq !== -1) rows.push(row);
      });
      this.#live = rows;
    }
    return this.#live;
  }

  close(): void {
    this.#index.close();
  }
}
