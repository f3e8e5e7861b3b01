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

/** Share of the smaller of two fixes' terms the other must hold for them to be the same fix. */
const SAME_FIX_CONTAINMENT = 0.5;
/** …and at least this many distinctive terms in common. */
const MIN_SHARED_FIX_TERMS = 3;
/** Lessons compared with each candidate: the nearest by words and meaning. */
const NEIGHBOURS = 12;
/** Lessons a candidate adds its situations to at most. */
const MAX_MATCHES = 3;

/** A lesson's fix: the distinctive terms of its text beyond its conditions and situations. */
function fixTerms(content: string, situational: readonly string[]): Set<string> {
  return new Set(remedyTerms(content, situational).filter((t) => !GENERIC_TERMS.has(t)));
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
