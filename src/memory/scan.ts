// Long scans that share the event loop: a time slicer that yields to other work every couple of milliseconds, and a
// reader of an entry index in bounded chunks, so no LMDB iterator stays open across a yield (an open iterator pins a
// read snapshot, and a storage swap during compaction would close it under the scan).
import { performance } from "node:perf_hooks";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import type { EntryStore } from "../storage/entry-store.js";

/** How long a scan may hold the event loop before it yields, in milliseconds. */
export const SLICE_MS = 2;
/** Rows between two looks at the clock: reading it is cheap, not free. */
const CHECK_EVERY = 32;
/** Index keys read per chunk: a chunk costs well under a millisecond even when every key needs a record read. */
const CHUNK = 256;

/**
 * Call `tick()` once per row processed; await its result only when it is a promise (a slice just ran out), so a row
 * costs no microtask while the slice lasts: `const pause = slicer.tick(); if (pause) await pause;`.
 */
export class TimeSlicer {
  readonly #sliceMs: number;
  readonly #checkEvery: number;
  #sliceStart = performance.now();
  #rows = 0;
  /** Times the scan gave the event loop back. */
  yields = 0;

  /** `checkEvery`: rows between two looks at the clock; 1 where a single row may cost a good part of a slice. */
  constructor(sliceMs = SLICE_MS, checkEvery = CHECK_EVERY) {
    this.#sliceMs = sliceMs;
    this.#checkEvery = checkEvery;
  }

  tick(): Promise<void> | undefined {
    if (++this.#rows % this.#checkEvery !== 0 || performance.now() - this.#sliceStart < this.#sliceMs) return undefined;
    return this.pause();
  }

  /** Yields to the event loop now and starts a new slice. */
  async pause(): Promise<void> {
    this.yields += 1;
    await yieldToLoop();
    this.#sliceStart = performance.now();
  }
}

/**
 * The seqs of `EntryStore.visibleSeqs`, in the same order, read `CHUNK` at a time: each chunk's LMDB iterator is
 * closed before the generator hands out a seq, so a consumer may await between seqs.
 */
export function* chunkedVisibleSeqs(
  entries: EntryStore,
  owner: number | undefined,
  runId: string | undefined,
  reverse: boolean,
  afterSeq?: number,
): Generator<number> {
  let cursor = afterSeq;
  for (;;) {
    const chunk: number[] = [];
    for (const seq of entries.visibleSeqs(owner, runId, reverse, cursor)) {
      chunk.push(seq);
      if (chunk.length === CHUNK) break;
    }
    yield* chunk;
    if (chunk.length < CHUNK) return;
    cursor = chunk[chunk.length - 1];
  }
}

/** Sorted seqs merged from sorted streams (ascending, or descending when `reverse`); k is small. */
export function* mergeSeqs(sources: readonly Iterator<number>[], reverse: boolean): Generator<number> {
  if (sources.length === 1) {
    const only = sources[0] as Iterator<number>;
    for (let next = only.next(); !next.done; next = only.next()) yield next.value;
    return;
  }
  const heads = sources.map((source) => ({ source, next: source.next() }));
  for (;;) {
    let best: (typeof heads)[number] | undefined;
    for (const head of heads) {
      if (head.next.done) continue;
      if (best === undefined || (reverse ? head.next.value > (best.next.value as number) : head.next.value < (best.next.value as number))) best = head;
    }
    if (best === undefined) return;
    yield best.next.value as number;
    best.next = best.source.next();
  }
}
