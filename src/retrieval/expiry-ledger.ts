// When entries expire, in order of (expiry time, seq), kept in leaves of at most LEAF_SIZE entries that each carry the
// totals of their entries by group (the catalog's group: owner, run, type, author, agent, reach). Taking what is due
// costs one step per group of each whole leaf due, plus at most one leaf's entries, however many entries expire at
// the same instant: 50,000 entries written in a few batches with one TTL settle in a few hundred steps, where taking
// them one by one held the event loop for ~170 ms.

/** Entries per leaf at most: what settling a partly due leaf costs at worst, and what a split recounts. */
const LEAF_SIZE = 256;

/** Entries of one group in a leaf, and their summed index terms. */
export interface GroupTotal {
  count: number;
  terms: number;
}

class Leaf {
  readonly at: number[] = [];
  readonly seq: number[] = [];
  readonly group: number[] = [];
  readonly terms: number[] = [];
  readonly totals = new Map<number, GroupTotal>();

  /** Adds to (or, with sign -1, takes from) the totals of `group`. */
  tally(group: number, terms: number, sign: 1 | -1): void {
    let total = this.totals.get(group);
    if (total === undefined) this.totals.set(group, (total = { count: 0, terms: 0 }));
    total.count += sign;
    total.terms += sign * terms;
    if (total.count === 0) this.totals.delete(group);
  }

  /** Rows [from, to) in a leaf of their own, with their totals. */
  slice(from: number, to: number): Leaf {
    const leaf = new Leaf();
    for (let i = from; i < to; i++) {
      leaf.at.push(this.at[i] as number);
      leaf.seq.push(this.seq[i] as number);
      leaf.group.push(this.group[i] as number);
      leaf.terms.push(this.terms[i] as number);
      leaf.tally(this.group[i] as number, this.terms[i] as number, 1);
    }
    return leaf;
  }
}

/** Whether (at1, seq1) comes before (at2, seq2). */
function precedes(at1: number, seq1: number, at2: number, seq2: number): boolean {
  return at1 !== at2 ? at1 < at2 : seq1 < seq2;
}

export class ExpiryLedger {
  /** Leaves in order; each one's entries in order and before the next leaf's. */
  #leaves: Leaf[] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** The earliest expiry held; Infinity when empty. */
  peekAt(): number {
    return this.#leaves[0]?.at[0] ?? Infinity;
  }

  insert(at: number, seq: number, group: number, terms: number): void {
    if (this.#leaves.length === 0) this.#leaves.push(new Leaf());
    const leafAt = this.#leafFor(at, seq);
    const leaf = this.#leaves[leafAt] as Leaf;
    const row = rowFor(leaf, at, seq);
    leaf.at.splice(row, 0, at);
    leaf.seq.splice(row, 0, seq);
    leaf.group.splice(row, 0, group);
    leaf.terms.splice(row, 0, terms);
    leaf.tally(group, terms, 1);
    this.#size++;
    if (leaf.at.length > LEAF_SIZE) {
      // Appending (the usual case: one TTL, entries written in order) starts a new leaf and leaves this one full.
      const at = leafAt === this.#leaves.length - 1 && row === LEAF_SIZE ? LEAF_SIZE : leaf.at.length >> 1;
      this.#leaves.splice(leafAt, 1, leaf.slice(0, at), leaf.slice(at, leaf.at.length));
    }
  }

  /** Takes out the entry queued at (at, seq); its group, or -1 when it was not there. */
  remove(at: number, seq: number): number {
    if (this.#leaves.length === 0) return -1;
    const leafAt = this.#leafFor(at, seq);
    const leaf = this.#leaves[leafAt] as Leaf;
    const row = rowFor(leaf, at, seq);
    if (leaf.at[row] !== at || leaf.seq[row] !== seq) return -1;
    const group = leaf.group[row] as number;
    leaf.tally(group, leaf.terms[row] as number, -1);
    leaf.at.splice(row, 1);
    leaf.seq.splice(row, 1);
    leaf.group.splice(row, 1);
    leaf.terms.splice(row, 1);
    this.#size--;
    if (leaf.at.length === 0) this.#leaves.splice(leafAt, 1);
    return group;
  }

  /**
   * Takes out every entry due by `now` (expiry at or before it): `settle` is told the totals of each group in each
   * whole leaf due, and of the due part of the first leaf that is not, and `expired` each taken leaf's seqs (an array
   * the ledger no longer holds).
   */
  takeDue(now: number, settle: (group: number, total: GroupTotal) => void, expired: (seqs: number[]) => void): void {
    let whole = 0;
    for (const leaf of this.#leaves) {
      if ((leaf.at[leaf.at.length - 1] as number) > now) break;
      for (const [group, total] of leaf.totals) settle(group, total);
      this.#size -= leaf.at.length;
      expired(leaf.seq);
      whole++;
    }
    if (whole > 0) this.#leaves.splice(0, whole);
    const first = this.#leaves[0];
    if (first === undefined || (first.at[0] as number) > now) return;
    let due = 0;
    while ((first.at[due] as number) <= now) due++;
    const taken = first.slice(0, due);
    for (const [group, total] of taken.totals) settle(group, total);
    this.#leaves[0] = first.slice(due, first.at.length);
    this.#size -= due;
    expired(taken.seq);
  }

  /** Index of the leaf (at, seq) belongs in: the last whose first entry does not come after it, else the first. */
  #leafFor(at: number, seq: number): number {
    const leaves = this.#leaves;
    let lo = 0;
    let hi = leaves.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const leaf = leaves[mid] as Leaf;
      if (precedes(at, seq, leaf.at[0] as number, leaf.seq[0] as number)) hi = mid;
      else lo = mid + 1;
    }
    // Before every leaf: the first leaf takes it (its first entry moves down).
    return lo === 0 ? 0 : lo - 1;
  }
}

/** First row of a leaf not before (at, seq). */
function rowFor(leaf: Leaf, at: number, seq: number): number {
  let lo = 0;
  let hi = leaf.at.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (precedes(leaf.at[mid] as number, leaf.seq[mid] as number, at, seq)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
