// Per-entry columns indexed by seq, kept in fixed-size pages that are allocated when their first entry arrives and
// released when their last one leaves. Seqs only grow: arrays sized by the highest seq would follow every entry ever
// written (about 60 bytes each across the catalog and the lexical index), not the entries alive, and a store that
// keeps writing new runs and deleting old ones would grow without bound (the soak's RSS slope).

/** Entries per page: 1,024, so a page of the catalog's columns is ~48 KiB. */
export const PAGE_SHIFT = 10;
export const PAGE_MASK = (1 << PAGE_SHIFT) - 1;

/** A page's own columns, plus how many of its rows hold an entry. */
export interface Page {
  live: number;
}

export class SeqPages<P extends Page> {
  readonly #make: () => P;
  readonly #pages: (P | undefined)[] = [];
  readonly #shift: number;
  #allocated = 0;
  /** Bytes of one page's columns, measured on the first page asked for. */
  #pageBytes: number | undefined;

  /**
   * `make` creates an empty page (every column zeroed, live 0); a page holds 2^`shift` rows (1,024 unless a caller
   * sizes pages by what a row holds, as the vectors do).
   */
  constructor(make: () => P, shift = PAGE_SHIFT) {
    this.#make = make;
    this.#shift = shift;
  }

  /** Rows per page. */
  get rows(): number {
    return 1 << this.#shift;
  }

  /** The page holding `seq`'s row, if it is allocated; the row is `seq & (rows - 1)`. */
  page(seq: number): P | undefined {
    return this.#pages[seq >>> this.#shift];
  }

  /** The page for `seq`, allocated if it was not. */
  pageFor(seq: number): P {
    const at = seq >>> this.#shift;
    let page = this.#pages[at];
    if (page === undefined) {
      page = this.#make();
      while (this.#pages.length <= at) this.#pages.push(undefined);
      this.#pages[at] = page;
      this.#allocated++;
    }
    return page;
  }

  /** One of the page's rows was emptied: the page is released when it was its last. */
  emptied(seq: number): void {
    const at = seq >>> this.#shift;
    const page = this.#pages[at];
    if (page === undefined || --page.live > 0) return;
    this.#pages[at] = undefined;
    this.#allocated--;
  }

  /** Calls `visit` for every allocated page, in seq order, with the seq of its first row. */
  forEachPage(visit: (page: P, firstSeq: number) => void): void {
    this.#pages.forEach((page, at) => {
      if (page !== undefined) visit(page, at << this.#shift);
    });
  }

  /**
   * Bytes held: the pages alive (their typed arrays, a buffer two columns share counted once) and the page table
   * (8 bytes a slot). Measured on a page as `make` builds it, so a column added later is counted too.
   */
  get byteLength(): number {
    this.#pageBytes ??= pageBytes(this.#make());
    return this.#allocated * this.#pageBytes + this.#pages.length * 8;
  }

  /** Pages allocated now. */
  get allocated(): number {
    return this.#allocated;
  }
}

function pageBytes(page: Page): number {
  const buffers = new Set<ArrayBufferLike>();
  for (const column of Object.values(page)) if (ArrayBuffer.isView(column)) buffers.add(column.buffer);
  return [...buffers].reduce((bytes, buffer) => bytes + buffer.byteLength, 0);
}
