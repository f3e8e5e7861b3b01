// What ranking hands back: a hit, how it was found, and the parts of its score that `explain` shows.
import type { EntryRecord, RetrievalMode } from "../../storage/entry-store.js";

export type { RetrievalMode };

export interface ScoreParts {
  readonly semantic: number;
  readonly lexical: number;
  readonly recency: number;
  readonly stalePenalty: boolean;
  readonly weights: Readonly<Record<string, number>>;
}

export const NO_PARTS: ScoreParts = { semantic: 0, lexical: 0, recency: 0, stalePenalty: false, weights: {} };

/** A candidate's first-phase score and its parts. */
export interface Scored {
  readonly score: number;
  readonly parts: ScoreParts;
}

export interface Hit {
  readonly entry: EntryRecord;
  readonly score: number;
  readonly mode: RetrievalMode;
  /** Share of the query's terms the entry contains, in [0, 1]. */
  readonly overlap: number;
  readonly similarity: number;
  readonly parts: ScoreParts;
}

/** Makes the hit of a candidate (undefined when its entry is gone), presented as `mode` or as its type says. */
export type ToHit = (seq: number, score: number, parts: ScoreParts, mode?: RetrievalMode) => Hit | undefined;

/**
 * How an entry of each type is presented when it is found by relevance rather than named. Rules and lessons are
 * standing guidance (overlays) unless they are stale: then they are plain evidence.
 */
export function modeOf(entry: Pick<EntryRecord, "entryType" | "stale" | "supersededBy">): RetrievalMode {
  if ((entry.entryType === "rule" || entry.entryType === "lesson") && (entry.stale || entry.supersededBy !== "")) return "semantic";
  switch (entry.entryType) {
    case "rule":
      return "rule_overlay";
    case "lesson":
      return "lesson_overlay";
    case "checkpoint":
      return "checkpoint";
    case "working_memory":
      return "working_memory";
    default:
      return "semantic";
  }
}
