// The validation gate every candidate lesson passes before it is stored: a confidence floor, near-duplicates of a
// lesson the owner already has (lexical and vector similarity) merged into it, and lessons contradicting an active
// rule held back in quarantine.
import type { EntryRecord, EntryStore } from "../storage/entry-store.js";
import type { Catalog } from "../retrieval/catalog.js";
import type { VectorIndex } from "../retrieval/vector-index.js";
import type { CandidateLesson } from "./evidence.js";
import { jaccard } from "../retrieval/text.js";

/** Below this confidence a candidate is rejected. */
export const CONFIDENCE_FLOOR = 0.3;
/** Share of index terms two lessons must have in common (Jaccard) to be the same lesson. */
export const DUPLICATE_TERM_OVERLAP = 0.5;
/** Cosine similarity above which two lessons are the same lesson whatever their words. */
export const DUPLICATE_COSINE = 0.92;
/** Term overlap above which a lesson and a rule speak of the same thing (then opposite polarity contradicts). */
export const SAME_TOPIC_TERM_OVERLAP = 0.5;
/** Existing lessons compared with each candidate: the nearest by vector. */
const NEIGHBOURS = 12;

const NEGATION = /\b(never|don't|dont|do not|does not|must not|mustn't|should not|shouldn't|cannot|can't|avoid|no longer|stop|without)\b/i;

/** A candidate with what the gate compares: its index terms and its vector. */
export interface PreparedCandidate {
  readonly lesson: CandidateLesson;
  /** Failure signatures of the evidence it was drawn from (see retrieval/situations.ts). */
  readonly situations: readonly string[];
  /** What it is found by: its text, conditions and situations (retrieval/situations.ts lessonIndexText). */
  readonly indexText: string;
  readonly terms: ReadonlySet<string>;
  readonly vector: Float32Array;
}

export type GateDecision =
  | { readonly kind: "accepted"; readonly reason: string }
  | { readonly kind: "rejected"; readonly reason: string }
  /** The same as an existing lesson; `newEvidence` is false when every source was already that lesson's. */
  | { readonly kind: "merged"; readonly into: EntryRecord; readonly reason: string; readonly newEvidence: boolean }
  /** Stored, but held back from guidance: it contradicts an active rule, or repeats a quarantined lesson. */
  | { readonly kind: "quarantined"; readonly reason: string; readonly into: EntryRecord | undefined };

export interface GateScope {
  readonly owner: number;
  readonly runId: string;
  readonly userId: string;
}

export class ValidationGate {
  readonly #entries: EntryStore;
  readonly #catalog: Catalog;
  readonly #dense: VectorIndex;

  constructor(entries: EntryStore, catalog: Catalog, dense: VectorIndex) {
    this.#entries = entries;
    this.#catalog = catalog;
    this.#dense = dense;
  }

