// The exact vectors of a VectorIndex, by seq, in fixed-size pages that are allocated when their first vector arrives
// and released when their last one leaves. Seqs only grow: a store that keeps deleting old entries (runs deleted
// after use) and writing new ones would otherwise hold a matrix sized by every seq ever written, not by what lives.
// The page lifecycle is seq-pages.ts's; only the rows per page differ, sized by the vectors' dimension.
import { SeqPages, type Page } from "./seq-pages.js";

/**
 * Bytes of vectors a page holds (its row count follows from the dimension): small, so that a space of a few wide
 * vectors costs little and pages empty out soon under churn.
 */
const PAGE_BYTES = 32 * 1024;

interface VectorsPage extends Page {
  readonly vectors: Float32Array;
  /** The same memory as bytes, for vectors restored from their stored bytes without an intermediate copy. */
  readonly bytes: Uint8Array;
  /** 1 where the row holds a vector. */
  readonly present: Uint8Array;
  /** The partition of each present row. */
  readonly partition: Int32Array;
}

export class PagedVectors {
  readonly dimensions: number;
  readonly #mask: number;
  readonly #pages: SeqPages<VectorsPage>;

  constructor(dimensions: number) {
    this.dimensions = dimensions;
    // Rows per page: the largest power of two whose vectors fit PAGE_BYTES, at least 8.
    const rows = Math.max(8, 2 ** Math.floor(Math.log2(Math.max(1, PAGE_BYTES / (dimensions * 4)))));
    this.#mask = rows - 1;
    this.#pages = new SeqPages(() => {
      const vectors = new Float32Array(rows * dimensions);
      return { vectors, bytes: new Uint8Array(vectors.buffer), present: new Uint8Array(rows), partition: new Int32Array(rows), live: 0 };
    }, Math.log2(rows));
  }

  get rowsPerPage(): number {
    return this.#pages.rows;
  }

  /** Bytes held by the pages alive now. */
  get byteLength(): number {
    return this.#pages.byteLength;
  }

  has(seq: number): boolean {
    return this.#pages.page(seq)?.present[seq & this.#mask] === 1;
  }

  /** The partition a present seq was added under; undefined when absent. */
  partitionOf(seq: number): number | undefined {
    const page = this.#pages.page(seq);
    const row = seq & this.#mask;
    return page !== undefined && page.present[row] === 1 ? (page.partition[row] as number) : undefined;
  }

  /** Stores (or replaces) a seq's vector, given as floats or as their stored bytes; returns whether it had one. */
  set(seq: number, vector: Float32Array | Uint8Array, partition: number): boolean {
    const page = this.#pages.pageFor(seq);
    const row = seq & this.#mask;
    const had = page.present[row] === 1;
    if (vector instanceof Float32Array) page.vectors.set(vector.subarray(0, this.dimensions), row * this.dimensions);
    else page.bytes.set(vector.subarray(0, this.dimensions * 4), row * this.dimensions * 4);
    page.partition[row] = partition;
    if (!had) {
      page.present[row] = 1;
      page.live++;
    }
    return had;
  }

  /** Forgets a seq's vector, releasing its page when it was the last; returns its partition, undefined if absent. */
  delete(seq: number): number | undefined {
    const page = this.#pages.page(seq);
    const row = seq & this.#mask;
    if (page === undefined || page.present[row] !== 1) return undefined;
    page.present[row] = 0;
    this.#pages.emptied(seq);
    return page.partition[row] as number;
  }

  /** A present seq's vector, as a view (copy it to keep it). */
  row(seq: number): Float32Array {
    const page = this.#pages.page(seq) as VectorsPage;
    const offset = (seq & this.#mask) * this.dimensions;
    return page.vectors.subarray(offset, offset + this.dimensions);
  }

  /** Dot product of a seq's vector with `query` (cosine, both being unit length); 0 when the seq has none. */
  dot(seq: number, query: Float32Array): number {
    const page = this.#pages.page(seq);
    const row = seq & this.#mask;
    if (page === undefined || page.present[row] !== 1) return 0;
    const vectors = page.vectors;
    const offset = row * this.dimensions;
    // Four running sums: the loop is what exact search spends its time in.
    const dims = this.dimensions;
    let a = 0;
    let b = 0;
    let c = 0;
    let d = 0;
    let i = 0;
    for (; i + 3 < dims; i += 4) {
      a += (vectors[offset + i] as number) * (query[i] as number);
      b += (vectors[offset + i + 1] as number) * (query[i + 1] as number);
      c += (vectors[offset + i + 2] as number) * (query[i + 2] as number);
      d += (vectors[offset + i + 3] as number) * (query[i + 3] as number);
    }
    for (; i < dims; i++) a += (vectors[offset + i] as number) * (query[i] as number);
    return a + b + c + d;
  }

  /** Calls `visit` for every present seq, ascending, with its partition. */
  forEach(visit: (seq: number, partition: number) => void): void {
    this.#pages.forEachPage((page, base) => {
      for (let row = 0; row < page.present.length; row++) if (page.present[row] === 1) visit(base + row, page.partition[row] as number);
    });
  }
}
