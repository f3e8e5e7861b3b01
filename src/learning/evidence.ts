// What reflection reads and what it proposes: a run's evidence items, in the order they happened, and the candidate
// lessons an extractor derives from them (before the validation gate decides what is stored).
import type { Importance, LessonScope, LessonType } from "../storage/entry-record.js";
import type { Trust } from "../storage/provenance.js";

/** Where an evidence item comes from. */
export type EvidenceKind = "trace" | "fact" | "working_memory" | "checkpoint" | "archive_block" | "lesson" | "rule" | "step_outcome" | "run_outcome";

export interface EvidenceItem {
  /** Entry id (`ent_…`), step outcome id (`so_…`) or outcome id (`out_…`): what a lesson's lineage names. */
  readonly id: string;
  readonly kind: EvidenceKind;
  /** The item's text; for outcomes, the rationale (may be empty). */
  readonly content: string;
  /** Unix milliseconds. */
  readonly createdAt: number;
  readonly agentId: string;
  /** Step outcomes: the step's id and label. Entries: a `step_id` found in their metadata, else "". */
  readonly stepId: string;
  readonly stepName: string;
  /** Outcomes: `success`, `failure`, `partial` or `neutral`; "" for entries. */
  readonly outcome: string;
  /** Outcomes: reward in [-1, 1]; 0 for entries. */
  readonly signal: number;
  /** Step outcomes: hindsight guidance for future runs; "" otherwise. */
  readonly directiveHint: string;
  /**
   * How far the item is trusted as guidance (memory/evidence-trust.ts): entries by their provenance and ingest flags;
   * outcomes, which the caller reports, are trusted. Absent means trusted.
   */
  readonly trust?: Trust;
  /** Entries ingest flagged `instruction_like`; absent means not flagged. */
  readonly instructionLike?: boolean;
}

/** A lesson an extractor proposes. The gate may still reject, merge or quarantine it. */
export interface CandidateLesson {
  readonly content: string;
  readonly lessonType: LessonType;
  readonly scope: LessonScope;
  readonly importance: Importance;
  /** When the lesson applies, e.g. `when the deploy step times out`. */
  readonly conditions: readonly string[];
  /** Why it holds, naming the evidence. */
  readonly rationale: string;
  /** In [0, 1], grounded in how much evidence supports the lesson. */
  readonly confidence: number;
  /** Ids of the evidence items it was derived from (lineage); never empty for extracted lessons. */
  readonly sourceIds: readonly string[];
}

export interface Extraction {
  readonly lessons: readonly CandidateLesson[];
  /** One or two sentences on what the run taught; "" when there was no evidence. */
  readonly summary: string;
  /** Overall confidence of the extraction in [0, 1]. */
  readonly confidence: number;
  /** True when a better extractor was asked for and could not be used (e.g. the LLM failed): see `fallbackReason`. */
  readonly degraded: boolean;
  /** Why the extraction fell back, "" when it did not. */
  readonly fallbackReason: string;
  /**
   * True when every lesson may carry words of any evidence item, whatever its `sourceIds` say (a model read the whole
   * run): a lesson is then no more trusted than the least trusted item read.
   */
  readonly readsAllEvidence?: boolean;
}

/** Turns a run's evidence into candidate lessons. */
export interface LessonExtractor {
  extract(evidence: readonly EvidenceItem[], signal?: AbortSignal): Promise<Extraction>;
}

/** An outcome that reports a failure: `failure`, or a negative signal on one that does not say `success`. */
export function isFailedOutcome(item: Pick<EvidenceItem, "outcome" | "signal">): boolean {
  return item.outcome === "failure" || (item.outcome !== "success" && item.signal < 0);
}
