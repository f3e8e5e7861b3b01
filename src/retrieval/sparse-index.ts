// BM25 over the postings kept in LMDB, held in memory after the start-up prewarm and updated on every write.
// Postings are kept per owner, so one owner's documents never change another's document frequencies, common-term
// cut-offs or the lists a query walks.
import { PAGE_MASK, SeqPages, type Page } from "./seq-pages.js";
import { TopK, type ScoredSeq } from "./top-k.js";

/** BM25 parameters: memory entries are short, so length normalisation is kept low (see RETRIEVAL.md). */
export const BM25_K1 = 0.9;
export const BM25_B = 0.3;

/**
 * A posting list in one typed array: `[length, maxTf, seq0, tf0, seq1, tf1, …]`, seqs ascending, with spare capacity
 * at the end. `maxTf` bounds the list's frequencies (a removal does not lower it), so a query knows the most the list
 * can add to any entry's score. One array per list keeps the many short lists of many small owners cheap.
 */
type PostingList = Int32Array;

const HEADER = 2;
const lengthOf = (list: PostingList): number => list[0] as number;
const maxTfOf = (list: PostingList): number => list[1] as number;
const seqAt = (list: PostingList, i: number): number => list[HEADER + 2 * i] as number;
const tfAt = (list: PostingList, i: number): number => list[HEADER + 1 + 2 * i] as number;

/**
 * A term in more than this share of an owner's entries (and at least COMMON_TERM_MIN of them) only adds to entries
 * that rarer query terms already found, instead of walking its long posting list: it ranks, it does not recall.
 */
export const COMMON_TERM_SHARE = 0.02;
const COMMON_TERM_MIN = 2000;

export type SparseHit = ScoredSeq;

export interface WeightedTerm {
  readonly term: string;
  readonly weight: number;
}

/** The statistics of the owner whose entries a search scores. */
export interface DocumentStatistics {
  /** The owner's entries. */
  readonly docCount: number;
  /** Their mean term count. */
  readonly avgLength: number;
}

/** The owner of an entry being indexed; undefined when the entry is not (or no longer) present. */
export type OwnerOf = (seq: number) => number | undefined;

/** Per-entry state of 1,024 consecutive seqs (see seq-pages.ts): a page lives while one of them has postings. */
interface EntriesPage extends Page {
  /** 1 + the owner an entry's postings are filed under; 0 when none are held. Removal reads it, not `ownerOf`. */
  readonly filedUnder: Int32Array;
  /**
   * Two numbers per entry, side by side so that a posting's scoring reads one cache line: the score accumulated
   * during one query (zeroed again before the query returns), then the entry's term count (BM25's length).
   */
  readonly rows: Float64Array;
}

const ROWS = PAGE_MASK + 1;
const entriesPage = (): EntriesPage => ({ live: 0, filedUnder: new Int32Array(ROWS), rows: new Float64Array(2 * ROWS) });

/** BM25's inverse document frequency of a term held by `df` of `count` documents. */
export function inverseDocumentFrequency(count: number, df: number): number {
  return Math.log(1 + (count - df + 0.5) / (df + 0.5));
}

export class SparseIndex {
  /** owner → term → postings of the owner's entries. */
  readonly #postings = new Map<number, Map<string, PostingList>>();
  readonly #ownerOf: OwnerOf;
  /** Which owner each entry is filed under, its length and the query's scores, in pages released with their last entry. */
  #entries = new SeqPages(entriesPage);
  #postingCount = 0;

  /** `ownerOf` files new postings under their entry's owner; without it every entry is owner 0's (tests, tools). */
  constructor(ownerOf: OwnerOf = () => 0) {
    this.#ownerOf = ownerOf;
  }

  /** Postings held, one per (term, entry) pair: storage statistics. */
  get postingCount(): number {
    return this.#postingCount;
  }

