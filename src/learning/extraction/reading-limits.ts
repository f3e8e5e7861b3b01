// How much of a run the built-in extractor reads and keeps. Every per-item step is bounded by these, which keeps the
// extraction linear in the evidence and its pairwise comparisons over capped lists.

export const LIMITS = {
  /** The most recent items read; a longer run's earlier items are not. */
  items: 3000,
  itemChars: 1500,
  sentencesPerItem: 12,
  sentenceChars: 400,
  /** Error sentences of one item that become failure signals. */
  errorsPerItem: 2,
  /** Failure chains that can still be joined, fixed or confirmed; and all chains of a run. */
  openChains: 12,
  chains: 64,
  signalsPerChain: 16,
  /** A chain stays open for this many items after its last failure or fix. */
  chainWindow: 25,
  /** A fix sentence with nothing else tying it to a chain fixes one this close. */
  fixWindow: 3,
  statementsPerType: 30,
  /** Lineage ids kept per chain, statement or hint. */
  ids: 32,
  successes: 30,
  lessons: 20,
} as const;

/** Appends a value not yet in a list, up to LIMITS.ids values. */
export function pushUnique(list: string[], value: string): void {
  if (list.length < LIMITS.ids && !list.includes(value)) list.push(value);
}
