// Diagnosis: for an error, the failure lessons and rules that are about it (best first) and the owner's past failures
// of the same kind with what fixed them, summed up in a sentence or two. A ranked answer with a floor: a lesson is
// about the error when the words of the error's failure signature are largely its own, or when that signature is close
// to one of the situations the lesson is for (retrieval/ranking/situation-match.ts); never when the error is closer to
// a situation it was surfaced in and did not apply to. Only those close to the best are returned, so an
// error that matches nothing gets nothing.
import { isUntrustedKnowledge } from "../memory/evidence-trust.js";
import type { MemoryIndex } from "../memory/memory-index.js";
import { terms } from "../retrieval/text.js";
import type { EntryRecord, EntryStore } from "../storage/entry-store.js";
import { lessonTypeOf } from "./lesson-listing.js";
import { searchLessons } from "./lesson-search.js";
import { keyTerms } from "./extraction/term-sets.js";
import { SituationVectors } from "../retrieval/ranking/situation-match.js";
import { failureTerms } from "../retrieval/situations.js";
import { failureShare, weighFailureLine } from "../retrieval/ranking/cross-run.js";
import { DEFAULT_TUNING } from "../retrieval/ranking/tuning.js";
import { inverseDocumentFrequency } from "../retrieval/sparse-index.js";
import { TimeSlicer } from "../memory/scan.js";
import type { OutcomeStore, StepOutcomeRecord } from "./outcome-store.js";

/** Past step outcomes diagnosis reads: a bounded slice of the owner's. */
const MAX_STEP_OUTCOMES = 5_000;
/** Lessons considered before the failure filter and the limit. */
const CANDIDATES = 200;
/** Share of the error's terms a past failure's rationale must contain to count as the same failure. */
const SAME_FAILURE_OVERLAP = 0.4;
/**
 * IDF-weighted share of the error's distinctive terms known to memory a lesson must hold to be about it by its words,
 * for an error too short to be compared by its failure signature…
 */
export const DIAGNOSE_MIN_COVERAGE = 0.5;
/**
 * …and for one that is: then a lesson holding nearly all of its known words is about it, whatever the words memory has
 * not met (a store that never saw "max clients reached" still knows a lesson on "Redis connection pool exhausted").
 */
const KNOWN_WORDS_COVERAGE = 0.8;
/** Distinctive terms of the error a lesson must share to be about it by its words. */
const MIN_SHARED_TERMS = 2;
/** Share of the best match's strength a lesson must reach to be returned. */
const RELATIVE_FLOOR = 0.8;

export interface DiagnoseInput {
  readonly owner: number;
  readonly runId: string;
  readonly errorText: string;
  readonly errorType: string;
  readonly userId: string;
  readonly limit: number;
}

export interface Diagnosis {
  readonly lessons: readonly { readonly record: EntryRecord; readonly score: number }[];
  readonly total: number;
  readonly summary: string;
}

export async function diagnose(index: MemoryIndex, entries: EntryStore, outcomes: OutcomeStore, input: DiagnoseInput): Promise<Diagnosis> {
  const catalog = index.catalog;
  const inScope = (seq: number): boolean => input.runId === "" || catalog.runOf(seq) === input.runId || catalog.isGlobalLesson(seq);
  const text = input.errorType === "" ? input.errorText : `${input.errorText} ${input.errorType}`;
  const matches = await searchLessons(index, input.owner, text, inScope, CANDIDATES);
  const typeWord = input.errorType.toLowerCase();
  const lessons = matches.flatMap((match) => {
    const record = entries.get(match.seq);
    return record === undefined ? [] : [{ match, record, situations: index.lessonSituations.of(match.seq) }];
  });
  await index.situations.prepare([...SituationVectors.partsOf(text), ...lessons.flatMap((l) => SituationVectors.textsOf(l.situations))]);
  const question = index.situations.questionParts(text);
  const documents = catalog.documentStats(input.owner).count;
  const rules = DEFAULT_TUNING.crossRun;
  // The error is compared by its failure signature (what failed and how, without what differs between occurrences and
  // without the words every failure has) as cross-run ranking compares a failure line (ranking/cross-run.ts), and by
  // its distinctive words known to memory; an error too short for a signature, by those words alone.
  const signature = failureTerms(text);
  const failure =
    signature.size >= rules.minSharedFailureTerms
      ? weighFailureLine(signature, (term) => inverseDocumentFrequency(documents, index.sparse.documentFrequency(input.owner, term)))
      : undefined;
  const errorTerms = keyTerms(text);
  const idf = (term: string): number | undefined => {
    const df = index.sparse.documentFrequency(input.owner, term);
    return df === 0 ? undefined : inverseDocumentFrequency(documents, df);
  };
  const minFit = rules.minSituationFit;
  const about: { record: EntryRecord; strength: number; score: number }[] = [];
  for (const { match, record, situations } of lessons) {
    const kind = lessonTypeOf(record);
    if (kind !== "failure" && kind !== "rule") continue;
    // Untrusted knowledge is guidance nowhere but in its own run (see memory/evidence-trust.ts).
    if (isUntrustedKnowledge(record) && record.runId !== input.runId) continue;
    if (input.userId !== "" && record.userId !== "" && record.userId !== input.userId) continue;
    const fit = index.situations.fit(question, situations);
    if (fit.against >= minFit && fit.against >= fit.bearing) continue;
    const held = new Set(entries.termsOf(match.seq)?.keys() ?? []);
    const covered = Math.max(
      atLeast(coverage(errorTerms, held, idf), failure === undefined ? DIAGNOSE_MIN_COVERAGE : KNOWN_WORDS_COVERAGE),
      failure === undefined ? 0 : atLeast(failureShare(failure, (term) => held.has(term), rules.minSharedFailureTerms), rules.minFailureCoverage),
    );
    // A lesson naming the error class the caller gave (`ETIMEDOUT`, `TypeError`) is about that error.
    const namesType = typeWord !== "" && `${record.content} ${record.metadataJson}`.toLowerCase().includes(typeWord);
    const strength = Math.max(
      covered,
      fit.bearing >= minFit ? fit.bearing : 0,
      namesType ? minFit : 0,
    );
    if (strength === 0) continue;
    about.push({ record, strength, score: match.score * (namesType ? 1.3 : 1) });
  }
  const best = Math.max(0, ...about.map((a) => a.strength));
  const found = about.filter((a) => a.strength >= RELATIVE_FLOOR * best).map((a) => ({ record: a.record, score: a.strength * (0.5 + 0.5 * a.score) }));
  found.sort((a, b) => b.score - a.score || b.record.seq - a.record.seq);
  const pastFixes = await fixesOfPastFailures(outcomes.stepOutcomesOfOwner(input.owner, MAX_STEP_OUTCOMES), input);
  return { lessons: found.slice(0, input.limit), total: found.length, summary: summaryOf(found, pastFixes) };
}

