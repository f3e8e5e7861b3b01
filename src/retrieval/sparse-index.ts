// BM25 over the postings kept in LMDB, held in memory after the start-up prewarm and updated on every write.

/** BM25 parameters: memory entries are short, so length normalisation is kept low (see RETRIEVAL.md). */
export const BM25_K1 = 0.9;
export const BM25_B = 0.3;

interface PostingList {
  seqs: Int32Array;
  tfs: Uint16Array;
  length: number;
}

export interface SparseHit {
  readonly seq: number;
  readonly score: number;
}

export interface WeightedTerm {
  readonly term: string;
  readonly weight: number;
}

export class SparseIndex {
  readonly #postings = new Map<string, PostingList>();
  /** Scores accumulated per seq during one query; reused so queries allocate little. */
  #scratch = new Float64Array(1024);

  add(seq: number, termFreqs: ReadonlyMap<string, number>): void {
    for (const [term, tf] of termFreqs) this.#addPosting(term, seq, tf);
  }

  #addPosting(term: string, seq: number, tf: number): void {
    let list = this.#postings.get(term);
    if (list === undefined) {
      list = { seqs: new Int32Array(4), tfs: new Uint16Array(4), length: 0 };
      this.#postings.set(term, list);
    }
    if (list.length === list.seqs.length) {
      const seqs = new Int32Array(list.length * 2);
      seqs.set(list.seqs);
      const tfs = new Uint16Array(list.length * 2);
      tfs.set(list.tfs);
      list.seqs = seqs;
      list.tfs = tfs;
    }
    list.seqs[list.length] = seq;
    list.tfs[list.length] = Math.min(tf, 65535);
    list.length++;
  }

  /** Loads postings read from LMDB at start-up. */
  load(postings: Iterable<{ term: string; seq: number; tf: number }>): number {
    let n = 0;
    for (const { term, seq, tf } of postings) {
      this.#addPosting(term, seq, tf);
      n++;
    }
    return n;
  }

  documentFrequency(term: string): number {
    return this.#postings.get(term)?.length ?? 0;
  }

  /**
   * Top `k` entries by BM25 among those `accept` admits. `docCount` and `avgLength` describe the whole corpus;
   * `lengthOf` gives an entry's term count.
   */
  search(
    terms: readonly WeightedTerm[],
    accept: (seq: number) => boolean,
    k: number,
    docCount: number,
    avgLength: number,
    lengthOf: (seq: number) => number,
  ): SparseHit[] {
    const touched: number[] = [];
    const avg = avgLength || 1;
    for (const { term, weight } of terms) {
      const list = this.#postings.get(term);
      if (list === undefined) continue;
      const idf = Math.log(1 + (docCount - list.length + 0.5) / (list.length + 0.5));
      for (let i = 0; i < list.length; i++) {
        const seq = list.seqs[i] as number;
        if (seq >= this.#scratch.length) this.#growScratch(seq + 1);
        const current = this.#scratch[seq] as number;
        if (current < 0) continue;
        if (current === 0) {
          if (!accept(seq)) {
            // Remember the refusal for this query so later terms skip the check.
            this.#scratch[seq] = -1;
            touched.push(seq);
            continue;
          }
          touched.push(seq);
        }
        const tf = list.tfs[i] as number;
        const norm = tf + BM25_K1 * (1 - BM25_B + (BM25_B * lengthOf(seq)) / avg);
        this.#scratch[seq] = current + weight * idf * ((tf * (BM25_K1 + 1)) / norm);
      }
    }
    const hits: SparseHit[] = [];
    for (const seq of touched) {
      const score = this.#scratch[seq] as number;
      if (score > 0) hits.push({ seq, score });
      this.#scratch[seq] = 0;
    }
    hits.sort((a, b) => b.score - a.score || b.seq - a.seq);
    return hits.length > k ? hits.slice(0, k) : hits;
  }

  #growScratch(size: number): void {
    const next = new Float64Array(Math.max(size, this.#scratch.length * 2));
    next.set(this.#scratch);
    this.#scratch = next;
  }
}
