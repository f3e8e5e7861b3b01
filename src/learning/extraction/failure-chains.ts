// Failure chains: one failure as it unfolds over a run. Error reports join the open chain they continue (same step,
// similar words, or right after it); a fix reported next attaches to it, a success confirms it, and a failure after a
// fix records that fix as an attempt that did not hold. Only a few chains stay open, so each item is compared with few.
import type { EvidenceItem } from "../evidence.js";
import { actionOf } from "./fix-parts.js";
import { LIMITS, pushUnique } from "./reading-limits.js";
import { jaccard } from "../../retrieval/text.js";
import { overlaps } from "./term-sets.js";

/** Similarity of two failures' distinctive terms that makes them the same failure. */
export const SAME_FAILURE = 0.5;
/** Similarity that lets a failure join an open chain, or the same step's failures group. */
const RELATED_FAILURE = 0.3;
/** Distinctive terms kept per chain. */
const CHAIN_TERMS = 64;

/** One report of a failure: an error sentence, or a failed outcome. */
export interface Signal {
  readonly index: number;
  readonly item: EvidenceItem;
  readonly text: string;
  readonly terms: ReadonlySet<string>;
  readonly fromOutcome: boolean;
  /** Carries real error vocabulary, not only "did not work". */
  readonly hard: boolean;
}

/** One failure as it unfolds: its signals, the fix reported for it, the success that confirmed it. */
export interface Chain {
  readonly failures: Signal[];
  readonly terms: Set<string>;
  readonly stepIds: Set<string>;
  readonly stepNames: Set<string>;
  readonly ids: string[];
  readonly fixIds: string[];
  /** Fixes reported and then seen failing again: what not to do. */
  readonly attempts: string[];
  lastIndex: number;
  fix: string;
  confirmedBy: EvidenceItem | undefined;
  /** A failed outcome of the chain carried the caller's directive hint, which already says what to do about it. */
  hinted: boolean;
}

function hasStep(item: EvidenceItem): boolean {
  return item.stepId !== "" || item.stepName !== "";
}

function chainHasStep(chain: Chain): boolean {
  return chain.stepIds.size > 0 || chain.stepNames.size > 0;
}

function sameStep(item: EvidenceItem, chain: Chain): boolean {
  return (item.stepId !== "" && chain.stepIds.has(item.stepId)) || (item.stepName !== "" && chain.stepNames.has(item.stepName.toLowerCase()));
}

function addStep(chain: Chain, item: EvidenceItem): void {
  if (item.stepId !== "") chain.stepIds.add(item.stepId);
  if (item.stepName !== "") chain.stepNames.add(item.stepName.toLowerCase());
}

/** The failure chains of one run, read in evidence order. */
export class FailureChains {
  readonly #chains: Chain[] = [];
  #open: Chain[] = [];

  /** Adds a failure to the open chain it continues, or starts one. */
  fail(signal: Signal): void {
    this.#add(signal);
  }

  /** A failure told together with its fix, as in "The timeout was fixed by raising the limit". */
  failFixed(signal: Signal, fix: string): void {
    const chain = this.#add(signal);
    if (chain !== undefined) {
      chain.fix = fix;
      chain.fixIds.push(signal.item.id);
    }
  }

  /**
   * Gives a fix to the open chain it belongs to: the same step, shared terms or, when `byProximity`, a failure just
   * before it. `fix` is what was done; the chain keeps the first fix it is given. False when no open chain takes it.
   */
  fix(item: EvidenceItem, index: number, terms: ReadonlySet<string>, byProximity: boolean, fix: string): boolean {
    this.#prune(index);
    const chain = this.#chainForFix(item, index, terms, byProximity);
    if (chain === undefined) return false;
    if (chain.fix === "") chain.fix = fix;
    pushUnique(chain.fixIds, item.id);
    pushUnique(chain.ids, item.id);
    chain.lastIndex = index;
    return true;
  }

  /**
   * Confirms the open chains a success ends: those of its step, or else the last failure when the success follows it
   * closely; a chain with no fix yet takes what the success says was done. False when it ends none.
   */
  succeed(item: EvidenceItem, index: number): boolean {
    this.#prune(index);
    let confirmed = false;
    for (const chain of this.#open) {
      if (!sameStep(item, chain)) continue;
      confirm(chain, item);
      confirmed = true;
    }
    const last = this.#open[this.#open.length - 1];
    if (!confirmed && last !== undefined && last.confirmedBy === undefined) {
      const gap = index - last.lastIndex;
      if (gap === 1 || (!chainHasStep(last) && gap <= 2)) {
        confirm(last, item);
        confirmed = true;
      }
    }
    return confirmed;
  }