  /** Bytes allocated for the posting lists (their typed arrays, spare capacity included). */
  get memoryBytes(): number {
    let bytes = this.#entries.byteLength;
    for (const terms of this.#postings.values()) for (const list of terms.values()) bytes += list.byteLength;
    return bytes;
  }

  /** Indexes an entry's terms. Adding a posting already held replaces its frequency. */
  add(seq: number, termFreqs: ReadonlyMap<string, number>): void {
    const terms = this.#termsOfEntry(seq);
    if (terms === undefined) return;
    let length = 0;
    // forEach, not for…of: no [term, tf] pair is allocated per posting (a bulk ingest adds ~14 an entry).
    termFreqs.forEach((tf, term) => {
      this.#addPosting(terms, term, seq, tf);
      length += tf;
    });
    (this.#entries.page(seq) as EntriesPage).rows[2 * (seq & PAGE_MASK) + 1] = length;
  }

  /**
   * Removes an entry's postings (`termFreqs`: the terms it was indexed with), from its owner's lists and so from the
   * owner's document frequencies. Entries never indexed are ignored.
   */
  remove(seq: number, termFreqs: ReadonlyMap<string, number>): void {
    const page = this.#entries.page(seq);
    const filed = page === undefined ? 0 : (page.filedUnder[seq & PAGE_MASK] as number);
    if (page === undefined || filed === 0) return;
    const owner = filed - 1;
    const terms = this.#postings.get(owner);
    page.filedUnder[seq & PAGE_MASK] = 0;
    this.#entries.emptied(seq);
    if (terms === undefined) return;
    for (const term of termFreqs.keys()) {
      const list = terms.get(term);
      if (list === undefined) continue;
      const length = lengthOf(list);
      const i = indexOf(list, seq);
      if (i < 0) continue;
      list.copyWithin(HEADER + 2 * i, HEADER + 2 + 2 * i, HEADER + 2 * length);
      list[0] = length - 1;
      this.#postingCount--;
      if (length === 1) terms.delete(term);
    }
    if (terms.size === 0) this.#postings.delete(owner);
  }

  /** The postings map of an entry's owner, filing the entry under it; undefined when the owner is unknown. */
  #termsOfEntry(seq: number): Map<string, PostingList> | undefined {
    const filed = this.#entries.page(seq)?.filedUnder[seq & PAGE_MASK] ?? 0;
    const owner = filed > 0 ? filed - 1 : this.#ownerOf(seq);
    if (owner === undefined) return undefined;
    if (filed === 0) {
      const page = this.#entries.pageFor(seq);
      page.filedUnder[seq & PAGE_MASK] = owner + 1;
      page.live++;
    }
    let terms = this.#postings.get(owner);
    if (terms === undefined) this.#postings.set(owner, (terms = new Map()));
    return terms;
  }

  #addPosting(terms: Map<string, PostingList>, term: string, seq: number, tf: number): void {
    let list = terms.get(term);
    if (list === undefined) {
      list = new Int32Array(HEADER + 2);
      terms.set(term, list);
    }
    if (tf > maxTfOf(list)) list[1] = tf;
    const length = lengthOf(list);
    // Entries arrive in write order, so appending is the rule; an update re-adds an older seq, and the start-up
    // prewarm may meet postings a write already added.
    let at = length;
    if (length > 0 && seqAt(list, length - 1) >= seq) {
      at = lowerBound(list, seq);
      if (at < length && seqAt(list, at) === seq) {
        list[HEADER + 1 + 2 * at] = tf;
        return;
      }
    }
    if (HEADER + 2 * (length + 1) > list.length) {
      const grown = new Int32Array(HEADER + 2 * Math.max(2, length * 2));
      grown.set(list);
      terms.set(term, (list = grown));
    }
    if (at < length) list.copyWithin(HEADER + 2 + 2 * at, HEADER + 2 * at, HEADER + 2 * length);
    list[HEADER + 2 * at] = seq;
    list[HEADER + 1 + 2 * at] = tf;
    list[0] = length + 1;
    this.#postingCount++;
  }