  decide(candidate: PreparedCandidate, scope: GateScope): GateDecision {
    const { lesson } = candidate;
    if (lesson.confidence < CONFIDENCE_FLOOR) {
      return { kind: "rejected", reason: `confidence ${lesson.confidence.toFixed(2)} is below the floor ${CONFIDENCE_FLOOR}` };
    }
    const neighbours = this.#neighbours(candidate, scope.owner);
    const duplicate = neighbours.find((n) => isSameLesson(candidate, n, scope));
    if (duplicate !== undefined) {
      const existing = duplicate.record;
      if (existing.validationStatus === "invalidated") return { kind: "rejected", reason: `the same as invalidated lesson ${existing.id}` };
      if (existing.learning.promotionState === "quarantined") return { kind: "quarantined", reason: `the same as quarantined lesson ${existing.id}`, into: existing };
      const newEvidence = lesson.sourceIds.length === 0 || lesson.sourceIds.some((id) => !existing.sourceIds.includes(id));
      return { kind: "merged", into: existing, newEvidence, reason: `the same as lesson ${existing.id} (${describe(duplicate)})` };
    }
    const contradicted = neighbours.find((n) => contradicts(candidate, n, scope, this.#catalog));
    if (contradicted !== undefined) {
      return { kind: "quarantined", reason: `contradicts active rule ${contradicted.record.id}: "${clip(contradicted.record.content)}"`, into: undefined };
    }
    return { kind: "accepted", reason: neighbours.length === 0 ? "new lesson" : "no lesson of the same scope is similar enough" };
  }

  /** The owner's lessons and rules nearest to the candidate, with their similarity. */
  #neighbours(candidate: PreparedCandidate, owner: number): Neighbour[] {
    const lessons = this.#catalog.lessonSeqs(owner);
    if (lessons.length === 0) return [];
    const hits = this.#dense.search(candidate.vector, [lessons], (seq) => this.#catalog.has(seq), NEIGHBOURS);
    const neighbours: Neighbour[] = [];
    for (const hit of hits) {
      const record = this.#entries.get(hit.seq);
      if (record === undefined || record.owner !== owner) continue;
      const stored = this.#entries.termsOf(hit.seq);
      const overlap = jaccard(candidate.terms, stored === undefined ? new Set() : new Set(stored.keys()));
      neighbours.push({ record, cosine: hit.similarity, overlap });
    }
    return neighbours.sort((a, b) => similarity(b) - similarity(a));
  }
}

interface Neighbour {
  readonly record: EntryRecord;
  readonly cosine: number;
  readonly overlap: number;
}

function similarity(n: Neighbour): number {
  return Math.max(n.overlap / DUPLICATE_TERM_OVERLAP, n.cosine / DUPLICATE_COSINE);
}

function describe(n: Neighbour): string {
  return `term overlap ${n.overlap.toFixed(2)}, cosine ${n.cosine.toFixed(2)}`;
}

/**
 * Same lesson: same kind (a rule with a rule, a lesson with a lesson of the same type), about the same logical user,
 * in the same scope or one wider, and similar enough by words or by vector. Run-scoped lessons of other runs count:
 * learning the same lesson again in another run is how it gets confirmed.
 */
function isSameLesson(candidate: PreparedCandidate, n: Neighbour, scope: GateScope): boolean {
  const { lesson } = candidate;
  const existing = n.record;
  if (existing.lessonType !== lesson.lessonType && !(existing.entryType === "rule" && lesson.lessonType === "rule")) return false;
  if (existing.userId !== scope.userId) return false;
  if (isStale(existing)) return false;
  if (scopeRank(existing.lessonScope) < scopeRank(lesson.scope)) return false;
  // "Never X" and "Always X" share their words and say opposite things.
  if (NEGATION.test(existing.content) !== NEGATION.test(lesson.content)) return false;
  return n.overlap >= DUPLICATE_TERM_OVERLAP || n.cosine >= DUPLICATE_COSINE;
}

/** An active rule the reader's run sees, on the same topic, with the opposite polarity ("never X" against "X"). */
function contradicts(candidate: PreparedCandidate, n: Neighbour, scope: GateScope, catalog: Catalog): boolean {
  const rule = n.record;
  const isRule = rule.entryType === "rule" || rule.lessonType === "rule";
  if (!isRule || isStale(rule) || rule.learning.promotionState === "quarantined" || rule.validationStatus === "invalidated") return false;
  const visible = rule.runId === scope.runId || catalog.isGlobalLesson(rule.seq);
  if (!visible || (rule.userId !== "" && rule.userId !== scope.userId)) return false;
  if (n.overlap < SAME_TOPIC_TERM_OVERLAP && n.cosine < DUPLICATE_COSINE) return false;
  return NEGATION.test(rule.content) !== NEGATION.test(candidate.lesson.content);
}

function isStale(record: EntryRecord): boolean {
  return record.stale || record.supersededBy !== "";
}

function scopeRank(scope: string): number {
  return scope === "global" ? 2 : scope === "session" ? 1 : 0;
}

function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}
