// How far a reflected lesson is trusted: no more than the evidence it was made from. A lesson made from a tool's
// output, a document, a web page or any text flagged instruction-like is untrusted: it is stored as an observation in
// its run, never as a rule, and never proposed, promoted or recalled in other runs until corroborated (see
// learning/reinforcement.ts, memory/evidence-trust.ts).
import { leastTrust, type Trust } from "../storage/provenance.js";
import { readInstructions } from "../memory/instruction-detector.js";
import type { CandidateLesson, EvidenceItem } from "./evidence.js";

/**
 * The least trust of the evidence a lesson was made from: its sources, or every item read when the extractor may have
 * drawn on any of them (`readsAllEvidence`, a model) — then only items flagged instruction-like count, since a model
 * that read a planted instruction may repeat it in any lesson. A lesson naming no known source gets the least trust
 * of all the evidence.
 */
export function lessonTrust(lesson: CandidateLesson, evidence: ReadonlyMap<string, EvidenceItem>, readsAllEvidence: boolean): Trust {
  const sources = lesson.sourceIds.flatMap((id) => evidence.get(id) ?? []);
  const read = sources.length === 0 ? [...evidence.values()] : sources;
  let trust = read.reduce<Trust>((least, item) => leastTrust(least, item.trust ?? "trusted"), "trusted");
  if (readsAllEvidence) for (const item of evidence.values()) if (item.instructionLike === true) trust = "untrusted";
  return trust;
}

/** Why a lesson is kept out of guidance: the note its rationale carries. */
export const UNTRUSTED_NOTE = "Made from untrusted evidence (tool output, document, web page or instruction-like text): kept as an observation of this run, not a rule, not promoted and not recalled in other runs until a trusted source or a person corroborates it.";

/** A candidate as untrusted knowledge may be: a rule an observation, a global lesson its run's, the reason noted. */
export function asUntrusted(lesson: CandidateLesson): CandidateLesson {
  return {
    ...lesson,
    lessonType: lesson.lessonType === "rule" ? "observation" : lesson.lessonType,
    scope: lesson.scope === "global" ? "run" : lesson.scope,
    rationale: lesson.rationale === "" ? UNTRUSTED_NOTE : `${lesson.rationale} ${UNTRUSTED_NOTE}`,
  };
}

/**
 * Whether an untrusted lesson may be made trusted by being learned again from trusted evidence: not when its own text
 * reads as an instruction (a command to run, a URL to fetch, words to an AI reader) — only a person lifts that.
 */
export function corroborableByEvidence(content: string): boolean {
  return readInstructions(content).kinds.length === 0;
}
