// The entries a fact may repeat, found in a bounded time whatever the owner's size: a near-duplicate shares nearly all
// its words, so it holds all but a few of the text's rarest index terms. The candidates are the most recent entries
// (at most CANDIDATE_WINDOW a list) of the owner's posting lists of those terms that are in enough of the other rare
// lists, then in the fact's run, current facts and of a similar length. Every write of a fact runs this, so it reads
// the lists as held (no view, no sort, no set) and walks them side by side rather than searching each candidate in
// each list: the lists are short and ordered, and most candidates drop out after the first two.
import type { Catalog } from "../retrieval/catalog.js";
import { postingListLength, postingListLowerBound, postingSeqAt, type SparseIndex } from "../retrieval/sparse-index.js";
import type { EntryRecord } from "../storage/entry-record.js";

/** Most recent entries checked in each posting list that gives candidates. */
export const CANDIDATE_WINDOW = 32;
/** Rarest terms a candidate is checked against before anything else of it is read. */
export const RARE_TERMS = 4;
/**
 * Share of a text's distinct terms a near-duplicate may lack: word overlap (Jaccard) ≥ 0.85 between texts of n words
 * leaves at most ~8 % of either's words unshared.
 */
const MAY_LACK = 0.081;
/** Term counts of a near-duplicate lie within this ratio of the fact's. */
const LENGTH_RATIO = 0.6;
/** Entries of a posting list stepped over, newest first, before a binary search finds a candidate's place. */
const WALK_STEPS = 8;
/** A candidate's count of lists lacking it once it is out (self, or already found through an earlier list). */
const OUT = 1 << 30;

export class NearDuplicateCandidates {
  readonly #catalog: Catalog;
  readonly #sparse: SparseIndex;
  /** The rare lists of the fact being checked, rarest first (scratch, reused by every call). */
  readonly #rare: Int32Array[] = [];
  /** How many rare lists lack each entry of the window being checked (scratch). */
  readonly #lacking = new Int32Array(CANDIDATE_WINDOW);

  constructor(catalog: Catalog, sparse: SparseIndex) {
    this.#catalog = catalog;
    this.#sparse = sparse;
  }

  /**
   * Entries that may repeat `fact` (indexed with `termFreqs`), other than itself: from the posting lists of its
   * rarest terms (one more list than the terms a near-duplicate may lack, so that it is in one of them), each list's
   * most recent first, those in all but what a near-duplicate may lack of the RARE_TERMS rarest lists, of the same
   * run, current facts of a similar length.
   */
  of(fact: Pick<EntryRecord, "seq" | "owner" | "runId" | "termCount">, termFreqs: ReadonlyMap<string, number>): number[] {
    const rare = this.#rare;
    const n = this.#sparse.shortestLists(fact.owner, termFreqs.keys(), RARE_TERMS, rare);
    const mayLack = Math.min(n - 1, Math.max(1, Math.floor(MAY_LACK * termFreqs.size)));
    const found: number[] = [];
    for (let k = 0; k <= mayLack && k < n; k++) {
      const alive = this.#window(rare[k] as Int32Array, k, n, mayLack, fact.seq, found);
      if (alive > 0) this.#admit(rare[k] as Int32Array, mayLack, fact, found);
    }
    rare.fill(EMPTY, 0, n);
    return found;
  }

  /**
   * Counts, into `#lacking`, how many of the `n` rare lists lack each entry of list `k`'s window (its newest first);
   * returns how many entries the lists lack no more than `mayLack` times. Stops once none can.
   */
  #window(list: Int32Array, k: number, n: number, mayLack: number, self: number, found: readonly number[]): number {
    const rare = this.#rare;
    const lacking = this.#lacking;
    const length = postingListLength(list);
    const size = Math.min(CANDIDATE_WINDOW, length);
    let alive = 0;
    for (let t = 0; t < size; t++) {
      const seq = postingSeqAt(list, length - 1 - t);
      const out = seq === self || found.includes(seq);
      lacking[t] = out ? OUT : 0;
      if (!out) alive++;
    }
    // The other lists rarest first (the shortest walks; after two of them few candidates are left), each walked from
    // its newest entry down beside the window, a search taking over where a step would not do.
    for (let j = 0; j < n && alive > 0; j++) {
      if (j === k) continue;
      const other = rare[j] as Int32Array;
      // Entries of `other` from `end` on are newer than the last candidate looked up.
      let end = postingListLength(other);
      for (let t = 0; t < size; t++) {
        if ((lacking[t] as number) > mayLack) continue;
        const seq = postingSeqAt(list, length - 1 - t);
        for (let steps = 0; end > 0 && postingSeqAt(other, end - 1) > seq; steps++) {
          if (steps === WALK_STEPS) {
            end = postingListLowerBound(other, seq + 1, 0, end);
            break;
          }
          end--;
        }
        if (end > 0 && postingSeqAt(other, end - 1) === seq) continue;
        const lacks = (lacking[t] as number) + 1;
        lacking[t] = lacks;
        if (lacks > mayLack) alive--;
      }
    }
    return alive;
  }

  /** Adds the entries of list's window the rare lists hold enough of that are current facts of the run and length. */
  #admit(list: Int32Array, mayLack: number, fact: Pick<EntryRecord, "runId" | "termCount">, found: number[]): void {
    const catalog = this.#catalog;
    const low = fact.termCount * LENGTH_RATIO;
    const high = fact.termCount / LENGTH_RATIO;
    const length = postingListLength(list);
    const size = Math.min(CANDIDATE_WINDOW, length);
    for (let t = 0; t < size; t++) {
      if ((this.#lacking[t] as number) > mayLack) continue;
      const seq = postingSeqAt(list, length - 1 - t);
      if (!catalog.has(seq) || catalog.entryType(seq) !== "fact" || catalog.isStale(seq)) continue;
      const terms = catalog.termCount(seq);
      if (terms < low || terms > high || catalog.runOf(seq) !== fact.runId) continue;
      found.push(seq);
    }
  }
}

/** What the scratch list slots hold between calls, so that they keep no posting list alive. */
const EMPTY = new Int32Array(2);
