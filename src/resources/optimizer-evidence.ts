// What an optimization learns from: an agent's trusted lessons and its recent outcomes, and the built-in composition
// of a candidate text from them (used without a language model, and whenever the model's answer cannot be used).
import { isUntrustedKnowledge } from "../memory/evidence-trust.js";
import type { Catalog } from "../retrieval/catalog.js";
import type { EntryRecord, EntryStore } from "../storage/entry-store.js";
import { listLessons, lessonTypeOf } from "../learning/lesson-listing.js";
import type { OutcomeStore } from "../learning/outcome-store.js";

/** Lessons below this confidence are used only once validated. */
export const MIN_LESSON_CONFIDENCE = 0.6;
/** At most this many lessons and outcomes feed one optimization. */
const MAX_LESSONS = 30;
const MAX_OUTCOMES = 200;
const LESSON_PAGE = 200;
const MAX_PAGES = 5;
/** Marks the section the built-in composition appends, so a later optimization replaces it instead of stacking. */
export const LEARNED_HEADER = "## Learned from outcomes";

export interface UsedLesson {
  readonly id: string;
  readonly kind: "avoid" | "keep";
  readonly content: string;
}

export interface Evidence {
  readonly lessons: readonly UsedLesson[];
  readonly outcomeCount: number;
  readonly successCount: number;
  readonly failureCount: number;
}

export interface Composition {
  readonly text: string;
  readonly summary: string;
  readonly confidence: number;
}

export interface EvidenceSources {
  readonly entries: EntryStore;
  readonly catalog: Catalog;
  readonly outcomes: OutcomeStore;
}

/** The owner's lessons of `agentIds` worth acting on, newest first, and the agents' recent outcomes. */
export async function gatherEvidence(sources: EvidenceSources, owner: number, agentIds: ReadonlySet<string>): Promise<Evidence> {
  const lessons: UsedLesson[] = [];
  let before: number | undefined;
  for (let page = 0; page < MAX_PAGES && lessons.length < MAX_LESSONS; page++) {
    const filter = { owner, runId: "", scope: "", importance: "", lessonType: "", validationStatus: "", promotionState: "", pendingPromotion: false, excludeStale: true, userId: "", minConfidence: 0 };
    const listed = await listLessons(sources.entries, sources.catalog, filter, LESSON_PAGE, before);
    for (const record of listed.lessons) {
      if (lessons.length < MAX_LESSONS && agentIds.has(record.agentId) && trusted(record)) lessons.push(usedLesson(record));
    }
    if (listed.nextBefore === undefined) break;
    before = listed.nextBefore;
  }
  const outcomes = sources.outcomes.outcomesOfOwner(owner, MAX_OUTCOMES * 5).filter((o) => agentIds.has(o.agentId)).slice(0, MAX_OUTCOMES);
  return {
    lessons,
    outcomeCount: outcomes.length,
    successCount: outcomes.filter((o) => o.outcome === "success").length,
    failureCount: outcomes.filter((o) => o.outcome === "failure").length,
  };
}

function trusted(record: EntryRecord): boolean {
  if (record.learning.promotionState === "quarantined" || record.validationStatus === "invalidated") return false;
  // Text read from a tool, a document or a web page never shapes a prompt on its own.
  if (isUntrustedKnowledge(record)) return false;
  return record.validationStatus === "validated" || record.confidence >= MIN_LESSON_CONFIDENCE;
}

function usedLesson(record: EntryRecord): UsedLesson {
  const type = lessonTypeOf(record);
  return { id: record.id, kind: type === "success" || type === "preference" || type === "observation" ? "keep" : "avoid", content: oneLine(record.content) };
}

function oneLine(text: string): string {
  return text.replace(/\s+/gu, " ").trim();
}

/** Whether there is anything to learn from. */
export function hasEvidence(evidence: Evidence): boolean {
  return evidence.lessons.length > 0 || evidence.outcomeCount > 0;
}

/** "7 of 10 recent outcomes were successes (70%)", or "" without outcomes. */
export function outcomeLine(evidence: Evidence): string {
  if (evidence.outcomeCount === 0) return "";
  const rate = Math.round((100 * evidence.successCount) / evidence.outcomeCount);
  return `${evidence.successCount} of ${evidence.outcomeCount} recent outcomes were successes (${rate}%), ${evidence.failureCount} failures.`;
}

/**
 * The built-in candidate: `base` without any earlier learned section, then a learned section with one "Avoid / Always"
 * line per rule or failure lesson, one "Keep doing" line per success lesson, and the outcome record. Confidence grows
 * with the lessons behind it (0.3 + 0.1 each, at most 0.9), and is 0.2 on outcomes alone.
 */
export function compose(base: string, evidence: Evidence): Composition {
  const kept = base.split(LEARNED_HEADER)[0]?.trimEnd() ?? "";
  const lines = evidence.lessons.map((l) => (l.kind === "avoid" ? `- Avoid / Always: ${l.content}` : `- Keep doing: ${l.content}`));
  const record = outcomeLine(evidence);
  if (record !== "") lines.push(`- Track record: ${record}`);
  const text = `${kept === "" ? "" : `${kept}\n\n`}${LEARNED_HEADER}\n${lines.join("\n")}\n`;
  const n = evidence.lessons.length;
  const confidence = n === 0 ? 0.2 : Math.min(0.9, 0.3 + 0.1 * n);
  return { text, summary: `Built-in composition: ${evidenceSummary(evidence)}`, confidence: Math.round(confidence * 100) / 100 };
}

/** Which lessons (by id) and outcomes an optimization used. */
export function evidenceSummary(evidence: Evidence): string {
  const ids = evidence.lessons.map((l) => l.id);
  const lessons = ids.length === 0 ? "no lessons" : `${ids.length} lesson${ids.length === 1 ? "" : "s"} (${ids.join(", ")})`;
  const record = outcomeLine(evidence);
  return `used ${lessons}${record === "" ? "; no outcomes recorded" : `; ${record}`}`;
}
