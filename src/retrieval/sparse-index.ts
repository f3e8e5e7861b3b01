// BM25 over the postings kept in LMDB, held in memory after the start-up prewarm and updated on every write.

/** BM25 parameters: memory entries are short, so length normalisation is kept low (see RETRIEVAL.md). */
export const BM25_K1 = 0.9;
export const BM25_B = 0.3;

interface PostingList {
  seqs: Int32Array;
  tfs: Uint16Array;
  length: number;
}

/**
 * A term in more than this share of all entries (and at least COMMON_TERM_MIN of them) only adds to entries that
 * rarer query terms already found, instead of walking its long posting list: it ranks, it does not recall.
 */
const COMMON_TERM_SHARE = 0.02;
const COMMON_TERM_MIN = 2000;

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
  #postingCount = 0;

  /** Postings held, one per (term, entry) pair: storage statistics. */
  get postingCount(): number {
    return this.#postingCount;
  }

  /** Bytes allocated for the posting lists (their typed arrays, spare capacity included). */
  get memoryBytes(): number {
    let bytes = 0;
    for (const list of this.#postings.values()) bytes += list.seqs.byteLength + list.tfs.byteLength;
    return bytes;
  }

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
    this.#postingCount++;
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
    const commonDf = Math.max(COMMON_TERM_MIN, COMMON_TERM_SHARE * docCount);
    const lists = terms
      .map(({ term, weight }) => ({ list: this.#postings.get(term), weight }))
      .filter((t): t is { list: PostingList; weight: number } => t.list !== undefined)
      .sort((a, b) => a.list.length - b.list.length);
    const bm25 = (list: PostingList, i: number, seq: number, weight: number, idf: number): number => {
      const tf = list.tfs[i] as number;
      const norm = tf + BM25_K1 * (1 - BM25_B + (BM25_B * lengthOf(seq)) / avg);
      return weight * idf * ((tf * (BM25_K1 + 1)) / norm);
    };
    for (const { list, weight } of lists) {
      const idf = Math.log(1 + (docCount - list.length + 0.5) / (list.length + 0.5));
      if (list.length > commonDf && touched.length > 0 && touched.length * 4 < list.length) {
        for (const seq of touched) {
          if ((this.#scratch[seq] as number) <= 0) continue;
          const i = indexOf(list, seq);
          if (i >= 0) this.#scratch[seq] = (this.#scratch[seq] as number) + bm25(list, i, seq, weight, idf);
        }
        continue;
      }
      for (let i = 0; i < list.length; i++) {
        const seq = list.seqs[i] as number;
        if (seq >= this.#scratch.length) this.#growScratch(seq + 1);
        const current = this.#scratch[seq] as number;
        if (current < 0) continue;
        if (current === 0) {
          touched.push(seq);
          if (!accept(seq)) {
            // Remember the refusal for this query so later terms skip the check.
            this.#scratch[seq] = -1;
            continue;
          }
        }
        this.#scratch[seq] = current + bm25(list, i, seq, weight, idf);
      }
    }
    // Keep the best k in a min-heap rather than sorting every touched entry.
    const heap = new TopK(k);
    for (const seq of touched) {
      const score = this.#scratch[seq] as number;
      if (score > 0) heap.offer(seq, score);
      this.#scratch[seq] = 0;
    }
    return heap.sorted();
  }

  #growScratch(size: number): void {
    const next = new Float64Array(Math.max(size, this.#scratch.length * 2));
    next.set(this.#scratch);
    this.#scratch = next;
  }
}

/** Position of `seq` in a posting list (ascending by seq, as entries are appended in write order), or -1. */
function indexOf(list: PostingList, seq: number): number {
  let lo = 0;
  let hi = list.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const at = list.seqs[mid] as number;
    if (at === seq) return mid;
    if (at < seq) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** The k best (score, then newer seq) of a stream, by a binary min-heap whose root is the weakest kept hit. */
class TopK {
  readonly #k: number;
  readonly #heap: SparseHit[] = [];

  constructor(k: number) {
    this.#k = k;
  }

  static #weaker(a: SparseHit, b: SparseHit): boolean {
    return a.score < b.score || (a.score === b.score && a.seq < b.seq);
  }

  offer(seq: number, score: number): void {
    const heap = this.#heap;
    const hit = { seq, score };
    if (heap.length < this.#k) {
      heap.push(hit);
      let i = heap.length - 1;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!TopK.#weaker(heap[i] as SparseHit, heap[parent] as SparseHit)) break;
        [heap[i], heap[parent]] = [heap[parent] as SparseHit, heap[i] as SparseHit];
        i = parent;
      }
      return;
    }
    if (this.#k === 0 || !TopK.#weaker(heap[0] as SparseHit, hit)) return;
    heap[0] = hit;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let weakest = i;
      if (left < heap.length && TopK.#weaker(heap[left] as SparseHit, heap[weakest] as SparseHit)) weakest = left;
      if (right < heap.length && TopK.#weaker(heap[right] as SparseHit, heap[weakest] as SparseHit)) weakest = right;
      if (weakest === i) return;
      [heap[i], heap[weakest]] = [heap[weakest] as SparseHit, heap[i] as SparseHit];
      i = weakest;
    }
  }

  /** The kept hits, best first. */
  sorted(): SparseHit[] {
    return [...this.#heap].sort((a, b) => b.score - a.score || b.seq - a.seq);
  }
}
