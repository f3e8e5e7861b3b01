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
  #allocated = 0;

  /** `make` creates an empty page (every column zeroed, live 0). */
  constructor(make: () => P) {
    this.#make = make;
  }

  /** The page holding `seq`'s row, if it is allocated; the row is `seq & PAGE_MASK`. */
  page(seq: number): P | undefined {
    return this.#pages[seq >>> PAGE_SHIFT];
  }

  /** The page for `seq`, allocated if it was not. */
  pageFor(seq: number): P {
    const at = seq >>> PAGE_SHIFT;
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
    const at = seq >>> PAGE_SHIFT;
    const page = this.#pages[at];
    if (page === undefined || --page.live > 0) return;
    this.#pages[at] = undefined;
    this.#allocated--;
  }

  /** Pages allocated now. */
  get allocated(): number {
    return this.#allocated;
  }

  /** Slots of the page table (one per 1,024 seqs up to the highest): 8 bytes each. */
  get slots(): number {
    return this.#pages.length;
  }
}