interface PastFix {
  readonly failure: StepOutcomeRecord;
  /** What fixed it: the failure's own hint, or the next successful step of its run; "" when nothing did. */
  readonly fix: string;
}

/** Past failed steps like this error, each with what fixed it; read in time slices (see memory/scan.ts). */
async function fixesOfPastFailures(steps: readonly StepOutcomeRecord[], input: DiagnoseInput): Promise<PastFix[]> {
  const errorTerms = new Set(terms(input.errorText));
  if (errorTerms.size === 0) return [];
  const fixes: PastFix[] = [];
  const slicer = new TimeSlicer();
  for (const [i, step] of steps.entries()) {
    const pause = slicer.tick();
    if (pause) await pause;
    if (step.outcome !== "failure" || (input.userId !== "" && step.userId !== "" && step.userId !== input.userId)) continue;
    const stepTerms = new Set(terms(`${step.rationale} ${step.stepName}`));
    let shared = 0;
    for (const term of errorTerms) if (stepTerms.has(term)) shared++;
    if (shared / errorTerms.size < SAME_FAILURE_OVERLAP) continue;
    const later = steps.slice(i + 1).find((s) => s.runId === step.runId && s.outcome === "success" && s.updatedAt >= step.updatedAt);
    fixes.push({ failure: step, fix: step.directiveHint !== "" ? step.directiveHint : (later?.rationale ?? "") });
  }
  return fixes;
}

function summaryOf(found: readonly { record: EntryRecord }[], fixes: readonly PastFix[]): string {
  if (found.length === 0 && fixes.length === 0) return "";
  const parts: string[] = [];
  const best = found[0];
  if (best !== undefined) parts.push(`${found.length} matching failure lesson${found.length === 1 ? "" : "s"} or rules; best: ${clip(best.record.content)}`);
  const fixed = fixes.filter((f) => f.fix !== "");
  if (fixes.length > 0) {
    const example = fixed[0];
    parts.push(`${fixes.length} similar past failure${fixes.length === 1 ? "" : "s"}${example === undefined ? ", none with a recorded fix" : `; fixed by: ${clip(example.fix)}`}`);
  }
  return `${parts.join(". ")}.`;
}

/**
 * IDF-weighted share of the error's distinctive terms a lesson holds, among those the owner's memory knows: a word no
 * entry holds (a host, an id, a word of a log format) cannot tell one lesson from another. 0 when fewer than
 * MIN_SHARED_TERMS are shared.
 */
function coverage(errorTerms: ReadonlySet<string>, held: ReadonlySet<string>, idf: (term: string) => number | undefined): number {
  let total = 0;
  let shared = 0;
  let count = 0;
  for (const term of errorTerms) {
    const weight = idf(term);
    if (weight === undefined) continue;
    total += weight;
    if (!held.has(term)) continue;
    shared += weight;
    count++;
  }
  return total === 0 || count < MIN_SHARED_TERMS ? 0 : shared / total;
}

/** `value` when it reaches `min`, else 0. */
function atLeast(value: number, min: number): number {
  return value >= min ? value : 0;
}

function clip(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 160 ? `${line.slice(0, 160)}…` : line;
}
