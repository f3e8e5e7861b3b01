// A min-heap of (expiry time, seq): the catalog's index of when entries expire, so that finding the ones due costs
// O(log n) each and never a scan. Items go stale when an entry's expiry changes (a policy changed) or it leaves the
// catalog; the reader checks each popped item against the catalog and skips stale ones (lazy deletion).
export class ExpiryQueue {
  #at = new Float64Array(64);
  #seq = new Float64Array(64);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** The earliest expiry queued; Infinity when empty. */
  peekAt(): number {
    return this.#size === 0 ? Infinity : (this.#at[0] as number);
  }

  push(at: number, seq: number): void {
    if (this.#size === this.#at.length) this.#grow();
    let i = this.#size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((this.#at[parent] as number) <= at) break;
      this.#at[i] = this.#at[parent] as number;
      this.#seq[i] = this.#seq[parent] as number;
      i = parent;
    }
    this.#at[i] = at;
    this.#seq[i] = seq;
  }

  /** Removes the earliest item and returns its seq (call only when not empty). */
  pop(): number {
    const top = this.#seq[0] as number;
    const last = --this.#size;
    const at = this.#at[last] as number;
    const seq = this.#seq[last] as number;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= last) break;
      if (child + 1 < last && (this.#at[child + 1] as number) < (this.#at[child] as number)) child++;
      if ((this.#at[child] as number) >= at) break;
      this.#at[i] = this.#at[child] as number;
      this.#seq[i] = this.#seq[child] as number;
      i = child;
    }
    this.#at[i] = at;
    this.#seq[i] = seq;
    return top;
  }

  /** Drops every item and queues these instead (a rebuild once stale items outnumber live ones). */
  reset(items: Iterable<{ at: number; seq: number }>): void {
    this.#size = 0;
    for (const { at, seq } of items) this.push(at, seq);
  }

  #grow(): void {
    const at = new Float64Array(this.#at.length * 2);
    const seq = new Float64Array(this.#seq.length * 2);
    at.set(this.#at);
    seq.set(this.#seq);
    this.#at = at;
    this.#seq = seq;
  }
}