  /** All chains of the run grouped by the failure they describe (similar wording, or the same step): one lesson each. */
  sameFailures(): Chain[][] {
    const groups: { terms: Set<string>; chains: Chain[] }[] = [];
    for (const chain of this.#chains) {
      const symptom = chain.failures.find((s) => s.hard) ?? chain.failures[0];
      const terms = symptom === undefined ? new Set<string>() : new Set(symptom.terms);
      const group = groups.find((g) => {
        const similarity = jaccard(g.terms, terms);
        return similarity >= SAME_FAILURE || (similarity >= RELATED_FAILURE && g.chains.some((c) => chain.failures.some((s) => sameStep(s.item, c))));
      });
      if (group === undefined) groups.push({ terms, chains: [chain] });
      else group.chains.push(chain);
    }
    return groups.map((group) => group.chains);
  }

  /** Adds a failure to the open chain it continues, or starts one; returns that chain. */
  #add(signal: Signal): Chain | undefined {
    const chain = this.#continue(signal) ?? this.#start(signal);
    if (chain !== undefined && signal.fromOutcome && signal.item.directiveHint.trim() !== "") chain.hinted = true;
    return chain;
  }

  #continue(signal: Signal): Chain | undefined {
    this.#prune(signal.index);
    const chain = this.#chainFor(signal);
    if (chain === undefined) return undefined;
    // A step's failed outcome, recorded after the traces that showed the failure, reports that failure again.
    const reported = signal.fromOutcome && signal.item.stepId !== "" && chain.failures.some((f) => !f.fromOutcome && f.item.stepId === signal.item.stepId);
    if (!reported && (chain.fix !== "" || chain.fixIds.length > 0)) {
      // It failed again after a fix was reported: the fix did not hold.
      if (chain.fix !== "" && chain.attempts.length < LIMITS.signalsPerChain) chain.attempts.push(chain.fix);
      chain.fix = "";
      chain.fixIds.length = 0;
    }
    if (chain.failures.length < LIMITS.signalsPerChain) chain.failures.push(signal);
    for (const term of signal.terms) if (chain.terms.size < CHAIN_TERMS) chain.terms.add(term);
    addStep(chain, signal.item);
    pushUnique(chain.ids, signal.item.id);
    chain.lastIndex = signal.index;
    return chain;
  }

  #start(signal: Signal): Chain | undefined {
    if (this.#chains.length >= LIMITS.chains) return undefined;
    const created: Chain = {
      failures: [signal],
      terms: new Set(signal.terms),
      stepIds: new Set(),
      stepNames: new Set(),
      ids: [signal.item.id],
      fixIds: [],
      attempts: [],
      lastIndex: signal.index,
      fix: "",
      confirmedBy: undefined,
      hinted: false,
    };
    addStep(created, signal.item);
    this.#chains.push(created);
    this.#open.push(created);
    if (this.#open.length > LIMITS.openChains) this.#open.shift();
    return created;
  }

  #prune(index: number): void {
    this.#open = this.#open.filter((chain) => chain.confirmedBy === undefined && index - chain.lastIndex <= LIMITS.chainWindow);
  }

  #chainFor(signal: Signal): Chain | undefined {
    for (let k = this.#open.length - 1; k >= 0; k--) {
      const chain = this.#open[k];
      if (chain === undefined) continue;
      if (sameStep(signal.item, chain)) return chain;
      if (hasStep(signal.item) && chainHasStep(chain)) continue;
      if (jaccard(signal.terms, chain.terms) >= RELATED_FAILURE) return chain;
      // Next to each other: a trace and then the failed outcome of its step, or consecutive traces, are one failure.
      // A trace with no step after a step's failure is not assumed to be about that step, and a failure sharing no
      // words with a chain that was already fixed is a new failure, not the fix failing.
      const fixed = chain.fix !== "" || chain.fixIds.length > 0;
      if (signal.index - chain.lastIndex <= 1 && !chainHasStep(chain) && !fixed) return chain;
      // "Retrying did not help" carries no error of its own: it is about the failure just before it.
      if (!signal.hard && !signal.fromOutcome && signal.index - chain.lastIndex <= LIMITS.fixWindow) return chain;
    }
    return undefined;
  }

  #chainForFix(item: EvidenceItem, index: number, terms: ReadonlySet<string>, byProximity: boolean): Chain | undefined {
    for (let k = this.#open.length - 1; k >= 0; k--) {
      const chain = this.#open[k];
      if (chain === undefined) continue;
      if (sameStep(item, chain) || overlaps(terms, chain.terms)) return chain;
      // Right after the failure (a thought between them at most), a fix belongs to it even when the agent logged the
      // retry as a new step.
      const gap = index - chain.lastIndex;
      if (byProximity && gap <= LIMITS.fixWindow && (gap <= 2 || !(hasStep(item) && chainHasStep(chain)))) return chain;
    }
    return undefined;
  }
}

function confirm(chain: Chain, item: EvidenceItem): void {
  chain.confirmedBy = item;
  pushUnique(chain.ids, item.id);
  if (chain.fix === "") chain.fix = actionOf(item.content);
}
