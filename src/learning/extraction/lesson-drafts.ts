// Lessons being built (drafts) and what every extractor does with them: rank them, merge those that say the same thing,
// and return them as the candidate lessons of an extraction with its summary.
import type { CandidateLesson, Extraction } from "../evidence.js";
import { IMPORTANCE_LEVELS, type Importance, type LessonType } from "../../storage/entry-record.js";
import { isCritical } from "./lesson-text.js";
import { clip } from "./phrasing.js";
import { jaccard } from "../../retrieval/text.js";
import { identityTerms } from "./term-sets.js";

/** A lesson being built, with the evidence position it starts at (which keeps the order of equals stable). */
export interface Draft {
  readonly content: string;
  readonly lessonType: LessonType;
  readonly importance: Importance;
  readonly conditions: readonly string[];
  readonly rationale: string;
  readonly confidence: number;
  readonly sourceIds: readonly string[];
  readonly index: number;
}

/** Rounds a confidence to two decimals, in [0, 1]. */
export function roundConfidence(value: number): number {
  return Math.round(Math.min(1, Math.max(0, value)) * 100) / 100;
}

/** A lesson's importance: `base`, raised to critical when any of its texts speaks of high stakes. */
export function withImportance(base: Importance, texts: readonly string[]): Importance {
  return texts.some(isCritical) ? "critical" : base;
}

/** "so_1, ent_2 and 3 more". */
export function idList(ids: readonly string[]): string {
  const shown = ids.slice(0, 5).join(", ");
  return ids.length > 5 ? `${shown} and ${ids.length - 5} more` : shown;
}

/** Contents whose term sets overlap this much say the same thing. */
const NEAR_IDENTICAL = 0.8;
/** A lesson found twice is a little more certain. */
const MERGE_BONUS = 0.05;
const MAX_DRAFTS = 200;
const MAX_CONDITIONS = 4;
const MAX_SOURCE_IDS = 32;

/** Most important first, then most confident, then the earliest evidence; content breaks the last ties. */
function compareDrafts(a: Draft, b: Draft): number {
  const importance = IMPORTANCE_LEVELS.indexOf(b.importance) - IMPORTANCE_LEVELS.indexOf(a.importance);
  if (importance !== 0) return importance;
  if (a.confidence !== b.confidence) return b.confidence - a.confidence;
  if (a.index !== b.index) return a.index - b.index;
  return a.content < b.content ? -1 : a.content > b.content ? 1 : 0;
}

function mergeDrafts(kept: Draft, other: Draft, order: ReadonlyMap<string, number>): Draft {
  const ids = [...new Set([...kept.sourceIds, ...other.sourceIds])];
  const position = (id: string): number => order.get(id) ?? Number.MAX_SAFE_INTEGER;
  ids.sort((a, b) => position(a) - position(b) || (a < b ? -1 : a > b ? 1 : 0));
  const rationale = other.rationale === "" || kept.rationale.includes(other.rationale) || kept.rationale.length > 600 ? kept.rationale : `${kept.rationale} Also: ${other.rationale}`;
  return {
    ...kept,
    importance: IMPORTANCE_LEVELS[Math.max(IMPORTANCE_LEVELS.indexOf(kept.importance), IMPORTANCE_LEVELS.indexOf(other.importance))] ?? kept.importance,
    conditions: [...new Set([...kept.conditions, ...other.conditions])].slice(0, MAX_CONDITIONS),
    rationale,
    confidence: roundConfidence(Math.min(0.95, Math.max(kept.confidence, other.confidence) + MERGE_BONUS)),
    sourceIds: ids.slice(0, MAX_SOURCE_IDS),
    index: Math.min(kept.index, other.index),
  };
}

/**
 * Merges near-identical lessons (the better-supported wording wins; lineage and conditions are united) and returns
 * them in `compareDrafts` order. `order` gives each evidence id's position, so merged lineage stays chronological.
 */
export function dedupeLessons(drafts: readonly Draft[], order: ReadonlyMap<string, number>): Draft[] {
  const kept: { draft: Draft; terms: Set<string> }[] = [];
  const byKey = new Map<string, number>();
  for (const draft of [...drafts].sort(compareDrafts).slice(0, MAX_DRAFTS)) {
    const termSet = identityTerms(draft.content);
    const key = [...termSet].sort().join(" ");
    const at = byKey.get(key) ?? kept.findIndex((k) => jaccard(k.terms, termSet) >= NEAR_IDENTICAL);
    const into = kept[at];
    if (into === undefined) {
      byKey.set(key, kept.length);
      kept.push({ draft, terms: termSet });
    } else {
      into.draft = mergeDrafts(into.draft, draft, order);
      byKey.set(key, at);
    }
  }
  return kept.map((k) => k.draft).sort(compareDrafts);
}

/** A draft as the lesson an extraction returns; every extracted lesson is scoped to its run (promotion widens it later). */
export function candidateOf(draft: Draft): CandidateLesson {
  return {
    content: draft.content,
    lessonType: draft.lessonType,
    scope: "run",
    importance: draft.importance,
    conditions: draft.conditions,
    rationale: draft.rationale,
    confidence: draft.confidence,
    sourceIds: draft.sourceIds,
  };
}

/** An extraction of these lessons: its confidence is their mean, 0 with none. */
export function extractionOf(lessons: readonly CandidateLesson[], summary: string): Extraction {
  const confidence = lessons.length === 0 ? 0 : roundConfidence(lessons.reduce((sum, l) => sum + l.confidence, 0) / lessons.length);
  return { lessons, summary, confidence, degraded: false, fallbackReason: "" };
}

const TYPE_NAMES: readonly (readonly [LessonType, string, string])[] = [
  ["failure", "failure pattern", "failure patterns"],
  ["rule", "rule", "rules"],
  ["success", "success pattern", "success patterns"],
  ["preference", "preference", "preferences"],
  ["observation", "observation", "observations"],
];

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "3 lessons from 42 items: 2 failure patterns (npm install timed out; …), 1 rule."; "" without evidence. */
export function summaryOf(lessons: readonly CandidateLesson[], itemCount: number): string {
  if (itemCount === 0) return "";
  const items = plural(itemCount, "item", "items");
  if (lessons.length === 0) return `No lessons from ${items}: no failures, fixes, rules or preferences were found.`;
  const parts: string[] = [];
  for (const [type, one, many] of TYPE_NAMES) {
    const ofType = lessons.filter((lesson) => lesson.lessonType === type);
    if (ofType.length === 0) continue;
    const about =
      type === "failure"
        ? ofType
            .slice(0, 2)
            .map((lesson) => clip((lesson.conditions.find((c) => c.startsWith("when ")) ?? lesson.content).replace(/^when\s+/i, ""), 48))
            .join("; ")
        : "";
    parts.push(`${plural(ofType.length, one, many)}${about === "" ? "" : ` (${about})`}`);
  }
  return `${plural(lessons.length, "lesson", "lessons")} from ${items}: ${parts.join(", ")}.`;
}
