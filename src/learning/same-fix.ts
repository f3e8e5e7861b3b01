// A run that met a failure and fixed it the way an existing lesson says met that lesson's situation, in whatever
// words: the run's failure signatures become more situations of the lesson, so that a later run meeting the failure
// worded this way finds it. Fixes are compared by the words a lesson says beyond its situations — a remedy is named
// alike far more often than a symptom is (config keys, commands, flags), so this holds where symptoms share no word.
import type { MemoryIndex } from "../memory/memory-index.js";
import { situationsOf, withSituations } from "../retrieval/situations.js";
import type { EntryRecord, EntryStore } from "../storage/entry-store.js";
import { GENERIC_TERMS } from "./extraction/term-sets.js";
import { searchLessons } from "./lesson-search.js";
import { remedyTerms } from "./lesson-situations.js";
import { terms } from "../retrieval/text.js";

/** Share of the smaller of two fixes' terms the other must hold for them to be the same fix. */
const SAME_FIX_CONTAINMENT = 0.5;
/** …and at least this many distinctive terms in common. */
const MIN_SHARED_FIX_TERMS = 3;
/** Lessons compared with each candidate: the nearest by words and meaning. */
const NEIGHBOURS = 12;
/** Lessons a candidate adds its situations to at most. */
const MAX_MATCHES = 3;

/**
 * The words of the lessons' own phrasing (failure-lessons.ts, the LLM extractor's "When <symptom>, <fix> (instead of
 * <what failed>)"): every lesson of a kind has them, so they say nothing of which fix it is. Taken as fix words, every
 * lesson that found no fix ("do not retry the same approach unchanged: no fix was found") had the same fix as every
 * other, and they passed each other's situations around.
 */
const PHRASING_TERMS = new Set(terms("when do not retry the same approach unchanged no fix was found in step it succeeded on a later attempt avoid always never apply what worked"));
/** What failed, not the fix: "(instead of …)", and how often it failed: "(it failed 3 times …)". */
const NOT_THE_FIX = /\((?:instead of|it failed)\b[^)]*\)?/gi;

/** A lesson's fix: the distinctive terms of its text beyond its conditions, its situations and what failed. */
function fixTerms(content: string, situational: readonly string[]): Set<string> {
  return new Set(remedyTerms(content.replace(NOT_THE_FIX, " "), situational).filter((t) => !GENERIC_TERMS.has(t) && !PHRASING_TERMS.has(t)));
}

function sameFix(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  let shared = 0;
  for (const term of a) if (b.has(term)) shared++;
  return shared >= MIN_SHARED_FIX_TERMS && shared / Math.min(a.size, b.size) >= SAME_FIX_CONTAINMENT;
}

/** A lesson that gains situations, with its new metadata. */
export interface SituationGain {
  readonly lesson: EntryRecord;
  readonly metadataJson: string;
  readonly situations: readonly string[];
}

/**
 * The owner's lessons of other runs that a candidate (its text, conditions and the failure signatures of its run)
 * fixes the same way, with their metadata grown by the candidate's situations; none when the candidate met no failure.
 */
export async function sameFixLessons(
  index: MemoryIndex,
  entries: EntryStore,
  owner: number,
  runId: string,
  candidate: { readonly content: string; readonly conditions: readonly string[]; readonly situations: readonly string[] },
  exclude: ReadonlySet<number>,
): Promise<SituationGain[]> {
  if (candidate.situations.length === 0) return [];
  const mine = fixTerms(candidate.content, [...candidate.conditions, ...candidate.situations]);
  if (mine.size < MIN_SHARED_FIX_TERMS) return [];
  const accept = (seq: number): boolean => !exclude.has(seq) && index.catalog.runOf(seq) !== runId;
  const gains: SituationGain[] = [];
  for (const match of await searchLessons(index, owner, [...mine].join(" "), accept, NEIGHBOURS)) {
    const lesson = entries.get(match.seq);
    if (lesson === undefined || lesson.owner !== owner) continue;
    const situations = situationsOf(lesson.metadataJson);
    if (!sameFix(mine, fixTerms(lesson.content, [...situations.conditions, ...situations.seen]))) continue;
    const metadataJson = withSituations(lesson.metadataJson, "situations", candidate.situations);
    if (metadataJson !== undefined) gains.push({ lesson, metadataJson, situations: candidate.situations });
    if (gains.length >= MAX_MATCHES) break;
  }
  return gains;
}
