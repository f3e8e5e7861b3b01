// Memory quality over the newest entries of a scope: counts, staleness, section health, low-confidence lessons,
// contradicting lesson and rule pairs, pending promotions, quarantined and stale lessons, untrusted and
// instruction-flagged entries. Both the inspection walk and the pairwise contradiction search run in time slices
// (see scan.ts), so a large scope never holds the event loop for more than a couple of milliseconds at a time.
import { CONTEXT_SECTIONS, sectionOf, type ContextSectionName } from "../retrieval/context/assemble-context.js";
import { isStaleRecord, type EntryRecord, type EntryStore } from "../storage/entry-store.js";
import { TimeSlicer, chunkedVisibleSeqs } from "./scan.js";
import { isUntrustedKnowledge } from "./evidence-trust.js";
import { INSTRUCTION_FLAG } from "./instruction-detector.js";

const LOW_CONFIDENCE = 0.5;
/** Lessons at least this similar (cosine of their vectors) are compared for disagreement. */
const SAME_SUBJECT = 0.8;
/** Contradictions are sought pairwise among at most this many lessons (the newest), so a call stays bounded. */
export const MAX_COMPARED_LESSONS = 1000;
const NEGATION = /\b(not|never|don't|do not|avoid|shouldn't|should not|no longer|stop)\b/i;
const DAY_MS = 86_400_000;
/** Ids of flagged entries and untrusted lessons a report lists at most (the counts cover all inspected). */
export const MAX_LISTED_IDS = 20;

export interface HealthScope {
  /** Owner whose entries are inspected; undefined for every owner's (admins). */
  readonly owner: number | undefined;
  /** Run to inspect; undefined for every run. */
  readonly runId: string | undefined;
  /** Only entries about this logical user, when not "". */
  readonly userId: string;
  readonly staleDays: number;
  /** Entries inspected at most, newest first. */
  readonly limit: number;
  /** Unix milliseconds the ages are measured at. */
  readonly now: number;
}

export interface SectionHealth {
  readonly section: ContextSectionName;
  readonly count: number;
  readonly avgConfidence: number;
  readonly avgAgeHours: number;
  readonly stale: number;
}

export interface Contradiction {
  readonly older: EntryRecord;
  readonly newer: EntryRecord;
  readonly similarity: number;
}

export interface HealthReport {
  readonly inspected: number;
  readonly counts: Record<string, number>;
  readonly stale: number;
  /** Non-empty sections, in context priority order. */
  readonly sections: SectionHealth[];
  /** Current lessons below the confidence line, lowest first. */
  readonly lowConfidence: EntryRecord[];
  readonly contradictions: Contradiction[];
  /** Lessons and rules with a pending promotion (`proposed` or `auditioning`), newest first. */
  readonly promotionCandidates: EntryRecord[];
  /** Quarantined lessons and rules, newest first. */
  readonly quarantined: EntryRecord[];
  /** Stale lessons and rules (superseded or marked stale), newest first. */
  readonly staleLessons: EntryRecord[];
  /** Inspected entries whose provenance trust is `untrusted`. */
  readonly untrusted: number;
  /** Inspected entries ingest flagged `instruction_like`; `flaggedIds` the newest MAX_LISTED_IDS of them. */
  readonly instructionFlagged: number;
  readonly flaggedIds: string[];
  /** The newest MAX_LISTED_IDS inspected lessons and rules that are untrusted (see memory/evidence-trust.ts). */
  readonly untrustedLessonIds: string[];
}

/** Lesson vectors are compared through the index; the query side comes from the store, read once per lesson. */
export interface LessonVectors {
  vector(seq: number): Float32Array | undefined;
  similarity(seq: number, query: Float32Array): number;
}

/** The newest entries of the scope, at most `limit`, newest first. */
async function newestEntries(entries: EntryStore, scope: HealthScope, slicer: TimeSlicer): Promise<EntryRecord[]> {
  const inspected: EntryRecord[] = [];
  for (const seq of chunkedVisibleSeqs(entries, scope.owner, scope.runId, true)) {
    if (inspected.length >= scope.limit) break;
    const entry = entries.get(seq);
    if (entry !== undefined && (scope.userId === "" || entry.userId === scope.userId)) inspected.push(entry);
    const pause = slicer.tick();
    if (pause) await pause;
  }
  return inspected;
}