  /** Owners with postings, ascending. */
  owners(): number[] {
    return [...this.#postings.keys()].sort((a, b) => a - b);
  }

  /** An owner's terms with postings. */
  terms(owner: number): string[] {
    return [...(this.#postings.get(owner)?.keys() ?? [])];
  }

  /** An owner's posting list of a term as held (`[length, maxTf, seq, tf, …]`, without spare capacity): a view. */
  list(owner: number, term: string): Int32Array | undefined {
    const list = this.#postings.get(owner)?.get(term);
    return list?.subarray(0, HEADER + 2 * lengthOf(list));
  }

  /**
   * The `k` shortest of `owner`'s posting lists of `terms` (terms it has none of are skipped), shortest first and
   * ties in the order of `terms`, written to the front of `out`; how many. Unlike `list` it makes no view: a list is
   * handed out as held, spare capacity included, so read it only through postingListLength, postingSeqAt,
   * postingListHolds and postingListLowerBound, and only until the next write. For the checks every write runs.
   */
  shortestLists(owner: number, terms: Iterable<string>, k: number, out: Int32Array[]): number {
    const postings = this.#postings.get(owner);
    if (postings === undefined || k <= 0) return 0;
    let n = 0;
    for (const term of terms) {
      const list = postings.get(term);
      if (list === undefined) continue;
      const length = lengthOf(list);
      if (n === k && length >= lengthOf(out[k - 1] as PostingList)) continue;
      let at = n < k ? n++ : k - 1;
      for (; at > 0 && lengthOf(out[at - 1] as PostingList) > length; at--) out[at] = out[at - 1] as PostingList;
      out[at] = list;
    }
    return n;
  }

  /**
   * Start-up from a snapshot (sparse-snapshot.ts): a copy of `postings` (as `list` gives it) becomes the owner's list
   * of a term it has none of yet, and its entries are filed under the owner. Returns false, adopting nothing more,
   * for a list that is not in order or names an entry filed under another owner.
   */
  adopt(owner: number, term: string, postings: Int32Array): boolean {
    let terms = this.#postings.get(owner);
    if (terms === undefined) this.#postings.set(owner, (terms = new Map()));
    const length = lengthOf(postings);
    if (terms.has(term) || postings.length !== HEADER + 2 * length) return false;
    let previous = -1;
    let maxTf = 0;
    for (let i = 0; i < length; i++) {
      const seq = seqAt(postings, i);
      if (seq <= previous) return false;
      previous = seq;
      maxTf = Math.max(maxTf, tfAt(postings, i));
      const page = this.#entries.pageFor(seq);
      const row = seq & PAGE_MASK;
      const filed = page.filedUnder[row] as number;
      if (filed === 0) {
        page.filedUnder[row] = owner + 1;
        page.live++;
      } else if (filed !== owner + 1) return false;
      page.rows[2 * row + 1] = (page.rows[2 * row + 1] as number) + tfAt(postings, i);
    }
    const list = postings.slice();
    // The bound the query's pruning relies on is recomputed, not trusted.
    list[1] = maxTf;
    terms.set(term, list);
    this.#postingCount += length;
    return true;
  }

  /** Forgets every posting (a snapshot that did not load whole). */
  clear(): void {
    this.#postings.clear();
    this.#entries = new SeqPages(entriesPage);
    this.#postingCount = 0;
  }

  /** How many of `owner`'s entries contain `term`. */
  documentFrequency(owner: number, term: string): number {
    const list = this.#postings.get(owner)?.get(term);
    return list === undefined ? 0 : lengthOf(list);
  }

  /**
   * Top `k` of `owner`'s entries by BM25 among those `accept` admits, scored with the owner's own statistics: only
   * the owner's posting lists are walked, so other owners' entries cost nothing and change nothing.
   */
  search(owner: number, terms: readonly WeightedTerm[], accept: (seq: number) => boolean, k: number, stats: DocumentStatistics): SparseHit[] {
    return this.searchFrom(owner, [], terms, accept, k, stats);
  }

  /**
   * The top `k` of `prior` (an earlier pass's hits of the same owner, best first, each admitted) with the BM25 scores
   * of `terms` added, and of the other entries `accept` admits scored by `terms` alone.
   *
   * Before walking a list, the bounds of it and of the lists after it (each list's most it can add to one entry)
   * are compared with the k-th best score found so far: when they cannot reach it, no entry found later could enter
   * the top k, so the remaining lists only add to the entries already found (MaxScore). The result is the same as
   * walking every list in full.
   */
  searchFrom(owner: number, prior: readonly SparseHit[], terms: readonly WeightedTerm[], accept: (seq: number) => boolean, k: number, stats: DocumentStatistics): SparseHit[] {
    const postings = this.#postings.get(owner);
    const touched: number[] = [];
    for (const { seq, score } of prior) {
      const rows = this.#entries.page(seq)?.rows;
      if (rows === undefined) continue;
      rows[2 * (seq & PAGE_MASK)] = score;
      touched.push(seq);
    }
    const { docCount } = stats;
    const commonDf = Math.max(COMMON_TERM_MIN, COMMON_TERM_SHARE * docCount);
    const scorer = bm25Scorer(stats);
    const lists = terms
      .map(({ term, weight }) => ({ list: postings?.get(term), weight }))
      .filter((t): t is { list: PostingList; weight: number } => t.list !== undefined)
      .sort((a, b) => lengthOf(a.list) - lengthOf(b.list))
      .map(({ list, weight }) => {
        const length = lengthOf(list);
        const idf = inverseDocumentFrequency(docCount, length);
        return { list, weight: weight * idf, bound: Math.max(0, weight * idf * scorer.tfBound(maxTfOf(list))) };
      });
    // What the lists from each one on can add to one entry, at most.
    const reach = new Float64Array(lists.length + 1);
    for (let j = lists.length - 1; j >= 0; j--) reach[j] = (reach[j + 1] as number) + (lists[j] as { bound: number }).bound;
    let threshold = prior.length >= k && k > 0 ? (prior[k - 1] as SparseHit).score : 0;
    let thresholdOf = touched.length;
    // The entries found that can still reach the top k; once no new entry can, the rest only add to these.
    let contenders: readonly number[] = touched;
    lists.forEach(({ list, weight }, j) => {
      const length = lengthOf(list);
      const canReach = (): boolean => (reach[j] as number) >= threshold;
      // Raising the bar costs a pass over the entries found: worth it only before a list at least that long.
      if (canReach() && touched.length > thresholdOf && touched.length >= k && length * 4 >= touched.length) {
        threshold = Math.max(threshold, this.#kthBest(touched, k));
        thresholdOf = touched.length;
      }
      if (!canReach()) {
        // An entry whose score with every remaining list's bound stays under the bar is out for good.
        contenders = contenders.filter((seq) => {
          const score = (this.#entries.page(seq) as EntriesPage).rows[2 * (seq & PAGE_MASK)] as number;
          return score > 0 && score + (reach[j] as number) >= threshold;
        });
        this.#addToFound(list, contenders, weight, scorer);
        return;
      }
      // A very common term ranks the entries rarer terms found rather than recalling its own (not exact: a heuristic).
      const common = length > commonDf && touched.length > 0 && touched.length * 4 < length;
      if (common) this.#addToFound(list, touched, weight, scorer);
      else this.#walk(list, touched, weight, scorer, accept);
    });
    // Keep the best k in a min-heap rather than sorting every touched entry.
    const heap = new TopK(k);
    for (const seq of touched) {
      const rows = (this.#entries.page(seq) as EntriesPage).rows;
      const row = 2 * (seq & PAGE_MASK);
      const score = rows[row] as number;
      if (score > 0) heap.offer(seq, score);
      rows[row] = 0;
    }
    return heap.sorted();
  }

  /**
   * Adds a list's scores to the entries it holds: every one, admitting the new ones `accept` takes, or (without
   * `accept`) only those already found and admitted.
   */
  #walk(list: PostingList, touched: number[], weight: number, scorer: Bm25Scorer, accept?: (seq: number) => boolean): void {
    const length = lengthOf(list);
    for (let i = 0; i < length; i++) {
      const seq = seqAt(list, i);
      // Every seq in a list is filed, so its page is there; a missing one is skipped rather than trusted.
      const rows = this.#entries.page(seq)?.rows;
      if (rows === undefined) continue;
      const row = 2 * (seq & PAGE_MASK);
      const current = rows[row] as number;
      if (current < 0 || (current === 0 && accept === undefined)) continue;
      if (current === 0) {
        touched.push(seq);
        if (!(accept as (seq: number) => boolean)(seq)) {
          // Remember the refusal for this query so later terms skip the check.
          rows[row] = -1;
          continue;
        }
      }
      rows[row] = current + weight * scorer.tfPart(tfAt(list, i), rows[row + 1] as number);
    }
  }

  /** Adds a list's scores to the entries already found (and admitted) only. */
  #addToFound(list: PostingList, found: readonly number[], weight: number, scorer: Bm25Scorer): void {
    if (found.length * 4 >= lengthOf(list)) {
      this.#walk(list, [], weight, scorer);
      return;
    }
    for (const seq of found) {
      const rows = (this.#entries.page(seq) as EntriesPage).rows;
      const row = 2 * (seq & PAGE_MASK);
      if ((rows[row] as number) <= 0) continue;
      const i = indexOf(list, seq);
      if (i >= 0) rows[row] = (rows[row] as number) + weight * scorer.tfPart(tfAt(list, i), rows[row + 1] as number);
    }
  }

  /** The k-th best score among the entries found (0 when fewer than k scored). */
  #kthBest(touched: readonly number[], k: number): number {
    const heap = new TopK(k);
    for (const seq of touched) {
      const score = (this.#entries.page(seq) as EntriesPage).rows[2 * (seq & PAGE_MASK)] as number;
      if (score > 0) heap.offer(seq, score);
    }
    return heap.bar;
  }
}

interface Bm25Scorer {
  /** BM25's term-frequency part for an entry of `length` terms (times weight × idf gives the term's score). */
  tfPart(tf: number, length: number): number;
  /** The most `tfPart` can be for a frequency up to `maxTf`: at the shortest entry length. */
  tfBound(maxTf: number): number;
}

function bm25Scorer({ avgLength }: DocumentStatistics): Bm25Scorer {
  const avg = avgLength || 1;
  return {
    tfPart: (tf, length) => (tf * (BM25_K1 + 1)) / (tf + BM25_K1 * (1 - BM25_B + (BM25_B * length) / avg)),
    tfBound: (maxTf) => (maxTf * (BM25_K1 + 1)) / (maxTf + BM25_K1 * (1 - BM25_B)),
  };
}

/** First position of a posting list whose seq is at least `seq`. */
function lowerBound(list: PostingList, seq: number, from = 0, to = lengthOf(list)): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (seqAt(list, mid) < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Position of `seq` in a posting list (ascending by seq), or -1. */
function indexOf(list: PostingList, seq: number): number {
  const at = lowerBound(list, seq);
  return at < lengthOf(list) && seqAt(list, at) === seq ? at : -1;
}

/** Whether a posting list as `SparseIndex.list` gives it holds an entry. */
export function postingListHolds(list: Int32Array, seq: number): boolean {
  return indexOf(list, seq) >= 0;
}

/** The entries of a posting list as `SparseIndex.list` gives it, ascending: the `i`-th of `postingListLength`. */
export function postingSeqAt(list: Int32Array, i: number): number {
  return seqAt(list, i);
}

export function postingListLength(list: Int32Array): number {
  return lengthOf(list);
}

/** The position in a posting list of its first entry ≥ `seq`, searched between `from` and `to` (default: all of it). */
export function postingListLowerBound(list: Int32Array, seq: number, from = 0, to = lengthOf(list)): number {
  return lowerBound(list, seq, from, to);
}
