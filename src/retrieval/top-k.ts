// The k best of a stream of scored seqs, kept in a binary min-heap rather than by sorting every candidate: shared by
// the lexical index (BM25 over touched entries) and exact dense search (similarity over admissible vectors).

export interface ScoredSeq {
  readonly seq: number;
  readonly score: number;
}

/** The k best (score, then newer seq) of a stream, by a binary min-heap whose root is the weakest kept hit. */
export class TopK {
  readonly #k: number;
  readonly #heap: ScoredSeq[] = [];

  constructor(k: number) {
    this.#k = k;
  }

  static #weaker(a: ScoredSeq, b: ScoredSeq): boolean {
    return a.score < b.score || (a.score === b.score && a.seq < b.seq);
  }

  offer(seq: number, score: number): void {
    const heap = this.#heap;
    // Most offers of a long stream lose to the weakest kept hit: refuse them before allocating anything.
    if (heap.length >= this.#k) {
      const weakest = heap[0];
      if (weakest === undefined || score < weakest.score || (score === weakest.score && seq < weakest.seq)) return;
    }
    const hit = { seq, score };
    if (heap.length < this.#k) {
      heap.push(hit);
      let i = heap.length - 1;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!TopK.#weaker(heap[i] as ScoredSeq, heap[parent] as ScoredSeq)) break;
        [heap[i], heap[parent]] = [heap[parent] as ScoredSeq, heap[i] as ScoredSeq];
        i = parent;
      }
      return;
    }
    if (this.#k === 0 || !TopK.#weaker(heap[0] as ScoredSeq, hit)) return;
    heap[0] = hit;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let weakest = i;
      if (left < heap.length && TopK.#weaker(heap[left] as ScoredSeq, heap[weakest] as ScoredSeq)) weakest = left;
      if (right < heap.length && TopK.#weaker(heap[right] as ScoredSeq, heap[weakest] as ScoredSeq)) weakest = right;
      if (weakest === i) return;
      [heap[i], heap[weakest]] = [heap[weakest] as ScoredSeq, heap[i] as ScoredSeq];
      i = weakest;
    }
  }

  /** The weakest kept score once k hits are kept (an offer must reach it), else 0. */
  get bar(): number {
    return this.#heap.length >= this.#k ? (this.#heap[0]?.score ?? 0) : 0;
  }

  /** The kept hits, best first. */
  sorted(): ScoredSeq[] {
    return [...this.#heap].sort((a, b) => b.score - a.score || b.seq - a.seq);
  }
}