function sectionHealth(inspected: readonly EntryRecord[], isStale: (e: EntryRecord) => boolean, now: number): SectionHealth[] {
  const sums = new Map<ContextSectionName, { count: number; confidence: number; ageHours: number; stale: number }>();
  for (const entry of inspected) {
    const name = sectionOf(entry.entryType);
    const sum = sums.get(name) ?? { count: 0, confidence: 0, ageHours: 0, stale: 0 };
    sum.count++;
    sum.confidence += entry.confidence;
    sum.ageHours += (now - entry.createdAt) / 3_600_000;
    if (isStale(entry)) sum.stale++;
    sums.set(name, sum);
  }
  return CONTEXT_SECTIONS.flatMap((section) => {
    const sum = sums.get(section);
    if (sum === undefined) return [];
    return [{ section, count: sum.count, avgConfidence: sum.confidence / sum.count, avgAgeHours: sum.ageHours / sum.count, stale: sum.stale }];
  });
}

/**
 * Pairs of lessons about the same subject (cosine at least SAME_SUBJECT) that disagree: one a success and the other a
 * failure, or one negating what the other says. `lessons` is newest first; pairs come in that order. Whether a pair
 * disagrees is known per lesson, so only disagreeing pairs pay for a similarity.
 */
async function contradictions(lessons: readonly EntryRecord[], vectors: LessonVectors, slicer: TimeSlicer): Promise<Contradiction[]> {
  const negated = lessons.map((lesson) => NEGATION.test(lesson.content));
  const found: Contradiction[] = [];
  for (let i = 0; i < lessons.length; i++) {
    const a = lessons[i] as EntryRecord;
    const va = vectors.vector(a.seq);
    if (va === undefined) continue;
    for (let j = i + 1; j < lessons.length; j++) {
      const b = lessons[j] as EntryRecord;
      const opposite = (a.lessonType === "success" && b.lessonType === "failure") || (a.lessonType === "failure" && b.lessonType === "success");
      if (opposite || negated[i] !== negated[j]) {
        const similarity = vectors.similarity(b.seq, va);
        if (similarity >= SAME_SUBJECT) found.push(a.seq < b.seq ? { older: a, newer: b, similarity } : { older: b, newer: a, similarity });
      }
      const pause = slicer.tick();
      if (pause) await pause;
    }
  }
  return found;
}

export async function assessHealth(entries: EntryStore, vectors: LessonVectors, scope: HealthScope): Promise<HealthReport> {
  const slicer = new TimeSlicer();
  const inspected = await newestEntries(entries, scope, slicer);
  const isStale = (e: EntryRecord): boolean => isStaleRecord(e) || scope.now - e.createdAt > scope.staleDays * DAY_MS;
  const counts: Record<string, number> = {};
  let stale = 0;
  let untrusted = 0;
  const flagged: string[] = [];
  let instructionFlagged = 0;
  for (const entry of inspected) {
    counts[entry.entryType] = (counts[entry.entryType] ?? 0) + 1;
    if (isStale(entry)) stale++;
    if (entry.provenance.trust === "untrusted") untrusted++;
    if (entry.flags.includes(INSTRUCTION_FLAG)) {
      instructionFlagged++;
      if (flagged.length < MAX_LISTED_IDS) flagged.push(entry.id);
    }
  }
  const knowledge = inspected.filter((e) => e.entryType === "lesson" || e.entryType === "rule");
  const lessons = knowledge.filter((e) => !isStaleRecord(e) && e.learning.promotionState !== "quarantined");
  return {
    inspected: inspected.length,
    counts,
    stale,
    sections: sectionHealth(inspected, isStale, scope.now),
    lowConfidence: lessons.filter((l) => l.confidence < LOW_CONFIDENCE).sort((a, b) => a.confidence - b.confidence),
    // `inspected` is newest first, so this keeps the newest lessons.
    contradictions: await contradictions(lessons.slice(0, MAX_COMPARED_LESSONS), vectors, slicer),
    promotionCandidates: knowledge.filter((e) => e.learning.promotionState === "proposed" || e.learning.promotionState === "auditioning"),
    quarantined: knowledge.filter((e) => e.learning.promotionState === "quarantined"),
    staleLessons: knowledge.filter(isStaleRecord),
    untrusted,
    instructionFlagged,
    flaggedIds: flagged,
    untrustedLessonIds: knowledge.filter(isUntrustedKnowledge).slice(0, MAX_LISTED_IDS).map((e) => e.id),
  };
}
