// The situations lessons are learned and used in: the failure signatures of the evidence a lesson was drawn from, the
// situation of a run that an outcome speaks about, whether a lesson bears on that situation, and a lesson's postings
// and vector made again when its situations grow.
import { SituationVectors } from "../retrieval/ranking/situation-match.js";
import { signatureOf, situationsOf } from "../retrieval/situations.js";
import { terms } from "../retrieval/text.js";
import type { EntryRecord, EntryStore } from "../storage/entry-store.js";
import { chunkedVisibleSeqs } from "../memory/scan.js";
import { isFailedOutcome, type EvidenceItem } from "./evidence.js";
import { hasHardError } from "../retrieval/error-words.js";
import type { OutcomeStore } from "./outcome-store.js";

/** Failure signatures a candidate lesson takes from its evidence, and a run's situation at most. */
const MAX_SIGNATURES = 4;
/** A run's most recent entries read for its situation. */
const RUN_ENTRIES_READ = 400;
/** Share of a lesson's own fix terms a run's actions must hold for the fix to count as applied there. */
const FIX_APPLIED_SHARE = 0.6;

/**
 * Lines that restate a run rather than report what happened in it — its task, its plan, its summary ("done after one
 * failed attempt") — are no failure of their own: taken as one, a lesson would be recalled for every task like it.
 */
const RESTATEMENT = /^\s*(?:task|goal|objective|plan|summary)\s*:/i;

function reportsFailure(text: string): boolean {
  return !RESTATEMENT.test(text) && hasHardError(text);
}

/** The situation of a run, as an outcome about it is judged. */
export interface RunSituation {
  /** Failure signatures of what went wrong in the run; empty when nothing did. */
  readonly failures: readonly string[];
  /** The run's opening entry (its task), as a signature; "" when the run is empty. */
  readonly task: string;
  /** Index terms of everything the run wrote: what it did, for telling whether a lesson's fix was applied. */
  readonly terms: ReadonlySet<string>;
}

/** Distinct non-empty signatures of texts, in order, at most `max`. */
function signatures(texts: Iterable<string>, max = MAX_SIGNATURES): string[] {
  const out: string[] = [];
  for (const text of texts) {
    const signature = signatureOf(text);
    if (signature !== "" && !out.includes(signature)) out.push(signature);
    if (out.length >= max) break;
  }
  return out;
}

/** The failure signatures of the evidence a lesson was drawn from: its error reports and failed steps. */
export function candidateSituations(sourceIds: readonly string[], evidence: ReadonlyMap<string, EvidenceItem>): string[] {
  const failures: string[] = [];
  for (const id of sourceIds) {
    const item = evidence.get(id);
    if (item === undefined) continue;
    if (item.kind === "step_outcome" || item.kind === "run_outcome" ? isFailedOutcome(item) : reportsFailure(item.content)) failures.push(item.content);
  }
  return signatures(failures);
}

/** The situation of a run, read from its newest entries and its failed steps, in the owner's scope. */
export function runSituation(entries: EntryStore, outcomes: OutcomeStore, owner: number, runId: string): RunSituation {
  const reported: string[] = [];
  const words = new Set<string>();
  let opening = "";
  let read = 0;
  for (const seq of chunkedVisibleSeqs(entries, owner, runId, true)) {
    if (read++ >= RUN_ENTRIES_READ) break;
    const entry = entries.get(seq);
    if (entry === undefined || entry.entryType === "lesson" || entry.entryType === "rule") continue;
    opening = entry.content;
    for (const term of terms(entry.content)) words.add(term);
    if (reportsFailure(entry.content)) reported.push(entry.content);
  }
  const failedSteps = outcomes.stepOutcomesOfRun(owner, runId, RUN_ENTRIES_READ).filter(isFailedOutcome).map((step) => step.rationale);
  // Entries were read newest first: the errors that started the trouble come first, then what failed steps said.
  return { failures: signatures([...reported.reverse(), ...failedSteps]), task: signatureOf(opening), terms: words };
}

/** What a lesson says beyond the situations it is for — its remedy, mostly: its terms that none of them hold. */
export function remedyTerms(content: string, situational: readonly string[]): string[] {
  const said = new Set(terms(situational.join("\n")));
  return terms(content).filter((t) => !said.has(t));
}

/** Whether a run applied a lesson's fix: most of the words the lesson says beyond its situations are in what the run wrote. */
export function appliedFix(lesson: EntryRecord, run: RunSituation): boolean {
  const situations = situationsOf(lesson.metadataJson);
  const own = new Set(remedyTerms(lesson.content, [...situations.conditions, ...situations.seen]));
  if (own.size === 0) return false;
  let held = 0;
  for (const term of own) if (run.terms.has(term)) held++;
  return held / own.size >= FIX_APPLIED_SHARE;
}

/** How closely a run's failures meet a lesson's situations, in [0, 1] (0 when the run met no failure). */
export async function bearingOn(vectors: SituationVectors, lesson: EntryRecord, run: RunSituation): Promise<number> {
  const situations = situationsOf(lesson.metadataJson);
  await vectors.prepare([...run.failures, ...SituationVectors.textsOf(situations)]);
  const parts = run.failures.flatMap((failure) => vectors.vectorOf(failure) ?? []);
  return vectors.fit(parts, situations).bearing;
}

